// The BFD endpoint: every session of a process over a few UDP sockets (RFC 5881). Packets
// arrive on port 3784, on one socket per family and one per local address a session names;
// each is matched to its session by Your Discriminator, or, while the remote does not know
// ours yet, by the addresses it came from and to (§6.8.6). Each session sends from one source
// port of 49152–65535 (RFC 5881 §4), shared by the sessions of its local address.
import dgram from 'node:dgram';
import { randomInt } from 'node:crypto';
import { isIP } from 'node:net';
import { EventEmitter } from 'eventemitter3';
import { checkBfdTimers, type BfdTimers } from './config.js';
import { requireBfdSocket, type BfdSocketNative } from './native.js';
import { decodeControlPacket } from './packet.js';
import { BfdSession, type BfdSessionHandle, type BfdSessionStatus, type BfdTransport } from './session.js';
import type { BfdStateName } from './types.js';

/** RFC 5881 §4: single-hop Control packets go to this port. */
export const BFD_SINGLE_HOP_PORT = 3784;

const RECEIVE_BUFFER = 4 << 20;

export interface BfdOptions {
  /** Port to take Control packets on. Default 3784. */
  port?: number;
  /** Port to send them to. Default 3784 (two endpoints on one host, in tests, use two ports). */
  remotePort?: number;
  /** Source ports to choose from (RFC 5881 §4: 49152–65535). */
  sourcePorts?: readonly [number, number];
}

export interface BfdSessionOptions extends BfdTimers {
  /** The neighbour's address; a link-local IPv6 one with its zone (fe80::2%eth0). */
  peer: string;
  /** Our address on the link: packets go from it, and only packets to it count for this session. */
  localAddress?: string;
}

export interface BfdEvents {
  /** A session changed state: the session, its new state, the old one, the diagnostic. */
  state: [BfdSessionHandle, BfdStateName, BfdStateName, number];
  /** A packet dropped before any session saw it: where from, and why (§6.8.6). */
  discarded: [string, string];
  /** A socket failed; the sessions on it stop hearing their peers and go Down by detection. */
  error: [Error];
}

/**
 * A BFD endpoint, wherever its sessions run: `Bfd` runs them on this thread's event loop,
 * `BfdWorker` on a thread of their own (see createBfdEndpoint).
 */
export interface BfdEndpoint {
  add(options: BfdSessionOptions): BfdSessionHandle;
  release(s: BfdSessionHandle): void;
  readonly sessions: BfdSessionHandle[];
  status(): BfdSessionStatus[];
  close(): Promise<void>;
  /** Resolves once every session added so far has its sockets open and runs. */
  ready(): Promise<void>;
  /** Packets dropped by §6.8.6 before reaching a session. */
  readonly discards: number;
  on<K extends keyof BfdEvents>(event: K, listener: (...args: BfdEvents[K]) => void): this;
  off<K extends keyof BfdEvents>(event: K, listener?: (...args: BfdEvents[K]) => void): this;
}

/** What add() checked of a session's options: its family, its path's key, its timers. */
export interface CheckedSession {
  family: 4 | 6;
  key: string;
  timers: Required<BfdTimers>;
}

/** The checks of add(), with errors naming the field; the key names the path (RFC 5882 §3: one session a path). */
export function checkSessionOptions(options: BfdSessionOptions): CheckedSession {
  const { peer, localAddress, ...t } = options;
  const family = isIP(addressKey(peer));
  if (family === 0) throw new TypeError(`bfd peer: "${peer}" is not an IP address`);
  if (localAddress !== undefined && isIP(addressKey(localAddress)) !== family) {
    throw new TypeError(`bfd peer ${peer} localAddress: "${localAddress}" is not an address of the peer's family`);
  }
  const timers = checkBfdTimers(`bfd peer ${peer}`, t);
  const key = `${localAddress === undefined ? '' : addressKey(localAddress)}|${addressKey(peer)}`;
  return { family: family as 4 | 6, key, timers };
}

/** What the BFD thread is given for a session the main thread made: its discriminator, jitter seed and shared counters. */
export interface ChosenSession {
  discriminator: number;
  seed: number;
  counters: Float64Array;
}

