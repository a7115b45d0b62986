// ip/ prefixes: parsing strict and not, canonical text, containment, and IPAM's block arithmetic.
import assert from 'node:assert/strict';
import {
  AddressError,
  addressAt,
  addressValue,
  canonicalCidr,
  cidrAddress,
  cidrContains,
  cidrNetwork,
  cidrSize,
  cidrsOverlap,
  formatAddress,
  formatCidr,
  hostPrefix,
  parseAddress,
  parseCidr,
  parseInterfaceAddress,
  subBlock,
  subBlockCount,
  type Cidr,
} from '../../ip/index.js';
import { prng } from '../support/prng.js';

describe('ip/ prefixes', () => {
  it('reads "address/length"; strict refuses host bits, otherwise they are kept', () => {
    assert.deepEqual(parseCidr('10.0.0.0/8'), { family: 4, bytes: Uint8Array.from([10, 0, 0, 0]), prefixLength: 8 });
    assert.equal(parseCidr('0.0.0.0/0').prefixLength, 0);
    assert.equal(parseCidr('fd00::/128', 'x', false).prefixLength, 128);
    assert.throws(() => parseCidr('10.0.0.1/24'), /host bits/);
    assert.throws(() => parseCidr('10.0.0.128/24'), /host bits/);
    assert.throws(() => parseCidr('fd00::1/127'), /host bits/);
    assert.doesNotThrow(() => parseCidr('10.0.0.128/25'));
    const loose = parseCidr('10.0.0.5/24', 'x', false);
    assert.equal(formatAddress(loose.bytes), '10.0.0.5');
    assert.equal(formatCidr(cidrNetwork(loose)), '10.0.0.0/24');
    assert.equal(formatCidr(cidrNetwork(parseCidr('fd00::ffff/113', 'x', false))), 'fd00::8000/113');
  });

  it('refuses a bad prefix length or a missing one, naming the field', () => {
    for (const text of ['10.0.0.0/33', '10.0.0.0/', '10.0.0.0/1234', '10.0.0.0/-1', '10.0.0.0/a', '10.0.0.0/8/8', 'fd00::/129']) {
      assert.throws(
        () => parseCidr(text, 'spec.cidr'),
        (e: unknown) => e instanceof AddressError && e.field === 'spec.cidr' && /prefix length/.test(e.message),
        text,
      );
    }
    assert.throws(
      () => parseCidr('10.0.0.0', 'spec.cidr'),
      /^AddressError: spec.cidr: "10.0.0.0" is not a CIDR \(address\/prefix-length\)$/,
    );
    assert.throws(
      () => parseCidr('10.0.0.256/24', 'pools[0].cidr'),
      /^AddressError: pools\[0\].cidr: "10.0.0.256" is not an IPv4 or IPv6 address$/,
    );
  });

  it('reads an interface address, bare or with its subnet length', () => {
    assert.deepEqual(parseInterfaceAddress('10.0.1.5/24'), { family: 4, bytes: Uint8Array.from([10, 0, 1, 5]), prefixLength: 24 });
    assert.equal(parseInterfaceAddress('10.0.1.5').prefixLength, 32);
    assert.equal(parseInterfaceAddress('fd00::5').prefixLength, 128);
    assert.throws(() => parseInterfaceAddress('10.0.1.5/33', 'node.addressV4'), /node.addressV4: .* bad prefix length/);
  });

  it("gives an interface address's address, canonical, its length dropped; a bare address is its own", () => {
    assert.equal(cidrAddress('10.0.1.5/24'), '10.0.1.5', 'host bits kept');
    assert.equal(cidrAddress('10.0.1.5'), '10.0.1.5');
    assert.equal(cidrAddress('10.0.0.0/8'), '10.0.0.0');
    assert.equal(cidrAddress('FD00:0:0::5/64'), 'fd00::5', 'IPv6 in its one spelling');
    assert.equal(cidrAddress('::ffff:192.0.2.1/128'), '::ffff:192.0.2.1');
  });

  it('refuses a malformed interface address in the words parseInterfaceAddress uses, naming the field', () => {
    const cases: Array<[string, string]> = [
      ['10.0.1.5/33', 'node.addressV4: "10.0.1.5/33" has a bad prefix length (0..32)'],
      ['fd00::5/129', 'node.addressV4: "fd00::5/129" has a bad prefix length (0..128)'],
      ['10.0.1.5/', 'node.addressV4: "10.0.1.5/" has a bad prefix length (0..32)'],
      ['10.0.1.5/24/24', 'node.addressV4: "10.0.1.5/24/24" has a bad prefix length (0..32)'],
      ['10.0.1/24', 'node.addressV4: "10.0.1" is not an IPv4 or IPv6 address'],
      ['', 'node.addressV4: "" is not an IPv4 or IPv6 address'],
    ];
    for (const [text, message] of cases) {
      assert.throws(
        () => cidrAddress(text, 'node.addressV4'),
        (e: unknown) => e instanceof AddressError && e.field === 'node.addressV4' && e.message === message,
        text,
      );
    }
    assert.throws(() => cidrAddress(undefined as unknown as string), /^AddressError: address: undefined is not a string$/);
  });

  it('canonicalises prefixes and host addresses', () => {
    assert.equal(canonicalCidr('FD00:0:0:0::/64'), 'fd00::/64');
    assert.equal(canonicalCidr('::ffff:a00:0/120'), '::ffff:10.0.0.0/120');
    assert.equal(hostPrefix('10.1.2.3'), '10.1.2.3/32');
    assert.equal(hostPrefix('10.1.2.3/32'), '10.1.2.3/32');
    assert.equal(hostPrefix('fd00::0002/128'), 'fd00::2/128');
    assert.equal(hostPrefix('0.0.0.0'), '0.0.0.0/32');
    assert.equal(hostPrefix('255.255.255.255'), '255.255.255.255/32');
    assert.throws(() => hostPrefix('10.1.2.0/24'), /single address \(\/32\)/);
    assert.throws(() => hostPrefix('fd00::/64'), /single address \(\/128\)/);
    for (const bad of ['10.00.0.1', '10.0.0.256', '10.0.0.', '.10.0.0'])
      assert.throws(() => hostPrefix(bad, 'addresses[3]'), /addresses\[3\]: .* is not an IPv4 or IPv6 address/, bad);
  });

  it('tells containment and overlap, for prefixes and for addresses', () => {
    const c = (t: string) => parseCidr(t);
    assert.ok(cidrContains(c('10.0.0.0/8'), c('10.1.0.0/16')), '10.0.0.0/8 should contain 10.1.0.0/16');
    assert.ok(cidrContains(c('10.0.0.0/8'), c('10.0.0.0/8')), '10.0.0.0/8 should contain itself');
    assert.ok(!cidrContains(c('10.1.0.0/16'), c('10.0.0.0/8')), '10.1.0.0/16 should not contain 10.0.0.0/8');
    assert.ok(!cidrContains(c('10.0.0.0/8'), c('11.0.0.0/16')), '10.0.0.0/8 should not contain 11.0.0.0/16');
    assert.ok(!cidrContains(c('0.0.0.0/0'), c('::/0')), 'never across families');
    assert.ok(cidrContains(c('0.0.0.0/0'), c('255.255.255.255/32')), '0.0.0.0/0 should contain 255.255.255.255/32');
    assert.ok(cidrContains(parseCidr('10.0.1.5/24', 'x', false), parseAddress('10.0.1.200')), 'an interface address holds its subnet');
    assert.ok(
      !cidrContains(parseCidr('10.0.1.5/24', 'x', false), parseAddress('10.0.2.1')),
      'the subnet of 10.0.1.5/24 should not hold 10.0.2.1',
    );
    assert.ok(cidrContains(c('fd00::/122'), parseAddress('fd00::3f')), 'fd00::/122 should contain fd00::3f');
    assert.ok(!cidrContains(c('fd00::/122'), parseAddress('fd00::40')), 'fd00::/122 should not contain fd00::40');
    assert.ok(
      cidrsOverlap(c('10.0.0.0/8'), c('10.2.0.0/16')) && cidrsOverlap(c('10.2.0.0/16'), c('10.0.0.0/8')),
      '10.0.0.0/8 and 10.2.0.0/16 should overlap, both ways',
    );
    assert.ok(!cidrsOverlap(c('10.0.0.0/25'), c('10.0.0.128/25')), '10.0.0.0/25 and 10.0.0.128/25 should not overlap');
  });

  it('agrees with bigint arithmetic on containment (random prefixes)', () => {
    const rnd = prng(1519);
    const random = (): Cidr => {
      const len = Math.floor(rnd() * 33);
      const v = BigInt(Math.floor(rnd() * 2 ** 32)) & (((1n << 32n) - 1n) ^ ((1n << BigInt(32 - len)) - 1n));
      return parseCidr(`${(v >> 24n) & 255n}.${(v >> 16n) & 255n}.${(v >> 8n) & 255n}.${v & 255n}/${len}`);
    };
    for (let i = 0; i < 5000; i++) {
      const a = random();
      const b = rnd() < 0.5 ? random() : subBlock(a, Math.min(32, a.prefixLength + Math.floor(rnd() * 4)), 0n);
      const shift = BigInt(32 - a.prefixLength);
      const expected = b.prefixLength >= a.prefixLength && addressValue(b.bytes) >> shift === addressValue(a.bytes) >> shift;
      assert.equal(cidrContains(a, b), expected, `${formatCidr(a)} ⊇ ${formatCidr(b)}`);
    }
  });

  it('counts and names the blocks of a pool and the addresses of a block (IPAM)', () => {
    const pool = parseCidr('10.0.0.0/14');
    assert.equal(cidrSize(pool), 1n << 18n);
    assert.equal(subBlockCount(pool, 26), 4096n);
    assert.equal(formatCidr(subBlock(pool, 26, 0n)), '10.0.0.0/26');
    assert.equal(formatCidr(subBlock(pool, 26, 5n)), '10.0.1.64/26');
    assert.equal(formatCidr(subBlock(pool, 26, 4095n)), '10.3.255.192/26');
    assert.throws(() => subBlock(pool, 26, 4096n), RangeError);
    assert.throws(() => subBlockCount(pool, 13), RangeError);
    assert.equal(formatAddress(addressAt(parseCidr('10.0.1.64/26'), 63).bytes), '10.0.1.127');
    assert.throws(() => addressAt(parseCidr('10.0.1.64/26'), 64), RangeError);

    const v6 = parseCidr('fd00:1::/48');
    assert.equal(subBlockCount(v6, 122), 1n << 74n);
    assert.equal(formatCidr(subBlock(v6, 122, (1n << 74n) - 1n)), 'fd00:1:0:ffff:ffff:ffff:ffff:ffc0/122');
    assert.equal(formatAddress(addressAt(subBlock(v6, 122, 1n), 2n).bytes), 'fd00:1::42');
    assert.equal(formatCidr(subBlock(parseCidr('10.0.0.7/24', 'x', false), 26, 1n)), '10.0.0.64/26', 'from the network, not the host');
  });
});
