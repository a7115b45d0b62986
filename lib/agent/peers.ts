// Which BGP sessions a node should have, computed from cluster state alone (pure), the way
// Calico's confd renders BIRD's peers: the node-to-node mesh, route reflectors and their
// clients, and BGPPeers selected by node name or label selector.
import { DEFAULT_LONG_LIVED_STALE_TIME, type MaxPrefixes } from '../../bgp/index.js';
import { cidrAddress } from '../../ip/index.js';
import {
  type BGPPeerMaxPrefixes,
  parsePeerIP,
  parseSelector,
  type Labels,
  BGP_DEFAULTS,
  durationSeconds,
  type BGPConfiguration,
  type BGPPeer,
  type Node,
} from '../resources/index.js';
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
  /** BGPPeer.restartMode LongLivedGracefulRestart: the LLGR stale time (s), from maxRestartTime (default 3600). */
  longLivedStaleTime?: number;
  keepOriginalNextHop?: boolean;
  /** From BGPPeer.password: the text or where to read it (peer-password.ts); read when the session is added. */
  password?: PasswordSource;
  /** From BGPPeer.peerIP "ip:port"; absent: the cluster's listenPort. */
  port?: number;
  /** BGPPeer.sourceAddress None: no source address is set, the kernel picks one. */
  sourceAddress?: 'None';
  /** Why this session is not started (a setting the speaker cannot honour for it); shown by node status. */
  refused?: string;
  /** From BGPPeer.maxPrefixes, in the speaker's words. */
  maxPrefixes?: MaxPrefixes;
  /** BGPPeer.birdGatewayMode DirectIfDirectlyConnected: felix takes this peer's next hops in direct mode. */
  directGateway?: boolean;
  /** BGPPeer.reachableBy: felix programs a static route to the peer through this gateway. */
  reachableBy?: string;
  /** BGPPeer.ttlSecurity: GTSM with the peer at most this many hops away. */
  ttlSecurity?: number;
  /** BGPPeer.failureDetectionMode BFDIfDirectlyConnected: BFD when the peer is on one of the node's subnets. */
  bfdIfDirectlyConnected?: boolean;
  /** BGPPeer.localASNumber: our AS on this session, in place of the node's. */
  localAs?: number;
  /** BGPPeer.filters: the BGPFilters of this session, in order (their rules change without a new session). */
  filters?: string[];
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
  if (!a) return undefined;
  try {
    return cidrAddress(a, 'spec.bgp.ipv4Address');
  } catch {
    return undefined; // validated on the way in; a Node written around validation gets no IPv4 session
  }
}

/** The node's IPv6 address without its prefix length, in its one canonical spelling (RFC 5952). */
export function nodeIpv6(n: Node): string | undefined {
  const a = n.spec.bgp?.ipv6Address;
  if (!a) return undefined;
  try {
    return cidrAddress(a, 'spec.bgp.ipv6Address');
  } catch {
    return undefined; // validated on the way in; a Node written around validation peers over IPv4 only
  }
}

/**
 * The addresses `self` holds sessions with `n` on: its IPv4 one, and its IPv6 one when both
 * have IPv6 (Calico's mesh runs one session per family, each carrying its own family).
 */