interface Socket {
  socket: dgram.Socket;
  users: number;
  /** Sends not yet handed to the kernel: a closing socket waits for them (the last AdminDown). */
  inFlight: number;
  closed?: () => void;
}

/** Closes the socket once its last send has left. */
function closeWhenSent(x: Socket): Promise<void> {
  return new Promise((resolve) => {
    x.closed = () => x.socket.close(() => resolve());
    if (x.inFlight === 0) x.closed();
  });
}

/** An address as the socket reports its source: no zone, lower case. */
function addressKey(a: string): string {
  const i = a.indexOf('%');
  return (i < 0 ? a : a.slice(0, i)).toLowerCase();
}

export class Bfd extends EventEmitter<BfdEvents> implements BfdEndpoint {
  private readonly native: BfdSocketNative;
  private readonly port: number;
  private readonly remotePort: number;
  private readonly sourcePorts: readonly [number, number];
  private readonly byDiscr = new Map<number, BfdSession>();
  /** `${local}|${peer}`: local is '' for sessions that name none. */
  private readonly byAddress = new Map<string, BfdSession>();
  private readonly receivers = new Map<string, Socket>();
  private readonly senders = new Map<string, Socket>();
  private readonly transport: BfdTransport = { send: (s, octets) => this.send(s, octets) };
  /** Packets dropped by §6.8.6 before reaching a session. */
  discards = 0;
  private closed = false;

  constructor(options: BfdOptions = {}) {
    super();
    this.native = requireBfdSocket('BFD');
    this.port = options.port ?? BFD_SINGLE_HOP_PORT;
    this.remotePort = options.remotePort ?? BFD_SINGLE_HOP_PORT;
    this.sourcePorts = options.sourcePorts ?? [49152, 65535];
  }

  /**
   * The session to `peer` (from `localAddress`), made and started if there is none: clients
   * that ask for the same one share it, each releasing it with `release` (RFC 5882 §3:
   * one session per path, whoever uses it). Timers given by a later client change it.
   */
  add(options: BfdSessionOptions): BfdSession {
    return this.addSession(options);
  }

  /** add(), with what the main thread chose when the session runs in the BFD thread (see BfdWorker). */
  addSession(options: BfdSessionOptions, chosen?: ChosenSession): BfdSession {
    if (this.closed) throw new Error('BFD endpoint closed');
    const { peer, localAddress } = options;
    const { family, key, timers } = checkSessionOptions(options);
    const existing = this.byAddress.get(key);
    if (existing) {
      existing.users++;
      existing.setTimers(timers);
      return existing;
    }
    this.open(this.receivers, family, localAddress, this.port);
    try {
      this.open(this.senders, family, localAddress, undefined);
    } catch (e) {
      this.close1(this.receivers, family, localAddress);
      throw e;
    }
    let discr = chosen?.discriminator ?? randomInt(1, 0xffffffff);
    while (chosen === undefined && this.byDiscr.has(discr)) discr = randomInt(1, 0xffffffff);
    const s = new BfdSession(peer, localAddress, timers, discr, chosen?.seed ?? randomInt(1, 0xffffffff), this.transport, chosen?.counters);
    s.on('state', (to, from, diag) => this.emit('state', s, to, from, diag));
    this.byDiscr.set(discr, s);
    this.byAddress.set(key, s);
    return s;
  }

  /**
   * A client is done with the session; the last one ends it, telling the remote AdminDown
   * first (RFC 5880 §6.8.16), so that the remote's clients do not take it for a failure.
   */
  release(s: BfdSession): void {
    if (--s.users > 0) return;
    s.adminDown();
    s.dispose();
    this.forget(s);
  }

  /** Sessions run from add() on: nothing to wait for. */
  ready(): Promise<void> {
    return Promise.resolve();
  }

  get sessions(): BfdSession[] {
    return [...this.byDiscr.values()];
  }

  status(): BfdSessionStatus[] {
    return this.sessions.map((s) => s.status());
  }

