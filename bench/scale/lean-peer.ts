// One simulated node or client: the least a BGP speaker must do to be counted in a cluster.
// OPEN/KEEPALIVE, its own pre-encoded UPDATEs once Established, and a count of what comes in,
// read in place from the UPDATE bytes. A sampled peer also keeps every prefix it holds, so it can
// say exactly when it has the cluster's routes; the others only count announcements.
import type { Socket } from 'node:net';
import { KEEPALIVE, openMessage } from '../speaker/wire.js';

const OPEN = 1;
const UPDATE = 2;
const NOTIFICATION = 3;
const KEEPALIVE_TYPE = 4;

export interface LeanPeerConfig {
  address: string;
  asn: number;
  holdTime: number;
  /** Keys (address · 64 + length) of our own prefixes: never counted as received. */
  own: ReadonlySet<number>;
  /** Keep every prefix held (exact count) rather than counting announcements. */
  sample: boolean;
}

export interface LeanPeerEvents {
  established(peer: LeanPeer): void;
  down(peer: LeanPeer, why: string, wasEstablished: boolean): void;
  received(peer: LeanPeer): void;
}

export class LeanPeer {
  private socket: Socket | undefined;
  private pending: Buffer | undefined;
  private keepalive: NodeJS.Timeout | undefined;
  state: 'idle' | 'open-sent' | 'open-confirm' | 'established' = 'idle';
  /** Announcements received (with repeats), minus withdrawals. */
  count = 0;
  /** Sampled peers: the prefixes held. */
  readonly held: Set<number> | undefined;
  /** UPDATEs to send once Established, and any sent later while it lasts. */
  outbound: Buffer[] = [];
  /** Times it went down after Established. */
  drops = 0;
  lastError = '';

  constructor(
    readonly config: LeanPeerConfig,
    private readonly events: LeanPeerEvents,
  ) {
    if (config.sample) this.held = new Set();
  }

  get size(): number {
    return this.held ? this.held.size : this.count;
  }

  get busy(): boolean {
    return this.socket !== undefined;
  }

  /** Takes over a connected socket (dialled or accepted) and runs the handshake on it. */
  attach(socket: Socket): void {
    this.socket = socket;
    this.pending = undefined;
    this.state = 'open-sent';
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.data(chunk));
    socket.on('error', (e) => (this.lastError = e.message));
    socket.on('close', () => this.closed(socket));
    socket.write(openMessage(this.config.asn, this.config.address, this.config.holdTime));
  }

  /** Sends more UPDATEs now if Established, and again after every reconnection. */
  announce(messages: readonly Buffer[]): void {
    this.outbound.push(...messages);
    if (this.state === 'established') for (const m of messages) this.socket!.write(m);
  }

  /** Drops the session without a NOTIFICATION, as a node that vanished. */
  drop(): void {
    this.socket?.destroy();
  }

  private closed(socket: Socket): void {
    if (socket !== this.socket) return;
    const was = this.state;
    this.socket = undefined;
    this.state = 'idle';
    if (this.keepalive) clearInterval(this.keepalive);
    this.keepalive = undefined;
    this.count = 0;
    this.held?.clear();
    if (was === 'established') this.drops++;
    this.events.down(this, this.lastError || 'closed', was === 'established');
    this.lastError = '';
  }

  private data(chunk: Buffer): void {
    const b = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    let p = 0;
    let changed = false;
    while (b.length - p >= 19) {
      const len = b.readUInt16BE(p + 16);
      if (len < 19 || len > 65535) {
        this.lastError = `bad message length ${len}`;
        this.socket?.destroy();
        return;
      }
      if (b.length - p < len) break;
      const type = b[p + 18];
      if (type === UPDATE) {
        this.update(b, p, p + len);
        changed = true;
      } else if (type === OPEN && this.state === 'open-sent') {
        const hold = Math.min(b.readUInt16BE(p + 22), this.config.holdTime);
        this.socket!.write(KEEPALIVE);
        this.state = 'open-confirm';
        if (hold > 0) this.keepalive = setInterval(() => this.socket?.write(KEEPALIVE), (hold * 1000) / 3);
      } else if (type === KEEPALIVE_TYPE && this.state === 'open-confirm') {
        this.state = 'established';
        for (const m of this.outbound) this.socket!.write(m);
        this.events.established(this);
      } else if (type === NOTIFICATION) {
        this.lastError = `NOTIFICATION ${b[p + 19]}/${b[p + 20]}`;
      }
      p += len;
    }
    this.pending = p < b.length ? Buffer.from(b.subarray(p)) : undefined;
    if (changed) this.events.received(this);
  }

  private update(b: Buffer, start: number, end: number): void {
    let p = start + 19;
    const withdrawnEnd = p + 2 + b.readUInt16BE(p);
    p += 2;
    const held = this.held;
    const own = this.config.own;
    while (p < withdrawnEnd) {
      const len = b[p]!;
      if (held) held.delete(key(b, p + 1, len));
      else if (!own.has(key(b, p + 1, len))) this.count--;
      p += 1 + ((len + 7) >> 3);
    }
    p = withdrawnEnd + 2 + b.readUInt16BE(withdrawnEnd);
    while (p < end) {
      const len = b[p]!;
      const k = key(b, p + 1, len);
      if (!own.has(k)) {
        if (held) held.add(k);
        else this.count++;
      }
      p += 1 + ((len + 7) >> 3);
    }
  }
}

/** address · 64 + length, as bench/speaker's monitor keys an IPv4 prefix. */
export function key(b: Buffer, p: number, len: number): number {
  const n = (len + 7) >> 3;
  let addr = 0;
  for (let i = 0; i < 4; i++) addr = addr * 256 + (i < n ? b[p + i]! : 0);
  return addr * 64 + len;
}
