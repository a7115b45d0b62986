// ECMP: routes equal up to the router-ID step share the best-path slot.
import assert from 'node:assert/strict';
import { Rib } from '../../../bgp/rib/index.js';
import { seq, v4Update } from '../../support/rib.js';

const P = '10.0.0.0/24';

describe('rib: multipath', () => {
  it('eBGP paths from the same neighbour AS form one set, best first, up to maxPaths', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1', multipath: { maxPaths: 2 } });
    const peers = [1, 2, 3].map((n) => rib.addPeer({ address: `192.0.2.${n}`, asn: 65001, routerId: `1.1.1.${n}` }));
    const c1 = rib.update(peers[1], v4Update([P], { asPath: seq(65001), nextHop: '192.0.2.2' }));
    assert.equal(c1[0].multipath.length, 1);
    const c2 = rib.update(peers[0], v4Update([P], { asPath: seq(65001), nextHop: '192.0.2.1' }));
    assert.equal(c2[0].kind, 'changed');
    assert.deepEqual(
      c2[0].multipath.map((r) => r.nextHop),
      ['192.0.2.1', '192.0.2.2'],
    );
    // A third equal path does not fit maxPaths 2: the set is unchanged, so no change is reported.
    assert.deepEqual(rib.update(peers[2], v4Update([P], { asPath: seq(65001), nextHop: '192.0.2.3' })), []);
    // Losing a member brings in the next one.
    const c3 = rib.withdraw(peers[1], 'ipv4-unicast', [{ prefix: P }]);
    assert.deepEqual(
      c3[0].multipath.map((r) => r.nextHop),
      ['192.0.2.1', '192.0.2.3'],
    );
  });

  it('paths that differ before the router-ID step are not in the set', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1', multipath: { maxPaths: 4 } });
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
    const b = rib.addPeer({ address: '192.0.2.2', asn: 65001, routerId: '1.1.1.2' });
    rib.update(a, v4Update([P], { asPath: seq(65001), nextHop: '192.0.2.1' }));
    rib.update(b, v4Update([P], { asPath: seq(65001, 7), nextHop: '192.0.2.2' }));
    assert.equal(rib.lookup(P)!.multipath.length, 1);
  });

  it('eBGP paths from different neighbour ASes share a set only with relax', () => {
    for (const relax of [false, true]) {
      const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1', multipath: { maxPaths: 4, relax } });
      const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
      const b = rib.addPeer({ address: '192.0.2.2', asn: 65002, routerId: '1.1.1.2' });
      rib.update(a, v4Update([P], { asPath: seq(65001), nextHop: '192.0.2.1' }));
      rib.update(b, v4Update([P], { asPath: seq(65002), nextHop: '192.0.2.2' }));
      assert.equal(rib.lookup(P)!.multipath.length, relax ? 2 : 1, `relax ${relax}`);
    }
  });

  it('iBGP paths equal up to the router ID form a set; eBGP and iBGP never mix', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1', multipath: { maxPaths: 4 } });
    const i1 = rib.addPeer({ address: '192.0.2.1', asn: 65000, routerId: '1.1.1.1' });
    const i2 = rib.addPeer({ address: '192.0.2.2', asn: 65000, routerId: '1.1.1.2' });
    rib.update(i1, v4Update([P], { asPath: seq(65009), nextHop: '10.1.1.1' }));
    rib.update(i2, v4Update([P], { asPath: seq(65009), nextHop: '10.1.1.2' }));
    assert.deepEqual(
      rib.lookup(P)!.multipath.map((r) => r.nextHop),
      ['10.1.1.1', '10.1.1.2'],
    );
    const e = rib.addPeer({ address: '192.0.2.3', asn: 65009, routerId: '1.1.1.3' });
    const c = rib.update(e, v4Update([P], { asPath: seq(65009), nextHop: '192.0.2.3' }));
    assert.deepEqual(
      c[0].multipath.map((r) => r.nextHop),
      ['192.0.2.3'],
    );
  });

  it('two paths with the same next hop count once', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1', multipath: { maxPaths: 4 } });
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65000, routerId: '1.1.1.1' });
    const b = rib.addPeer({ address: '192.0.2.2', asn: 65000, routerId: '1.1.1.2' });
    rib.update(a, v4Update([P], { nextHop: '10.1.1.1' }));
    rib.update(b, v4Update([P], { nextHop: '10.1.1.1' }));
    assert.equal(rib.lookup(P)!.multipath.length, 1);
  });
});
