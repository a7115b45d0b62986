// A peer's configuration as the session checks it: long-lived graceful restart's field.
import assert from 'node:assert/strict';
import { buildOpen } from '../../../bgp/session/open.js';
import { checkPeerConfig, longLivedStaleTime } from '../../../bgp/session/config.js';

const peer = { address: '192.0.2.1', asn: 65001 };
const local = { asn: 65000, routerId: '192.0.2.9' };

describe('session: peer configuration', () => {
  it('longLivedGracefulRestart: off by default, 3600 s when on, or the staleTime given', () => {
    assert.equal(longLivedStaleTime(peer), undefined);
    assert.equal(longLivedStaleTime({ ...peer, longLivedGracefulRestart: false }), undefined);
    assert.equal(longLivedStaleTime({ ...peer, longLivedGracefulRestart: true }), 3600);
    assert.equal(longLivedStaleTime({ ...peer, longLivedGracefulRestart: { staleTime: 0 } }), 0);
  });

  it('longLivedGracefulRestart: a bad stale time, an unknown field or no graceful restart is refused, naming the field', () => {
    assert.throws(
      () => checkPeerConfig({ ...peer, longLivedGracefulRestart: { staleTime: 0x1000000 } }),
      /longLivedGracefulRestart\.staleTime: 16777216/,
    );
    assert.throws(() => checkPeerConfig({ ...peer, longLivedGracefulRestart: { staleTime: 1.5 } }), /longLivedGracefulRestart\.staleTime/);
    assert.throws(
      () => checkPeerConfig({ ...peer, longLivedGracefulRestart: { stale: 5 } as unknown as { staleTime: number } }),
      /unknown field "stale"/,
    );
    assert.throws(() => checkPeerConfig({ ...peer, gracefulRestart: false, longLivedGracefulRestart: true }), /needs graceful restart/);
  });

  it('the OPEN carries the long-lived capability after graceful restart, for each family, with the F bit of the speaker', () => {
    const open = buildOpen(
      { ...local, forwardingPreserved: true },
      { ...peer, families: ['ipv4-unicast', 'ipv6-unicast'], longLivedGracefulRestart: { staleTime: 90 } },
      90,
    );
    const kinds = open.capabilities.map((c) => c.kind);
    assert.ok(kinds.indexOf('long-lived-graceful-restart') > kinds.indexOf('graceful-restart'), `order: ${kinds.join(', ')}`);
    assert.deepEqual(
      open.capabilities.find((c) => c.kind === 'long-lived-graceful-restart'),
      {
        kind: 'long-lived-graceful-restart',
        families: [
          { afi: 1, safi: 1, flags: 0x80, staleTime: 90 },
          { afi: 2, safi: 1, flags: 0x80, staleTime: 90 },
        ],
      },
    );
    assert.ok(!buildOpen(local, peer, 90).capabilities.some((c) => c.kind === 'long-lived-graceful-restart'), 'sent when not configured');
  });
});
