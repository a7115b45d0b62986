// BGPPeer.spec.maxPrefixes (podroute's own field): checked with its path, turned into the
// speaker's limits (restartAfter a duration, families ipv4/ipv6), a change rebuilds the
// session, and the agent's session enforces it against a real speaker on loopback.
import assert from 'node:assert/strict';
import { BgpSpeaker } from '../../../bgp/index.js';
import { desiredPeers, peerChanged, type DesiredPeer } from '../../../lib/agent/peers.js';
import { neighborConfig, SessionReconciler, type SessionSettings } from '../../../lib/agent/sessions.js';
import { type BGPPeer, type Node, validateResource } from '../../../lib/resources/index.js';
import { waitFor } from '../../support/wait.js';
import { freePort } from '../../../bgp/session/free-port.js';

const bgpPeer = (maxPrefixes: unknown) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'BGPPeer',
  metadata: { name: 'tor' },
  spec: { peerIP: '10.0.0.254', asNumber: 65000, maxPrefixes },
});

describe('BGPPeer maxPrefixes', () => {
  it('is read with its path; a bad limit is refused by name', () => {
    const ok = validateResource(
      bgpPeer({ ipv4: { limit: 500, warningThreshold: 90, restartAfter: '5m' }, ipv6: { limit: 10, warningOnly: true } }),
    );
    assert.deepEqual((ok as BGPPeer).spec.maxPrefixes, {
      ipv4: { limit: 500, warningThreshold: 90, restartAfter: '5m' },
      ipv6: { limit: 10, warningOnly: true },
    });
    const bad: [unknown, RegExp][] = [
      [{ ipv4: { limit: 0 } }, /spec\.maxPrefixes\.ipv4\.limit/],
      [{ ipv4: { limit: 5, restartAfter: 300 } }, /spec\.maxPrefixes\.ipv4\.restartAfter/],
      [{ ipv4: { limit: 5, restartAfter: 'soon' } }, /spec\.maxPrefixes\.ipv4\.restartAfter.*not a duration/],
      [{ ipv4: { limit: 5, warningThreshold: 150 } }, /spec\.maxPrefixes\.ipv4\.warningThreshold/],
      [{ ipv4: { limit: 5, warningOnly: true, restartAfter: '1m' } }, /spec\.maxPrefixes\.ipv4\.restartAfter.*warningOnly/],
      [{ ipv4: { limit: 5, max: 1 } }, /spec\.maxPrefixes\.ipv4\.max.*unknown field/],
      [{ 'ipv4-unicast': { limit: 5 } }, /spec\.maxPrefixes\.ipv4-unicast.*unknown field/],
      [7, /spec\.maxPrefixes.*mapping/],
    ];
    for (const [v, re] of bad) assert.throws(() => validateResource(bgpPeer(v)), re, JSON.stringify(v));
  });

  it("becomes the speaker's limits; a changed limit rebuilds the session", () => {
    const self = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'Node',
      metadata: { name: 'n1' },
      spec: { bgp: { ipv4Address: '10.0.0.1/24' } },
    } as Node;
    const peer = validateResource(bgpPeer({ ipv4: { limit: 500, restartAfter: '1m30s' } })) as BGPPeer;
    const [d] = desiredPeers({ self, nodes: [self], config: undefined, bgpPeers: [peer] });
    assert.deepEqual(JSON.parse(JSON.stringify(d!.maxPrefixes)), { 'ipv4-unicast': { limit: 500, restartAfter: 90 } });
    assert.deepEqual(neighborConfig(d!, { port: 179, localAddress: '10.0.0.1' }).maxPrefixes, d!.maxPrefixes);
    const other = validateResource(bgpPeer({ ipv4: { limit: 600, restartAfter: '1m30s' } })) as BGPPeer;
    const [e] = desiredPeers({ self, nodes: [self], config: undefined, bgpPeers: [other] });
    assert.equal(peerChanged(d!, e!), true);
    assert.equal(peerChanged(d!, { ...d! }), false);
    const plain = validateResource({ ...bgpPeer(undefined), spec: { peerIP: '10.0.0.254', asNumber: 65000 } }) as BGPPeer;
    const [f] = desiredPeers({ self, nodes: [self], config: undefined, bgpPeers: [plain] });
    assert.equal('maxPrefixes' in f!, false);
    assert.equal('maxPrefixes' in neighborConfig(f!, { port: 179, localAddress: '10.0.0.1' }), false);
  });

  it("the agent's session stops a peer that sends more than its BGPPeer allows", async function () {
    this.timeout(30_000);
    const port = await freePort();
    const a = new BgpSpeaker({ asn: 65000, routerId: '127.0.0.41', listen: { host: '127.0.0.41', port } });
    const node = new BgpSpeaker({ asn: 64512, routerId: '127.0.0.42', listen: { host: '127.0.0.42', port } });
    try {
      await Promise.all([a.start(), node.start()]);
      a.addPeer({
        address: '127.0.0.42',
        asn: 64512,
        port,
        localAddress: '127.0.0.41',
        holdTime: 9,
        connectRetryTime: 1,
        idleHoldTime: 0.2,
      });
      const settings: SessionSettings = { port, localAddress: '127.0.0.42', holdTime: 9, connectRetryTime: 1 };
      const tor: DesiredPeer = {
        address: '127.0.0.41',
        asn: 65000,
        type: 'global',
        source: 'BGPPeer/tor',
        routeReflectorClient: false,
        maxPrefixes: { 'ipv4-unicast': { limit: 2 } },
      };
      new SessionReconciler(node, () => undefined).reconcile([tor], settings);
      await waitFor(() => node.peerStatus()[0]?.state, {
        what: 'session Established',
        until: (s) => s === 'Established',
        timeoutMs: 15_000,
      });
      for (const p of ['10.88.0.0/24', '10.88.1.0/24', '10.88.2.0/24']) a.originate(p);
      const held = await waitFor(() => node.peerStatus()[0]!, {
        what: 'the peer held down',
        until: (p) => p.maxPrefixes?.heldDown !== undefined,
        timeoutMs: 15_000,
        intervalMs: 50,
      });
      assert.equal(held.state, 'Idle');
      assert.match(held.lastError, /maximum prefixes exceeded: 3 ipv4-unicast paths, limit 2; session down until cleared/);
      assert.equal(node.routes('ipv4-unicast').length, 0);
    } finally {
      await Promise.all([a.stop(), node.stop()]);
    }
  });
});
