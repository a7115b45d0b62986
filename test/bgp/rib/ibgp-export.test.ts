// The export of an external route to internal peers, done on the set's bytes, must give the
// octets the general way gives (decode, LOCAL_PREF added, unrecognised attributes passed on,
// NEXT_HOP written, canonical encoding): on every attribute set of a real dump, and on the
// cases real traffic rarely shows.
import assert from 'node:assert/strict';
import {
  AttrFlag,
  BgpError,
  decodeMessage,
  decodePathAttributes,
  encodeMessage,
  receivedAttributes,
  type PathAttributes,
} from '../../../bgp/codec/index.js';
import { readMrtFile } from '../../../bgp/mrt/index.js';
import { Rib, type RibPeer } from '../../../bgp/rib/index.js';
import { attributesKey, receivedKey } from '../../../bgp/rib/attr-set.js';
import { ibgpExportBytes } from '../../../bgp/rib/ibgp-export.js';
import { passOnUnrecognised } from '../../../bgp/rib/pass-on.js';
import { drain, mrtPeer } from '../../support/rib.js';
import { parseIpv4Number } from '../../../ip/index.js';

const MRT = new URL('../../data/updates.20190101.0000.gz', import.meta.url).pathname;
const LOCAL_PREF = 100;

/** What UpdateGroup.compute does for an external route to an internal group without policy. */
function generalWay(key: string, nextHop: string | undefined): Buffer {
  const a: PathAttributes = { ...decodePathAttributes(Buffer.from(key, 'latin1')) };
  if (a.unknown !== undefined) {
    const kept = passOnUnrecognised(a.unknown);
    if (kept) a.unknown = kept;
    else delete a.unknown;
  }
  if (a.localPref === undefined) a.localPref = LOCAL_PREF;
  if (nextHop !== undefined) a.nextHop = nextHop;
  return encodeMessage({ type: 'update', withdrawn: [], attributes: a, nlri: [] }, { extendedMessage: true }).subarray(23);
}

function bytesWay(key: string, nextHop: string | undefined): Buffer | undefined {
  const b = ibgpExportBytes(key, nextHop === undefined ? -1 : parseIpv4Number(nextHop), LOCAL_PREF);
  return b && Buffer.from(b);
}

/** One attribute: flags, type, value (the length as the flags say). */
function attr(flags: number, type: number, value: number[]): number[] {
  return (flags & AttrFlag.EXTENDED_LENGTH) !== 0
    ? [flags, type, value.length >> 8, value.length & 0xff, ...value]
    : [flags, type, value.length, ...value];
}

const ORIGIN = attr(0x40, 1, [0]);
const AS_PATH = attr(0x40, 2, [2, 1, 0, 0, 0xfd, 0xe9]);

