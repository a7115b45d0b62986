// What each kind of peer gets: the rules of RFC 4271 §5 and §9.1.3, RFC 1997 communities,
// ADD-PATH send and 2-octet peers, checked on the decoded UPDATEs the Adj-RIB-Out produces.
import assert from 'node:assert/strict';
import { AS_TRANS } from '../../../bgp/codec/index.js';
import { NO_ADVERTISE, NO_EXPORT, NO_EXPORT_SUBCONFED, Rib, type RibPeer, type RibPeerConfig } from '../../../bgp/rib/index.js';
import { announced, drain, seq, v4Update, v6Update, withdrawnOf } from '../../support/rib.js';

function setup(extra: Partial<RibPeerConfig> = {}) {
  const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
  const fam = { families: ['ipv4-unicast', 'ipv6-unicast'] as const };
  const e1 = rib.addPeer({
    address: '192.0.2.1',
    asn: 65001,
    routerId: '1.1.1.1',
    localAddress: '192.0.2.100',
    localAddressV6: '2001:db8::100',
    linkLocalAddressV6: 'fe80::100',
    families: [...fam.families],
    ...extra,
  });
  const e2 = rib.addPeer({
    address: '192.0.2.2',
    asn: 65002,
    routerId: '1.1.1.2',
    localAddress: '192.0.2.100',
    localAddressV6: '2001:db8::100',
    families: [...fam.families],
  });
  const i1 = rib.addPeer({
    address: '10.0.0.1',
    asn: 65000,
    routerId: '2.2.2.1',
    localAddress: '10.0.0.100',
    localAddressV6: '2001:db8:1::100',
    families: [...fam.families],
  });
  const i2 = rib.addPeer({
    address: '10.0.0.2',
    asn: 65000,
    routerId: '2.2.2.2',
    localAddress: '10.0.0.100',
    localAddressV6: '2001:db8:1::100',
    families: [...fam.families],
  });
  for (const p of [e1, e2, i1, i2]) drain(rib.adjRibOut(p)!); // the (empty) initial table and End-of-RIB
  return { rib, e1, e2, i1, i2 };
}

const got = (rib: Rib, p: RibPeer) => announced(drain(rib.adjRibOut(p)!).messages);

