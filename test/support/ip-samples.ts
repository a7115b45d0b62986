// Addresses for the ip/ tests: hand-picked edge cases of RFC 5952 with the text each must
// print as, and random ones whose groups are zero half the time, so runs of zeros of every
// length, position and tie turn up.

/** [any accepted writing, the one text it prints as]. */
export const EDGE_IPV6: readonly (readonly [string, string])[] = [
  ['0:0:0:0:0:0:0:0', '::'],
  ['0:0:0:0:0:0:0:1', '::1'],
  ['1:0:0:0:0:0:0:0', '1::'],
  ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
  ['2001:0db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1'], // two runs of two: the first
  ['1:0:0:2:0:0:0:3', '1:0:0:2::3'], // the longer run, though it comes second
  ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'], // a single zero group is not compressed
  ['0:1:2:3:4:5:6:7', '0:1:2:3:4:5:6:7'],
  ['1:2:3:4:5:6:7:0', '1:2:3:4:5:6:7:0'],
  ['0:0:1:2:3:4:5:6', '::1:2:3:4:5:6'], // leading run
  ['1:2:3:4:5:6:0:0', '1:2:3:4:5:6::'], // trailing run
  ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'], // "::" may stand for one group; it never prints so
  ['fe80::1', 'fe80::1'],
  ['ff02::2', 'ff02::2'],
  ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
  // IPv4-mapped (::ffff:0:0/96): mixed notation, RFC 5952 §5.
  ['::ffff:10.0.0.1', '::ffff:10.0.0.1'],
  ['::FFFF:a00:1', '::ffff:10.0.0.1'],
  ['0:0:0:0:0:ffff:0:0', '::ffff:0.0.0.0'],
  ['::ffff:255.255.255.255', '::ffff:255.255.255.255'],
  // Other addresses with IPv4 in their last 32 bits print in hexadecimal.
  ['::ffff:0:10.0.0.1', '::ffff:0:a00:1'], // IPv4-translated (RFC 2765)
  ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'], // NAT64 well-known prefix (RFC 6052)
  ['::10.0.0.1', '::a00:1'], // IPv4-compatible, deprecated by RFC 4291
  ['0:0:0:0:1:ffff:a00:1', '::1:ffff:a00:1'],
  ['::ffff:0:0:0', '::ffff:0:0:0'],
  ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'],
];

export const EDGE_IPV4: readonly string[] = ['0.0.0.0', '255.255.255.255', '10.0.0.1', '192.0.2.1', '1.2.3.4', '100.64.0.0'];

export function randomIpv6(rnd: () => number): Uint8Array {
  const b = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    const r = rnd();
    const g = r < 0.5 ? 0 : r < 0.6 ? 0xffff : r < 0.8 ? Math.floor(rnd() * 16) : Math.floor(rnd() * 65536);
    b[2 * i] = g >> 8;
    b[2 * i + 1] = g & 255;
  }
  if (rnd() < 0.1) b.set([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]); // IPv4-mapped
  return b;
}

export function randomIpv4(rnd: () => number): Uint8Array {
  return Uint8Array.from({ length: 4 }, () => (rnd() < 0.2 ? 0 : Math.floor(rnd() * 256)));
}

/** Other ways to write the same IPv6 address: no compression, upper case, four digits a group, a dotted tail. */
export function otherWritings(b: Uint8Array): string[] {
  const groups = Array.from({ length: 8 }, (_, i) => (b[2 * i] << 8) | b[2 * i + 1]);
  const plain = groups.map((g) => g.toString(16)).join(':');
  return [
    plain,
    plain.toUpperCase(),
    groups.map((g) => g.toString(16).padStart(4, '0')).join(':'),
    `${groups
      .slice(0, 6)
      .map((g) => g.toString(16))
      .join(':')}:${b[12]}.${b[13]}.${b[14]}.${b[15]}`,
  ];
}
