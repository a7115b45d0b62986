// One typed description of a BGP router for every daemon the tests run: each daemon module
// renders it into its own config language, and refuses (naming the field) what it cannot do.

export type Family = 'ipv4' | 'ipv6';
export type AddPathMode = 'send' | 'receive' | 'both';

export interface PeerConfig {
  /** The neighbour's address (IPv4 or IPv6). */
  address: string;
  remoteAs: number;
  /** Address families carried on this session; default ['ipv4']. */
  families?: Family[];
  /** Wait for the neighbour to connect; never connect out. */
  passive?: boolean;
  /** Hold time offered in OPEN (default 9 s) and keepalive interval (default 3 s). */
  holdTime?: number;
  keepaliveTime?: number;
  /** Seconds between connection attempts (default 2; daemons default to minutes). */
  connectRetry?: number;
  /** ADD-PATH (RFC 7911) on every family of the session. */
  addPath?: AddPathMode;
  /** Extended next hop (RFC 8950): IPv4 routes with IPv6 next hops. */
  extendedNextHop?: boolean;
  /**
   * false: behave as an old 2-octet-only speaker. FRR can only do that by sending no
   * capabilities at all (`dont-capability-negotiate`), so the session carries IPv4 only.
   */
  fourOctetAs?: boolean;
  /** RFC 8654 extended messages (default: the daemon's own default). */
  extendedMessage?: boolean;
  /** Source address of the session (FRR update-source, BIRD source address, GoBGP local-address). */
  localAddress?: string;
  /** The neighbour is not on a shared segment (BIRD: `multihop`; FRR: `ebgp-multihop`). */
  multihop?: boolean;
  /** GTSM (RFC 5082) with the neighbour at most this many hops away (FRR: `ttl-security hops`; ours: ttlSecurity). */
  ttlSecurityHops?: number;
  /** Send a route reflector's clients their routes (iBGP only). */
  routeReflectorClient?: boolean;
  /** TCP-MD5 (RFC 2385) password of the session. */
  password?: string;
  /** BFD on the session (single hop), with these timers in ms (default 100 × 3). FRR runs bfdd for it. */
  bfd?: BfdTimers;
}

export interface BfdTimers {
  minRxInterval?: number;
  minTxInterval?: number;
  multiplier?: number;
}

/** A peer's BFD timers with the tests' defaults: 100 ms × 3. */
export function bfdTimers(t: BfdTimers): Required<BfdTimers> {
  return { minRxInterval: t.minRxInterval ?? 100, minTxInterval: t.minTxInterval ?? 100, multiplier: t.multiplier ?? 3 };
}

export interface Network {
  prefix: string;
  med?: number;
  localPref?: number;
  /** Standard communities as "asn:value". */
  communities?: string[];
  /** Large communities as "global:local1:local2". */
  largeCommunities?: string[];
  /** RFC 4456 attributes on an injected route (ExaBGP only: reflector loop tests). */
  originatorId?: string;
  clusterList?: string[];
  /** Attributes as raw bytes, any type code and flags (ExaBGP only: unrecognised-attribute tests). */
  rawAttributes?: { type: number; flags: number; value: Buffer }[];
}

export interface RouterConfig {
  routerId: string;
  asn: number;
  /** Sent in the FQDN capability by daemons that do (FRR always, BIRD when set). */
  hostname?: string;
  peers: PeerConfig[];
  /** Prefixes this router originates, IPv4 or IPv6. */
  networks?: (string | Network)[];
  /** Graceful restart (RFC 4724) with this restart time in seconds. */
  gracefulRestart?: { restartTime: number };
  /** Long-lived graceful restart (RFC 9494) with this stale time in seconds. */
  longLivedGracefulRestart?: { staleTime: number };
  /**
   * IPv6 next hop to announce IPv6 routes with on an IPv4 session (BIRD and GoBGP need it; FRR
   * takes it from zebra's interface addresses).
   */
  nextHopV6?: string;
}

export const defaultTimers = { holdTime: 9, keepaliveTime: 3, connectRetry: 2 } as const;

export function familiesOf(peer: PeerConfig): Family[] {
  return peer.families ?? ['ipv4'];
}

export function normalizeNetwork(network: string | Network): Network {
  return typeof network === 'string' ? { prefix: network } : network;
}

export function familyOfPrefix(prefix: string): Family {
  return prefix.includes(':') ? 'ipv6' : 'ipv4';
}

export function isIpv6(address: string): boolean {
  return address.includes(':');
}

/** Rejects config a daemon cannot express, naming the field. */
export class UnsupportedConfigError extends Error {
  constructor(daemon: string, field: string, why: string) {
    super(`${daemon}: ${field} ${why}`);
    this.name = 'UnsupportedConfigError';
  }
}

/** A route as the tests compare it, whatever daemon it was read from. */
export interface RibRoute {
  prefix: string;
  /** Next hops as the daemon shows them (global first, then link-local if any). */
  nextHops: string[];
  /** AS_PATH flattened (AS_SET members included in order). */
  asPath: number[];
  origin: 'igp' | 'egp' | 'incomplete';
  med?: number;
  localPref?: number;
  communities: string[];
  largeCommunities: string[];
  /** The daemon's best path for the prefix. */
  best: boolean;
  /** The neighbour it came from, when the daemon says. */
  from?: string;
  /** ADD-PATH path identifier received, when the daemon says. */
  pathId?: number;
}

/** A session as the tests compare it. */
export interface PeerStatus {
  address: string;
  remoteAs: number;
  /** Normalised: 'Established' for an up session, else the daemon's own word. */
  state: string;
  established: boolean;
}
