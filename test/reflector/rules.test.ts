// The RFC 4456 rules as the RIB applies them through the reflector's hook: who gets what,
// what a reflected route carries, loops, tie-breaks, and one update group for all clients.
import assert from 'node:assert/strict';
import { Rib, type RibPeer } from '../../bgp/index.js';
import { routeReflectorRibOptions, reflectorSpeakerOptions, RouteReflector } from '../../reflector/index.js';
import { announced, drain, v4Update, withdrawnOf } from '../support/rib.js';

const AS = 64512;
const RR = { routerId: '10.0.0.100', clusterId: '10.0.0.100' };

function setup() {
  const rib = new Rib({ localAs: AS, routerId: RR.routerId, ...routeReflectorRibOptions(RR.clusterId) });
  const peer = (n: number, client: boolean, asn = AS) =>
    rib.addPeer({ address: `10.0.0.${n}`, asn, routerId: `1.1.1.${n}`, localAddress: '10.0.0.100', routeReflectorClient: client });
  const c1 = peer(1, true);
  const c2 = peer(2, true);
  const n1 = peer(3, false);
  const n2 = peer(4, false);
  const e1 = peer(5, false, 65001);
  for (const p of [c1, c2, n1, n2, e1]) drain(rib.adjRibOut(p)!);
  const got = (p: RibPeer) => announced(drain(rib.adjRibOut(p)!).messages);
  return { rib, c1, c2, n1, n2, e1, got };
}

