// One TCP connection carrying BGP: framing and decoding on the way in, and on the way out
// control messages written at once while UPDATEs are pulled from a source only as fast as
// the peer reads them (back-pressure: the socket never holds more than `highWater` octets
// of UPDATEs, so a KEEPALIVE never waits behind a whole table).
import type { Socket } from 'node:net';
import {
  BgpError,
  MessageFramer,
  decodeReceivedMessage,
  encodeMessage,
  maxMessageLength,
  type BgpMessage,
  type CodecOptions,
  type ReceivedMessage,
} from '../codec/index.js';

export interface ConnectionHandlers {
  /** A message read; an UPDATE comes as received, its message object made when asked for. */
  message(m: ReceivedMessage): void;
  /** A message that could not be decoded; for UPDATEs under RFC 7606 `error.update` holds what was read. */
  decodeError(error: BgpError): void;
  closed(error?: Error): void;
}

/** Supplies encoded UPDATEs when the socket has room; undefined when there is nothing to send. */
export type UpdateSource = () => Buffer | undefined;

/**
 * Octets all connections may read in one turn of the event loop before each pauses for the
 * next. The kernel hands a flood over megabytes at a time (every socket read dry in one poll),
 * and a turn that applies them all sends nothing until its end: the peers downstream sit idle
 * for a second, then all parse at once (bench/speaker 10x100k: the monitor had everything
 * 0.3 s after the speaker did; with this budget, 0.05–0.1 s). Too small a budget sends
 * intermediate states that a longer turn would have folded: a pause after every large read
 * cost the replay of real updates ~10 % more CPU; 128 KiB costs it ~3 %.
 */
export const TURN_BUDGET = 128 * 1024;
/** A read this large comes from a socket with more waiting (Node reads 64 KiB at a time). */
const FLOOD_READ = 16 * 1024;
let turnBytes = 0;
let turnCounted = false;

function newTurn(): void {
  turnBytes = 0;
  turnCounted = false;
}

