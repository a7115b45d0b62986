// Adj-RIB-In: interning, loop detection, treat-as-withdraw, graceful-restart stale routes.
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Rib, type RibRoute } from '../../../bgp/rib/index.js';
import { seq, v4Update, v6Update } from '../../support/rib.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const rib0 = () => new Rib({ localAs: 65000, routerId: '10.255.0.1' });

describe('rib: Adj-RIB-In', () => {
  it('routes with the same attributes share one frozen attribute object, without the wire layout or next hop', () => {
    const rib = rib0();
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
    const b = rib.addPeer({ address: '192.0.2.2', asn: 65001, routerId: '1.1.1.2' });
    rib.update(a, v4Update(['10.1.0.0/16', '10.2.0.0/16'], { communities: [1, 2], wire: [{ type: 1, flags: 0x40 }] }));
    // A different message, different next hop, same attributes otherwise.
    rib.update(b, v4Update(['10.3.0.0/16'], { communities: [1, 2], nextHop: '192.0.2.2' }));
    const r1 = rib.lookup('10.1.0.0/16')!.best;
    const r2 = rib.lookup('10.2.0.0/16')!.best;
    const r3 = rib.lookup('10.3.0.0/16')!.best;
    assert.equal(r1.attributes, r2.attributes);
    assert.equal(r1.attributes, r3.attributes);
    assert.ok(
      Object.isFrozen(r1.attributes) && Object.isFrozen(r1.attributes.communities),
      'the shared attributes or their communities are not frozen',
    );
    assert.equal(r1.attributes.wire, undefined);
    assert.equal(r1.attributes.nextHop, undefined);
    assert.equal(r3.nextHop, '192.0.2.2');
    assert.equal(rib.stats().attributeSets, 1);
    assert.equal(rib.stats().nextHops, 2);
  });

  it('IPv6 routes keep next hop and link-local, not the MP_REACH lists', () => {
    const rib = rib0();
    const a = rib.addPeer({ address: '2001:db8::1', asn: 65001, routerId: '1.1.1.1', families: ['ipv6-unicast'] });
    rib.update(a, v6Update(['2001:db8:5::/48'], {}, '2001:db8::1', 'fe80::1'));
    const r = rib.lookup('2001:db8:5::/48')!.best;
    assert.equal(r.nextHop, '2001:db8::1');
    assert.equal(r.linkLocalNextHop, 'fe80::1');
    assert.equal(r.attributes.mpReach, undefined);
    assert.equal(r.family, 'ipv6-unicast');
  });

  it('an attribute set is freed when its last route is withdrawn', () => {
    const rib = rib0();
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
    const prefixes = Array.from({ length: 100 }, (_, i) => `10.${i}.0.0/16`);
    rib.update(a, v4Update(prefixes, { communities: [77] }));
    let weak: WeakRef<object> | undefined = new WeakRef(rib.lookup(prefixes[0])!.best.attributes);
    rib.withdraw(
      a,
      'ipv4-unicast',
      prefixes.slice(0, 99).map((prefix) => ({ prefix })),
    );
    assert.equal(rib.stats().attributeSets, 1, 'still used by the last route');
    rib.withdraw(a, 'ipv4-unicast', [{ prefix: prefixes[99] }]);
    assert.equal(rib.stats().attributeSets, 0);
    assert.equal(rib.stats().nextHops, 0);
    assert.equal(rib.stats().prefixes['ipv4-unicast'], 0);
    return new Promise<void>((resolve) => {
      setImmediate(() => {
        gc();
        assert.equal(weak!.deref(), undefined, 'the set was collected');
        weak = undefined;
        resolve();
      });
    });
  });

  it('an implicit withdrawal (same prefix again) replaces the route and releases the old set', () => {
    const rib = rib0();
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
    rib.update(a, v4Update(['10.1.0.0/16'], { med: 1 }));
    const c = rib.update(a, v4Update(['10.1.0.0/16'], { med: 2 }));
    assert.equal(c[0].kind, 'changed');
    assert.equal(rib.lookup('10.1.0.0/16')!.paths.length, 1);
    assert.equal(rib.lookup('10.1.0.0/16')!.best.attributes.med, 2);
    assert.equal(rib.stats().attributeSets, 1);
    assert.equal(a.stats.routes['ipv4-unicast'], 1);
    assert.deepEqual(rib.update(a, v4Update(['10.1.0.0/16'], { med: 2 })), [], 'the same route again changes nothing');
  });

  it('host bits past the prefix length do not make another prefix', () => {
    const rib = rib0();
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
    rib.update(a, v4Update(['10.1.2.3/16']));
    assert.equal(rib.lookup('10.1.0.0/16')!.best.prefix, '10.1.0.0/16');
  });

  it('our own AS in the AS_PATH: rejected, counted, and the earlier route of that peer withdrawn', () => {
    const rib = rib0();
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
    rib.update(a, v4Update(['10.1.0.0/16']));
    const c = rib.update(a, v4Update(['10.1.0.0/16', '10.2.0.0/16'], { asPath: seq(65001, 65000, 7) }));
    assert.deepEqual(
      c.map((x) => x.kind),
      ['removed'],
    );
    assert.equal(rib.lookup('10.2.0.0/16'), undefined);
    assert.equal(a.stats.loopRejected, 2);
  });

  it('our router ID as ORIGINATOR_ID is a loop too (RFC 4456 §8)', () => {
    const rib = rib0();
    const i = rib.addPeer({ address: '10.0.0.1', asn: 65000, routerId: '1.1.1.1' });
    rib.update(i, v4Update(['10.1.0.0/16'], { originatorId: '10.255.0.1', asPath: [] }));
    assert.equal(rib.lookup('10.1.0.0/16'), undefined);
    assert.equal(i.stats.loopRejected, 1);
  });

  it('treat-as-withdraw: every prefix of the malformed UPDATE is withdrawn, and counted', () => {
    const rib = rib0();
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
    rib.update(a, v4Update(['10.1.0.0/16', '10.2.0.0/16']));
    const c = rib.treatAsWithdraw(a, v4Update(['10.1.0.0/16', '10.2.0.0/16'], { med: 1 }));
    assert.equal(c.length, 2);
    assert.equal(rib.stats().prefixes['ipv4-unicast'], 0);
    assert.equal(a.stats.treatAsWithdraw, 2);
    // An announcement missing a mandatory attribute gets the same treatment.
    rib.update(a, v4Update(['10.3.0.0/16']));
    rib.update(a, { type: 'update', withdrawn: [], nlri: [{ prefix: '10.3.0.0/16' }], attributes: { origin: 'igp', asPath: [] } });
    assert.equal(rib.lookup('10.3.0.0/16'), undefined);
  });

  it('graceful restart: routes kept as stale while the peer is down, refreshed ones survive the sweep', () => {
    const rib = rib0();
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
    rib.update(a, v4Update(['10.1.0.0/16', '10.2.0.0/16', '10.3.0.0/16']));
    rib.update(a, v6Update(['2001:db8:1::/48']));
    const down = rib.peerDown(a, { keepStale: ['ipv4-unicast'] });
    assert.deepEqual(
      down.map((c) => [c.kind, c.prefix]),
      [['removed', '2001:db8:1::/48']],
    );
    const stale = (p: string): RibRoute => rib.lookup(p)!.best;
    assert.equal(stale('10.1.0.0/16').stale, true);
    rib.peerUp(a);
    rib.update(a, v4Update(['10.1.0.0/16'])); // unchanged: refreshed in place
    rib.update(a, v4Update(['10.2.0.0/16'], { med: 9 })); // changed
    assert.equal(stale('10.1.0.0/16').stale, false);
    assert.equal(stale('10.2.0.0/16').stale, false);
    assert.equal(stale('10.3.0.0/16').stale, true);
    const swept = rib.sweepStale(a, 'ipv4-unicast'); // End-of-RIB
    assert.deepEqual(
      swept.map((c) => [c.kind, c.prefix]),
      [['removed', '10.3.0.0/16']],
    );
    assert.equal(a.stats.routes['ipv4-unicast'], 2);
  });

  it("a stale path keeps competing until it is swept; then the other peer's path takes over", () => {
    const rib = rib0();
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
    const b = rib.addPeer({ address: '192.0.2.2', asn: 65002, routerId: '1.1.1.2' });
    rib.update(a, v4Update(['10.1.0.0/16'], { asPath: seq(65001) }));
    rib.update(b, v4Update(['10.1.0.0/16'], { asPath: seq(65002, 1) }));
    rib.markStale(a, 'ipv4-unicast');
    assert.equal(rib.lookup('10.1.0.0/16')!.best.peer, a);
    const c = rib.sweepStale(a, 'ipv4-unicast');
    assert.equal(c[0].best!.peer, b);
  });

  it('a peer that goes down without graceful restart loses all its routes; removePeer forgets it', () => {
    const rib = rib0();
    const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1' });
    rib.update(a, v4Update(['10.1.0.0/16', '10.2.0.0/16']));
    assert.equal(rib.peerDown(a).length, 2);
    assert.equal(rib.stats().attributeSets, 0);
    rib.removePeer(a);
    assert.throws(() => rib.markStale(a, 'ipv4-unicast'), /not registered/);
  });

  it('bad input names the field', () => {
    assert.throws(() => new Rib({ localAs: 0, routerId: '1.1.1.1' }), /localAs/);
    assert.throws(() => new Rib({ localAs: 65000, routerId: 'x' }), /routerId/);
    const rib = rib0();
    assert.throws(() => rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: 'nope' }), /peer routerId/);
    assert.throws(() => rib.originate('10.0.0.0/33'), /prefix/);
  });
});