describe('export to internal peers on bytes (ibgp-export)', function () {
  this.timeout(120_000);

  it("gives the general way's octets for every attribute set of a route collector's dump", () => {
    const keys = new Set<string>();
    for (const r of readMrtFile(MRT)) {
      if (r.kind !== 'message' || !r.fourOctetAs) continue;
      try {
        const m = decodeMessage(r.message, { fourOctetAs: true });
        const raw = m.type === 'update' ? receivedAttributes(m) : undefined;
        if (raw !== undefined) keys.add(receivedKey(raw, true));
      } catch (e) {
        if (!(e instanceof BgpError)) throw e;
      }
    }
    assert.ok(keys.size > 1000, `only ${keys.size} attribute sets in the dump`);
    let onBytes = 0;
    for (const key of keys) {
      const bytes = bytesWay(key, '192.0.2.1');
      if (bytes === undefined) continue;
      onBytes++;
      assert.deepEqual(bytes, generalWay(key, '192.0.2.1'), `set ${Buffer.from(key, 'latin1').toString('hex')}`);
      assert.deepEqual(bytesWay(key, undefined), generalWay(key, undefined), 'without NEXT_HOP (IPv6)');
    }
    // Real traffic is nearly all in ascending order: the bytes must be the common way, not a rare one.
    assert.ok(onBytes > keys.size * 0.95, `${onBytes} of ${keys.size} sets exported on bytes`);
  });

  it('exports every route of the dump as a group that takes the general way does', () => {
    // Two internal groups alike but for an export policy that accepts everything: a policy
    // takes the group the general way (decode, edit, encode), its absence the way on bytes.
    const rib = new Rib({ localAs: 64512, routerId: '192.0.2.254', collectChanges: false });
    const families = ['ipv4-unicast', 'ipv6-unicast'] as const;
    const internal = {
      asn: 64512,
      families: [...families],
      localAddress: '192.0.2.254',
      localAddressV6: '2001:db8::fe',
      fourOctetAs: true,
    };
    const bytes = rib.addPeer({ ...internal, address: '192.0.2.101', routerId: '192.0.2.101' });
    const general = rib.addPeer({ ...internal, address: '192.0.2.102', routerId: '192.0.2.102', exportPolicy: () => true });
    const peers = new Map<string, RibPeer>();
    for (const r of readMrtFile(MRT)) {
      if (r.kind !== 'message') continue;
      const peer = mrtPeer(rib, peers, r);
      try {
        const m = decodeMessage(r.message, { fourOctetAs: r.fourOctetAs });
        if (m.type === 'update') rib.update(peer, m);
      } catch (e) {
        if (!(e instanceof BgpError) || e.update === undefined) throw e;
        if (e.action === 'treat-as-withdraw') rib.treatAsWithdraw(peer, e.update);
        else rib.update(peer, e.update);
      }
    }
    const outBytes = rib.adjRibOut(bytes)!;
    const outGeneral = rib.adjRibOut(general)!;
    drain(outBytes);
    drain(outGeneral);
    let compared = 0;
    for (const f of families) {
      for (const route of rib.routes(f)) {
        const [x] = outBytes.sentFor(f, route.prefix);
        const [y] = outGeneral.sentFor(f, route.prefix);
        assert.ok(x !== undefined && y !== undefined, `${route.prefix} sent to both`);
        assert.ok(x.attrBytes.equals(y.attrBytes), `${route.prefix}: ${x.attrBytes.toString('hex')} / ${y.attrBytes.toString('hex')}`);
        assert.deepEqual(x.mpNextHop, y.mpNextHop, route.prefix);
        compared++;
      }
    }
    assert.ok(compared > 10_000, `only ${compared} routes compared`);
  });

  it("gives the canonical encoding's octets for sets built in code", () => {
    const a: PathAttributes = {
      origin: 'incomplete',
      asPath: [
        { type: 'sequence', asns: [65001, 4200000000] },
        { type: 'set', asns: [1, 2] },
      ],
      med: 7,
      atomicAggregate: true,
      aggregator: { asn: 65001, address: '192.0.2.9' },
      communities: [65001 * 65536 + 1],
      extendedCommunities: [Buffer.from([0, 2, 0xfd, 0xe9, 0, 0, 0, 1])],
      largeCommunities: [[65001, 1, 2]],
    };
    const key = attributesKey(a);
    assert.deepEqual(bytesWay(key, '198.51.100.7'), generalWay(key, '198.51.100.7'));
  });

  it('sets the Partial bit on an unrecognised optional transitive attribute and keeps a non-transitive one back', () => {
    const key = Buffer.from([...ORIGIN, ...AS_PATH, ...attr(0x80, 40, [1, 2]), ...attr(0xc0, 99, [3, 4, 5])]).toString('latin1');
    const bytes = bytesWay(key, '192.0.2.1')!;
    assert.deepEqual(bytes, generalWay(key, '192.0.2.1'));
    const a = decodePathAttributes(bytes);
    assert.deepEqual(a.unknown, [{ type: 99, flags: 0xe0, value: Buffer.from([3, 4, 5]) }]);
    assert.equal(a.localPref, LOCAL_PREF);
    assert.equal(a.nextHop, '192.0.2.1');
  });

  it('writes the extended length only where the value needs it, as the encoder does', () => {
    const communities = Array.from({ length: 4 * 70 }, (_, i) => i & 0xff); // 280 octets
    const key = Buffer.from([...ORIGIN, ...AS_PATH, ...attr(0x90, 4, [0, 0, 0, 5]), ...attr(0xd0, 8, communities)]).toString('latin1');
    const bytes = bytesWay(key, '192.0.2.1')!;
    assert.deepEqual(bytes, generalWay(key, '192.0.2.1'));
    assert.equal(bytes.indexOf(Buffer.from([0x80, 4, 4, 0, 0, 0, 5])) >= 0, true, 'MED without the extended-length bit');
    assert.equal(bytes.indexOf(Buffer.from([0xd0, 8, 1, 24])) >= 0, true, 'COMMUNITIES of 280 octets with it');
  });

  it('keeps a LOCAL_PREF the set already has', () => {
    const key = Buffer.from([...ORIGIN, ...AS_PATH, ...attr(0x40, 5, [0, 0, 0, 200])]).toString('latin1');
    const bytes = bytesWay(key, '192.0.2.1')!;
    assert.deepEqual(bytes, generalWay(key, '192.0.2.1'));
    assert.equal(decodePathAttributes(bytes).localPref, 200);
  });

  it('leaves to the general way what it does not edit', () => {
    const outOfOrder = Buffer.from([...AS_PATH, ...ORIGIN]).toString('latin1');
    assert.equal(bytesWay(outOfOrder, '192.0.2.1'), undefined, 'attributes out of order');
    for (const [type, value] of [
      [3, [192, 0, 2, 1]],
      [9, [192, 0, 2, 9]],
      [10, [192, 0, 2, 9]],
      [17, [2, 1, 0, 0, 0xfd, 0xe9]],
    ] as const) {
      const key = Buffer.from([...ORIGIN, ...AS_PATH, ...attr(type === 3 ? 0x40 : type === 17 ? 0xc0 : 0x80, type, [...value])]).toString(
        'latin1',
      );
      assert.equal(bytesWay(key, '192.0.2.1'), undefined, `attribute ${type}`);
    }
    const truncated = Buffer.from([...ORIGIN, 0x40, 2, 9, 2]).toString('latin1');
    assert.equal(bytesWay(truncated, '192.0.2.1'), undefined, 'a value past the end');
  });
});
