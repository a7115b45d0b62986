// The IPv4 prefix index against a Map doing the same operations: inserts, overwrites and
// deletions in runs that wrap around the end of the arrays and cross growth.
import assert from 'node:assert/strict';
import { v4Key } from '../../bgp/rib/prefix.js';
import { V4Index } from '../../bgp/rib/v4-index.js';

describe('rib: IPv4 prefix index', () => {
  it('agrees with a Map through 200,000 random inserts, overwrites and deletions', () => {
    // A fixed generator: the same sequence every run.
    let seed = 12345;
    const rand = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    // Few distinct prefixes, so deletions hit and runs form: /32s of two /20s, /24s, and 0.0.0.0/0.
    const pool = [
      ...Array.from({ length: 3000 }, (_, i) => v4Key(`11.${i >> 8}.${i & 255}.0/24`)),
      ...Array.from({ length: 3000 }, (_, i) => v4Key(`192.0.${(i >> 8) & 15}.${i & 255}/32`)),
      ...Array.from({ length: 3000 }, (_, i) => v4Key(`200.16.${(i >> 8) & 15}.${i & 255}/32`)),
      v4Key('0.0.0.0/0'),
    ];
    const index = new V4Index(4);
    const ref = new Map<number, number>();
    for (let step = 0; step < 200_000; step++) {
      const key = pool[rand(pool.length)];
      if (rand(3) === 0) {
        index.delete(key);
        ref.delete(key);
      } else {
        index.set(key, step);
        ref.set(key, step);
      }
      if (step % 1000 === 0) {
        assert.equal(index.size, ref.size);
        for (const k of pool) assert.equal(index.get(k), ref.get(k), `step ${step}`);
      }
    }
    for (const k of pool) assert.equal(index.get(k), ref.get(k));
    for (const k of pool) index.delete(k);
    assert.equal(index.size, 0);
    for (const k of pool) assert.equal(index.get(k), undefined);
  });
});
