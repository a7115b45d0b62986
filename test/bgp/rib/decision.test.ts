// The decision process of RFC 4271 §9.1.2, one step at a time: in each test the two routes
// tie on every earlier step, and every later step favours the route that must lose, so only
// the step under test can pick the winner. Each case runs in both arrival orders.
import assert from 'node:assert/strict';
import type { PathAttributes } from '../../../bgp/codec/index.js';
import { Rib, type RibOptions, type RibPeer, type RibPeerConfig } from '../../../bgp/rib/index.js';
import { seq, v4Update } from '../../support/rib.js';

const P = '10.0.0.0/24';

interface Side {
  peer: RibPeerConfig;
  attrs: PathAttributes;
}

/** Installs both routes (in the given order) and returns the address of the best path's peer. */
function winner(a: Side, b: Side, options: Partial<RibOptions> = {}, order: 'ab' | 'ba' = 'ab'): string | undefined {
  const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1', ...options });
  const peers = new Map<Side, RibPeer>([
    [a, rib.addPeer(a.peer)],
    [b, rib.addPeer(b.peer)],
  ]);
  for (const s of order === 'ab' ? [a, b] : [b, a]) rib.update(peers.get(s)!, v4Update([P], s.attrs));
  return rib.lookup(P)!.best.peer?.address;
}

function bothOrders(a: Side, b: Side, expected: string, options: Partial<RibOptions> = {}): void {
  assert.equal(winner(a, b, options, 'ab'), expected);
  assert.equal(winner(a, b, options, 'ba'), expected);
}

const ebgp = (n: number, asn = 65000 + n, routerId = `1.1.1.${n}`): RibPeerConfig => ({ address: `192.0.2.${n}`, asn, routerId });
const ibgp = (n: number, routerId = `1.1.1.${n}`): RibPeerConfig => ({ address: `192.0.2.${n}`, asn: 65000, routerId });

