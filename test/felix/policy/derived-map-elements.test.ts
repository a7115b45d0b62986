// A map's elements kept as another's with keys taken out and put in: read whole it is exactly the
// map it stands for, and its difference from any map it came from, applied to that map, gives it
// (keys whose value changed taken out and put back, keys put in and taken out again no change).
import assert from 'node:assert/strict';
import { DerivedMapElements } from '../../../felix/policy/derived-map-elements.js';
import { prng } from '../../support/prng.js';

describe('felix/policy DerivedMapElements', () => {
  it('reads whole as the base with the difference, and its net difference from each map before it rebuilds it', () => {
    const next = prng(11);
    const base = new Map([
      ['k1', 'a'],
      ['k2', 'b'],
    ]);
    const truth = [new Map(base)];
    const versions: ReadonlyMap<string, string>[] = [base];
    for (let step = 0; step < 60; step++) {
      const now = new Map(truth[truth.length - 1]);
      const k = `k${1 + Math.floor(next() * 6)}`;
      const v = `v${Math.floor(next() * 3)}`;
      const removed: string[] = [];
      const added: [string, string][] = [];
      const r = next();
      if (now.has(k) && r < 0.4) removed.push(k);
      else if (now.has(k)) {
        removed.push(k);
        added.push([k, v]);
      } else added.push([k, v]);
      for (const x of removed) now.delete(x);
      for (const [x, y] of added) now.set(x, y);
      versions.push(new DerivedMapElements(versions[versions.length - 1]!, added, removed));
      truth.push(now);
    }
    const last = versions[versions.length - 1] as DerivedMapElements;
    for (let i = 0; i < versions.length - 1; i += 5) {
      const d = last.changeFrom(versions[i]!);
      assert.ok(d, `the last version came from version ${i}`);
      const rebuilt = new Map(truth[i]);
      for (const k of d.removed) assert.ok(rebuilt.delete(k), `version ${i}: ${k} taken out was there`);
      for (const [k, v] of d.added) {
        assert.ok(!rebuilt.has(k), `version ${i}: ${k} put in was not there`);
        rebuilt.set(k, v);
      }
      assert.deepEqual(rebuilt, truth[truth.length - 1], `version ${i} with the difference is the last`);
    }
    assert.equal(last.changeFrom(new Map(base)), undefined, 'an equal map it did not come from has no difference to tell');
    for (let i = versions.length - 1; i >= 0; i--) assert.deepEqual(new Map(versions[i]!), truth[i], `version ${i} read whole`);
    const [k, v] = [...truth[truth.length - 1]!][0]!;
    assert.equal(last.get(k), v, 'get() reads the whole map');
  });

  it('folds a long line of differences into a map of its own, and still reads right', () => {
    let at: ReadonlyMap<string, string> = new Map([['a', 'x']]);
    for (let i = 0; i < 600; i++) {
      const next = new DerivedMapElements(at, [[`e${i}`, 'y']], []);
      // The version that folds the line still tells its one step: a plan compares no maps whole.
      assert.deepEqual(next.changeFrom(at), { removed: [], added: [[`e${i}`, 'y']] }, `version ${i + 1} tells its difference`);
      at = next;
    }
    assert.equal(at.size, 601, 'every element is there');
    assert.ok(at.get('e0') === 'y' && at.get('e599') === 'y' && at.get('a') === 'x', 'the first and last differences both hold');
  });
});
