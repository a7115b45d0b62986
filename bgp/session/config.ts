// What a peer is configured with, validated with errors that name the field. Its addresses are
// a socket's ends, so node:net reads them as the socket will: a link-local peer keeps its zone
// (fe80::1%eth0), which ip/ (prefixes, identifiers) refuses.
import { isIP } from 'node:net';
import type { AddressFamily } from '../codec/index.js';
import { checkMaxPrefixes, type MaxPrefixes } from './max-prefix.js';
import { checkPassword } from './tcp-md5.js';

export type AddPathMode = 'receive' | 'send' | 'both';

export interface PeerConfig {
  /** The peer's address (IPv4 or IPv6). */
  address: string;
  /** The peer's AS. */
  asn: number;
  /**
   * Our AS on this session, in place of the speaker's (BIRD's per-protocol `local as`, Calico's
   * BGPPeer.localASNumber): the OPEN carries it, it decides iBGP or eBGP, and it is the AS
   * prepended towards an eBGP peer. Default: the speaker's AS.
   */
  localAs?: number;
  /** TCP port to connect to. Default 179. */
  port?: number;
  /** Source address for our connections (and the next hop we advertise to eBGP peers). */
  localAddress?: string;
  /** Never connect; wait for the peer. */
  passive?: boolean;
  /** Hold time we offer: 0 or 3..65535 s. Default 90. */
  holdTime?: number;
  /** Keepalive interval when below a third of the negotiated hold time. */
  keepaliveTime?: number;
  /** Seconds between connection attempts. Default 120 (as RFC 4271 suggests); labs use 1–5. */
  connectRetryTime?: number;
  /** Seconds in Idle after an error before trying again (doubling up to 300 s). Default 5. */
  idleHoldTime?: number;
  /** Families to negotiate. Default: IPv4 unicast, and IPv6 unicast when the peer address is IPv6. */
  families?: AddressFamily[];
  addPath?: Partial<Record<AddressFamily, AddPathMode>>;
  /** Send and accept messages up to 65535 octets (RFC 8654). Default true. */
  extendedMessage?: boolean;
  /** Advertise graceful restart (RFC 4724), and keep a restarting peer's routes as stale. Default true. */
  gracefulRestart?: boolean | { restartTime?: number };
  /**
   * Long-lived graceful restart (RFC 9494), beside graceful restart: advertise it, so that the
   * peer keeps our routes `staleTime` seconds more once our restart time has run out (default
   * 3600, as BIRD; 0..16777215), and keep the peer's routes as long as it asks when it advertises
   * it, marked LLGR_STALE and least preferred. Default off.
   */
  longLivedGracefulRestart?: boolean | { staleTime?: number };
  /** Per family, how many accepted paths the peer may have before a Cease 6/1 (see max-prefix.ts). */
  maxPrefixes?: MaxPrefixes;
  /** TCP-MD5 (RFC 2385) key for the session, 1..80 octets; needs the bgp/native addon (tcp-md5.ts). */
  password?: string;
  /**
   * GTSM (RFC 5082): the peer is at most this many hops away (1: directly connected). The session
   * sends TTL 255 and the kernel drops what arrives with less than 256 - ttlSecurity, as with
   * BIRD's `ttl security` and FRR's `ttl-security hops`. Needs the bgp/native addon (ttl.ts).
   */
  ttlSecurity?: number;
  /**
   * TTL of what the session sends, 1..255 (FRR's `ebgp-multihop N`). Default: the kernel's (64),
   * which is BIRD's `multihop` and reaches a peer that is not directly connected.
   */
  ttl?: number;
  description?: string;
}

export interface LocalConfig {
  asn: number;
  routerId: string;
  /** RFC 8203 hostname capability (FQDN, code 73). */
  hostname?: string;
  /** Forwarding state is kept across our restarts (the F bit; the node agent keeps kernel routes). */
  forwardingPreserved?: boolean;
  /** Set on the first session after we restarted (the R bit). */
  restarting?: boolean;
  /** Our restart time in the graceful restart capability. Default 120 s. */
  restartTime?: number;
}

export function checkAsn(field: string, asn: unknown): number {
  if (typeof asn !== 'number' || !Number.isInteger(asn) || asn < 1 || asn > 0xffffffff) {
    throw new TypeError(`${field}: ${String(asn)} is not an AS number (1..4294967295)`);
  }
  return asn;
}

