// The sockets of single-hop BFD come from the bfd_socket addon in bgp/native: Node's dgram
// cannot set IP_MINTTL, and RFC 5881 §5 wants every packet with a TTL below 255 dropped (so
// that a packet from beyond the link cannot take a session down or up). The kernel drops them
// for us, before any of our code runs. Without the addon BFD is refused (BfdUnavailableError),
// as a password without TCP-MD5 is: a session that should be protected never runs without.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BfdSocketNative {
  /** A UDP socket sending at TTL 255, taking only packets with TTL >= minTtl, bound to address:port. */
  udpSocket(family: 4 | 6, address: string, port: number, minTtl: number, reuseAddress: boolean): number;
  close(fd: number): void;
}

export class BfdUnavailableError extends Error {
  override readonly name = 'BfdUnavailableError';
}

const here = dirname(fileURLToPath(import.meta.url));
// From the sources (bgp/bfd) and from the compiled package (dist/bgp/bfd).
const CANDIDATES = [
  join(here, '..', 'native', 'build', 'Release', 'bfd_socket.node'),
  join(here, '..', '..', '..', 'bgp', 'native', 'build', 'Release', 'bfd_socket.node'),
];

let cached: BfdSocketNative | null | undefined;
let loadError = '';

/** The addon, or null when it cannot be loaded (see bfdLoadError()). `PODROUTE_BFD_ADDON` names another path. */
export function loadBfdSocket(): BfdSocketNative | null {
  if (cached !== undefined) return cached;
  const path = process.env.PODROUTE_BFD_ADDON || (CANDIDATES.find((p) => existsSync(p)) ?? CANDIDATES[0]!);
  try {
    cached = createRequire(import.meta.url)(path) as BfdSocketNative;
  } catch (e) {
    cached = null;
    loadError = `the BFD socket addon is not available at ${path} (${(e as Error).message.split('\n')[0]}); build it with \`npm run build:native\``;
  }
  return cached;
}

export function bfdLoadError(): string {
  loadBfdSocket();
  return loadError;
}

/** The addon, or an error naming what needed it. */
export function requireBfdSocket(what: string): BfdSocketNative {
  const n = loadBfdSocket();
  if (!n) throw new BfdUnavailableError(`${what}: ${bfdLoadError()}; BFD needs it to drop packets from beyond the link (RFC 5881 §5)`);
  return n;
}
