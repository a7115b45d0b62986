// Attribute sets keyed by the bytes of the UPDATE as received and decoded only when asked must
// give, on real traffic, exactly the attributes the eager path gives (the path taken by an
// UPDATE built in code, which carries no received bytes).
import assert from 'node:assert/strict';
import { BgpError, decodeMessage, encodeMessage, receivedAttributes, type UpdateMessage } from '../../../bgp/codec/index.js';
import { readMrtFile } from '../../../bgp/mrt/index.js';
import { Rib, type RibPeer, type RibRoute } from '../../../bgp/rib/index.js';
import { AttrInterner, LoopRule, numbersOf, receivedKey, shareableReceived } from '../../../bgp/rib/attr-set.js';
import { drain, mrtPeer, updatesOf } from '../../support/rib.js';

const MRT = new URL('../../data/updates.20190101.0000.gz', import.meta.url).pathname;
const FAMILIES = ['ipv4-unicast', 'ipv6-unicast'] as const;

interface Replay {
  rib: Rib;
  peers: Map<string, RibPeer>;
}

function replay(localAs: number, fresh: (m: UpdateMessage) => UpdateMessage): { replay: Replay; received: number; updates: number } {
  const rib = new Rib({ localAs, routerId: '192.0.2.254', collectChanges: false });
  const peers = new Map<string, RibPeer>();
  let received = 0;
  let updates = 0;
  for (const r of readMrtFile(MRT)) {
    if (r.kind !== 'message') continue;
    const peer = mrtPeer(rib, peers, r);
    let m: UpdateMessage;
    let withdraw = false;
    try {
      const d = decodeMessage(r.message, { fourOctetAs: r.fourOctetAs });
      if (d.type !== 'update') continue;
      m = d;
    } catch (e) {
      // RFC 7606 as the session applies it: an attribute discarded leaves the rest to apply.
      if (!(e instanceof BgpError) || e.update === undefined) throw e;
      m = e.update;
      withdraw = e.action === 'treat-as-withdraw';
    }
    updates++;
    const given = fresh(m);
    if (receivedAttributes(given) !== undefined) {
      // 2-octet AS numbers would read back as 4-octet ones: such a session's bytes are not offered.
      assert.ok(r.fourOctetAs, 'received bytes offered from a 2-octet AS session');
      received++;
    }
    if (withdraw) rib.treatAsWithdraw(peer, given);
    else rib.update(peer, given);
  }
  return { replay: { rib, peers }, received, updates };
}

function firstPeerAs(): number {
  for (const r of readMrtFile(MRT)) if (r.kind === 'message') return r.peerAs;
  throw new Error('no BGP message in the dump');
}

function routesOf(r: Replay): Map<string, Array<Omit<RibRoute, 'peer'>>> {
  const out = new Map<string, Array<Omit<RibRoute, 'peer'>>>();
  for (const [name, peer] of r.peers) {
    const list: Array<Omit<RibRoute, 'peer'>> = [];
    for (const f of FAMILIES) for (const { peer: _, ...route } of r.rib.adjRibIn(peer, f)) list.push(route);
    out.set(name, list);
  }
  return out;
}

