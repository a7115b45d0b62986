// RFC 8326 on the receiving side: a route that arrives with GRACEFUL_SHUTDOWN (65535:0) gets
// LOCAL_PREF 0, so any other path wins while its origin drains; off, it is kept as received.
import assert from 'node:assert/strict';
import { GRACEFUL_SHUTDOWN, Rib } from '../../../bgp/rib/index.js';
import { seq, v4Update, v6Update } from '../../support/rib.js';

function setup(gracefulShutdown?: boolean) {
  const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1', ...(gracefulShutdown === undefined ? {} : { gracefulShutdown }) });
  const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1', families: ['ipv4-unicast', 'ipv6-unicast'] });
  const b = rib.addPeer({ address: '192.0.2.2', asn: 65002, routerId: '1.1.1.2', families: ['ipv4-unicast', 'ipv6-unicast'] });
  return { rib, a, b };
}

describe('rib: graceful shutdown received (RFC 8326)', () => {
  it('a route received with GRACEFUL_SHUTDOWN gets LOCAL_PREF 0 and loses to a longer path without it, IPv4 and IPv6', () => {
    const { rib, a, b } = setup();
    rib.update(a, v4Update(['10.1.0.0/16'], { asPath: seq(65001), communities: [GRACEFUL_SHUTDOWN] }));
    rib.update(b, v4Update(['10.1.0.0/16'], { asPath: seq(65002, 65009, 65009), nextHop: '192.0.2.2' }));
    rib.update(a, v6Update(['2001:db8:1::/48'], { asPath: seq(65001), communities: [GRACEFUL_SHUTDOWN] }));
    rib.update(b, v6Update(['2001:db8:1::/48'], { asPath: seq(65002, 65009) }, '2001:db8::2'));
    for (const prefix of ['10.1.0.0/16', '2001:db8:1::/48']) {
      const r = rib.lookup(prefix)!;
      assert.equal(r.best.peer, b, prefix);
      const fromA = r.paths.find((p) => p.peer === a)!;
      assert.equal(fromA.attributes.localPref, 0, prefix);
      assert.deepEqual(fromA.attributes.communities, [GRACEFUL_SHUTDOWN], 'the community is kept, to pass on');
    }
  });

  it('from an internal peer too: its LOCAL_PREF is replaced by 0', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const i = rib.addPeer({ address: '192.0.2.3', asn: 65000, routerId: '1.1.1.3' });
    rib.update(i, v4Update(['10.2.0.0/16'], { asPath: [], localPref: 300, communities: [GRACEFUL_SHUTDOWN] }));
    assert.equal(rib.lookup('10.2.0.0/16')!.best.attributes.localPref, 0);
  });

  it('with gracefulShutdown: false the route is kept as received and wins on its shorter AS_PATH', () => {
    const { rib, a, b } = setup(false);
    rib.update(a, v4Update(['10.1.0.0/16'], { asPath: seq(65001), communities: [GRACEFUL_SHUTDOWN] }));
    rib.update(b, v4Update(['10.1.0.0/16'], { asPath: seq(65002, 65009), nextHop: '192.0.2.2' }));
    const best = rib.lookup('10.1.0.0/16')!.best;
    assert.equal(best.peer, a);
    assert.equal(best.attributes.localPref, undefined);
  });

  it('the lowered set is shared and released with its routes; the received one is not kept', () => {
    const { rib, a } = setup();
    rib.update(a, v4Update(['10.1.0.0/16', '10.3.0.0/16'], { communities: [GRACEFUL_SHUTDOWN] }));
    assert.equal(rib.stats().attributeSets, 1);
    rib.peerDown(a);
    assert.equal(rib.stats().attributeSets, 0);
  });
});
