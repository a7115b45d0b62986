// The TTL of a session's packets: eBGP multihop and GTSM (RFC 5082). Node cannot set IP_TTL or
// IP_MINTTL on a TCP socket, so the bgp/native addon does, on the socket a session dials (before
// its SYN) and on the one it accepts. Without options a session sends the kernel's default TTL
// (64), which is what BIRD's `multihop` without a count sends, and what Calico's BIRD sessions
// use: a peer a few routers away is reached as it is.
import type net from 'node:net';
import { loadTcpMd5, tcpMd5LoadError, type TcpMd5Native } from './tcp-md5.js';

export interface TtlOptions {
  /** TTL (IPv6: hop limit) of what the session sends; -1: the kernel's default. */
  ttl?: number;
  /** The least TTL the kernel accepts on the session; segments below it are dropped. */
  minTtl?: number;
}

export class TtlUnavailableError extends Error {
  override readonly name = 'TtlUnavailableError';
}

/**
 * A peer's TTL options: with `ttlSecurity` (GTSM, the peer at most that many hops away) TTL 255
 * out and at least 256 - hops in, as BIRD's `ttl security` and FRR's `ttl-security hops`; else
 * `ttl` when given; else none (the kernel's default).
 */
export function sessionTtl(c: { ttlSecurity?: number; ttl?: number }): TtlOptions | undefined {
  if (c.ttlSecurity !== undefined) return { ttl: 255, minTtl: 256 - c.ttlSecurity };
  if (c.ttl !== undefined) return { ttl: c.ttl };
  return undefined;
}

/** The addon, able to set TTL options, or an error naming the peer and why it is missing. */
export function requireTtlAddon(peer: string, field: string): TcpMd5Native {
  const n = loadTcpMd5();
  if (!n) throw new TtlUnavailableError(`peer ${peer} ${field}: ${tcpMd5LoadError()}; the peer is not started without it`);
  if (!n.sessionSocket || !n.setTtl)
    throw new TtlUnavailableError(
      `peer ${peer} ${field}: the bgp/native addon was built before it could set IP_TTL and IP_MINTTL; rebuild it with \`npm run build:native\``,
    );
  return n;
}

function fdOf(handleOwner: unknown, what: string): number {
  const fd = (handleOwner as { _handle?: { fd?: number } })._handle?.fd;
  if (fd === undefined || fd < 0) throw new Error(`${what} has no descriptor to set its TTL on`);
  return fd;
}

/**
 * Makes a listener send TTL 255, so that the SYN-ACK it answers a GTSM peer with carries it (the
 * peer's kernel drops it otherwise), as FRR's listeners do. Sessions accepted from other peers
 * are given the kernel's default back (`ttl: -1`).
 */
export function setListenerTtl(server: net.Server): void {
  const fd = fdOf(server, 'the listening socket');
  const n = loadTcpMd5()!;
  const v6 = (server.address() as net.AddressInfo | null)?.family === 'IPv6';
  n.setTtl!(fd, '0.0.0.0', 255, 0); // an IPv6 listener takes the IPv4 option for its v4-mapped peers
  if (v6) n.setTtl!(fd, '::', 255, 0);
}

/** Sets the options on a socket the speaker accepted from `peer`. */
export function setAcceptedTtl(socket: net.Socket, peer: string, o: TtlOptions): void {
  loadTcpMd5()!.setTtl!(fdOf(socket, `peer ${peer}: the accepted socket`), peer, o.ttl ?? 0, o.minTtl ?? 0);
}
