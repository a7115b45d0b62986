// The cluster picture's data: nodes and reflectors from Nodes, ToRs and routers from BGPPeers,
// one line per session (this node's with its state, the others' from desiredPeers without one),
// never a password, and a large cluster drawn in part, saying so.
import assert from 'node:assert/strict';
import { desiredPeers } from '../../../../lib/agent/peers.js';
import type { AgentPeerStatus } from '../../../../lib/agent/status.js';
import { clusterPicture, MAX_MESH_NODES, MAX_PICTURE_NODES } from '../../../../lib/agent/web/cluster-picture.js';
import { validateResource, type BGPConfiguration, type BGPPeer, type Node } from '../../../../lib/resources/index.js';

const node = (name: string, ip: string, labels: Record<string, string> = {}, bgp: Record<string, unknown> = {}): Node =>
  validateResource({
    apiVersion: 'projectcalico.org/v3',
    kind: 'Node',
    metadata: { name, labels },
    spec: { bgp: { ipv4Address: `${ip}/24`, ...bgp } },
  }) as Node;
const peer = (name: string, spec: Record<string, unknown>): BGPPeer =>
  validateResource({ apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name }, spec }) as BGPPeer;
const config = (spec: Record<string, unknown>): BGPConfiguration =>
  validateResource({
    apiVersion: 'projectcalico.org/v3',
    kind: 'BGPConfiguration',
    metadata: { name: 'default' },
    spec,
  }) as BGPConfiguration;

/** This node's session rows, as the agent's status would give them, with the states given by address. */
function sessionsOf(self: Node, nodes: Node[], bgpPeers: BGPPeer[], cfg: BGPConfiguration | undefined, states: Record<string, string>) {
  return desiredPeers({ self, nodes, bgpPeers, config: cfg }).map(
    (p): AgentPeerStatus => ({
      address: p.address,
      asn: p.asn,
      type: p.type,
      source: p.source,
      state: states[p.address] ?? 'Idle',
      since: 0,
      info: '',
      prefixesReceived: 0,
      prefixesSent: 0,
    }),
  );
}

