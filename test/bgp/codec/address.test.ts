// The BGP codec and the RIB keep their own byte and integer paths for speed (NLRI decoding
// prints IPv4 prefixes inline, the RIB keys IPv4 prefixes as integers); here they must read
// and print every address and prefix exactly as ip/ does.
import assert from 'node:assert/strict';
import { decodeMessage, encodeMessage, parsePrefix, type UpdateMessage } from '../../../bgp/index.js';
import { writeIpv4, writeIpv6 } from '../../../bgp/codec/address.js';
import { formatKey, prefixKey } from '../../../bgp/rib/prefix.js';
import { cidrNetwork, formatAddress, formatCidr, parseAddress, parseCidr, type Cidr } from '../../../ip/index.js';
import { prng } from '../../support/prng.js';
import { EDGE_IPV4, EDGE_IPV6, otherWritings, randomIpv4, randomIpv6 } from '../../support/ip-samples.js';

const rnd = prng(4271);

function v6Addresses(n: number): Uint8Array[] {
  return [...EDGE_IPV6.map(([w]) => parseAddress(w).bytes), ...Array.from({ length: n }, () => randomIpv6(rnd))];
}

function v4Addresses(n: number): Uint8Array[] {
  return [...EDGE_IPV4.map((a) => parseAddress(a).bytes), ...Array.from({ length: n }, () => randomIpv4(rnd))];
}

/** A network of a random length (every length for the edge cases) over the address. */
function network(bytes: Uint8Array, length: number): Cidr {
  return cidrNetwork({ family: bytes.length === 4 ? 4 : 6, bytes, prefixLength: length });
}

/** An UPDATE that carries `address` in every attribute that holds one (IPv4: NEXT_HOP must be a host, so not there). */
function update(address: string, prefixes: string[], ipv6: boolean): UpdateMessage {
  const nlri = prefixes.map((prefix) => ({ prefix, pathId: undefined }));
  return ipv6
    ? {
        type: 'update',
        withdrawn: [],
        nlri: [],
        attributes: { origin: 'igp', asPath: [], mpReach: { afi: 2, safi: 1, nextHop: address, linkLocalNextHop: 'FE80:0:0:0::1', nlri } },
      }
    : {
        type: 'update',
        withdrawn: nlri,
        nlri,
        attributes: {
          origin: 'igp',
          asPath: [],
          nextHop: '192.0.2.1',
          originatorId: address,
          clusterList: [address],
          aggregator: { asn: 65000, address },
        },
      };
}

describe('bgp/ reads and prints addresses as ip/ does', () => {
  it("an UPDATE decodes to ip/'s text for every prefix and next hop, whatever writing went in", () => {
    for (const b of v6Addresses(3000)) {
      const lengths = Array.from({ length: 4 }, () => Math.floor(rnd() * 129));
      const writings = [formatAddress(b), ...otherWritings(b)];
      const nets = lengths.map((l) => network(b, l));
      const sent = nets.map((c, i) => `${i === 0 ? formatAddress(c.bytes) : otherWritings(c.bytes)[i - 1]}/${c.prefixLength}`);
      const m = decodeMessage(encodeMessage(update(writings[Math.floor(rnd() * writings.length)], sent, true))) as UpdateMessage;
      assert.equal(m.attributes.mpReach?.nextHop, formatAddress(b));
      assert.equal(m.attributes.mpReach?.linkLocalNextHop, 'fe80::1');
      assert.deepEqual(
        m.attributes.mpReach?.nlri?.map((n) => n.prefix),
        nets.map(formatCidr),
      );
    }
    for (const b of v4Addresses(3000)) {
      const nets = Array.from({ length: 4 }, () => network(b, Math.floor(rnd() * 33)));
      const m = decodeMessage(encodeMessage(update(formatAddress(b), nets.map(formatCidr), false))) as UpdateMessage;
      const a = m.attributes;
      assert.deepEqual([a.originatorId, a.clusterList?.[0], a.aggregator?.address], Array(3).fill(formatAddress(b)));
      assert.deepEqual(
        m.nlri.map((n) => n.prefix),
        nets.map(formatCidr),
      );
      assert.deepEqual(
        m.withdrawn.map((n) => n.prefix),
        nets.map(formatCidr),
      );
    }
  });

  it("a RIB key prints as ip/ prints the prefix's network, host bits and all", () => {
    for (const b of [...v6Addresses(3000), ...v4Addresses(3000)]) {
      const family = b.length === 4 ? 'ipv4-unicast' : 'ipv6-unicast';
      const length = Math.floor(rnd() * (b.length * 8 + 1));
      const text = `${formatAddress(b)}/${length}`;
      const expected = formatCidr(cidrNetwork(parseCidr(text, 'prefix', false)));
      assert.equal(formatKey(family, prefixKey(family, text)), expected, text);
      if (b.length === 16) {
        const other = `${otherWritings(b)[Math.floor(rnd() * 4)]}/${length}`;
        assert.equal(formatKey(family, prefixKey(family, other)), expected, other);
      }
    }
  });

  it('the codec and the RIB accept exactly the addresses and prefixes ip/ accepts (mutated text)', () => {
    const alphabet = '0123456789abcdefABCDEF:./';
    const accepts = (f: () => unknown) => {
      try {
        f();
        return true;
      } catch (e) {
        assert.ok(e instanceof TypeError, String(e));
        return false;
      }
    };
    let good = 0;
    for (let i = 0; i < 20000; i++) {
      const b = rnd() < 0.5 ? randomIpv4(rnd) : randomIpv6(rnd);
      let s = `${rnd() < 0.5 || b.length === 4 ? formatAddress(b) : otherWritings(b)[0]}/${Math.floor(rnd() * (b.length * 8 + 1))}`;
      for (let k = Math.floor(rnd() * 3); k > 0; k--) {
        const at = Math.floor(rnd() * (s.length + 1));
        const c = alphabet[Math.floor(rnd() * alphabet.length)];
        const op = Math.floor(rnd() * 3);
        s = s.slice(0, at) + (op === 1 ? '' : c) + s.slice(op === 0 ? at : at + 1);
      }
      let ours: Cidr | undefined;
      try {
        ours = parseCidr(s, 'prefix', false);
      } catch {
        ours = undefined;
      }
      if (ours) good++;
      assert.equal(
        accepts(() => parsePrefix(s)),
        ours !== undefined,
        `codec parsePrefix ${s}`,
      );
      assert.equal(
        accepts(() => prefixKey('ipv4-unicast', s)),
        ours?.family === 4,
        `RIB IPv4 key ${s}`,
      );
      assert.equal(
        accepts(() => prefixKey('ipv6-unicast', s)),
        ours?.family === 6,
        `RIB IPv6 key ${s}`,
      );
      const addr = s.split('/')[0];
      let family: number | undefined;
      try {
        family = parseAddress(addr).family;
      } catch {
        family = undefined;
      }
      assert.equal(
        accepts(() => writeIpv4(addr, Buffer.alloc(4), 0)),
        family === 4,
        `codec writeIpv4 ${addr}`,
      );
      assert.equal(
        accepts(() => writeIpv6(addr, Buffer.alloc(16), 0)),
        family === 6,
        `codec writeIpv6 ${addr}`,
      );
    }
    assert.ok(good > 4000 && good < 16000, `a useful mix of good and bad text (${good} accepted)`);
  });
});