describe('rib: rules of the road', () => {
  it('to eBGP: our AS prepended, next hop self, no LOCAL_PREF, a learned MED dropped', () => {
    const { rib, e2, i1 } = setup();
    rib.update(i1, v4Update(['10.1.0.0/16'], { asPath: seq(65100), nextHop: '10.0.0.1', localPref: 300, med: 7 }));
    const [r] = got(rib, e2);
    assert.equal(r.prefix, '10.1.0.0/16');
    assert.deepEqual(r.attributes.asPath, seq(65000, 65100));
    assert.equal(r.attributes.nextHop, '192.0.2.100');
    assert.equal(r.attributes.localPref, undefined);
    assert.equal(r.attributes.med, undefined);
  });

  it('to eBGP: a MED we set on our own route is kept', () => {
    const { rib, e2 } = setup();
    rib.originate('10.9.0.0/16', { attributes: { med: 42 } });
    const [r] = got(rib, e2);
    assert.equal(r.attributes.med, 42);
    assert.deepEqual(r.attributes.asPath, seq(65000));
    assert.equal(r.attributes.nextHop, '192.0.2.100');
  });

  it('to eBGP over IPv6: MP_REACH with our global and link-local addresses', () => {
    const { rib, e1, e2 } = setup();
    rib.update(e2, v6Update(['2001:db8:77::/48'], { asPath: seq(65002) }, '2001:db8::2'));
    const [r] = got(rib, e1);
    assert.equal(r.prefix, '2001:db8:77::/48');
    assert.equal(r.attributes.mpReach!.nextHop, '2001:db8::100');
    assert.equal(r.attributes.mpReach!.linkLocalNextHop, 'fe80::100');
    assert.deepEqual(r.attributes.asPath, seq(65000, 65002));
  });

  it('to iBGP: attributes kept, LOCAL_PREF set (default 100), next hop unchanged; ours get next hop self', () => {
    const { rib, e1, i1 } = setup();
    rib.update(e1, v4Update(['10.1.0.0/16'], { asPath: seq(65001), nextHop: '192.0.2.1', med: 7 }));
    rib.originate('10.9.0.0/16');
    const rs = got(rib, i1);
    const learned = rs.find((r) => r.prefix === '10.1.0.0/16')!;
    assert.deepEqual(learned.attributes.asPath, seq(65001));
    assert.equal(learned.attributes.localPref, 100);
    assert.equal(learned.attributes.med, 7);
    assert.equal(learned.attributes.nextHop, '192.0.2.1');
    const own = rs.find((r) => r.prefix === '10.9.0.0/16')!;
    assert.equal(own.attributes.nextHop, '10.0.0.100');
    assert.deepEqual(own.attributes.asPath, []);
  });

  it('iBGP-learned routes never go to iBGP peers, but do go to eBGP peers', () => {
    const { rib, e1, i1, i2 } = setup();
    rib.update(i1, v4Update(['10.1.0.0/16'], { asPath: seq(65100), nextHop: '10.0.0.1', localPref: 100 }));
    assert.deepEqual(got(rib, i2), []);
    assert.equal(got(rib, e1).length, 1);
  });

  it('the reflection hook lets iBGP routes through to iBGP peers and adds its attributes', () => {
    const rib = new Rib({
      localAs: 65000,
      routerId: '10.255.0.1',
      clusterId: '10.255.0.1',
      reflection: {
        mayReflect: (from, to) => from.config.routeReflectorClient === true || to.routeReflectorClient,
        reflect: (a, from) => {
          a.originatorId ??= from.routerId;
          a.clusterList = ['10.255.0.1', ...(a.clusterList ?? [])];
        },
      },
    });
    const c1 = rib.addPeer({ address: '10.0.0.1', asn: 65000, routerId: '2.2.2.1', routeReflectorClient: true });
    const c2 = rib.addPeer({ address: '10.0.0.2', asn: 65000, routerId: '2.2.2.2', routeReflectorClient: true });
    drain(rib.adjRibOut(c2)!);
    rib.update(c1, v4Update(['10.1.0.0/16'], { nextHop: '10.0.0.1', localPref: 100, asPath: [] }));
    const [r] = got(rib, c2);
    assert.equal(r.attributes.originatorId, '2.2.2.1');
    assert.deepEqual(r.attributes.clusterList, ['10.255.0.1']);
    assert.equal(r.attributes.nextHop, '10.0.0.1');
    // A route that comes back with our cluster ID is a loop.
    rib.update(c2, v4Update(['10.2.0.0/16'], { nextHop: '10.0.0.2', clusterList: ['10.255.0.1'], asPath: [] }));
    assert.equal(rib.lookup('10.2.0.0/16'), undefined);
    assert.equal(c2.stats.loopRejected, 1);
  });

  it('a route is not sent back to the peer it came from, unless allowOwnRoutes', () => {
    const { rib, e1 } = setup();
    rib.update(e1, v4Update(['10.1.0.0/16'], { asPath: seq(65001) }));
    assert.deepEqual(got(rib, e1), []);
    const s = setup({ allowOwnRoutes: true });
    s.rib.update(s.e1, v4Update(['10.1.0.0/16'], { asPath: seq(65001) }));
    assert.equal(got(s.rib, s.e1).length, 1);
  });

  it('NO_EXPORT and NO_EXPORT_SUBCONFED stop at eBGP peers; NO_ADVERTISE goes to nobody', () => {
    const { rib, e1, e2, i1 } = setup();
    rib.update(e1, v4Update(['10.1.0.0/16'], { asPath: seq(65001), communities: [NO_EXPORT] }));
    rib.update(e1, v4Update(['10.2.0.0/16'], { asPath: seq(65001), communities: [NO_EXPORT_SUBCONFED] }));
    rib.update(e1, v4Update(['10.3.0.0/16'], { asPath: seq(65001), communities: [NO_ADVERTISE] }));
    assert.deepEqual(got(rib, e2), []);
    assert.deepEqual(
      got(rib, i1)
        .map((r) => r.prefix)
        .sort(),
      ['10.1.0.0/16', '10.2.0.0/16'],
    );
  });

  it('a best path that becomes unexportable is withdrawn from the peers that had it', () => {
    const { rib, e1, e2 } = setup();
    rib.update(e1, v4Update(['10.1.0.0/16'], { asPath: seq(65001) }));
    assert.equal(got(rib, e2).length, 1);
    rib.update(e1, v4Update(['10.1.0.0/16'], { asPath: seq(65001), communities: [NO_EXPORT] }));
    const m = drain(rib.adjRibOut(e2)!).messages;
    assert.deepEqual(withdrawnOf(m), [{ prefix: '10.1.0.0/16', pathId: undefined }]);
    assert.deepEqual(announced(m), []);
  });

  it('ADD-PATH send: every path of a prefix, each with a path id that stays the same while the path lives', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1', localAddress: '192.0.2.100' });
    const b = rib.addPeer({ address: '192.0.2.2', asn: 65002, routerId: '1.1.1.2', localAddress: '192.0.2.100' });
    const opts = { addPath: { 'ipv4-unicast': true } };
    const i = rib.addPeer({ address: '10.0.0.1', asn: 65000, routerId: '2.2.2.1', sendOptions: opts });
    drain(rib.adjRibOut(i)!, opts);
    rib.update(a, v4Update(['10.1.0.0/16'], { asPath: seq(65001), nextHop: '192.0.2.1' }));
    rib.update(b, v4Update(['10.1.0.0/16'], { asPath: seq(65002, 9), nextHop: '192.0.2.2' }));
    const first = announced(drain(rib.adjRibOut(i)!, opts).messages);
    assert.equal(first.length, 2);
    const idOf = (nh: string, list: typeof first) => list.find((r) => r.attributes.nextHop === nh)!.pathId;
    const ida = idOf('192.0.2.1', first);
    const idb = idOf('192.0.2.2', first);
    assert.notEqual(ida, idb);
    // b's path changes (still not best): only it is sent again, under the same id.
    rib.update(b, v4Update(['10.1.0.0/16'], { asPath: seq(65002, 9), nextHop: '192.0.2.2', med: 5 }));
    const second = announced(drain(rib.adjRibOut(i)!, opts).messages);
    assert.deepEqual(
      second.map((r) => r.pathId),
      [idb],
    );
    // a's path goes: its id is withdrawn, b's stays.
    rib.withdraw(a, 'ipv4-unicast', [{ prefix: '10.1.0.0/16' }]);
    const m = drain(rib.adjRibOut(i)!, opts).messages;
    assert.deepEqual(withdrawnOf(m), [{ prefix: '10.1.0.0/16', pathId: ida }]);
  });

  it('a 2-octet peer gets AS_TRANS in AS_PATH and the real path in AS4_PATH (RFC 6793)', () => {
    const rib = new Rib({ localAs: 4200000000, routerId: '10.255.0.1' });
    const src = rib.addPeer({ address: '192.0.2.1', asn: 4200000001, routerId: '1.1.1.1' });
    const old = rib.addPeer({
      address: '192.0.2.2',
      asn: 65002,
      routerId: '1.1.1.2',
      localAddress: '192.0.2.100',
      fourOctetAs: false,
      sendOptions: { fourOctetAs: false },
    });
    rib.update(src, v4Update(['10.1.0.0/16'], { asPath: seq(4200000001, 65010) }));
    const [r] = announced(drain(rib.adjRibOut(old)!, { fourOctetAs: false }).messages);
    assert.deepEqual(r.attributes.asPath, seq(AS_TRANS, AS_TRANS, 65010));
    assert.deepEqual(r.attributes.as4Path, seq(4200000000, 4200000001, 65010));
  });

  it('a 2-octet peer: AS4_PATH is merged into AS_PATH on import', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const old = rib.addPeer({ address: '192.0.2.2', asn: 65002, routerId: '1.1.1.2', fourOctetAs: false });
    rib.update(old, v4Update(['10.1.0.0/16'], { asPath: seq(65002, AS_TRANS, 65010), as4Path: seq(4200000001, 65010) }));
    const r = rib.lookup('10.1.0.0/16')!.best;
    assert.deepEqual(r.attributes.asPath, seq(65002, 4200000001, 65010));
    assert.equal(r.attributes.as4Path, undefined);
  });

  it('peers with the same type, AS, policy and next-hop treatment share an update group and its encoded sets', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const src = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
    const members = [1, 2, 3].map((n) =>
      rib.addPeer({ address: `10.0.0.${n}`, asn: 65000, routerId: `2.2.2.${n}`, localAddress: '10.0.0.100' }),
    );
    const other = rib.addPeer({ address: '10.0.0.9', asn: 65000, routerId: '2.2.2.9', localAddress: '10.0.0.100', nextHopSelf: true });
    assert.equal(new Set(members.map((m) => rib.adjRibOut(m)!.group)).size, 1);
    assert.notEqual(rib.adjRibOut(other)!.group, rib.adjRibOut(members[0])!.group);
    rib.update(src, v4Update(['10.1.0.0/16', '10.2.0.0/16'], { asPath: seq(65001) }));
    const group = rib.adjRibOut(members[0])!.group;
    for (const m of members) assert.equal(announced(drain(rib.adjRibOut(m)!).messages).length, 2);
    assert.equal(group.size, 1, 'one exported attribute set for the whole group');
  });
});