export function sessionAddresses(self: Node, n: Node): string[] {
  const v6 = nodeIpv6(self) !== undefined ? nodeIpv6(n) : undefined;
  return [nodeIpv4(n), v6].filter((a): a is string => a !== undefined);
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

export { durationSeconds };

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
  const others = view.nodes.filter((n) => n.metadata.name !== me && sessionAddresses(self, n).length > 0);
  // BGPConfiguration's mesh settings (Calico applies them to the node-to-node mesh only).
  const meshExtra = {
    ...(config?.spec.nodeMeshMaxRestartTime ? { restartTime: durationSeconds(config.spec.nodeMeshMaxRestartTime) } : {}),
    ...(config?.spec.nodeMeshPassword !== undefined ? { password: config.spec.nodeMeshPassword } : {}),
  };

  for (const n of others) {
    const theirId = clusterIdOf(n);
    const asn = nodeAsn(n, config);
    for (const address of sessionAddresses(self, n)) {
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
        add({ address, asn, type: 'mesh', source: `Node/${n.metadata.name}`, routeReflectorClient: false, ...meshExtra });
      }
    }
  }

  const myLabels = self.metadata.labels ?? {};
  // Whether a BGPPeer's node / nodeSelector picks node `n` (neither: every node).
  const onNode = (s: BGPPeer['spec'], n: Node): boolean =>
    s.node !== undefined && s.node !== '' ? s.node === n.metadata.name : selects(s.nodeSelector, n.metadata.labels ?? {});
  for (const p of view.bgpPeers) {
    const s = p.spec;
    const type: PeerType = s.node || s.nodeSelector ? 'node' : 'global';
    // Calico: maxRestartTime is the graceful restart time, or with LLGR the long-lived stale time.
    const llgr = s.restartMode === 'LongLivedGracefulRestart';
    const extra = {
      restartTime: s.maxRestartTime && !llgr ? durationSeconds(s.maxRestartTime) : undefined,
      ...(llgr ? { longLivedStaleTime: s.maxRestartTime ? durationSeconds(s.maxRestartTime) : DEFAULT_LONG_LIVED_STALE_TIME } : {}),
      keepOriginalNextHop: s.keepOriginalNextHop,
      password: s.password,
      ...(s.sourceAddress === 'None' ? { sourceAddress: 'None' as const } : {}),
      ...(s.maxPrefixes ? { maxPrefixes: speakerMaxPrefixes(s.maxPrefixes) } : {}),
      ...(s.birdGatewayMode === 'DirectIfDirectlyConnected' ? { directGateway: true } : {}),
      ...(s.ttlSecurity ? { ttlSecurity: s.ttlSecurity } : {}),
      ...(s.failureDetectionMode === 'BFDIfDirectlyConnected' ? { bfdIfDirectlyConnected: true } : {}),
      ...(s.localASNumber !== undefined ? { localAs: s.localASNumber } : {}),
      ...(s.filters?.length ? { filters: s.filters } : {}),
    };
    const nodePeer = (n: Node) => {
      const asn = nodeAsn(n, config);
      const rrClient = myId !== undefined && clusterIdOf(n) === undefined && asn === myAsn;
      for (const address of sessionAddresses(self, n))
        add(checked({ address, asn, type, source: `BGPPeer/${p.metadata.name}`, routeReflectorClient: rrClient, ...extra }, myAsn));
    };
    if (s.peerSelector) {
      // Calico's route-reflector form: every node nodeSelector picks peers with every node
      // peerSelector picks, at their own addresses and AS; a picked node peers back with them.
      const pick = parseSelector(s.peerSelector);
      const iAmPicked = pick(myLabels);
      const iAmSelected = onNode(s, self);
      for (const n of others) {
        if ((iAmSelected && pick(n.metadata.labels ?? {})) || (iAmPicked && onNode(s, n))) nodePeer(n);
      }
      continue;
    }
    if (!onNode(s, self) || !s.peerIP) continue;
    const target = parsePeerIP(s.peerIP);
    if (target === undefined || target.address === nodeIpv4(self) || target.address === nodeIpv6(self)) continue;
    const noV6 =
      target.address.includes(':') && nodeIpv6(self) === undefined
        ? { refused: 'peerIP is IPv6 and this node has no IPv6 address (spec.bgp.ipv6Address)' }
        : {};
    add(
      checked(
        {
          address: target.address,
          asn: s.asNumber ?? myAsn,
          type,
          source: `BGPPeer/${p.metadata.name}`,
          routeReflectorClient: false,
          ...(target.port !== undefined ? { port: target.port } : {}),
          ...(s.reachableBy ? { reachableBy: s.reachableBy } : {}),
          ...extra,
          ...noV6,
        },
        myAsn,
      ),
    );
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

/**
 * The peer, refused when it asks for what the speaker cannot do for it: towards an eBGP peer
 * the speaker always puts its own address as next hop, so keepOriginalNextHop holds on iBGP only.
 */
function checked(p: DesiredPeer, myAsn: number): DesiredPeer {
  if (p.keepOriginalNextHop && p.asn !== (p.localAs ?? myAsn))
    return {
      ...p,
      refused: `keepOriginalNextHop is not supported by podroute towards an eBGP peer (AS ${p.asn}): its speaker always sets itself as next hop there`,
    };
  return p;
}

/** True when a session must be rebuilt to match `b` (address equal). */
export function peerChanged(a: DesiredPeer, b: DesiredPeer): boolean {
  return (
    a.asn !== b.asn ||
    a.routeReflectorClient !== b.routeReflectorClient ||
    a.restartTime !== b.restartTime ||
    a.longLivedStaleTime !== b.longLivedStaleTime ||
    a.type !== b.type ||
    a.port !== b.port ||
    a.sourceAddress !== b.sourceAddress ||
    a.refused !== b.refused ||
    a.directGateway !== b.directGateway ||
    a.ttlSecurity !== b.ttlSecurity ||
    a.bfdIfDirectlyConnected !== b.bfdIfDirectlyConnected ||
    a.localAs !== b.localAs ||
    JSON.stringify(a.password) !== JSON.stringify(b.password) ||
    JSON.stringify(a.maxPrefixes) !== JSON.stringify(b.maxPrefixes)
  );
}
