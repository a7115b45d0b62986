// A set's elements kept as another's with a difference: read whole it is exactly the set it
// stands for, its difference from any set it came from is the net one, and a long line of
// differences is folded rather than kept.
import assert from 'node:assert/strict';
import { DerivedElements } from '../../../felix/policy/derived-elements.js';
import { prng } from '../../support/prng.js';

describe('felix/policy DerivedElements', () => {
  it('reads whole as the base with the difference, and tells its net difference from each set before it', () => {
    const next = prng(7);
    const base = new Set(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    const truth = [new Set(base)];
    const versions: ReadonlySet<string>[] = [base];
    for (let step = 0; step < 40; step++) {
      const now = new Set(truth[truth.length - 1]);
      const e = `10.0.0.${1 + Math.floor(next() * 8)}`;
      const added = now.has(e) ? [] : [e];
      const removed = now.has(e) ? [e] : [];
      for (const a of added) now.add(a);
      for (const r of removed) now.delete(r);
      versions.push(new DerivedElements(versions[versions.length - 1]!, added, removed));
      truth.push(now);
    }
    const last = versions[versions.length - 1] as DerivedElements;
    for (let i = 0; i < versions.length - 1; i += 7) {
      const d = last.changeFrom(versions[i]!);
      assert.ok(d, `the last version came from version ${i}`);
      const expectAdded = [...truth[truth.length - 1]!].filter((e) => !truth[i]!.has(e)).sort();
      const expectRemoved = [...truth[i]!].filter((e) => !truth[truth.length - 1]!.has(e)).sort();
      assert.deepEqual([...d.added].sort(), expectAdded, `added since version ${i}`);
      assert.deepEqual([...d.removed].sort(), expectRemoved, `removed since version ${i}`);
    }
    assert.equal(last.changeFrom(new Set(base)), undefined, 'an equal set it did not come from has no difference to tell');
    // Read whole, every version is its set, older ones too (read after newer ones were).
    for (let i = versions.length - 1; i >= 0; i--) {
      assert.deepEqual(new Set(versions[i]!), truth[i], `version ${i} read whole`);
      assert.equal(versions[i]!.size, truth[i]!.size, `version ${i} size`);
    }
    assert.ok(last.has([...truth[truth.length - 1]!][0]!), 'has() reads the whole set');
  });

  it('folds a long line of differences into a set of its own, and still reads right', () => {
    let at: ReadonlySet<string> = new Set(['a']);
    for (let i = 0; i < 600; i++) {
      const next = new DerivedElements(at, [`e${i}`], []);
      // The version that folds the line still tells its one step: a plan compares no sets whole.
      assert.deepEqual(next.changeFrom(at), { added: [`e${i}`], removed: [] }, `version ${i + 1} tells its difference`);
      at = next;
    }
    assert.equal(at.size, 601, 'every element is there');
    assert.ok(at.has('e0') && at.has('e599') && at.has('a'), 'the first and last differences both hold');
  });
});
