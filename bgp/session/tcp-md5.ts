// TCP-MD5 (RFC 2385) for BGP sessions, through the N-API addon in bgp/native: Node cannot set
// TCP_MD5SIG itself. A peer with a password gets its key on the speaker's listening socket and
// on every socket it connects from, before the SYN. Without the addon such a peer is refused
// with TcpMd5UnavailableError: a session that should be signed never runs unsigned. The same
// addon makes the socket of every session dialled from a localAddress (see connectSession).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface TcpMd5Native {
  /** Sets the key for `address` (every address of the prefix when prefixLength >= 0); "" removes it. */
  setKey(fd: number, address: string, key: string, prefixLength: number): void;
  /** A non-blocking TCP socket of the peer's family, keyed for the peer, bound to `localAddress` if given. */
  socket(peerAddress: string, key: string, localAddress: string | null): number;
  /**
   * An unkeyed socket of the peer's family bound to `localAddress` with IP_BIND_ADDRESS_NO_PORT
   * (both sockets bind so). Absent from an addon built before it.
   */
  dialSocket?(peerAddress: string, localAddress: string): number;
  /**
   * A socket with every option a session may ask for, set before the SYN: the key ("" for none),
   * the local address, the TTL it sends and the least TTL it accepts (0: the kernel's). Absent from
   * an addon built before it.
   */
  sessionSocket?(peerAddress: string, key: string, localAddress: string | null, ttl: number, minTtl: number): number;
  /** The TTL options on a socket Node owns (an accepted session); 0 leaves one as it is. */
  setTtl?(fd: number, peerAddress: string, ttl: number, minTtl: number): void;
  close(fd: number): void;
}

/** The longest key the kernel takes (TCP_MD5SIG_MAXKEYLEN). */
export const TCP_MD5_MAX_KEY_OCTETS = 80;

export class TcpMd5UnavailableError extends Error {
  override readonly name = 'TcpMd5UnavailableError';
}

const here = dirname(fileURLToPath(import.meta.url));
// From the sources (bgp/session) and from the compiled package (dist/bgp/session): the addon is
// always built in <package>/bgp/native by the install script.
const CANDIDATES = [
  join(here, '..', 'native', 'build', 'Release', 'tcp_md5.node'),
  join(here, '..', '..', '..', 'bgp', 'native', 'build', 'Release', 'tcp_md5.node'),
];

let addonPath: string | undefined = process.env.PODROUTE_TCP_MD5_ADDON || undefined;
let cached: TcpMd5Native | null | undefined;
let loadError = '';

/**
 * Where to load the addon from (undefined: the built-in places, or PODROUTE_TCP_MD5_ADDON).
 * For an addon built elsewhere, and for tests of the path where it is missing.
 */
export function setTcpMd5AddonPath(path: string | undefined): void {
  addonPath = path;
  cached = undefined;
  loadError = '';
}

/** The addon, or null when it cannot be loaded (see tcpMd5LoadError()). */
export function loadTcpMd5(): TcpMd5Native | null {
  if (cached !== undefined) return cached;
  const path = addonPath ?? CANDIDATES.find((p) => existsSync(p)) ?? CANDIDATES[0]!;
  try {
    cached = createRequire(import.meta.url)(path) as TcpMd5Native;
  } catch (e) {
    cached = null;
    loadError = `the TCP-MD5 addon is not available at ${path} (${(e as Error).message.split('\n')[0]}); build it with \`npm run build:native\``;
  }
  return cached;
}

export function tcpMd5LoadError(): string {
  loadTcpMd5();
  return loadError;
}

/** The addon, or an error that says which peer needed it and why it is missing. */
export function requireTcpMd5(peer: string): TcpMd5Native {
  const n = loadTcpMd5();
  if (!n) throw new TcpMd5UnavailableError(`peer ${peer} password: ${tcpMd5LoadError()}; the peer is not started without TCP-MD5`);
  return n;
}

/** A password as the kernel takes it: 1..80 octets. */
export function checkPassword(field: string, password: unknown): string {
  if (typeof password !== 'string' || password.length === 0) throw new TypeError(`${field}: a non-empty string`);
  const octets = Buffer.byteLength(password);
  if (octets > TCP_MD5_MAX_KEY_OCTETS)
    throw new TypeError(`${field}: ${octets} octets (TCP-MD5 keys are at most ${TCP_MD5_MAX_KEY_OCTETS})`);
  return password;
}