describe('attribute sets kept as received bytes, decoded on demand (MRT dump of a route collector)', function () {
  this.timeout(120_000);

  for (const [what, localAs] of [
    ['every peer external', () => 4_200_000_000],
    ['the first peer internal (its routes loop), the rest external', firstPeerAs],
  ] as const) {
    it(`gives every route the attributes the eager decode gives: ${what}`, () => {
      const lazy = replay(localAs(), (m) => m);
      // A copy carries no received bytes: the RIB re-encodes and keeps the decoded object, as before.
      const eager = replay(localAs(), (m) => ({ ...m }));
      assert.equal(eager.received, 0);
      assert.ok(lazy.received > 50_000, `UPDATEs with received bytes: ${lazy.received} of ${lazy.updates}`);
      const a = routesOf(lazy.replay);
      const b = routesOf(eager.replay);
      let routes = 0;
      for (const [name, list] of b) {
        assert.deepEqual(a.get(name), list, `routes of ${name}`);
        routes += list.length;
      }
      assert.ok(routes > 15_000, `routes: ${routes}`);
      for (const [name, peer] of eager.replay.peers) assert.deepEqual(lazy.replay.peers.get(name)!.stats, peer.stats, `stats of ${name}`);
      assert.deepEqual(lazy.replay.rib.stats(), eager.replay.rib.stats());
      const loops = [...lazy.replay.peers.values()].reduce((n, p) => n + p.stats.loopRejected, 0);
      if (localAs !== firstPeerAs) assert.equal(loops, 0);
      else assert.ok(loops > 0, "the internal peer's routes carry our AS");
    });
  }

  it('a 2-octet AS session offers no bytes, and its AS4_PATH is merged as before', () => {
    const attributes = {
      origin: 'igp' as const,
      asPath: [{ type: 'sequence' as const, asns: [23456, 65001] }],
      nextHop: '192.0.2.1',
      as4Path: [{ type: 'sequence' as const, asns: [4_200_000_001, 65001] }],
    };
    const wire = encodeMessage(
      { type: 'update', withdrawn: [], attributes, nlri: [{ prefix: '198.51.100.0/24' }] },
      { fourOctetAs: false },
    );
    for (const fourOctetAs of [false, true]) {
      const m = decodeMessage(wire, { fourOctetAs: false });
      assert.equal(m.type, 'update');
      if (m.type !== 'update') return;
      assert.equal(receivedAttributes(m), undefined);
      const rib = new Rib({ localAs: 65000, routerId: '192.0.2.254' });
      // A peer the RIB wrongly believes 4-octet still gets the decoded attributes, not the bytes.
      const peer = rib.addPeer({ address: '192.0.2.1', asn: 23456, routerId: '192.0.2.1', fourOctetAs });
      rib.update(peer, m);
      const expected = fourOctetAs ? [23456, 65001] : [4_200_000_001, 65001];
      assert.deepEqual(rib.lookup('198.51.100.0/24')?.best.attributes.asPath, [{ type: 'sequence', asns: expected }]);
      assert.equal(rib.lookup('198.51.100.0/24')?.best.attributes.as4Path, undefined);
    }
  });

  it('a 4-octet AS session offers the bytes; the route keeps neither next hop nor AS4_PATH in its set', () => {
    const attributes = {
      origin: 'igp' as const,
      asPath: [{ type: 'sequence' as const, asns: [4_200_000_001, 65001] }],
      nextHop: '192.0.2.1',
      med: 5,
      localPref: 300,
      as4Path: [{ type: 'sequence' as const, asns: [4_200_000_001] }],
      communities: [0xfde80001],
    };
    const wire = encodeMessage({ type: 'update', withdrawn: [], attributes, nlri: [{ prefix: '198.51.100.0/24' }] }, {});
    const m = decodeMessage(wire, {});
    assert.equal(m.type, 'update');
    if (m.type !== 'update') return;
    assert.ok(receivedAttributes(m) !== undefined, 'receivedAttributes gave nothing for a decoded UPDATE');
    const rib = new Rib({ localAs: 65000, routerId: '192.0.2.254' });
    const peer = rib.addPeer({ address: '192.0.2.1', asn: 4_200_000_001, routerId: '192.0.2.1' });
    rib.update(peer, m);
    const best = rib.lookup('198.51.100.0/24')?.best;
    assert.equal(best?.nextHop, '192.0.2.1');
    // LOCAL_PREF from another AS is ignored (RFC 4271 §5.1.5).
    assert.deepEqual(best?.attributes, { origin: 'igp', asPath: attributes.asPath, med: 5, communities: [0xfde80001] });
    assert.ok(Object.isFrozen(best?.attributes), 'the best path attributes are not frozen');
  });

  it("an exported set's attributes read back from its bytes are those sent, and a 2-octet group's are kept as given", () => {
    const attributes = {
      origin: 'igp' as const,
      asPath: [{ type: 'sequence' as const, asns: [4_200_000_001] }],
      nextHop: '192.0.2.1',
      communities: [0xfde80001],
      unknown: [{ type: 99, flags: 0xc0, value: Buffer.from([1, 2, 3]) }],
    };
    const wire = encodeMessage({ type: 'update', withdrawn: [], attributes, nlri: [{ prefix: '198.51.100.0/24' }] }, {});
    const rib = new Rib({ localAs: 65000, routerId: '192.0.2.254' });
    const from = rib.addPeer({ address: '192.0.2.1', asn: 4_200_000_001, routerId: '192.0.2.1' });
    const four = rib.addPeer({ address: '192.0.2.2', asn: 65002, routerId: '192.0.2.2', localAddress: '192.0.2.254' });
    const two = rib.addPeer({ address: '192.0.2.3', asn: 65003, routerId: '192.0.2.3', localAddress: '192.0.2.254', fourOctetAs: false });
    for (const p of [from, four, two]) drain(rib.adjRibOut(p)!);
    rib.update(from, decodeMessage(wire, {}) as UpdateMessage);
    for (const [peer, options] of [
      [four, {}],
      [two, { fourOctetAs: false }],
    ] as const) {
      const sent = updatesOf(drain(rib.adjRibOut(peer)!, options).messages);
      assert.equal(sent.length, 1);
      const [set] = rib.adjRibOut(peer)!.sentFor('ipv4-unicast', '198.51.100.0/24');
      // Passed on with the Partial bit (RFC 4271 §9), our AS first, our address as next hop.
      const expected = {
        origin: 'igp',
        asPath: [{ type: 'sequence', asns: [65000, 4_200_000_001] }],
        nextHop: '192.0.2.254',
        communities: [0xfde80001],
        unknown: [{ type: 99, flags: 0xe0, value: Buffer.from([1, 2, 3]) }],
      };
      assert.deepEqual(set.attributes, expected);
      assert.ok(Object.isFrozen(set.attributes), 'the set attributes are not frozen');
      if (options.fourOctetAs === false) {
        // What the 2-octet peer decodes: AS_TRANS in AS_PATH, the truth in AS4_PATH.
        assert.deepEqual(sent[0].attributes.asPath, [{ type: 'sequence', asns: [65000, 23456] }]);
      } else {
        const { wire: _, ...got } = sent[0].attributes;
        assert.deepEqual(got, expected);
      }
    }
  });

  it('keys by what routes share: next hop, MP and AS4 attributes out, reflection attributes out from an external peer', () => {
    // ORIGIN igp, NEXT_HOP, LOCAL_PREF 100, ORIGINATOR_ID, AS4_PATH, a community.
    const origin = [0x40, 1, 1, 0];
    const nextHop = [0x40, 3, 4, 192, 0, 2, 1];
    const localPref = [0x40, 5, 4, 0, 0, 0, 100];
    const originator = [0x80, 9, 4, 10, 0, 0, 1];
    const as4Path = [0xc0, 17, 6, 2, 1, 0, 0, 0xfd, 0xe9];
    const community = [0xc0, 8, 4, 0xff, 0xff, 0xff, 0x01];
    const b = Buffer.from([...origin, ...nextHop, ...localPref, ...originator, ...as4Path, ...community]);
    assert.equal(receivedKey(b, false), Buffer.from([...origin, ...localPref, ...originator, ...community]).toString('latin1'));
    assert.equal(receivedKey(b, true), Buffer.from([...origin, ...community]).toString('latin1'));
    const kept = Buffer.from([...origin, ...community]);
    assert.equal(receivedKey(kept, true), kept.toString('latin1'));
  });

  it("reads the decision's numbers and the loop test from the octets as from the decoded attributes", () => {
    const decided = (set: ReturnType<AttrInterner['internReceived']>) => ({
      localPref: set.localPref,
      asPathLength: set.asPathLength,
      origin: set.origin,
      med: set.med,
      neighborAs: set.neighborAs,
      originatorId: set.originatorId,
      clusterListLength: set.clusterListLength,
      wellKnown: set.wellKnown,
    });
    // An AS that many of the dump's paths carry, so that some of them are loops.
    const rule = new LoopRule(firstPeerAs(), '192.0.2.254', '192.0.2.253');
    let sets = 0;
    let loops = 0;
    for (const r of readMrtFile(MRT)) {
      if (r.kind !== 'message' || !r.fourOctetAs) continue;
      let m: UpdateMessage;
      try {
        const d = decodeMessage(r.message, { fourOctetAs: true });
        if (d.type !== 'update') continue;
        m = d;
      } catch {
        continue;
      }
      const raw = receivedAttributes(m);
      if (raw === undefined || m.attributes.origin === undefined) continue;
      for (const external of [true, false]) {
        const a = shareableReceived(m.attributes, true, external);
        const set = new AttrInterner(rule).internReceived(receivedKey(raw, external));
        assert.deepEqual(decided(set), numbersOf(a));
        assert.equal(set.looped, rule.looped(a));
        sets++;
        if (set.looped) loops++;
      }
    }
    assert.ok(sets > 80_000 && loops > 1_000, `sets read: ${sets}, loops among them: ${loops}`);

    // What a collector's eBGP feed lacks: a router ID, a cluster ID, AS sets and confederations.
    const reflected = {
      origin: 'egp' as const,
      asPath: [
        { type: 'confed-sequence' as const, asns: [65100] },
        { type: 'set' as const, asns: [65001, 65002] },
        { type: 'sequence' as const, asns: [65003, 65004] },
      ],
      nextHop: '192.0.2.1',
      localPref: 250,
      originatorId: '192.0.2.254',
      clusterList: ['198.51.100.1', '192.0.2.253'],
      communities: [0xffffff01, 0xffffff03, 7],
    };
    for (const [a, rule, looped] of [
      [reflected, new LoopRule(65000, '192.0.2.254', undefined), true],
      [{ ...reflected, originatorId: '192.0.2.9' }, new LoopRule(65000, '192.0.2.254', '192.0.2.253'), true],
      [{ ...reflected, originatorId: '192.0.2.9' }, new LoopRule(65000, '192.0.2.254', '192.0.2.99'), false],
      [{ ...reflected, originatorId: '192.0.2.9' }, new LoopRule(65100, '192.0.2.254', undefined), true],
    ] as const) {
      const m = decodeMessage(
        encodeMessage({ type: 'update', withdrawn: [], attributes: a, nlri: [{ prefix: '10.0.0.0/8' }] }),
      ) as UpdateMessage;
      const set = new AttrInterner(rule).internReceived(receivedKey(receivedAttributes(m)!, false));
      const { nextHop: _, ...shared } = a;
      assert.deepEqual(decided(set), numbersOf(shared));
      assert.deepEqual(decided(set), {
        localPref: 250,
        asPathLength: 3,
        origin: 1,
        med: -1,
        neighborAs: -1,
        originatorId: shared.originatorId === '192.0.2.9' ? 0xc0000209 : 0xc00002fe,
        clusterListLength: 2,
        wellKnown: 5,
      });
      assert.equal(set.looped, looped);
      assert.equal(rule.looped(shared), looped);
    }
  });
});
