import assert from 'node:assert/strict';
import { NamedList, namedListOf, withNamedList } from '../../../felix/policy/named-list.js';

/** A small seeded generator, so a failure is the same on every run. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

interface Part {
  readonly name: string;
  readonly v: number;
}

const inOrder = (m: Map<string, Part>): Part[] => [...m.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

describe('a list in name order told as changes', () => {
  it('each version equals the list it stands for, through puts, replacements and removals that fill, split and empty chunks; earlier versions stay (3 seeds)', () => {
    for (const seed of [1, 2, 3]) {
      const next = random(seed);
      const truth = new Map<string, Part>();
      for (let i = 0; i < 40; i++) {
        const name = `s${Math.floor(next() * 400)}`;
        truth.set(name, { name, v: 0 });
      }
      const first = NamedList.of(inOrder(truth));
      const firstList = [...first.list()];
      let list = first;
      const kept: { list: NamedList<Part>; whole: Part[] }[] = [];
      for (let step = 0; step < 300; step++) {
        const edit = list.edit();
        // Grow for the first half (chunks split), then shrink (chunks empty).
        const grow = step < 150;
        for (let i = 0; i < 4; i++) {
          const name = `s${Math.floor(next() * 400)}`;
          const had = truth.get(name);
          if (had && (!grow || next() < 0.3)) {
            assert.equal(edit.remove(name), true, `seed ${seed} step ${step}: ${name} is taken out`);
            truth.delete(name);
          } else if (!had && !grow) {
            assert.equal(edit.remove(name), false, `seed ${seed} step ${step}: ${name} was not there`);
          } else {
            const part = { name, v: step };
            edit.put(part);
            truth.set(name, part);
          }
          assert.equal(edit.get(name), truth.get(name), `seed ${seed} step ${step}: the edit finds ${name} as it is now`);
        }
        list = edit.done();
        assert.equal(list.length, truth.size, `seed ${seed} step ${step}: the length`);
        const probe = `s${Math.floor(next() * 400)}`;
        assert.equal(list.get(probe), truth.get(probe), `seed ${seed} step ${step}: ${probe} is found as it is`);
        if (step % 25 === 0) kept.push({ list, whole: inOrder(truth) });
      }
      assert.deepEqual(list.list(), inOrder(truth), `seed ${seed}: the last version is the whole list`);
      for (const k of kept) assert.deepEqual(k.list.list(), k.whole, `seed ${seed}: a version made by a change is what it was`);
      assert.deepEqual(first.list(), firstList, `seed ${seed}: the first version is what it was`);
    }
  });

  it('an object carrying one shows the list as a plain field, and gives the same list back', () => {
    const before = {
      family: 'inet',
      sets: [
        { name: 'a', v: 1 },
        { name: 'c', v: 1 },
      ] as readonly Part[],
    };
    const edit = namedListOf<Part, typeof before>(before, 'sets').edit();
    edit.put({ name: 'b', v: 2 });
    const list = edit.done();
    const after = withNamedList({ family: 'inet', sets: [] as readonly Part[] }, 'sets', list);
    assert.deepEqual(
      after,
      {
        family: 'inet',
        sets: [
          { name: 'a', v: 1 },
          { name: 'b', v: 2 },
          { name: 'c', v: 1 },
        ],
      },
      'deep equality reads the list',
    );
    assert.deepEqual(Object.keys(after), ['family', 'sets'], 'the keys keep their places');
    assert.equal(namedListOf(after, 'sets'), list, 'the list it was made from');
    assert.deepEqual(
      before.sets.map((p) => p.name),
      ['a', 'c'],
      'the list it came from is as it was',
    );
  });
});
