// Long-lived graceful restart (RFC 9494) in the RIB: what happens to a peer's stale routes when
// its graceful restart time runs out, how LLGR_STALE routes fare in the decision process, and
// who is sent them.
import assert from 'node:assert/strict';
import { LLGR_STALE, NO_LLGR, Rib, type RibPeer } from '../../../bgp/rib/index.js';
import { announced, drain, seq, v4Update, v6Update, withdrawnOf } from '../../support/rib.js';

const rib0 = () => new Rib({ localAs: 65000, routerId: '10.255.0.1' });
const FAMILIES = ['ipv4-unicast', 'ipv6-unicast'] as const;

function peerA(rib: Rib): RibPeer {
  return rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1', families: [...FAMILIES] });
}

function peerB(rib: Rib): RibPeer {
  return rib.addPeer({ address: '192.0.2.2', asn: 65002, routerId: '1.1.1.2', families: [...FAMILIES] });
}

describe('rib: long-lived graceful restart (RFC 9494)', () => {
  it('when the restart time ends, a stale route is kept, marked LLGR_STALE and still stale', () => {
    const rib = rib0();
    const a = peerA(rib);
    rib.update(a, v4Update(['10.1.0.0/16'], { communities: [65001 * 65536 + 7] }));
    rib.peerDown(a, { keepStale: ['ipv4-unicast'] });
    const changes = rib.markLongLivedStale(a, 'ipv4-unicast');
    assert.deepEqual(
      changes.map((c) => [c.kind, c.prefix]),
      [['changed', '10.1.0.0/16']],
    );
    const best = rib.lookup('10.1.0.0/16')!.best;
    assert.equal(best.stale, true);
    assert.deepEqual(best.attributes.communities, [65001 * 65536 + 7, LLGR_STALE]);
    assert.equal(a.stats.routes['ipv4-unicast'], 1);
  });

  it('a stale route carrying NO_LLGR is dropped when the long-lived stale period begins', () => {
    const rib = rib0();
    const a = peerA(rib);
    rib.update(a, v4Update(['10.1.0.0/16'], { communities: [NO_LLGR] }));
    rib.update(a, v4Update(['10.2.0.0/16']));
    rib.peerDown(a, { keepStale: ['ipv4-unicast'] });
    assert.ok(rib.lookup('10.1.0.0/16'), 'a NO_LLGR route is kept through the graceful restart time');
    const changes = rib.markLongLivedStale(a, 'ipv4-unicast');
    assert.deepEqual(changes.map((c) => [c.kind, c.prefix]).sort(), [
      ['changed', '10.2.0.0/16'],
      ['removed', '10.1.0.0/16'],
    ]);
    assert.equal(rib.lookup('10.1.0.0/16'), undefined);
  });

  it('only the stale routes of the family enter the long-lived period; other families and peers keep theirs', () => {
    const rib = rib0();
    const a = peerA(rib);
    const b = peerB(rib);
    rib.update(a, v4Update(['10.1.0.0/16']));
    rib.update(a, v6Update(['2001:db8:1::/48']));
    rib.update(b, v4Update(['10.9.0.0/16'], { asPath: seq(65002), nextHop: '192.0.2.2' }));
    rib.peerDown(a, { keepStale: ['ipv4-unicast', 'ipv6-unicast'] });
    rib.markLongLivedStale(a, 'ipv4-unicast');
    assert.ok(rib.lookup('10.1.0.0/16')!.best.attributes.communities?.includes(LLGR_STALE), 'the IPv4 route is not marked');
    assert.equal(rib.lookup('2001:db8:1::/48')!.best.attributes.communities, undefined);
    assert.equal(rib.lookup('2001:db8:1::/48')!.best.stale, true);
    assert.equal(rib.lookup('10.9.0.0/16')!.best.attributes.communities, undefined);
  });

  it('an LLGR_STALE route is least preferred: any other path wins, even one with a lower LOCAL_PREF and a longer AS_PATH', () => {
    const rib = rib0();
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65000, routerId: '1.1.1.1' });
    const b = rib.addPeer({ address: '192.0.2.2', asn: 65000, routerId: '1.1.1.2' });
    rib.update(a, v4Update(['10.1.0.0/16'], { localPref: 500, asPath: seq(65001) }));
    rib.update(b, v4Update(['10.1.0.0/16'], { localPref: 50, asPath: seq(65002, 65003, 65004), nextHop: '192.0.2.2' }));
    assert.equal(rib.lookup('10.1.0.0/16')!.best.peer, a);
    rib.peerDown(a, { keepStale: ['ipv4-unicast'] });
    assert.equal(rib.lookup('10.1.0.0/16')!.best.peer, a, 'a stale route still competes as it was during the restart time');
    const changes = rib.markLongLivedStale(a, 'ipv4-unicast');
    assert.equal(changes[0]!.best!.peer, b);
    assert.equal(rib.lookup('10.1.0.0/16')!.paths.length, 2, 'the LLGR_STALE path is demoted, not dropped');
  });

  it('a route received with LLGR_STALE is least preferred too, with two paths or three', () => {
    for (const third of [false, true]) {
      const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1', multipath: { maxPaths: third ? 4 : 1 } });
      const a = peerA(rib);
      const b = peerB(rib);
      rib.update(a, v4Update(['10.1.0.0/16'], { communities: [LLGR_STALE], asPath: seq(65001) }));
      rib.update(b, v4Update(['10.1.0.0/16'], { asPath: seq(65002, 65009), nextHop: '192.0.2.2' }));
      if (third) {
        const c = rib.addPeer({ address: '192.0.2.3', asn: 65003, routerId: '1.1.1.3' });
        rib.update(c, v4Update(['10.1.0.0/16'], { asPath: seq(65003, 65009, 65009), nextHop: '192.0.2.3' }));
      }
      const r = rib.lookup('10.1.0.0/16')!;
      assert.equal(r.best.peer, b, `best of ${r.paths.length} paths`);
      assert.ok(!r.multipath.some((p) => p.peer === a), 'an LLGR_STALE path is in the ECMP set');
    }
  });

  it('an LLGR_STALE route that is the only path to its prefix stays the best path', () => {
    const rib = rib0();
    const a = peerA(rib);
    rib.update(a, v4Update(['10.1.0.0/16']));
    rib.peerDown(a, { keepStale: ['ipv4-unicast'] });
    rib.markLongLivedStale(a, 'ipv4-unicast');
    assert.equal(rib.lookup('10.1.0.0/16')!.best.peer, a);
  });

  it('LLGR_STALE routes go with the community to peers that advertised LLGR, and are withdrawn from the others', () => {
    const rib = rib0();
    const a = peerA(rib);
    const llgr = rib.addPeer({
      address: '192.0.2.5',
      asn: 65005,
      routerId: '1.1.1.5',
      localAddress: '192.0.2.100',
      longLivedGracefulRestart: true,
    });
    const plain = rib.addPeer({ address: '192.0.2.6', asn: 65006, routerId: '1.1.1.6', localAddress: '192.0.2.100' });
    rib.update(a, v4Update(['10.1.0.0/16']));
    drain(llgr.out!);
    drain(plain.out!);
    rib.peerDown(a, { keepStale: ['ipv4-unicast'] });
    rib.markLongLivedStale(a, 'ipv4-unicast');
    const toLlgr = drain(llgr.out!).messages;
    const toPlain = drain(plain.out!).messages;
    assert.deepEqual(
      announced(toLlgr).map((r) => [r.prefix, r.attributes.communities]),
      [['10.1.0.0/16', [LLGR_STALE]]],
    );
    assert.deepEqual(
      withdrawnOf(toPlain).map((n) => n.prefix),
      ['10.1.0.0/16'],
    );
    assert.equal(announced(toPlain).length, 0);
  });

  it('after the session is back, a route sent again loses LLGR_STALE and the End-of-RIB sweeps the others', () => {
    const rib = rib0();
    const a = peerA(rib);
    rib.update(a, v4Update(['10.1.0.0/16', '10.2.0.0/16']));
    rib.peerDown(a, { keepStale: ['ipv4-unicast'] });
    rib.markLongLivedStale(a, 'ipv4-unicast');
    rib.peerUp(a);
    rib.update(a, v4Update(['10.1.0.0/16']));
    const back = rib.lookup('10.1.0.0/16')!.best;
    assert.equal(back.stale, false);
    assert.equal(back.attributes.communities, undefined);
    const swept = rib.sweepStale(a, 'ipv4-unicast');
    assert.deepEqual(
      swept.map((c) => [c.kind, c.prefix]),
      [['removed', '10.2.0.0/16']],
    );
  });

  it('marking twice changes nothing the second time, and the marked sets are released with their routes', () => {
    const rib = rib0();
    const a = peerA(rib);
    rib.update(a, v4Update(['10.1.0.0/16', '10.2.0.0/16']));
    rib.peerDown(a, { keepStale: ['ipv4-unicast'] });
    rib.markLongLivedStale(a, 'ipv4-unicast');
    assert.equal(rib.stats().attributeSets, 1, 'the two routes share one marked set, the unmarked one is gone');
    assert.deepEqual(rib.markLongLivedStale(a, 'ipv4-unicast'), []);
    rib.sweepStale(a, 'ipv4-unicast');
    assert.equal(rib.stats().attributeSets, 0);
  });
});