describe('web: the cluster picture', () => {
  const n1 = node('n1', '10.0.0.1', { rack: 'r1', note: '<img src=x onerror=alert(1)>' });
  const n2 = node('n2', '10.0.0.2', { rack: 'r2' });
  const rr = node('rr1', '10.0.0.10', {}, { routeReflectorClusterID: '244.0.0.1' });
  const tor = peer('tor-r1', { peerIP: '10.0.0.250', asNumber: 65010, nodeSelector: "rack == 'r1'", password: 'tor-secret' });
  const core = peer('core', { peerIP: '10.9.9.9:1179', asNumber: 65100 });
  const noMesh = config({ nodeToNodeMeshEnabled: false, nodeMeshPassword: 'mesh-secret' });
  const nodes = [n2, rr, n1];
  const bgpPeers = [tor, core];

  it('draws nodes, the reflector, a ToR and a router, and each session once; this node’s with its state', () => {
    const sessions = sessionsOf(n1, nodes, bgpPeers, noMesh, { '10.0.0.10': 'Established', '10.0.0.250': 'Active' });
    const p = clusterPicture({ self: 'n1', nodes, bgpPeers, config: noMesh, sessions });
    assert.deepEqual(
      p.nodes.map((n) => [n.name, n.reflector ?? '', n.asn]),
      [
        ['n1', '', 64512],
        ['n2', '', 64512],
        ['rr1', '244.0.0.1', 64512],
      ],
    );
    assert.deepEqual(p.nodes[0]!.labels, { rack: 'r1', note: '<img src=x onerror=alert(1)>' });
    assert.deepEqual(
      p.peers.map((x) => [x.id, x.role, x.address, x.asn]),
      [
        ['BGPPeer/core', 'router', '10.9.9.9', 65100],
        ['BGPPeer/tor-r1', 'tor', '10.0.0.250', 65010],
      ],
    );
    const lines = p.sessions.map((s) => `${s.a} ${s.b} ${s.type} ${s.state ?? '-'}`).sort();
    assert.deepEqual(lines, [
      // n1's own: known states (core has none given: Idle).
      'n1 BGPPeer/core global Idle',
      'n1 BGPPeer/tor-r1 node Active',
      'n1 rr1 rr Established',
      // The others', from desiredPeers: rr1's session with n1 is the same line as n1's.
      'n2 BGPPeer/core global -',
      'n2 rr1 rr -',
      'rr1 BGPPeer/core global -',
    ]);
    assert.equal(p.partial, undefined, 'a small cluster is drawn whole');
  });

  it('carries no password: neither a BGPPeer’s nor the mesh’s', () => {
    const sessions = sessionsOf(n1, nodes, bgpPeers, noMesh, {});
    const text = JSON.stringify(clusterPicture({ self: 'n1', nodes, bgpPeers, config: noMesh, sessions }));
    assert.ok(!text.includes('tor-secret'), 'a BGPPeer password in the picture');
    assert.ok(!text.includes('mesh-secret'), 'the mesh password in the picture');
  });

  it('a session no BGPPeer or Node names still gets a far end, by its address', () => {
    const stray: AgentPeerStatus = {
      address: '192.0.2.7',
      asn: 65123,
      type: 'global',
      source: 'BGPPeer/gone',
      state: 'Connect',
      since: 0,
      info: '',
      prefixesReceived: 0,
      prefixesSent: 0,
    };
    const p = clusterPicture({ self: 'n1', nodes: [n1], bgpPeers: [], config: undefined, sessions: [stray] });
    assert.deepEqual(p.peers, [{ id: '192.0.2.7', name: '192.0.2.7', address: '192.0.2.7', asn: 65123, role: 'router' }]);
    assert.deepEqual(p.sessions, [{ a: 'n1', b: '192.0.2.7', address: '192.0.2.7', type: 'global', state: 'Connect' }]);
  });

  it('past the mesh limit only this node’s sessions are drawn; past the picture limit, this node and its peers first', () => {
    const many = Array.from({ length: MAX_MESH_NODES + 1 }, (_, i) => node(`m${String(i).padStart(3, '0')}`, `10.1.${i >> 8}.${i & 255}`));
    const self = many[7]!;
    const sessions = sessionsOf(self, many, [], undefined, {});
    const p = clusterPicture({ self: self.metadata.name, nodes: many, bgpPeers: [], config: undefined, sessions });
    assert.equal(p.sessions.length, MAX_MESH_NODES, 'one line per session of this node');
    assert.ok(
      p.sessions.every((s) => s.a === self.metadata.name),
      'only this node’s sessions',
    );
    assert.match(p.partial ?? '', /51 nodes: only this node's sessions are drawn/);

    const huge = Array.from({ length: MAX_PICTURE_NODES + 20 }, (_, i) =>
      node(`h${String(i).padStart(3, '0')}`, `10.2.${i >> 8}.${i & 255}`),
    );
    const last = huge.at(-1)!;
    const reflector = node('zz-rr', '10.3.0.1', {}, { routeReflectorClusterID: '244.0.0.9' });
    const all = [...huge, reflector];
    const mine = sessionsOf(last, all, [], config({ nodeToNodeMeshEnabled: false }), {});
    const q = clusterPicture({ self: last.metadata.name, nodes: all, bgpPeers: [], config: undefined, sessions: mine });
    assert.equal(q.nodes.length, MAX_PICTURE_NODES);
    const names = q.nodes.map((n) => n.name);
    assert.ok(names.includes(last.metadata.name), 'this node is drawn');
    assert.ok(names.includes('zz-rr'), 'its reflector is drawn');
    assert.match(q.partial ?? '', /221 nodes: 200 are drawn/);
  });
});
