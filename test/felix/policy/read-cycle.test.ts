// The slices a cycle of reads checks: every set, map and chain in exactly one, the chains' heads
// in the first, and no slice carrying much more than its share.
import assert from 'node:assert/strict';
import { readCycle } from '../../../felix/policy/read-cycle.js';

describe('felix/policy read cycle', () => {
  const sizes = {
    sets: [['big', 10_000], ...Array.from({ length: 130 }, (_, i): [string, number] => [`m${i}`, 900])] as [string, number][],
    chains: Array.from({ length: 11_000 }, (_, i): [string, number] => [`c${i}`, 2]),
  };

  it('puts every set, map and chain in one slice of the cycle, the heads in the first', () => {
    const cycle = readCycle(sizes, 10);
    assert.equal(cycle.length, 10, 'a slice per read');
    const sets = cycle.flatMap((s) => s.sets);
    const chains = cycle.flatMap((s) => s.chains);
    assert.deepEqual(
      sets,
      sizes.sets.map(([n]) => n),
      'each set and map once, in order',
    );
    assert.deepEqual(
      chains,
      sizes.chains.map(([n]) => n),
      'each chain once, in order',
    );
    assert.deepEqual(
      cycle.map((s) => s.heads),
      [true, ...Array(9).fill(false)],
      'heads in the first slice only',
    );
  });

  it('gives each slice about a tenth of the cost', () => {
    // The costs read-cycle.ts counts: a round trip 40, an element 1, a rule 2, a chain's head 5.
    const cost = (s: ReturnType<typeof readCycle>[number]) =>
      (s.heads ? 40 + 5 * sizes.chains.length : 0) +
      s.sets.reduce((n, name) => n + 40 + sizes.sets.find(([x]) => x === name)![1], 0) +
      s.chains.length * (40 + 2 * 2);
    const costs = readCycle(sizes, 10).map(cost);
    const share = costs.reduce((a, b) => a + b) / 10;
    for (const [i, c] of costs.entries()) assert.ok(Math.abs(c - share) <= 10_040, `slice ${i}: ${c} against a share of ${share}`);
  });

  it('makes one slice of the whole table for a cycle of one read, and empty ones for an empty table', () => {
    assert.deepEqual(readCycle(sizes, 1)[0].chains.length, sizes.chains.length, 'all chains in the one slice');
    assert.deepEqual(readCycle({ sets: [], chains: [] }, 3), [
      { sets: [], chains: [], heads: true },
      { sets: [], chains: [], heads: false },
      { sets: [], chains: [], heads: false },
    ]);
  });
});
