// The IPv4 prefix index against a Map doing the same operations: inserts, overwrites and
// deletions in runs that wrap around the end of the arrays and cross growth.
import { v4Key } from '../../../bgp/rib/prefix.js';
import { V4Index } from '../../../bgp/rib/v4-index.js';
import { agreesWithMap } from '../../support/rib.js';

describe('rib: IPv4 prefix index', () => {
  it('agrees with a Map through 200,000 random inserts, overwrites and deletions', () => {
    // Few distinct prefixes, so deletions hit and runs form: /32s of two /20s, /24s, and 0.0.0.0/0.
    const pool = [
      ...Array.from({ length: 3000 }, (_, i) => v4Key(`11.${i >> 8}.${i & 255}.0/24`)),
      ...Array.from({ length: 3000 }, (_, i) => v4Key(`192.0.${(i >> 8) & 15}.${i & 255}/32`)),
      ...Array.from({ length: 3000 }, (_, i) => v4Key(`200.16.${(i >> 8) & 15}.${i & 255}/32`)),
      v4Key('0.0.0.0/0'),
    ];
    agreesWithMap(new V4Index(4), pool, 12345);
  });
});
