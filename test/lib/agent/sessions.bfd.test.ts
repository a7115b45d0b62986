// BGPPeer failureDetectionMode BFDIfDirectlyConnected: the session gets BFD at 100 ms × 3 when
// the peer is directly connected, none when it is not; node status says which.
import assert from 'node:assert/strict';
import type { PeerStatus } from '../../../bgp/index.js';
import { desiredPeers } from '../../../lib/agent/peers.js';
import { BFD_TIMERS, neighborConfig } from '../../../lib/agent/sessions.js';
import { peerStatusRows } from '../../../lib/agent/status.js';
import { validateResource, type BGPPeer, type Node } from '../../../lib/resources/index.js';

const self = validateResource({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Node',
  metadata: { name: 'n1' },
  spec: { bgp: { ipv4Address: '10.90.1.5/24' } },
}) as Node;
const tor = (name: string, peerIP: string, mode?: string): BGPPeer =>
  validateResource({
    apiVersion: 'projectcalico.org/v3',
    kind: 'BGPPeer',
    metadata: { name },
    spec: { peerIP, asNumber: 65001, ...(mode ? { failureDetectionMode: mode } : {}) },
  }) as BGPPeer;

describe('agent: BFDIfDirectlyConnected', () => {
  const view = {
    self,
    nodes: [self],
    config: undefined,
    bgpPeers: [
      tor('tor1', '10.90.1.1', 'BFDIfDirectlyConnected'),
      tor('tor-loop', '10.90.255.1', 'BFDIfDirectlyConnected'),
      tor('plain', '10.90.1.2'),
    ],
  };
  const settings = { port: 179, localAddress: '10.90.1.5', directlyConnected: (a: string) => a.startsWith('10.90.1.') };

  it('BFD at 100 ms × 3 for a directly connected peer; none for one behind a router, nor without the mode', () => {
    const peers = desiredPeers(view);
    const bfd = Object.fromEntries(peers.map((p) => [p.address, neighborConfig(p, settings).bfd]));
    assert.deepEqual(bfd, { '10.90.1.1': BFD_TIMERS, '10.90.1.2': undefined, '10.90.255.1': undefined });
    assert.deepEqual(BFD_TIMERS, { minTxInterval: 100, minRxInterval: 100, multiplier: 3 });
  });

  it('node status shows BFD per peer that asked for it', () => {
    const peers = desiredPeers(view);
    const status = (address: string, bfd?: PeerStatus['bfd']): PeerStatus =>
      ({
        address,
        state: 'Established',
        since: 1,
        lastError: '',
        prefixesReceived: 0,
        prefixesSent: 0,
        ...(bfd ? { bfd } : {}),
      }) as PeerStatus;
    const rows = peerStatusRows(peers, [
      status('10.90.1.1', { state: 'Down', diagnostic: 'control detection time expired' } as PeerStatus['bfd']),
      status('10.90.1.2'),
      status('10.90.255.1'),
    ]);
    const by = Object.fromEntries(rows.map((r) => [r.address, r.info]));
    assert.equal(by['10.90.1.1'], 'Established, BFD Down (control detection time expired)');
    assert.equal(by['10.90.255.1'], 'Established, BFD off (not directly connected)');
    assert.equal(by['10.90.1.2'], 'Established', 'no BFD asked, none shown');
  });
});
