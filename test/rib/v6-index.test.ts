// The IPv6 prefix index against a Map doing the same operations: inserts, overwrites and
// deletions in runs that wrap around the end of the array and cross growth, with keys that
// differ only in their length, only in their last word, or not at all past the first octet.
import assert from 'node:assert/strict';
import { v6Key } from '../../bgp/rib/prefix.js';
import { V6Index } from '../../bgp/rib/v6-index.js';

describe('rib: IPv6 prefix index', () => {
  it('agrees with a Map through 200,000 random inserts, overwrites and deletions', () => {
    let seed = 54321;
    const rand = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const hex = (n: number) => n.toString(16);
    const pool = [
      ...Array.from({ length: 3000 }, (_, i) => v6Key(`2a00:${hex(i >> 4)}:${hex(i & 15)}::/48`)),
      // The same addresses as /64s: equal words, another length.
      ...Array.from({ length: 1000 }, (_, i) => v6Key(`2a00:${hex(i >> 4)}:${hex(i & 15)}::/64`)),
      // Host routes that differ only in the last word.
      ...Array.from({ length: 3000 }, (_, i) => v6Key(`2001:db8::${hex(i >> 8)}:${hex(i & 255)}/128`)),
      // One address whose bits past 16 are all zero, at every length from 16: the same words each time.
      ...Array.from({ length: 113 }, (_, i) => v6Key(`2b00::/${16 + i}`)),
      // Every length of one address, 0 to 128.
      ...Array.from({ length: 129 }, (_, len) => v6Key(`2001:db8:ffff:ffff:ffff:ffff:ffff:ffff/${len}`)),
    ];
    assert.equal(new Set(pool).size, pool.length, 'the pool has no two equal keys');
    const index = new V6Index(4);
    const ref = new Map<string, number>();
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

  it('refuses a number it cannot hold', () => {
    assert.throws(() => new V6Index().set(v6Key('2001:db8::/32'), 1 << 23), /up to 8,388,607/);
  });
});
