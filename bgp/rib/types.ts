// The public shapes of the RIB: options, peers as the RIB sees them, routes and changes.
import type { AddressFamily, CodecOptions, PathAttributes } from '../codec/index.js';
import type { Policy } from './policy.js';
import type { RibPeer } from './peer.js';

export type PeerType = 'ebgp' | 'ibgp' | 'local';

export interface MultipathOptions {
  /** Most next hops in one ECMP set (1 = no multipath). */
  maxPaths: number;
  /** eBGP paths from different neighbour ASes may share a set (like "as-path multipath-relax"). */
  relax?: boolean;
}

/**
 * How a route learned over iBGP may go to another iBGP peer. Without it the RFC 4271 rule
 * holds (never); the route reflector (RFC 4456) supplies one.
 */
export interface IbgpReflectionHook {
  /** May a route learned from iBGP peer `from` be sent to the iBGP peers of `to`? */
  mayReflect(from: RibPeer, to: UpdateGroupInfo): boolean;
  /** Change the attributes of a reflected route (ORIGINATOR_ID, CLUSTER_LIST). */
  reflect?(attributes: PathAttributes, from: RibPeer, to: UpdateGroupInfo): void;
}

export interface RibOptions {
  localAs: number;
  /** Our BGP identifier (dotted quad). */
  routerId: string;
  /** LOCAL_PREF of routes that carry none, and of every eBGP-learned route. Default 100. */
  defaultLocalPref?: number;
  /** Compare MED between routes from different neighbour ASes too. Default false. */
  alwaysCompareMed?: boolean;
  multipath?: MultipathOptions;
  /** Drop routes whose CLUSTER_LIST holds this ID (set by a route reflector). */
  clusterId?: string;
  reflection?: IbgpReflectionHook;
  /**
   * RFC 8326: a route received with the GRACEFUL_SHUTDOWN community (65535:0) gets LOCAL_PREF 0,
   * so traffic leaves a peer that is about to go down for paths that stay. Default true.
   */
  gracefulShutdown?: boolean;
  /**
   * Collect BestPathChange objects (the return value of the mutating calls). Default true. A
   * function is asked at every change (a speaker: whether anyone listens for them).
   */
  collectChanges?: boolean | (() => boolean);
}

/** A peer as the RIB needs it; the session fills it in when the session is established. */
export interface RibPeerConfig {
  /** The neighbour's address: it names the peer and breaks the last tie. */
  address: string;
  asn: number;
  /** Our AS on this session when it is not the RIB's (a per-peer local AS): it decides iBGP or eBGP, and is prepended towards eBGP. */
  localAs?: number;
  /** The BGP identifier from its OPEN. */
  routerId: string;
  /** Our IPv4 address on the session: the next hop we set (next-hop-self, eBGP). */
  localAddress?: string;
  /** Our global IPv6 address on the session. */
  localAddressV6?: string;
  /** Our link-local IPv6 address, sent after the global one to a directly connected eBGP peer. */
  linkLocalAddressV6?: string;
  /** Families negotiated on the session (default: IPv4 unicast only). */
  families?: AddressFamily[];
  /** What we negotiated for the UPDATEs we send: 4-octet AS, ADD-PATH send, extended messages. */
  sendOptions?: CodecOptions;
  /** The peer is a 2-octet AS speaker: inbound AS4_PATH is merged, outbound AS_TRANS + AS4_PATH written. */
  fourOctetAs?: boolean;
  importPolicy?: Policy;
  exportPolicy?: Policy;
  /** Set ourselves as next hop towards this iBGP peer. */
  nextHopSelf?: boolean;
  /** A route reflector client (read by the reflection hook and used in update-group keys). */
  routeReflectorClient?: boolean;
  /** Send this peer the routes it sent us (normally suppressed). */
  allowOwnRoutes?: boolean;
  /** Most paths per prefix sent with ADD-PATH (default: all). */
  addPathSendMax?: number;
  /** Both sides sent the enhanced route refresh capability (RFC 7313): BoRR/EoRR around a refresh. */
  enhancedRouteRefresh?: boolean;
  /** The peer advertised long-lived graceful restart (RFC 9494): it may be sent routes marked LLGR_STALE. */
  longLivedGracefulRestart?: boolean;
}

/** One path in the RIB, as handed to users (built on demand; the RIB keeps a compact form). */
export interface RibRoute {
  family: AddressFamily;
  prefix: string;
  /** The ADD-PATH identifier the peer sent (0 without ADD-PATH). */
  pathId: number;
  nextHop: string;
  linkLocalNextHop?: string;
  /** Shared and frozen: no next hop, no MP_REACH/MP_UNREACH, no wire layout. */
  attributes: Readonly<PathAttributes>;
  /** Who sent it; undefined for a locally originated route. */
  peer: RibPeer | undefined;
  stale: boolean;
}

export type BestPathChangeKind = 'added' | 'changed' | 'removed';

/** A change of the best path (or of the ECMP set) of one prefix. */
export interface BestPathChange {
  kind: BestPathChangeKind;
  family: AddressFamily;
  prefix: string;
  /** The new best path; undefined when removed. */
  best: RibRoute | undefined;
  /** The ECMP set, best first (just [best] without multipath); empty when removed. */
  multipath: RibRoute[];
}

/** What an update group is, as policies and the reflection hook see it. */
export interface UpdateGroupInfo {
  type: 'ebgp' | 'ibgp';
  /** The peer AS of the group (one AS per eBGP group; our AS for iBGP). */
  peerAs: number;
  routeReflectorClient: boolean;
  /** The group's peers advertised long-lived graceful restart, so they may be sent LLGR_STALE routes (RFC 9494 §4.3). */
  longLivedGracefulRestart: boolean;
}
