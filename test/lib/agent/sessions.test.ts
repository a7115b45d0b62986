// The session reconciler against real speakers on loopback: desired peers become sessions,
// a changed or vanished peer is replaced or removed, and the other sessions keep running.
import assert from 'node:assert/strict';
import { BgpSpeaker } from '../../../bgp/index.js';
import type { DesiredPeer } from '../../../lib/agent/peers.js';
import { neighborConfig, SessionReconciler, type SessionSettings } from '../../../lib/agent/sessions.js';
import { waitFor } from '../../support/wait.js';
import { freePort } from '../../../bgp/session/free-port.js';

const mesh = (address: string): DesiredPeer => ({
  address,
  asn: 64512,
  type: 'mesh',
  source: `Node/${address}`,
  routeReflectorClient: false,
});

describe('agent session reconciler', () => {
  it("neighbor settings: the session defaults, the peer's restart time over the node's, a description naming the source", () => {
    const s: SessionSettings = { port: 1179, localAddress: '10.0.0.1' };
    assert.deepEqual(neighborConfig(mesh('10.0.0.2'), s), {
      address: '10.0.0.2',
      asn: 64512,
      port: 1179,
      families: ['ipv4-unicast'],
      localAddress: '10.0.0.1',
      holdTime: 90,
      connectRetryTime: 3,
      idleHoldTime: 1,
      routeReflectorClient: false,
      gracefulRestart: { restartTime: 120 },
      description: 'mesh Node/10.0.0.2',
    });
    const tor: DesiredPeer = {
      address: '10.0.0.254',
      asn: 65000,
      type: 'global',
      source: 'BGPPeer/tor',
      routeReflectorClient: false,
      restartTime: 30,
    };
    const c = neighborConfig(tor, { ...s, holdTime: 9, connectRetryTime: 1, restartTime: 60 });
    assert.deepEqual([c.holdTime, c.connectRetryTime, c.gracefulRestart], [9, 1, { restartTime: 30 }]);
    assert.deepEqual(neighborConfig(mesh('10.0.0.2'), { ...s, restartTime: 60 }).gracefulRestart, { restartTime: 60 });
  });

  describe('with real speakers', () => {
    let port: number;
    let a: BgpSpeaker;
    let b: BgpSpeaker;
    let logged: [string, Record<string, unknown>][];
    let sessionsA: SessionReconciler;
    const settings = (localAddress: string): SessionSettings => ({ port, localAddress, holdTime: 9, connectRetryTime: 1 });
    const state = (s: BgpSpeaker, address: string) => s.peerStatus().find((p) => p.address === address);

    beforeEach(async () => {
      port = await freePort();
      logged = [];
      a = new BgpSpeaker({ asn: 64512, routerId: '127.0.0.1', listen: { host: '127.0.0.1', port } });
      b = new BgpSpeaker({ asn: 64512, routerId: '127.0.0.2', listen: { host: '127.0.0.2', port } });
      await Promise.all([a.start(), b.start()]);
      sessionsA = new SessionReconciler(a, (e, f) => logged.push([e, f]));
      new SessionReconciler(b, () => undefined).reconcile([mesh('127.0.0.1')], settings('127.0.0.2'));
    });
    afterEach(async () => {
      await Promise.all([a.stop(), b.stop()]);
    });

    it('adds the desired peers; a changed peer is replaced and a vanished one removed while the others keep their session', async () => {
      const tor: DesiredPeer = { address: '127.0.0.9', asn: 65000, type: 'global', source: 'BGPPeer/tor', routeReflectorClient: false };
      sessionsA.reconcile([mesh('127.0.0.2'), tor], settings('127.0.0.1'));
      assert.deepEqual([...sessionsA.peers.keys()], ['127.0.0.2', '127.0.0.9']);
      const up = await waitFor(() => state(a, '127.0.0.2'), { what: 'a–b session Established', until: (s) => s?.state === 'Established' });
      assert.equal(state(a, '127.0.0.9')?.asn, 65000);
      assert.equal(state(a, '127.0.0.9')?.description, 'global BGPPeer/tor');

      // The same peers again: nothing is touched.
      logged = [];
      sessionsA.reconcile([mesh('127.0.0.2'), tor], settings('127.0.0.1'));
      assert.equal(logged.length, 0, 'nothing touched');

      // The ToR's AS changes: that session is rebuilt, the mesh session is left alone.
      sessionsA.reconcile([mesh('127.0.0.2'), { ...tor, asn: 65001 }], settings('127.0.0.1'));
      assert.deepEqual(
        logged.map(([e, f]) => `${e} ${String(f.peer)}`),
        ['peer-removed 127.0.0.9', 'peer-added 127.0.0.9'],
      );
      assert.equal(state(a, '127.0.0.9')?.asn, 65001);
      assert.equal(sessionsA.peers.get('127.0.0.9')?.asn, 65001);

      // The ToR goes away.
      sessionsA.reconcile([mesh('127.0.0.2')], settings('127.0.0.1'));
      assert.deepEqual(
        a.peerStatus().map((p) => p.address),
        ['127.0.0.2'],
      );
      assert.deepEqual([...sessionsA.peers.keys()], ['127.0.0.2']);
      const after = state(a, '127.0.0.2')!;
      assert.equal(after.state, 'Established');
      assert.equal(after.since, up!.since, 'the mesh session never restarted');
    });

    it('a peer the speaker refuses is logged and left out; the others still get their session', async () => {
      const bad: DesiredPeer = {
        address: 'not-an-address',
        asn: 65000,
        type: 'global',
        source: 'BGPPeer/typo',
        routeReflectorClient: false,
      };
      sessionsA.reconcile([mesh('127.0.0.2'), bad], settings('127.0.0.1'));
      assert.deepEqual([...sessionsA.peers.keys()], ['127.0.0.2']);
      const err = logged.find(([e]) => e === 'peer-error');
      assert.equal(err?.[1].source, 'BGPPeer/typo');
      assert.match(String(err?.[1].error), /not an IP address/);
      await waitFor(() => state(a, '127.0.0.2'), { what: 'a–b session Established', until: (s) => s?.state === 'Established' });
    });
  });
});