describe('rib: decision process (RFC 4271 §9.1.2)', () => {
  it('step 1: highest LOCAL_PREF wins, even over a shorter AS path and a lower router ID', () => {
    const a = { peer: ibgp(9), attrs: { localPref: 200, asPath: seq(1, 2, 3, 4), origin: 'incomplete' as const } };
    const b = { peer: ibgp(1), attrs: { localPref: 100, asPath: seq(1) } };
    bothOrders(a, b, '192.0.2.9');
  });

  it('step 1: an absent LOCAL_PREF counts as the default (100), and eBGP routes get the configured default', () => {
    const e = { peer: ebgp(1), attrs: { asPath: seq(65001) } };
    const i = { peer: ibgp(9), attrs: { localPref: 150, asPath: seq(65001, 7) } };
    bothOrders(e, i, '192.0.2.9'); // 100 < 150
    bothOrders(e, i, '192.0.2.1', { defaultLocalPref: 200 }); // 200 > 150
    // LOCAL_PREF sent by an eBGP peer is ignored (RFC 4271 §5.1.5).
    const liar = { peer: ebgp(2), attrs: { localPref: 1000, asPath: seq(65002) } };
    bothOrders(liar, i, '192.0.2.9');
  });

  it('step 2: a locally originated route wins over a learned one of equal LOCAL_PREF', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const peer = rib.addPeer(ibgp(1, '1.1.1.1'));
    rib.update(peer, v4Update([P], { localPref: 100, asPath: [] }));
    assert.equal(rib.lookup(P)!.best.peer, peer);
    const changes = rib.originate(P, { nextHop: '10.9.9.9' });
    assert.equal(changes.length, 1);
    assert.equal(changes[0].kind, 'changed');
    assert.equal(rib.lookup(P)!.best.peer, undefined);
    assert.equal(rib.lookup(P)!.best.nextHop, '10.9.9.9');
    rib.withdrawOriginated(P);
    assert.equal(rib.lookup(P)!.best.peer, peer);
  });

  it('step 1: what we originate while draining (GRACEFUL_SHUTDOWN, LOCAL_PREF 0 for the peers) still beats our own prefix sent back', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    // Our own prefix, back from an external peer whose as-override hid our AS in the path.
    const peer = rib.addPeer(ebgp(1));
    rib.update(peer, v4Update([P], { asPath: seq(65001, 65001) }));
    rib.originate(P, { nextHop: '10.9.9.9', attributes: { communities: [0xffff0000], localPref: 0 } });
    assert.equal(rib.lookup(P)!.best.peer, undefined, 'the drained origination stays best');
    // A learned route that is preferred on its own merits (LOCAL_PREF above the default) still wins.
    const better = rib.addPeer(ibgp(2));
    rib.update(better, v4Update([P], { localPref: 200, asPath: seq(65002) }));
    assert.equal(rib.lookup(P)!.best.peer, better, 'LOCAL_PREF 200 over the default');
    // And a learned route with GRACEFUL_SHUTDOWN is still lowered to 0 against a plain local one.
    const rib2 = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const gshut = rib2.addPeer(ibgp(3));
    rib2.update(gshut, v4Update([P], { localPref: 100, asPath: [], communities: [0xffff0000] }));
    rib2.originate(P, { nextHop: '10.9.9.9', attributes: { localPref: 50 } });
    assert.equal(rib2.lookup(P)!.best.peer, undefined, 'LOCAL_PREF 50 over a drained peer’s 0');
  });

  it('step 3: shortest AS_PATH wins, even with a worse ORIGIN', () => {
    const a = { peer: ebgp(9), attrs: { asPath: seq(65009), origin: 'incomplete' as const } };
    const b = { peer: ebgp(1), attrs: { asPath: seq(65001, 7, 8) } };
    bothOrders(a, b, '192.0.2.9');
  });

  it('step 3: an AS_SET counts as one, confederation segments as none', () => {
    const set = { peer: ebgp(9), attrs: { asPath: [...seq(65009), { type: 'set' as const, asns: [1, 2, 3, 4] }] } }; // 2
    const longer = { peer: ebgp(1), attrs: { asPath: seq(65001, 5, 6) } }; // 3
    bothOrders(set, longer, '192.0.2.9');
    const confed = {
      peer: ebgp(9),
      attrs: { asPath: [{ type: 'confed-sequence' as const, asns: [64512, 64513, 64514] }, ...seq(65009, 5)] },
    }; // 2
    bothOrders(confed, longer, '192.0.2.9');
  });

  it('step 4: lowest ORIGIN wins (IGP < EGP < INCOMPLETE), even with a higher router ID', () => {
    const a = { peer: ebgp(9), attrs: { asPath: seq(65009), origin: 'egp' as const } };
    const b = { peer: ebgp(1), attrs: { asPath: seq(65001), origin: 'incomplete' as const } };
    bothOrders(a, b, '192.0.2.9');
    const c = { peer: ebgp(8), attrs: { asPath: seq(65008), origin: 'igp' as const } };
    bothOrders(c, a, '192.0.2.8');
  });

  it('step 5: lowest MED wins between routes from the same neighbour AS', () => {
    const a = { peer: ebgp(9, 65001), attrs: { asPath: seq(65001), med: 10 } };
    const b = { peer: ebgp(1, 65001), attrs: { asPath: seq(65001), med: 50 } };
    bothOrders(a, b, '192.0.2.9');
  });

  it('step 5: a missing MED is 0', () => {
    const a = { peer: ebgp(9, 65001), attrs: { asPath: seq(65001) } };
    const b = { peer: ebgp(1, 65001), attrs: { asPath: seq(65001), med: 5 } };
    bothOrders(a, b, '192.0.2.9');
  });

  it('step 5: MED is not compared across neighbour ASes unless always-compare-med is set', () => {
    const a = { peer: ebgp(9, 65009), attrs: { asPath: seq(65009), med: 10 } };
    const b = { peer: ebgp(1, 65001), attrs: { asPath: seq(65001), med: 50 } };
    bothOrders(a, b, '192.0.2.1'); // falls through to the router ID
    bothOrders(a, b, '192.0.2.9', { alwaysCompareMed: true });
  });

  it('step 5: the answer does not depend on arrival order when MED is not transitive', () => {
    // Classic case: A (AS1, MED 10), B (AS1, MED 5), C (AS2, MED 0). B beats A on MED;
    // then B vs C on router ID. A pairwise comparator can pick A or C depending on order.
    const rib = () => new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const sides = [
      { peer: ebgp(3, 65001, '3.3.3.3'), attrs: { asPath: seq(65001), med: 10 } },
      { peer: ebgp(4, 65001, '4.4.4.4'), attrs: { asPath: seq(65001), med: 5 } },
      { peer: ebgp(2, 65002, '2.2.2.2'), attrs: { asPath: seq(65002), med: 0 } },
    ];
    const results = new Set<string | undefined>();
    for (const order of [
      [0, 1, 2],
      [2, 1, 0],
      [1, 2, 0],
      [0, 2, 1],
      [2, 0, 1],
      [1, 0, 2],
    ]) {
      const r = rib();
      const peers = sides.map((s) => r.addPeer(s.peer));
      for (const i of order) r.update(peers[i], v4Update([P], sides[i].attrs));
      results.add(r.lookup(P)!.best.peer?.address);
    }
    assert.deepEqual([...results], ['192.0.2.2']);
  });

  it('step 6: eBGP-learned wins over iBGP-learned, even with a higher router ID', () => {
    const e = { peer: ebgp(9), attrs: { asPath: seq(65009) } };
    const i = { peer: ibgp(1), attrs: { localPref: 100, asPath: seq(65001) } };
    bothOrders(e, i, '192.0.2.9');
  });

  it('step 7: lowest router ID wins, even with a longer CLUSTER_LIST and a higher address', () => {
    const a = { peer: ibgp(9, '1.0.0.1'), attrs: { clusterList: ['7.7.7.7', '8.8.8.8'] } };
    const b = { peer: ibgp(1, '1.0.0.2'), attrs: {} };
    bothOrders(a, b, '192.0.2.9');
  });

  it('step 7: ORIGINATOR_ID stands in for the router ID when present (RFC 4456 §9)', () => {
    const a = { peer: ibgp(1, '1.0.0.1'), attrs: { originatorId: '9.9.9.9' } };
    const b = { peer: ibgp(9, '4.4.4.4'), attrs: {} };
    bothOrders(a, b, '192.0.2.9');
  });

  it('step 8: shortest CLUSTER_LIST wins, even from a higher address', () => {
    const a = { peer: ibgp(9, '1.0.0.1'), attrs: { originatorId: '5.5.5.5', clusterList: ['7.7.7.7'] } };
    const b = { peer: ibgp(1, '1.0.0.2'), attrs: { originatorId: '5.5.5.5', clusterList: ['7.7.7.7', '8.8.8.8'] } };
    bothOrders(a, b, '192.0.2.9');
  });

  it('step 9: lowest peer address wins', () => {
    const a = { peer: ibgp(3, '1.0.0.9'), attrs: { originatorId: '5.5.5.5' } };
    const b = { peer: ibgp(20, '1.0.0.1'), attrs: { originatorId: '5.5.5.5' } };
    bothOrders(a, b, '192.0.2.3');
  });

  it('step 10: two ADD-PATH paths from one peer that tie everywhere: the lower path id wins', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const peer = rib.addPeer(ibgp(1));
    rib.update(peer, v4Update([{ prefix: P, pathId: 7 }], { nextHop: '192.0.2.7' }));
    rib.update(peer, v4Update([{ prefix: P, pathId: 3 }], { nextHop: '192.0.2.3' }));
    const r = rib.lookup(P)!;
    assert.equal(r.paths.length, 2);
    assert.equal(r.best.pathId, 3);
    assert.equal(r.best.nextHop, '192.0.2.3');
  });

  it('two paths pick the same best as the full process does (random pairs, both orders)', () => {
    // With one best, two paths take a shortcut; with multipath on, they go through every step.
    let seed = 19;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const pick = <T>(xs: T[]): T => xs[rnd(xs.length)];
    const side = (n: number): Side => {
      const external = rnd(2) === 0;
      const asn = external ? pick([65001, 65002]) : 65000;
      const attrs: PathAttributes = {
        asPath: seq(...(external ? [asn] : [pick([65001, 65002])]), ...[7, 8].slice(0, rnd(3))),
        origin: pick(['igp', 'egp', 'incomplete'] as const),
        nextHop: `192.0.2.${n}`,
      };
      const localPref = pick([undefined, 100, 200]);
      if (localPref !== undefined) attrs.localPref = localPref;
      const med = pick([undefined, 0, 5]);
      if (med !== undefined) attrs.med = med;
      if (!external && rnd(3) === 0) attrs.originatorId = pick(['1.1.1.1', '9.9.9.9']);
      if (!external && rnd(3) === 0) attrs.clusterList = ['10.0.0.1'].slice(0, rnd(2));
      return { peer: { address: `192.0.2.${n}`, asn, routerId: pick(['1.1.1.1', '1.1.1.5', '9.9.9.9']) }, attrs };
    };
    for (let i = 0; i < 400; i++) {
      const a = side(1 + rnd(50));
      const b = side(51 + rnd(50));
      for (const always of [false, true]) {
        for (const order of ['ab', 'ba'] as const) {
          const shortcut = winner(a, b, { alwaysCompareMed: always }, order);
          const full = winner(a, b, { alwaysCompareMed: always, multipath: { maxPaths: 2 } }, order);
          assert.equal(shortcut, full, `pair ${i} (${order}, always-compare-med ${always}): ${JSON.stringify([a, b])}`);
        }
      }
    }
  });

  it('the best path moves to the next one on withdrawal, and "removed" comes with the last one', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const a = rib.addPeer(ebgp(1));
    const b = rib.addPeer(ebgp(2));
    assert.equal(rib.update(a, v4Update([P], { asPath: seq(65001) }))[0].kind, 'added');
    assert.equal(rib.update(b, v4Update([P], { asPath: seq(65002, 1) })).length, 0); // not better: no best change
    const c1 = rib.update(a, v4Update([], {}, [P]));
    assert.equal(c1[0].kind, 'changed');
    assert.equal(c1[0].best!.peer, b);
    const c2 = rib.withdraw(b, 'ipv4-unicast', [{ prefix: P }]);
    assert.deepEqual(
      c2.map((c) => [c.kind, c.prefix, c.best]),
      [['removed', P, undefined]],
    );
    assert.equal(rib.lookup(P), undefined);
  });
});
