// The cluster as the agent knows it, for the web page to draw (pure): its Nodes (reflectors among
// them), the peers outside it that BGPPeers name (ToRs, routers), and the sessions between them.
// This node's sessions carry their state; the others' are the ones `desiredPeers` gives each
// node, drawn without one (only their own agents know it).
import { parsePeerIP, type BGPConfiguration, type BGPPeer, type Node } from '../../resources/index.js';
import { clusterIdOf, desiredPeers, nodeAsn, nodeIpv4, nodeIpv6, type DesiredPeer } from '../peers.js';
import type { AgentPeerStatus } from '../status.js';
import type { ClusterPicture, PictureNode, PicturePeer, PictureSession } from './api.js';

export interface ClusterFacts {
  self: string;
  nodes: readonly Node[];
  bgpPeers: readonly BGPPeer[];
  config: BGPConfiguration | undefined;
  /** This node's sessions with their states (`podroute node status`'s rows). */
  sessions: readonly AgentPeerStatus[];
}

/** Past this many Nodes only this node's sessions are drawn: a full mesh is n² lines. */
export const MAX_MESH_NODES = 50;
/** Past this many Nodes the others are left out of the picture. */
export const MAX_PICTURE_NODES = 200;

export function clusterPicture(f: ClusterFacts): ClusterPicture {
  const byAddress = new Map<string, string>();
  for (const n of f.nodes) {
    for (const a of [nodeIpv4(n), nodeIpv6(n)]) if (a) byAddress.set(a, n.metadata.name);
  }
  const peers = new Map<string, PicturePeer>();
  for (const p of f.bgpPeers) {
    const address = p.spec.peerIP ? parsePeerIP(p.spec.peerIP)?.address : undefined;
    if (!address || byAddress.has(address)) continue; // a node, or peers picked by selector
    const selector = p.spec.nodeSelector?.trim();
    const perNode = !!p.spec.node || (!!selector && selector !== 'all()');
    peers.set(`BGPPeer/${p.metadata.name}`, {
      id: `BGPPeer/${p.metadata.name}`,
      name: p.metadata.name,
      address,
      ...(p.spec.asNumber === undefined ? {} : { asn: p.spec.asNumber }),
      role: perNode ? 'tor' : 'router',
    });
  }
  /** The node or peer at the far end of a session. */
  const farEnd = (address: string, source: string, asn: number): string => {
    const node = byAddress.get(address);
    if (node) return node;
    if (peers.has(source)) return source;
    if (!peers.has(address)) peers.set(address, { id: address, name: address, address, asn, role: 'router' });
    return address;
  };

  const sessions = new Map<string, PictureSession>();
  const add = (s: PictureSession) => {
    const key = `${[s.a, s.b].sort().join('\n')}\n${s.address.includes(':') ? 6 : 4}`;
    if (!sessions.has(key)) sessions.set(key, s);
  };
  for (const s of f.sessions) add({ a: f.self, b: farEnd(s.address, s.source, s.asn), address: s.address, type: s.type, state: s.state });

  let partial: string | undefined;
  if (f.nodes.length <= MAX_MESH_NODES) {
    for (const n of f.nodes) {
      if (n.metadata.name === f.self) continue;
      let theirs: DesiredPeer[];
      try {
        theirs = desiredPeers({ self: n, nodes: f.nodes, config: f.config, bgpPeers: f.bgpPeers });
      } catch {
        continue; // a selector this node's agent would refuse too: it draws none of its sessions
      }
      for (const p of theirs) add({ a: n.metadata.name, b: farEnd(p.address, p.source, p.asn), address: p.address, type: p.type });
    }
  } else partial = `${f.nodes.length} nodes: only this node's sessions are drawn`;

  let shown = [...f.nodes];
  if (shown.length > MAX_PICTURE_NODES) {
    // This node, the nodes at the ends of its sessions and the reflectors first; then by name.
    const wanted = new Set([f.self, ...[...sessions.values()].flatMap((s) => [s.a, s.b])]);
    const rank = (n: Node) => (wanted.has(n.metadata.name) ? 0 : clusterIdOf(n) ? 1 : 2);
    shown = shown.sort((x, y) => rank(x) - rank(y) || x.metadata.name.localeCompare(y.metadata.name)).slice(0, MAX_PICTURE_NODES);
    partial = `${f.nodes.length} nodes: ${MAX_PICTURE_NODES} are drawn (this node, its peers and the reflectors first), only this node's sessions`;
  }
  const names = new Set(shown.map((n) => n.metadata.name));
  const drawn = [...sessions.values()].filter((s) => names.has(s.a) && (names.has(s.b) || peers.has(s.b)));
  return {
    self: f.self,
    nodes: shown.map((n) => pictureNode(n, f.config)).sort((x, y) => x.name.localeCompare(y.name)),
    peers: [...peers.values()].sort((x, y) => x.id.localeCompare(y.id)),
    sessions: drawn,
    ...(partial ? { partial } : {}),
  };
}

function pictureNode(n: Node, config: BGPConfiguration | undefined): PictureNode {
  const ipv4 = n.spec.bgp?.ipv4Address;
  const ipv6 = n.spec.bgp?.ipv6Address;
  const reflector = clusterIdOf(n);
  // Label values are any text a user wrote: the page shows them as text, never as markup.
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(n.metadata.labels ?? {})) labels[k] = String(v);
  return {
    name: n.metadata.name,
    ...(ipv4 ? { ipv4 } : {}),
    ...(ipv6 ? { ipv6 } : {}),
    asn: nodeAsn(n, config),
    ...(reflector ? { reflector } : {}),
    labels,
  };
}
