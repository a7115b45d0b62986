// An update group's exported sets: paths whose exported attributes come out the same share one
// encoded set (and so one UPDATE), and a received set reached through several next hops or
// source peers is exported once per (next hop, peer), each with its own next hop, where the
// group's decision reads them (towards eBGP it reads neither, beyond whether the route is ours).
import assert from 'node:assert/strict';
import { Rib } from '../../../bgp/rib/index.js';
import { announced, drain, seq, updatesOf, v4Update, v6Update } from '../../support/rib.js';

function setup(monitorAs: number) {
  const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
  const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1', families: [] });
  const b = rib.addPeer({ address: '192.0.2.3', asn: 65001, routerId: '1.1.1.3', families: [] });
  const mon = rib.addPeer({
    address: '192.0.2.2',
    asn: monitorAs,
    routerId: '1.1.1.2',
    localAddress: '192.0.2.100',
    families: ['ipv4-unicast'],
  });
  return { rib, a, b, mon, out: rib.adjRibOut(mon)! };
}

describe('rib: exported sets of an update group', () => {
  it('two received sets that differ only in what eBGP drops (MED) go out as one set, in one UPDATE', () => {
    const { rib, a, out } = setup(65002);
    rib.update(a, v4Update(['198.51.100.0/24'], { med: 10 }));
    rib.update(a, v4Update(['203.0.113.0/24'], { med: 20 }));
    const { messages } = drain(out);
    const updates = updatesOf(messages);
    assert.equal(updates.length, 1);
    assert.deepEqual(updates[0].nlri.map((n) => n.prefix).sort(), ['198.51.100.0/24', '203.0.113.0/24']);
    assert.equal(updates[0].attributes.med, undefined);
    const [x] = out.sentFor('ipv4-unicast', '198.51.100.0/24');
    const [y] = out.sentFor('ipv4-unicast', '203.0.113.0/24');
    assert.ok(x !== undefined && x === y, 'one shared set');
    assert.equal(out.group.size, 1);
  });

  it('a set no peer holds leaves the group, and an equal one is made again when needed', () => {
    const { rib, a, out } = setup(65002);
    rib.update(a, v4Update(['198.51.100.0/24', '203.0.113.0/24'], { med: 10 }));
    drain(out);
    assert.equal(out.group.size, 1);
    rib.update(a, v4Update([], {}, ['198.51.100.0/24', '203.0.113.0/24']));
    drain(out);
    assert.equal(out.group.size, 0);
    assert.deepEqual(out.sentFor('ipv4-unicast', '198.51.100.0/24'), []);
    rib.update(a, v4Update(['198.51.100.0/24'], { med: 30 }));
    const { messages } = drain(out);
    assert.deepEqual(
      announced(messages).map((r) => [r.prefix, r.attributes.asPath]),
      [['198.51.100.0/24', seq(65000, 65001)]],
    );
    assert.equal(out.group.size, 1);
    assert.equal(out.sentFor('ipv4-unicast', '198.51.100.0/24').length, 1);
  });

  it('one received set from two peers with two next hops: each prefix keeps its own next hop towards iBGP', () => {
    const { rib, a, b, out } = setup(65000);
    // Same attributes, so the same interned set; only the next hop and the source differ.
    rib.update(a, v4Update(['198.51.100.0/24'], { nextHop: '192.0.2.1' }));
    rib.update(b, v4Update(['203.0.113.0/24'], { nextHop: '192.0.2.3' }));
    rib.update(a, v4Update(['198.51.101.0/24'], { nextHop: '192.0.2.1' }));
    rib.update(b, v4Update(['203.0.114.0/24'], { nextHop: '192.0.2.3' }));
    rib.update(a, v4Update(['198.51.102.0/24'], { nextHop: '192.0.2.9' }));
    const { messages } = drain(out);
    const got = new Map(announced(messages).map((r) => [r.prefix, r.attributes.nextHop]));
    assert.deepEqual([...got].sort(), [
      ['198.51.100.0/24', '192.0.2.1'],
      ['198.51.101.0/24', '192.0.2.1'],
      ['198.51.102.0/24', '192.0.2.9'],
      ['203.0.113.0/24', '192.0.2.3'],
      ['203.0.114.0/24', '192.0.2.3'],
    ]);
    assert.equal(out.group.size, 3, 'one exported set per next hop');
    for (const r of announced(messages)) assert.equal(r.attributes.localPref, 100);
  });

  it("a peer that comes back gets a new group whose answers follow its new settings, not the old group's", () => {
    const { rib, a, mon, out } = setup(65002);
    rib.update(a, v4Update(['198.51.100.0/24']));
    assert.equal(announced(drain(out).messages)[0].attributes.nextHop, '192.0.2.100');
    rib.peerDown(mon);
    const mon2 = rib.addPeer({
      address: '192.0.2.4',
      asn: 65002,
      routerId: '1.1.1.4',
      localAddress: '192.0.2.101',
      families: ['ipv4-unicast'],
    });
    const out2 = rib.adjRibOut(mon2)!;
    assert.notEqual(out2.group, out.group);
    assert.equal(announced(drain(out2).messages)[0].attributes.nextHop, '192.0.2.101');
  });

  describe('towards an eBGP peer, where the decision reads neither next hop nor source', () => {
    function ebgpSetup() {
      const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
      // Calico's nodes over iBGP, each announcing its blocks with its own address as next hop.
      const nodes = [1, 2, 3].map((i) => rib.addPeer({ address: `192.0.2.${i}`, asn: 65000, routerId: `1.1.1.${i}`, families: [] }));
      const tor = rib.addPeer({
        address: '192.0.2.254',
        asn: 65100,
        routerId: '1.1.1.254',
        localAddress: '192.0.2.100',
        localAddressV6: '2001:db8::100',
        families: ['ipv4-unicast', 'ipv6-unicast'],
      });
      return { rib, nodes, out: rib.adjRibOut(tor)! };
    }

    it('one set from many nodes and next hops goes out as one set, with our next hop, in one UPDATE', () => {
      const { rib, nodes, out } = ebgpSetup();
      for (let i = 0; i < 12; i++) {
        const node = nodes[i % 3];
        rib.update(node, v4Update([`10.128.${i}.0/26`], { asPath: [], nextHop: `192.0.2.${10 + i}` }));
      }
      const updates = updatesOf(drain(out).messages);
      assert.equal(updates.length, 1);
      assert.equal(updates[0].nlri.length, 12);
      assert.equal(updates[0].attributes.nextHop, '192.0.2.100');
      assert.deepEqual(updates[0].attributes.asPath, seq(65000));
      assert.equal(out.group.size, 1);
    });

    it("our own route keeps its MED where a peer's route of the same set loses it", () => {
      const { rib, nodes, out } = ebgpSetup();
      rib.update(nodes[0], v4Update(['198.51.100.0/24'], { asPath: [], med: 10, nextHop: '192.0.2.1' }));
      rib.originate('203.0.113.0/24', { attributes: { med: 10 } });
      const peers = rib.lookup('198.51.100.0/24')!.best.attributes;
      const ours = rib.lookup('203.0.113.0/24')!.best.attributes;
      assert.equal(peers, ours, 'the two routes share one received set');
      const got = new Map(announced(drain(out).messages).map((r) => [r.prefix, r.attributes.med]));
      assert.deepEqual([...got].sort(), [
        ['198.51.100.0/24', undefined],
        ['203.0.113.0/24', 10],
      ]);
    });

    it("a set carrying IPv4 and IPv6 routes goes out with each family's own next hop", () => {
      const { rib, nodes, out } = ebgpSetup();
      rib.update(nodes[0], v4Update(['10.128.0.0/26'], { asPath: [], nextHop: '192.0.2.1' }));
      rib.update(nodes[1], v6Update(['2001:db8:128::/122'], { asPath: [] }, '2001:db8::2'));
      rib.update(nodes[2], v4Update(['10.128.1.0/26'], { asPath: [], nextHop: '192.0.2.3' }));
      const v4 = rib.lookup('10.128.0.0/26')!.best.attributes;
      assert.equal(rib.lookup('2001:db8:128::/122')!.best.attributes, v4, 'the two families share one received set');
      const got = announced(drain(out).messages).map((r) => [r.prefix, r.attributes.nextHop ?? r.attributes.mpReach?.nextHop]);
      assert.deepEqual(got.sort(), [
        ['10.128.0.0/26', '192.0.2.100'],
        ['10.128.1.0/26', '192.0.2.100'],
        ['2001:db8:128::/122', '2001:db8::100'],
      ]);
    });
  });
});
