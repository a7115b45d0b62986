// Which BGP sessions a node should have, computed from cluster state alone (pure), the way
// Calico's confd renders BIRD's peers: the node-to-node mesh, route reflectors and their
// clients, and BGPPeers selected by node name or label selector.
import type { MaxPrefixes } from '../../bgp/index.js';
import type { BGPPeerMaxPrefixes } from '../resources/max-prefixes.js';
import { parseSelector, type Labels } from '../resources/selector.js';
import { BGP_DEFAULTS, type BGPConfiguration, type BGPPeer, type Node } from '../resources/types.js';
import type { PasswordSource } from './peer-password.js';

/** How `podroute node status` names a session (after `calicoctl node status`). */
export type PeerType = 'mesh' | 'rr' | 'rr-client' | 'global' | 'node';

export interface DesiredPeer {
  address: string;
  asn: number;
  type: PeerType;
  /** The Node or BGPPeer this session comes from. */
  source: string;
  /** We reflect this peer's routes (we have a cluster ID, it has none). */
  routeReflectorClient: boolean;
  /** From BGPPeer.maxRestartTime, in seconds. */
  restartTime?: number;
  keepOriginalNextHop?: boolean;
  /** From BGPPeer.password: the text or where to read it (peer-password.ts); read when the session is added. */
  password?: PasswordSource;
  /** From BGPPeer.maxPrefixes, in the speaker's words. */
  maxPrefixes?: MaxPrefixes;
}

export interface ClusterView {
  self: Node;
  nodes: readonly Node[];
  config: BGPConfiguration | undefined;
  bgpPeers: readonly BGPPeer[];
}

/** The node's IPv4 address without its prefix length. */
export function nodeIpv4(n: Node): string | undefined {
  const a = n.spec.bgp?.ipv4Address;
  return a ? a.split('/')[0] : undefined;
}

export function nodeAsn(n: Node, config: BGPConfiguration | undefined): number {
  return n.spec.bgp?.asNumber ?? config?.spec.asNumber ?? BGP_DEFAULTS.asNumber;
}

export function clusterIdOf(n: Node): string | undefined {
  return n.spec.bgp?.routeReflectorClusterID || undefined;
}

export function meshEnabled(config: BGPConfiguration | undefined): boolean {
  return config?.spec.nodeToNodeMeshEnabled ?? BGP_DEFAULTS.nodeToNodeMeshEnabled;
}

/** Go-style duration ("120s", "2m", "1h30m") in whole seconds. */
export function durationSeconds(d: string): number {
  const unit: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  let total = 0;
  for (const m of d.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) total += Number(m[1]) * unit[m[2]!]!;
  return Math.round(total);
}

function selects(selector: string | undefined, labels: Labels): boolean {
  if (selector === undefined || selector.trim() === '') return true;
  return parseSelector(selector)(labels);
}

/**
 * The sessions `view.self` should hold, one per peer address (the first reason found for an
 * address wins: mesh and reflector sessions before BGPPeers, as both name the same node).
 */
export function desiredPeers(view: ClusterView): DesiredPeer[] {
  const { self, config } = view;
  const me = self.metadata.name;
  const myId = clusterIdOf(self);
  const myAsn = nodeAsn(self, config);
  const out = new Map<string, DesiredPeer>();
  const add = (p: DesiredPeer) => {
    if (!out.has(p.address)) out.set(p.address, p);
  };
  const others = view.nodes.filter((n) => n.metadata.name !== me && nodeIpv4(n) !== undefined);

  for (const n of others) {
    const theirId = clusterIdOf(n);
    const address = nodeIpv4(n)!;
    const asn = nodeAsn(n, config);
    if (myId !== undefined) {
      // A reflector peers with every node: the ones without a cluster ID are its clients,
      // other reflectors are ordinary iBGP peers (RFC 4456 non-clients).
      add({
        address,
        asn,
        type: theirId === undefined ? 'rr-client' : 'rr',
        source: `Node/${n.metadata.name}`,
        routeReflectorClient: theirId === undefined && asn === myAsn,
      });
    } else if (theirId !== undefined) {
      add({ address, asn, type: 'rr', source: `Node/${n.metadata.name}`, routeReflectorClient: false });
    } else if (meshEnabled(config)) {
      add({ address, asn, type: 'mesh', source: `Node/${n.metadata.name}`, routeReflectorClient: false });
    }
  }

  const myLabels = self.metadata.labels ?? {};
  for (const p of view.bgpPeers) {
    const s = p.spec;
    if (s.node !== undefined && s.node !== '' && s.node !== me) continue;
    if (!selects(s.nodeSelector, myLabels)) continue;
    const type: PeerType = s.node || s.nodeSelector ? 'node' : 'global';
    const extra = {
      restartTime: s.maxRestartTime ? durationSeconds(s.maxRestartTime) : undefined,
      keepOriginalNextHop: s.keepOriginalNextHop,
      password: s.password,
      ...(s.maxPrefixes ? { maxPrefixes: speakerMaxPrefixes(s.maxPrefixes) } : {}),
    };
    if (s.peerSelector) {
      // Peer with the nodes the selector picks, at their own addresses and AS.
      const pick = parseSelector(s.peerSelector);
      for (const n of others) {
        if (!pick(n.metadata.labels ?? {})) continue;
        const asn = nodeAsn(n, config);
        const rrClient = myId !== undefined && clusterIdOf(n) === undefined && asn === myAsn;
        add({ address: nodeIpv4(n)!, asn, type, source: `BGPPeer/${p.metadata.name}`, routeReflectorClient: rrClient, ...extra });
      }
      continue;
    }
    if (!s.peerIP) continue;
    const address = s.peerIP.split(':').length === 2 ? s.peerIP.split(':')[0]! : s.peerIP;
    if (address === nodeIpv4(self)) continue;
    add({ address, asn: s.asNumber, type, source: `BGPPeer/${p.metadata.name}`, routeReflectorClient: false, ...extra });
  }
  return [...out.values()].sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
}

/** BGPPeer.maxPrefixes (families ipv4/ipv6, restartAfter a duration) as the speaker takes it. */
export function speakerMaxPrefixes(m: BGPPeerMaxPrefixes): MaxPrefixes {
  const out: MaxPrefixes = {};
  for (const [f, family] of [
    ['ipv4', 'ipv4-unicast'],
    ['ipv6', 'ipv6-unicast'],
  ] as const) {
    const l = m[f];
    if (!l) continue;
    out[family] = {
      limit: l.limit,
      warningThreshold: l.warningThreshold,
      restartAfter: l.restartAfter === undefined ? undefined : durationSeconds(l.restartAfter),
      warningOnly: l.warningOnly,
    };
  }
  return out;
}

/** True when a session must be rebuilt to match `b` (address equal). */
export function peerChanged(a: DesiredPeer, b: DesiredPeer): boolean {
  return (
    a.asn !== b.asn ||
    a.routeReflectorClient !== b.routeReflectorClient ||
    a.restartTime !== b.restartTime ||
    a.type !== b.type ||
    JSON.stringify(a.password) !== JSON.stringify(b.password) ||
    JSON.stringify(a.maxPrefixes) !== JSON.stringify(b.maxPrefixes)
  );
}
