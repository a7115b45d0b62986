// What `podroute node status`, `podroute bgp summary`, the metrics and the readiness probe
// read: the desired sessions joined with the speaker's view of each, what we announce, and
// how many routes felix holds.
import type { PeerStatus } from '../../bgp/index.js';
import { BGP_DEFAULTS, type BGPConfiguration, type Node } from '../resources/index.js';
import type { Advertisements } from './advertise.js';
import type { ServicesStatus } from './service-feed.js';
import { clusterIdOf, nodeAsn, type DesiredPeer, type PeerType } from './peers.js';

export interface AgentPeerStatus {
  address: string;
  asn: number;
  type: PeerType;
  source: string;
  state: string;
  since: number;
  info: string;
  prefixesReceived: number;
  prefixesSent: number;
  /**
   * The session's BFD (BGPPeer failureDetectionMode BFDIfDirectlyConnected): its state, with the
   * diagnostic when not Up; "off" with the reason when the peer is not directly connected.
   */
  bfd?: string;
}

export interface AgentStatus {
  node: string;
  address: string;
  /** The node's IPv6 address with prefix length, when it has one. */
  addressV6?: string;
  asn: number;
  routerId: string;
  clusterId?: string;
  ready: boolean;
  restarting: boolean;
  peers: AgentPeerStatus[];
  advertised: Advertisements;
  /**
   * failures: writes that failed plus routes with no usable next hop; notProgrammed: those
   * destinations with why (the first 100).
   */
  routes: { learned: number; programmed: number; failures: number; notProgrammed?: { dst: string; reason: string }[] };
  /** The Services felix programs, and those refused (an address out of range or another's); absent when services are off. */
  services?: ServicesStatus;
  /** Set while the agent holds its ground because the datastore was replaced under it. */
  datastoreHeld?: { since: number; problem: string | undefined; restored: boolean };
}

/**
 * One row per desired peer; a peer the speaker does not know (yet) shows as Idle, and one that
 * was not started (`refused`: its secret not found, say) as Idle with the reason.
 */
export function peerStatusRows(
  peers: Iterable<DesiredPeer>,
  sessions: readonly PeerStatus[],
  refused: ReadonlyMap<string, { peer: DesiredPeer; error: string }> = new Map(),
): AgentPeerStatus[] {
  const byAddress = new Map(sessions.map((s) => [s.address, s]));
  const notStarted = [...refused.values()].map(({ peer, error }) => ({
    address: peer.address,
    asn: peer.asn,
    type: peer.type,
    source: peer.source,
    state: 'Idle',
    since: 0,
    info: `Idle not started: ${error}`,
    prefixesReceived: 0,
    prefixesSent: 0,
  }));
  return [...peers]
    .map((p) => {
      const s = byAddress.get(p.address);
      const state = s?.state ?? 'Idle';
      const bfd = bfdText(p, s);
      const info = state === 'Established' ? 'Established' : s?.lastError ? `${state} ${s.lastError}` : state;
      return {
        address: p.address,
        asn: p.asn,
        type: p.type,
        source: p.source,
        state,
        since: s?.since ?? 0,
        info: bfd === undefined ? info : `${info}, BFD ${bfd}`,
        prefixesReceived: s?.prefixesReceived ?? 0,
        prefixesSent: s?.prefixesSent ?? 0,
        ...(bfd === undefined ? {} : { bfd }),
      };
    })
    .concat(notStarted);
}

/** A session's BFD in a few words, for a peer that asked for it. */
function bfdText(p: DesiredPeer, s: PeerStatus | undefined): string | undefined {
  if (!p.bfdIfDirectlyConnected || s === undefined) return undefined;
  const b = s.bfd;
  if (!b) return 'off (not directly connected)';
  return b.state === 'Up' ? 'Up' : `${b.state} (${b.diagnostic})`;
}

export interface StatusFacts {
  nodeName: string;
  address: string;
  addressV6?: string;
  self: Node | undefined;
  config: BGPConfiguration | undefined;
  /** '' before the speaker exists. */
  routerId: string;
  ready: boolean;
  restarting: boolean;
  peers: AgentPeerStatus[];
  advertised: Advertisements;
  learned: number;
  /** Routes in felix's desired state, and how many of them failed to program. */
  desiredRoutes: number;
  failures: number;
  /** Learned and static routes felix has no usable next hop for (not in desiredRoutes), with why. */
  unresolved?: ReadonlyMap<string, string>;
  /** Failed writes, with why. */
  failed?: ReadonlyMap<string, { error: string }>;
  datastoreHeld?: AgentStatus['datastoreHeld'];
  services?: ServicesStatus;
}

export function agentStatus(f: StatusFacts): AgentStatus {
  return {
    node: f.nodeName,
    address: f.address,
    ...(f.addressV6 ? { addressV6: f.addressV6 } : {}),
    asn: f.self ? nodeAsn(f.self, f.config) : BGP_DEFAULTS.asNumber,
    routerId: f.routerId,
    clusterId: f.self ? clusterIdOf(f.self) : undefined,
    ready: f.ready,
    restarting: f.restarting,
    peers: f.peers,
    advertised: f.advertised,
    routes: {
      learned: f.learned,
      programmed: f.desiredRoutes - f.failures,
      failures: f.failures + (f.unresolved?.size ?? 0),
      ...notProgrammed(f),
    },
    ...(f.datastoreHeld ? { datastoreHeld: f.datastoreHeld } : {}),
    ...(f.services ? { services: f.services } : {}),
  };
}

/** At most this many routes not programmed are listed in the status (the count has them all). */
const NOT_PROGRAMMED_SHOWN = 100;

function notProgrammed(f: StatusFacts): { notProgrammed?: { dst: string; reason: string }[] } {
  const out: { dst: string; reason: string }[] = [];
  for (const [dst, reason] of f.unresolved ?? []) {
    if (out.length >= NOT_PROGRAMMED_SHOWN) break;
    out.push({ dst, reason });
  }
  for (const [dst, w] of f.failed ?? []) {
    if (out.length >= NOT_PROGRAMMED_SHOWN) break;
    out.push({ dst, reason: w.error });
  }
  return out.length ? { notProgrammed: out } : {};
}
