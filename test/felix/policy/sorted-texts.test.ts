import assert from 'node:assert/strict';
import { SortedTexts, sortedTextsOf, withSortedTexts } from '../../../felix/policy/sorted-texts.js';

/** A small seeded generator, so a failure is the same on every run. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('sorted texts told as changes', () => {
  it('each version, read or asked for one text, equals the whole list it stands for (random changes, 3 seeds)', () => {
    for (const seed of [1, 2, 3]) {
      const next = random(seed);
      const truth = new Set<string>();
      for (let i = 0; i < 50; i++) truth.add(`10.0.${Math.floor(next() * 4)}.${Math.floor(next() * 256)}`);
      let texts = SortedTexts.of([...truth].sort());
      const versions: { texts: SortedTexts; whole: string[] }[] = [];
      for (let step = 0; step < 100; step++) {
        const added: string[] = [];
        const removed: string[] = [];
        for (const t of truth) if (next() < 0.05) removed.push(t);
        for (const t of removed) truth.delete(t);
        for (let i = 0; i < 3; i++) {
          const t = `10.0.${Math.floor(next() * 4)}.${Math.floor(next() * 256)}`;
          if (!truth.has(t)) {
            truth.add(t);
            added.push(t);
          }
        }
        texts = texts.changed(added, removed);
        const whole = [...truth].sort();
        versions.push({ texts, whole });
        assert.equal(texts.length, whole.length, `seed ${seed} step ${step}: length`);
        for (const t of [...added, ...removed]) assert.equal(texts.has(t), truth.has(t), `seed ${seed} step ${step}: has ${t}`);
      }
      // Read out of order: an old version stays what it was after newer ones are made whole.
      for (let i = versions.length - 1; i >= 0; i -= 7)
        assert.deepEqual(versions[i]!.texts.list(), versions[i]!.whole, `seed ${seed} version ${i}`);
      for (const v of versions) assert.deepEqual(v.texts.list(), v.whole, `seed ${seed}: every version`);
    }
  });

  it('a list of thousands whose changes fill, split and empty its chunks stays the list it stands for, and an earlier version stays what it was', () => {
    const next = random(7);
    const text = (n: number) => `10.${Math.floor(n / 65536)}.${Math.floor(n / 256) % 256}.${n % 256}`;
    const truth = new Set<string>();
    for (let i = 0; i < 3000; i++) truth.add(text(Math.floor(next() * 20000)));
    const firstList = [...truth].sort();
    const first = SortedTexts.of(firstList.slice());
    let texts = first;
    let kept: { texts: SortedTexts; whole: string[] } | undefined;
    for (let step = 0; step < 60; step++) {
      // A run of neighbours goes (emptying a chunk), another comes (splitting one), and a few anywhere.
      const start = Math.floor(next() * 20000);
      const removed = [...truth].filter((t) => {
        const n = t.split('.').reduce((a, b) => a * 256 + Number(b), 0) - 10 * 2 ** 24;
        return (n >= start && n < start + 300) || next() < 0.002;
      });
      for (const t of removed) truth.delete(t);
      const added: string[] = [];
      const at = Math.floor(next() * 20000);
      for (let n = at; n < at + 200; n++) if (!truth.has(text(n)) && next() < 0.8) added.push(text(n));
      for (const t of added) truth.add(t);
      texts = texts.changed(added, removed);
      assert.equal(texts.length, truth.size, `step ${step}: length`);
      for (const t of [...added.slice(0, 20), ...removed.slice(0, 20)]) assert.equal(texts.has(t), truth.has(t), `step ${step}: has ${t}`);
      // Read only at the end: the later versions must not change the chunks it shares with them.
      if (step === 5) kept = { texts, whole: [...truth].sort() };
      if (step % 10 === 9) assert.deepEqual(texts.list(), [...truth].sort(), `step ${step}: the whole list`);
    }
    assert.deepEqual(first.list(), firstList, 'the first version is what it was');
    assert.deepEqual(kept?.texts.list(), kept?.whole, 'a version made by a change is what it was');
    assert.deepEqual(texts.list(), [...truth].sort(), 'the last version is the whole list');
  });

  it('an object carrying them shows the list as a plain field: spread, JSON and deep equality see it', () => {
    const before = { id: 's', members: ['10.0.0.1', '10.0.0.3'], hosts: true };
    const after = withSortedTexts(
      { id: 's', members: [] as readonly string[], hosts: true },
      'members',
      sortedTextsOf(before, 'members').changed(['10.0.0.2'], ['10.0.0.3']),
    );
    assert.deepEqual(after, { id: 's', members: ['10.0.0.1', '10.0.0.2'], hosts: true }, 'deep equality reads the members');
    assert.equal(JSON.stringify(after), '{"id":"s","members":["10.0.0.1","10.0.0.2"],"hosts":true}', 'JSON keeps the keys in place');
    assert.deepEqual({ ...after }.members, ['10.0.0.1', '10.0.0.2'], 'a spread copies the list');
    assert.equal(sortedTextsOf(after, 'members').has('10.0.0.3'), false, 'the removed member is gone');
  });
});
