// The IPv6 prefix index against a Map doing the same operations: inserts, overwrites and
// deletions in runs that wrap around the end of the array and cross growth, with keys that
// differ only in their length, only in their last word, or not at all past the first octet.
import assert from 'node:assert/strict';
import { v6Key } from '../../../bgp/rib/prefix.js';
import { V6Index } from '../../../bgp/rib/v6-index.js';
import { agreesWithMap } from '../../support/rib.js';

describe('rib: IPv6 prefix index', () => {
  it('agrees with a Map through 200,000 random inserts, overwrites and deletions', () => {
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
    agreesWithMap(new V6Index(4), pool, 54321);
  });

  it('refuses a number it cannot hold', () => {
    assert.throws(() => new V6Index().set(v6Key('2001:db8::/32'), 1 << 23), /up to 8,388,607/);
  });
});