export function checkPeerConfig(c: PeerConfig): PeerConfig {
  if (typeof c !== 'object' || c === null) throw new TypeError('peer: a configuration object is required');
  if (typeof c.address !== 'string' || isIP(c.address) === 0)
    throw new TypeError(`peer address: "${String(c.address)}" is not an IP address`);
  checkAsn(`peer ${c.address} asn`, c.asn);
  if (c.localAs !== undefined) checkAsn(`peer ${c.address} localAs`, c.localAs);
  if (c.port !== undefined && (!Number.isInteger(c.port) || c.port < 1 || c.port > 65535)) {
    throw new TypeError(`peer ${c.address} port: ${c.port} is not a TCP port`);
  }
  if (c.localAddress !== undefined && isIP(c.localAddress) === 0) {
    throw new TypeError(`peer ${c.address} localAddress: "${c.localAddress}" is not an IP address`);
  }
  if (
    c.holdTime !== undefined &&
    (!Number.isInteger(c.holdTime) || c.holdTime === 1 || c.holdTime === 2 || c.holdTime < 0 || c.holdTime > 65535)
  ) {
    throw new TypeError(`peer ${c.address} holdTime: ${c.holdTime} (must be 0 or 3..65535 seconds)`);
  }
  for (const f of c.families ?? []) {
    if (f !== 'ipv4-unicast' && f !== 'ipv6-unicast') throw new TypeError(`peer ${c.address} families: unknown family "${String(f)}"`);
  }
  for (const [f, mode] of Object.entries(c.addPath ?? {})) {
    if (mode !== 'receive' && mode !== 'send' && mode !== 'both')
      throw new TypeError(`peer ${c.address} addPath.${f}: "${String(mode)}" (receive, send or both)`);
  }
  checkLongLived(c);
  if (c.maxPrefixes !== undefined) checkMaxPrefixes(`peer ${c.address} maxPrefixes`, c.maxPrefixes);
  if (c.password !== undefined) checkPassword(`peer ${c.address} password`, c.password);
  if (c.ttlSecurity !== undefined && (!Number.isInteger(c.ttlSecurity) || c.ttlSecurity < 1 || c.ttlSecurity > 254))
    throw new TypeError(`peer ${c.address} ttlSecurity: ${String(c.ttlSecurity)} is not a hop count (1..254)`);
  if (c.ttl !== undefined && (!Number.isInteger(c.ttl) || c.ttl < 1 || c.ttl > 255))
    throw new TypeError(`peer ${c.address} ttl: ${String(c.ttl)} is not a TTL (1..255)`);
  if (c.ttl !== undefined && c.ttlSecurity !== undefined)
    throw new TypeError(`peer ${c.address} ttl: set ttl or ttlSecurity, not both (GTSM always sends 255)`);
  return c;
}

/** The LLGR stale time when not given: BIRD's, which Calico documents. */
export const DEFAULT_LONG_LIVED_STALE_TIME = 3600;

/** The long-lived stale time the peer is configured to advertise, or undefined when it does no LLGR. */
export function longLivedStaleTime(c: PeerConfig): number | undefined {
  const l = c.longLivedGracefulRestart;
  if (l === undefined || l === false) return undefined;
  return (typeof l === 'object' ? l.staleTime : undefined) ?? DEFAULT_LONG_LIVED_STALE_TIME;
}

function checkLongLived(c: PeerConfig): void {
  const l = c.longLivedGracefulRestart;
  if (l === undefined || l === false) return;
  const field = `peer ${c.address} longLivedGracefulRestart`;
  if (l !== true && (typeof l !== 'object' || l === null))
    throw new TypeError(`${field}: ${JSON.stringify(l)} is not true, false or { staleTime }`);
  if (typeof l === 'object') {
    for (const k of Object.keys(l)) if (k !== 'staleTime') throw new TypeError(`${field}: unknown field "${k}" (staleTime)`);
    const t = l.staleTime;
    if (t !== undefined && (!Number.isInteger(t) || t < 0 || t > 0xffffff))
      throw new TypeError(`${field}.staleTime: ${String(t)} is not a number of seconds (0..16777215)`);
  }
  if (c.gracefulRestart === false)
    throw new TypeError(`${field}: needs graceful restart (RFC 9494 runs beside it); gracefulRestart is false`);
}

export function peerFamilies(c: PeerConfig): AddressFamily[] {
  return c.families ?? (isIP(c.address) === 6 ? ['ipv4-unicast', 'ipv6-unicast'] : ['ipv4-unicast']);
}
