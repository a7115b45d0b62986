// ip/ addresses: what reads, how it prints, against two references that are not ours:
// Node's URL parser (the WHATWG IPv6 parser and serializer, which follows RFC 5952 except that
// it prints IPv4-mapped addresses in hexadecimal) and net.isIPv4.
import assert from 'node:assert/strict';
import { isIPv4 } from 'node:net';
import {
  AddressError,
  addressFromValue,
  addressValue,
  formatAddress,
  formatIpv4,
  formatIpv4Number,
  formatIpv6,
  ipv4NumberAt,
  parseAddress,
  parseIpv4Into,
  parseIpv4Number,
  parseIpv6Into,
} from '../../ip/index.js';
import { prng } from '../support/prng.js';
import { EDGE_IPV4, EDGE_IPV6, otherWritings, randomIpv4, randomIpv6 } from '../support/ip-samples.js';

const print = (t: string) => formatAddress(parseAddress(t).bytes);

/** The WHATWG serialization of an IPv6 address, or undefined when URL refuses the text. */
function urlIpv6(text: string): string | undefined {
  try {
    return new URL(`http://[${text}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
}

const isMapped = (b: Uint8Array) => b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;

describe('ip/ address text', () => {
  it('prints IPv6 as RFC 5952 says: lower case, the longest zero run, the first of equal runs, IPv4-mapped in mixed notation', () => {
    for (const [written, printed] of EDGE_IPV6) assert.equal(print(written), printed, written);
    for (const a of EDGE_IPV4) assert.equal(print(a), a);
    assert.equal(formatAddress(parseAddress('FD00::1')), 'fd00::1', 'an Address prints as its bytes do');
  });

  it("prints what Node's URL prints for random IPv6 addresses (IPv4-mapped: ::ffff:a.b.c.d), and reads back every writing", () => {
    const rnd = prng(5952);
    for (let i = 0; i < 20000; i++) {
      const b = randomIpv6(rnd);
      const text = formatIpv6(b);
      const expected = isMapped(b) ? `::ffff:${b[12]}.${b[13]}.${b[14]}.${b[15]}` : urlIpv6(text);
      assert.equal(text, expected, Buffer.from(b).toString('hex'));
      for (const w of [text, ...otherWritings(b)]) assert.deepEqual(parseAddress(w), { family: 6, bytes: b }, w);
    }
    for (let i = 0; i < 2000; i++) {
      const b = randomIpv4(rnd);
      assert.deepEqual(parseAddress(formatIpv4(b)), { family: 4, bytes: b });
    }
  });

  it('reads at an offset and leaves the bytes around alone', () => {
    const out = new Uint8Array(24).fill(7);
    assert.ok(parseIpv6Into('fd00::1:2', out, 4), 'parseIpv6Into refused fd00::1:2');
    assert.deepEqual([...out.subarray(0, 4)], [7, 7, 7, 7]);
    assert.deepEqual([...out.subarray(20)], [7, 7, 7, 7]);
    assert.equal(formatIpv6(out, 4), 'fd00::1:2');
    assert.ok(parseIpv4Into('192.0.2.1', out, 20), 'parseIpv4Into refused 192.0.2.1');
    assert.equal(formatIpv4(out, 20), '192.0.2.1');
    for (const tooLong of ['1:2:3:4:5:6:7:1.2.3.4', '1:2:3:4:5:6:7:8:9', '1::2:3:4:5:6:7:8:9']) {
      out.fill(7);
      assert.equal(parseIpv6Into(tooLong, out, 4), false, tooLong);
      assert.deepEqual([...out.subarray(20)], [7, 7, 7, 7], `${tooLong} wrote past its 16 octets`);
    }
  });

  it("accepts exactly the IPv6 text Node's URL accepts and the IPv4 text net.isIPv4 accepts (mutated addresses)", () => {
    const rnd = prng(4291);
    const alphabet = '0123456789abcdefABCDEF:.';
    let accepted = 0;
    for (let i = 0; i < 30000; i++) {
      const b = randomIpv6(rnd);
      let s = rnd() < 0.5 ? formatIpv6(b) : otherWritings(b)[Math.floor(rnd() * 4)];
      if (rnd() < 0.2) s = formatIpv4(randomIpv4(rnd));
      for (let k = Math.floor(rnd() * 3); k > 0; k--) {
        const at = Math.floor(rnd() * (s.length + 1));
        const c = alphabet[Math.floor(rnd() * alphabet.length)];
        const op = Math.floor(rnd() * 3);
        s = s.slice(0, at) + (op === 1 ? '' : c) + s.slice(op === 0 ? at : at + 1);
      }
      if (s.includes(':')) {
        const ours = parseIpv6Into(s, new Uint8Array(16));
        assert.equal(ours, urlIpv6(s) !== undefined, s);
        if (ours) accepted++;
      } else {
        assert.equal(parseIpv4Into(s, new Uint8Array(4)), isIPv4(s), s);
      }
    }
    assert.ok(accepted > 5000 && accepted < 25000, `a useful mix of good and bad text (${accepted} accepted)`);
  });

  it('refuses malformed addresses, naming the field', () => {
    const bad = [
      '10.0.0',
      '10.0.0.256',
      '10.0.0.1.2',
      '1..2.3',
      '.1.2.3',
      '1.2.3.',
      ' 10.0.0.1',
      '10.0.0.1 ',
      'x',
      '',
      '010.0.0.1',
      '10.00.0.1', // leading zeros: octal to some parsers, so refused
      'fd00:::1',
      '1:2:3:4:5:6:7:8:9',
      '1:2:3:4:5:6:7',
      '1::2::3',
      ':1::2',
      '1::2:',
      '12345::',
      '::g',
      '1:2:3:4::5:6:7:8',
      'fe80::1%eth0',
      '1.2.3.4::',
      '::1.2.3.4:5',
      '::1.2.3',
      '1:2:3:4:5:6:7:1.2.3.4',
      '::ffff:01.2.3.4',
    ];
    for (const text of bad) {
      assert.throws(
        () => parseAddress(text, 'spec.peerIP'),
        (e: unknown) => {
          assert.ok(e instanceof AddressError, text);
          assert.equal(e.field, 'spec.peerIP');
          assert.equal(e.value, text);
          assert.equal(e.message, `spec.peerIP: ${JSON.stringify(text)} is not an IPv4 or IPv6 address`);
          return true;
        },
      );
    }
    assert.throws(() => parseAddress(undefined as unknown as string, 'nodeIp'), /^AddressError: nodeIp: undefined is not a string$/);
    assert.throws(() => formatAddress(new Uint8Array(5)), RangeError);
  });

  it('converts to and from bigint for arithmetic', () => {
    assert.equal(addressValue(parseAddress('10.0.0.1').bytes), 0x0a000001n);
    assert.equal(addressValue(parseAddress('255.255.255.255').bytes), 0xffffffffn);
    assert.equal(addressValue(parseAddress('fd00::1:2').bytes), 0xfd000000000000000000000000010002n);
    assert.equal(formatAddress(addressFromValue(6, 0xfd000000000000000000000000010002n).bytes), 'fd00::1:2');
    assert.equal(formatAddress(addressFromValue(4, 0x0a000001n + 255n).bytes), '10.0.1.0');
    assert.throws(() => addressFromValue(4, 1n << 32n), RangeError);
    assert.throws(() => addressFromValue(6, -1n), RangeError);
    const rnd = prng(128);
    for (let i = 0; i < 1000; i++) {
      const b = randomIpv6(rnd);
      assert.deepEqual(addressFromValue(6, addressValue(b)).bytes, b);
    }
  });
});

describe('ip/ IPv4 addresses as 32-bit numbers', () => {
  it('reads a dotted quad as an unsigned number, the first octet highest', () => {
    const cases: Array<[string, number]> = [
      ['0.0.0.0', 0],
      ['10.0.0.1', 0x0a000001],
      ['127.255.255.255', 0x7fffffff],
      ['128.0.0.1', 0x80000001], // past int32: still positive
      ['192.0.2.33', 0xc0000221],
      ['255.255.255.255', 0xffffffff],
    ];
    for (const [text, n] of cases) {
      assert.equal(parseIpv4Number(text, 'routerId'), n, text);
      assert.equal(ipv4NumberAt(text), n, text);
      assert.equal(formatIpv4Number(n), text, text);
    }
  });

  it('agrees with the byte reader and the printer on random addresses', () => {
    const rnd = prng(32);
    for (let i = 0; i < 5000; i++) {
      const b = randomIpv4(rnd);
      const text = formatIpv4(b);
      const n = parseIpv4Number(text);
      assert.equal(n, Buffer.from(b).readUInt32BE(0), text);
      assert.equal(formatIpv4Number(n), text);
    }
  });

  it('reads the part of a text it is told to, without slicing it', () => {
    assert.equal(ipv4NumberAt('10.0.1.5/24', 0, 8), 0x0a000105);
    assert.equal(ipv4NumberAt('via 10.0.1.5', 4), 0x0a000105);
    assert.equal(ipv4NumberAt('10.0.1.5/24'), -1, 'the whole text is not a dotted quad');
  });

  it('refuses what is not a dotted quad: -1 from the hot-path form, an AddressError naming the field from the other', () => {
    for (const text of [
      '',
      '10.0.0',
      '10.0.0.256',
      '10.0.0.1.2',
      '1..2.3',
      ' 10.0.0.1',
      '010.0.0.1',
      '10.0.0.1/32',
      '::1',
      '::ffff:10.0.0.1',
    ]) {
      assert.equal(ipv4NumberAt(text), -1, text);
      assert.throws(
        () => parseIpv4Number(text, 'bgpId'),
        (e: unknown) => {
          assert.ok(e instanceof AddressError, text);
          assert.equal(e.field, 'bgpId');
          assert.equal(e.message, `bgpId: ${JSON.stringify(text)} is not an IPv4 address`);
          return true;
        },
      );
    }
    assert.throws(() => parseIpv4Number(7 as unknown as string, 'nextHop'), /^AddressError: nextHop: 7 is not a string$/);
    assert.throws(() => parseIpv4Number('x'), /^AddressError: address: "x" is not an IPv4 address$/, 'the field defaults to "address"');
  });

  it('prints only unsigned 32-bit integers', () => {
    for (const n of [-1, 2 ** 32, 1.5, Number.NaN]) {
      assert.throws(
        () => formatIpv4Number(n),
        (e: unknown) => e instanceof RangeError && e.message === `${n} is not an IPv4 address value`,
        String(n),
      );
    }
  });
});