export interface ConnectOptions {
  host: string;
  port: number;
  localAddress?: string;
  password?: string;
  /** TTL of what the session sends, and the least it accepts (GTSM): set through the addon (ttl.ts). */
  ttl?: number;
  minTtl?: number;
}

/**
 * A connecting socket, as net.connect returns one: with a password, the addon makes the socket
 * and sets the key, and node:net connects it. Failures arrive as 'error' events either way.
 *
 * From a given local address the addon makes the socket too, when it is there: node:net binds
 * before it connects, so the kernel must find a source port that no socket on that address
 * holds, TIME_WAIT included. A node agent restarted at 4,000 peers then spent most of its start
 * in that search, and a few tens of thousands of such sockets exhaust the port range on the
 * address. The addon's sockets bind with IP_BIND_ADDRESS_NO_PORT: the port is chosen at
 * connect, unique per peer rather than per address. A zoned (link-local) address goes through
 * node:net, which keeps its zone.
 */
export function connectSession(o: ConnectOptions): net.Socket {
  const { password, localAddress } = o;
  if (o.ttl !== undefined || o.minTtl !== undefined) {
    // checkPeerConfig's caller made sure the addon can (requireTtlAddon): the SYN already carries the TTL.
    const n = loadTcpMd5();
    if (n?.sessionSocket)
      return connectFrom(n, o, () => n.sessionSocket!(o.host, password ?? '', localAddress ?? null, o.ttl ?? 0, o.minTtl ?? 0));
  }
  if (password === undefined) {
    const n = localAddress !== undefined && !localAddress.includes('%') ? loadTcpMd5() : null;
    if (!n?.dialSocket) return net.connect({ host: o.host, port: o.port, localAddress });
    return connectFrom(n, o, () => n.dialSocket!(o.host, localAddress!));
  }
  const n = requireTcpMd5(o.host);
  return connectFrom(n, o, () => n.socket(o.host, password, localAddress ?? null));
}

/** Connects the socket the addon makes; a failure to make it arrives as an 'error' event. */
function connectFrom(n: TcpMd5Native, o: ConnectOptions, make: () => number): net.Socket {
  let fd: number;
  try {
    fd = make();
  } catch (e) {
    const failed = new net.Socket();
    process.nextTick(() => failed.destroy(e as Error));
    return failed;
  }
  let socket: net.Socket;
  try {
    // manualStart: no read before the connection exists; node:net starts reading once connected.
    socket = new net.Socket({ fd, manualStart: true } as net.SocketConstructorOpts);
  } catch (e) {
    n.close(fd);
    throw e;
  }
  return socket.connect({ host: o.host, port: o.port });
}

/**
 * The keys of a listening socket, one per peer address or range. Keys set before the server
 * listens are applied when it does; accepted connections inherit them from the listener.
 */
export class ListenerKeys {
  private readonly keys = new Map<string, { address: string; prefixLength: number; password: string }>();
  /** Every listening socket of the speaker (one per address it listens on). */
  private fds: number[] = [];

  /** Applies every key to the listening server's socket. */
  attach(server: net.Server): void {
    const fd = (server as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (fd === undefined || fd < 0) throw new Error('TCP-MD5: the listening socket has no descriptor');
    this.fds.push(fd);
    for (const k of this.keys.values()) this.applyTo(fd, k.address, k.password, k.prefixLength);
  }

  detach(): void {
    this.fds = [];
  }

  /** Keys `address` (or the range `address`/`prefixLength`) with `password`. */
  set(peer: string, address: string, password: string, prefixLength = -1): void {
    requireTcpMd5(peer);
    for (const fd of this.fds) this.applyTo(fd, address, password, prefixLength);
    this.keys.set(`${address}/${prefixLength}`, { address, prefixLength, password });
  }

  delete(address: string, prefixLength = -1): void {
    const id = `${address}/${prefixLength}`;
    if (!this.keys.delete(id)) return;
    for (const fd of this.fds) this.applyTo(fd, address, '', prefixLength);
  }

  private applyTo(fd: number, address: string, password: string, prefixLength: number): void {
    try {
      loadTcpMd5()!.setKey(fd, address, password, prefixLength);
    } catch (e) {
      // An IPv6 peer on an IPv4-only listener can never connect to it: nothing to key.
      if ((e as { errno?: number }).errno === EAFNOSUPPORT) return;
      throw new Error(`TCP-MD5 key for ${address} on the listening socket: ${(e as Error).message}`);
    }
  }
}

const EAFNOSUPPORT = 97;