  /** Ends every session (AdminDown to each remote) and closes the sockets. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.sessions) {
      s.adminDown();
      s.dispose();
    }
    this.byDiscr.clear();
    this.byAddress.clear();
    const all = [...this.receivers.values(), ...this.senders.values()];
    this.receivers.clear();
    this.senders.clear();
    await Promise.all(all.map(closeWhenSent));
  }

  private forget(s: BfdSession): void {
    this.byDiscr.delete(s.localDiscriminator);
    const family = isIP(addressKey(s.peer)) as 4 | 6;
    this.byAddress.delete(`${s.localAddress === undefined ? '' : addressKey(s.localAddress)}|${addressKey(s.peer)}`);
    this.close1(this.receivers, family, s.localAddress);
    this.close1(this.senders, family, s.localAddress);
  }

  private socketKey(family: 4 | 6, local: string | undefined): string {
    return `${family}|${local === undefined ? '' : addressKey(local)}`;
  }

  /** A receiver (fixed port) or a sender (a free source port), shared by the sessions of a local address. */
  private open(map: Map<string, Socket>, family: 4 | 6, local: string | undefined, port: number | undefined): void {
    const key = this.socketKey(family, local);
    const have = map.get(key);
    if (have) {
      have.users++;
      return;
    }
    const address = local ?? (family === 4 ? '0.0.0.0' : '::');
    let fd: number;
    if (port !== undefined) {
      fd = this.native.udpSocket(family, address, port, 255, true);
    } else {
      fd = this.sourceSocket(family, address);
    }
    const socket = dgram.createSocket(family === 4 ? 'udp4' : 'udp6');
    socket.bind({ fd }, () => {
      // A receiver takes the packets of every session of its address: a burst of a thousand
      // must not overflow the default buffer while the loop is busy (the kernel caps the size
      // at net.core.rmem_max).
      if (port !== undefined) socket.setRecvBufferSize(RECEIVE_BUFFER);
    });
    const receiving = port !== undefined ? (local === undefined ? '' : addressKey(local)) : undefined;
    socket.on('message', (msg, rinfo) => {
      if (receiving !== undefined) this.onPacket(msg, rinfo.address, receiving);
    });
    socket.on('error', (e) => this.emit('error', e));
    map.set(key, { socket, users: 1, inFlight: 0 });
  }

  /** RFC 5881 §4: a source port of the range, at random, that no other socket holds. */
  private sourceSocket(family: 4 | 6, address: string): number {
    const [lo, hi] = this.sourcePorts;
    let last: Error | undefined;
    for (let i = 0; i < 64; i++) {
      try {
        return this.native.udpSocket(family, address, randomInt(lo, hi + 1), 255, false);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
        last = e as Error;
      }
    }
    throw new Error(`bfd: no free source port in ${lo}..${hi} on ${address} (${last?.message})`);
  }

  private close1(map: Map<string, Socket>, family: 4 | 6, local: string | undefined): void {
    const key = this.socketKey(family, local);
    const x = map.get(key);
    if (!x || --x.users > 0) return;
    map.delete(key);
    void closeWhenSent(x);
  }

  private send(s: BfdSession, octets: Buffer): void {
    const x = this.senders.get(this.socketKey(isIP(addressKey(s.peer)) as 4 | 6, s.localAddress));
    if (!x) return;
    x.inFlight++;
    // A send that fails (the link is down: ENETUNREACH) is a packet lost, as on the wire.
    x.socket.send(octets, this.remotePort, s.peer, () => {
      if (--x.inFlight === 0) x.closed?.();
    });
  }

  /** §6.8.6: the packet's own checks, then its session. */
  private onPacket(msg: Buffer, from: string, local: string): void {
    const r = decodeControlPacket(msg);
    if (r.error !== undefined) return this.discard(from, r.error);
    const p = r.packet;
    const source = addressKey(from);
    let s: BfdSession | undefined;
    if (p.yourDiscriminator !== 0) {
      s = this.byDiscr.get(p.yourDiscriminator);
      if (s === undefined) return this.discard(from, `no session has discriminator ${p.yourDiscriminator}`);
      // Single hop: the discriminator must come from the session's neighbour, not any host.
      if (addressKey(s.peer) !== source) return this.discard(from, `discriminator ${p.yourDiscriminator} belongs to peer ${s.peer}`);
    } else {
      s = this.byAddress.get(`${local}|${source}`);
      if (s === undefined) return this.discard(from, 'no session with this neighbour');
    }
    s.receive(p);
  }

  private discard(from: string, why: string): void {
    this.discards++;
    if (this.listenerCount('discarded') > 0) this.emit('discarded', from, why);
  }
}