export class BgpConnection {
  /** How to decode what arrives: set from the OPENs. */
  receive: CodecOptions = {};
  /** How to encode what we send. */
  send: CodecOptions = {};
  highWater = 64 * 1024;
  messagesIn = 0;
  messagesOut = 0;
  private readonly framer = new MessageFramer();
  private source: UpdateSource | undefined;
  private closed = false;
  private pumping = false;
  /**
   * Least time between two batches of UPDATEs prompted by new changes (ms), unless kick() is
   * given another. The first change after a quiet spell goes at once; while changes keep coming
   * they go out together, so a reflector whose clients announce one after another sends each
   * client a few large writes, not one small UPDATE per announcing client. The table dump and
   * a draining socket are not held. Far below the 5 s RFC 4271 (§10) suggests as iBGP's
   * MinRouteAdvertisementIntervalTimer.
   */
  coalesceMs = 200;
  private lastKick = -Infinity;
  private kickTimer: ReturnType<typeof setTimeout> | undefined;
  private resolveDone!: () => void;
  /** Settles once the socket is gone: after close() that means what was written has left. */
  readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve));

  constructor(
    readonly socket: Socket,
    private readonly handlers: ConnectionHandlers,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => this.pump());
    socket.on('error', (e) => this.finish(e));
    socket.on('close', () => this.finish());
  }

  get remoteAddress(): string {
    return normalizeAddress(this.socket.remoteAddress ?? '');
  }

  get localAddress(): string {
    return normalizeAddress(this.socket.localAddress ?? '');
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Applies what the OPENs negotiated, including the larger message size (RFC 8654). */
  negotiate(receive: CodecOptions, send: CodecOptions): void {
    this.receive = receive;
    this.send = send;
    this.framer.maxLength = maxMessageLength(receive);
  }

  sendMessage(m: BgpMessage): void {
    this.write(encodeMessage(m, this.send));
  }

  write(bytes: Buffer): void {
    if (this.closed) return;
    this.messagesOut++;
    this.socket.write(bytes);
  }

  /** Starts pulling UPDATEs from `source` whenever the socket has room. */
  setSource(source: UpdateSource | undefined): void {
    this.source = source;
    this.pump();
  }

  /** Call when the source has new UPDATEs to send: pumps now, or once `gapMs` (default `coalesceMs`) has passed since the last kick. */
  kick(gapMs = this.coalesceMs): void {
    if (this.closed || !this.source || this.kickTimer !== undefined) return;
    const wait = this.lastKick + gapMs - performance.now();
    if (wait <= 0) {
      this.lastKick = performance.now();
      this.pump();
      return;
    }
    this.kickTimer = setTimeout(() => {
      this.kickTimer = undefined;
      this.lastKick = performance.now();
      this.pump();
    }, wait);
  }

  /** Sends what the source has, as far as the socket has room. */
  pump(): void {
    if (this.pumping || this.closed || !this.source) return;
    this.pumping = true;
    try {
      while (!this.closed && this.socket.writableLength < this.highWater && this.pumpBatch());
    } finally {
      this.pumping = false;
    }
  }

  /**
   * Pulls UPDATEs up to the high-water mark and writes them in one socket write, not one per
   * UPDATE: a table dump to a reflector client is thousands of small UPDATEs, and a write each
   * was 40 % of a reflector's CPU at 1,400 clients. Returns whether the source may have more.
   */
  private pumpBatch(): boolean {
    const batch: Buffer[] = [];
    let bytes = 0;
    let more = true;
    try {
      while (this.socket.writableLength + bytes < this.highWater) {
        const next = this.source?.();
        if (!next) {
          more = false;
          break;
        }
        batch.push(next);
        bytes += next.length;
      }
    } finally {
      if (batch.length > 0 && !this.closed) {
        this.messagesOut += batch.length;
        this.socket.write(batch.length === 1 ? batch[0] : Buffer.concat(batch, bytes));
      }
    }
    return more;
  }

  /** Closes after what was written has gone out (a NOTIFICATION must reach the peer). */
  close(): void {
    if (this.closed) return;
    this.source = undefined;
    clearTimeout(this.kickTimer);
    this.socket.end();
    // A peer that does not read must not keep the socket open forever.
    setTimeout(() => this.socket.destroy(), 2000).unref();
  }

  destroy(): void {
    this.source = undefined;
    clearTimeout(this.kickTimer);
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    turnBytes += chunk.length;
    if (!turnCounted) {
      turnCounted = true;
      setImmediate(newTurn);
    }
    if (turnBytes > TURN_BUDGET && chunk.length >= FLOOD_READ) {
      // This turn has read enough: a connection that is flooding reads on in the next one,
      // after the sessions have sent what changed (see TURN_BUDGET). Small reads go on: a
      // pause costs two system calls, and a reflector's thousand clients each send little.
      this.socket.pause();
      setImmediate(() => {
        if (!this.closed) this.socket.resume();
      });
    }
    let messages: Buffer[];
    try {
      messages = this.framer.push(chunk);
    } catch (e) {
      if (e instanceof BgpError) return this.handlers.decodeError(e);
      throw e;
    }
    for (const raw of messages) {
      if (this.closed) return;
      this.messagesIn++;
      let m: ReceivedMessage;
      try {
        m = decodeReceivedMessage(raw, this.receive);
      } catch (e) {
        if (!(e instanceof BgpError)) throw e;
        this.handlers.decodeError(e);
        continue;
      }
      this.handlers.message(m);
    }
  }

  private finish(error?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.source = undefined;
    clearTimeout(this.kickTimer);
    this.socket.destroy();
    this.resolveDone();
    this.handlers.closed(error);
  }
}

/** "::ffff:10.0.0.1" (an IPv4 peer on a dual-stack socket) → "10.0.0.1". */
export function normalizeAddress(a: string): string {
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
}
