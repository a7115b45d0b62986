// The BGPPeer fields of a Calico fabric design, as the node agent turns them into sessions and
// felix input: ttlSecurity reaches the session's config, birdGatewayMode DirectIfDirectlyConnected
// marks the peer for direct next hops, reachableBy asks for a static route to a peerIP peer; a
// change of ttlSecurity or gateway mode rebuilds the session, one of reachableBy does not.
import assert from 'node:assert/strict';
import { desiredPeers, peerChanged, type ClusterView } from '../../../lib/agent/peers.js';
import { neighborConfig } from '../../../lib/agent/sessions.js';
import { validateResource, type BGPPeer, type Node } from '../../../lib/resources/index.js';

const self = validateResource({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Node',
  metadata: { name: 'n1' },
  spec: { bgp: { ipv4Address: '10.0.1.5/24' } },
}) as Node;
const tor = (spec: Record<string, unknown>): BGPPeer =>
  validateResource({
    apiVersion: 'projectcalico.org/v3',
    kind: 'BGPPeer',
    metadata: { name: 'tor' },
    spec: { peerIP: '10.90.255.1', asNumber: 65001, ...spec },
  }) as BGPPeer;
const view = (p: BGPPeer): ClusterView => ({ self, nodes: [self], config: undefined, bgpPeers: [p] });

describe('agent: BGPPeer ttlSecurity, birdGatewayMode, reachableBy', () => {
  it('reach the desired peer, and ttlSecurity the session config', () => {
    const [p] = desiredPeers(view(tor({ ttlSecurity: 1, birdGatewayMode: 'DirectIfDirectlyConnected', reachableBy: '10.0.1.1' })));
    assert.deepEqual([p!.ttlSecurity, p!.directGateway, p!.reachableBy], [1, true, '10.0.1.1']);
    assert.equal(neighborConfig(p!, { port: 179, localAddress: '10.0.1.5' }).ttlSecurity, 1);
    const [plain] = desiredPeers(view(tor({ birdGatewayMode: 'Recursive' })));
    assert.deepEqual([plain!.ttlSecurity, plain!.directGateway, plain!.reachableBy], [undefined, undefined, undefined]);
    assert.equal('ttlSecurity' in neighborConfig(plain!, { port: 179 }), false, 'no GTSM unless asked');
  });

  it('a new ttlSecurity or gateway mode rebuilds the session; a new reachableBy only moves the static route', () => {
    const [a] = desiredPeers(view(tor({})));
    const [gtsm] = desiredPeers(view(tor({ ttlSecurity: 1 })));
    const [direct] = desiredPeers(view(tor({ birdGatewayMode: 'DirectIfDirectlyConnected' })));
    const [via] = desiredPeers(view(tor({ reachableBy: '10.0.1.1' })));
    assert.equal(peerChanged(a!, gtsm!), true, 'ttlSecurity');
    assert.equal(peerChanged(a!, direct!), true, 'birdGatewayMode');
    assert.equal(peerChanged(a!, via!), false, 'reachableBy');
  });
});