describe('reflector rules (RFC 4456 through the RIB hook)', () => {
  it('a client route goes to the other clients and to non-clients, with ORIGINATOR_ID, CLUSTER_LIST and the next hop unchanged', () => {
    const { rib, c1, c2, n1, n2, e1, got } = setup();
    rib.update(c1, v4Update(['10.1.0.0/26'], { nextHop: '10.0.0.1', asPath: [], localPref: 150, med: 7, communities: [0xfc000001] }));
    for (const p of [c2, n1, n2]) {
      const [r, ...rest] = got(p);
      assert.equal(rest.length, 0);
      assert.equal(r.prefix, '10.1.0.0/26');
      assert.equal(r.attributes.nextHop, '10.0.0.1', 'next hop unchanged');
      assert.equal(r.attributes.originatorId, '1.1.1.1');
      assert.deepEqual(r.attributes.clusterList, [RR.clusterId]);
      assert.equal(r.attributes.localPref, 150);
      assert.equal(r.attributes.med, 7);
      assert.deepEqual(r.attributes.communities, [0xfc000001]);
    }
    assert.deepEqual(got(c1), [], 'not back to the client it came from');
    const [toE] = got(e1);
    assert.equal(toE.attributes.originatorId, undefined, 'no reflection attributes over eBGP');
    assert.equal(toE.attributes.clusterList, undefined);
  });

  it('a non-client route goes to clients only; ORIGINATOR_ID and CLUSTER_LIST already present are kept and prepended', () => {
    const { rib, c1, c2, n1, n2, got } = setup();
    rib.update(n1, v4Update(['10.2.0.0/26'], { nextHop: '10.0.0.3', asPath: [], originatorId: '9.9.9.9', clusterList: ['10.0.0.200'] }));
    for (const p of [c1, c2]) {
      const [r] = got(p);
      assert.equal(r.attributes.originatorId, '9.9.9.9');
      assert.deepEqual(r.attributes.clusterList, [RR.clusterId, '10.0.0.200']);
      assert.equal(r.attributes.nextHop, '10.0.0.3');
    }
    assert.deepEqual(got(n2), [], 'non-client to non-client is not reflected');
    assert.deepEqual(got(n1), []);
  });

  it('eBGP and local routes go to every iBGP peer without reflection attributes', () => {
    const { rib, c1, n1, e1, got } = setup();
    rib.update(e1, v4Update(['10.3.0.0/26'], { nextHop: '10.0.0.5', asPath: [{ type: 'sequence', asns: [65001] }] }));
    rib.originate('10.4.0.0/26', { nextHop: '10.0.0.100' });
    for (const p of [c1, n1]) {
      const rs = got(p);
      assert.deepEqual(rs.map((r) => r.prefix).sort(), ['10.3.0.0/26', '10.4.0.0/26']);
      for (const r of rs) assert.equal(r.attributes.originatorId, undefined);
      for (const r of rs) assert.equal(r.attributes.clusterList, undefined);
    }
  });

  it('our cluster ID in CLUSTER_LIST or our router ID as ORIGINATOR_ID: dropped, counted, and an earlier path withdrawn', () => {
    const { rib, c1, n1, c2, got } = setup();
    rib.update(n1, v4Update(['10.5.0.0/26'], { nextHop: '10.0.0.3', asPath: [] }));
    assert.equal(got(c1).length, 1);
    rib.update(
      n1,
      v4Update(['10.5.0.0/26', '10.5.0.64/26'], { nextHop: '10.0.0.3', asPath: [], clusterList: ['10.0.0.200', RR.clusterId] }),
    );
    assert.equal(rib.lookup('10.5.0.0/26'), undefined);
    assert.equal(rib.lookup('10.5.0.64/26'), undefined);
    assert.equal(n1.stats.loopRejected, 2);
    assert.deepEqual(
      withdrawnOf(drain(rib.adjRibOut(c1)!).messages).map((n) => n.prefix),
      ['10.5.0.0/26'],
    );
    rib.update(c2, v4Update(['10.6.0.0/26'], { nextHop: '10.0.0.2', asPath: [], originatorId: RR.routerId }));
    assert.equal(rib.lookup('10.6.0.0/26'), undefined);
    assert.equal(c2.stats.loopRejected, 1);
  });

  it('tie-break: lowest ORIGINATOR_ID stands for the router ID, then the shorter CLUSTER_LIST', () => {
    const { rib, n1, n2 } = setup();
    // n1 has the lower router ID (1.1.1.3) but carries a higher ORIGINATOR_ID.
    rib.update(n1, v4Update(['10.7.0.0/26'], { nextHop: '10.0.0.3', asPath: [], originatorId: '5.5.5.5' }));
    rib.update(n2, v4Update(['10.7.0.0/26'], { nextHop: '10.0.0.4', asPath: [], originatorId: '4.4.4.4' }));
    assert.equal(rib.lookup('10.7.0.0/26')!.best.peer, n2);
    // Same ORIGINATOR_ID: the shorter CLUSTER_LIST wins even from the higher address.
    rib.update(
      n1,
      v4Update(['10.8.0.0/26'], { nextHop: '10.0.0.3', asPath: [], originatorId: '4.4.4.4', clusterList: ['10.0.0.201', '10.0.0.202'] }),
    );
    rib.update(n2, v4Update(['10.8.0.0/26'], { nextHop: '10.0.0.4', asPath: [], originatorId: '4.4.4.4', clusterList: ['10.0.0.201'] }));
    assert.equal(rib.lookup('10.8.0.0/26')!.best.peer, n2);
  });

  it('clients with the same settings share one update group, however many there are', () => {
    const rib = new Rib({ localAs: AS, routerId: RR.routerId, ...routeReflectorRibOptions(RR.clusterId) });
    const clients = Array.from({ length: 50 }, (_, i) =>
      rib.addPeer({
        address: `10.1.${i >> 8}.${i & 255}`,
        asn: AS,
        routerId: `2.0.0.${i + 1}`,
        localAddress: '10.0.0.100',
        routeReflectorClient: true,
      }),
    );
    for (let i = 0; i < clients.length; i++) rib.update(clients[i], v4Update([`10.128.${i}.0/26`], { nextHop: `10.1.0.${i}`, asPath: [] }));
    const groups = rib.updateGroups();
    assert.equal(groups.length, 1);
    assert.equal(groups[0].members.size, 50);
    for (const c of clients.slice(0, 3)) assert.equal(announced(drain(rib.adjRibOut(c)!).messages).length, 49);
  });

  it('options: the cluster ID defaults to the router ID; a bad one or a non-iBGP client is refused with the field named', () => {
    const o = reflectorSpeakerOptions({ asn: AS, routerId: '10.0.0.9', listen: false });
    assert.equal(o.rib?.clusterId, '10.0.0.9');
    assert.ok(o.rib?.reflection, 'reflection is off in the reflector options');
    assert.throws(() => reflectorSpeakerOptions({ asn: AS, routerId: '10.0.0.9', clusterId: 'rack-1' }), /clusterId: "rack-1"/);
    const rr = new RouteReflector({ asn: AS, routerId: '10.0.0.9', listen: false });
    assert.throws(() => rr.addClient({ address: '10.0.0.1', asn: 65001 }), /client 10\.0\.0\.1: asn 65001 is not ours/);
    assert.throws(() => rr.addClientRange({ range: '10.0.0.0/24', asn: 65001 }), /client range 10\.0\.0\.0\/24/);
  });
});
