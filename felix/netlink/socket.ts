// A rtnetlink socket that sends a whole batch of requests per sendmsg and matches every
// ack or error back to its request by sequence number.

import { NLMSG_DONE, NLMSG_ERROR, NLMSGERR_ATTR_MSG, NLM_F_ACK, NLM_F_ACK_TLVS, NLM_F_CAPPED, NETLINK_ROUTE } from './constants.js';
import { inNetns, loadNative, nativeLoadError, type NetlinkNative, type WatchHandle } from './native.js';
import { MessageWriter, forEachAttr } from './writer.js';
import { ENOBUFS, ETIMEDOUT, errnoText, replyLost } from '../errno.js';

// A request's slot in a batch before its answer arrives; never an errno (those are positive).
const UNANSWERED = -1;

/** The outcome of one request in a batch: 0 for success, else a positive errno. */
export interface BatchResult {
  readonly errors: Int32Array;
  /** Extended-ack text from the kernel, by request index, where it gave one. */
  readonly messages: Map<number, string>;
}

export class NetlinkError extends Error {
  constructor(
    readonly errno: number,
    readonly detail?: string,
  ) {
    super(`${errnoText(errno)}${detail ? `: ${detail}` : ''}`);
    this.name = 'NetlinkError';
  }
}

export interface NetlinkSocketOptions {
  /** The netlink protocol: NETLINK_ROUTE (default), NETLINK_NETFILTER (nf_tables) or NETLINK_GENERIC (WireGuard's family). */
  readonly protocol?: number;
  /** Path of a network namespace (e.g. /var/run/netns/x); default: the process's own. */
  readonly netns?: string;
  /** Bytes of requests per sendmsg. Acks for one chunk must fit the receive buffer. */
  readonly chunkBytes?: number;
  /** Socket buffer size; root may exceed net.core.rmem_max. */
  readonly bufferBytes?: number;
  /**
   * 'each': every request carries NLM_F_ACK and gets its own reply. 'errors': only the last
   * request of each sendmsg asks for an ack; the kernel still answers every failed request
   * with its error, in order, so the barrier's ack proves all earlier silent ones succeeded.
   */
  readonly ackMode?: 'each' | 'errors';
  /** Longest wait for the kernel's first reply to a chunk. */
  readonly replyTimeoutMs?: number;
}

const RECV_BYTES = 4 << 20;
/** A dump read off the event loop hands this much to JavaScript per turn (about 600 conntrack entries). */
const DUMP_PART_BYTES = 128 << 10;

export class NetlinkSocket {
  private seq = 1;
  private readonly rx = Buffer.allocUnsafe(RECV_BYTES);
  private closed = false;
  /** A read on the thread pool owns the descriptor and the receive buffer. */
  private reading = false;
  private closePending = false;
  private watching: WatchHandle | undefined;
  private readonly chunkBytes: number;
  private readonly timeout: number;
  private readonly ackMode: 'each' | 'errors';

  private constructor(
    private readonly n: NetlinkNative,
    private readonly fd: number,
    opts: NetlinkSocketOptions,
  ) {
    this.chunkBytes = opts.chunkBytes ?? 256 * 1024;
    this.timeout = opts.replyTimeoutMs ?? 5000;
    this.ackMode = opts.ackMode ?? 'each';
  }

  static open(opts: NetlinkSocketOptions = {}): NetlinkSocket {
    const n = loadNative();
    if (!n) throw new Error(nativeLoadError());
    const fd = inNetns(opts.netns, () => n.open(opts.protocol ?? NETLINK_ROUTE, opts.bufferBytes ?? 64 << 20));
    return new NetlinkSocket(n, fd, opts);
  }

  /** A writer whose sequence numbers belong to this socket. */
  writer(capacity?: number): MessageWriter {
    if (this.seq > 0x3fffffff) this.seq = 1;
    return new MessageWriter(this.seq, capacity);
  }

  /**
   * Sends every message in `w` (each must carry NLM_F_ACK), a chunk per sendmsg, and
   * waits for each chunk's acks before the next. Yields to the event loop between chunks.
   */
  async execute(w: MessageWriter): Promise<BatchResult> {
    this.check();
    const count = w.count;
    const errors = new Int32Array(count).fill(UNANSWERED);
    const messages = new Map<number, string>();
    if (count === 0) return { errors, messages };
    this.seq = w.seqAfter;
    const base = w.seqs[0];
    let first = 0;
    while (first < count) {
      let last = first + 1;
      const from = w.starts[first];
      while (last < count && w.starts[last] - from < this.chunkBytes) last++;
      const to = last < count ? w.starts[last] : w.len;
      const barrier = this.ackMode === 'errors';
      if (barrier)
        for (let i = first; i < last - 1; i++) w.buf.writeUInt16LE(w.buf.readUInt16LE(w.starts[i] + 6) & ~NLM_F_ACK, w.starts[i] + 6);
      this.n.send(this.fd, w.buf.subarray(from, to), to - from);
      let pending = barrier ? 1 : last - first;
      while (pending > 0) {
        let got: number;
        try {
          got = this.n.recv(this.fd, this.rx, this.timeout);
        } catch (e) {
          // ENOBUFS: the kernel dropped replies. Requests without an answer stay unknown.
          const code = (e as { errno?: number }).errno ?? ENOBUFS;
          for (let i = first; i < last; i++) if (errors[i] === UNANSWERED) errors[i] = code;
          pending = 0;
          break;
        }
        if (got === 0) {
          for (let i = first; i < last; i++) if (errors[i] === UNANSWERED) errors[i] = ETIMEDOUT;
          break;
        }
        let o = 0;
        while (o + 16 <= got) {
          const len = this.rx.readUInt32LE(o);
          if (len < 16 || o + len > got) break;
          const type = this.rx.readUInt16LE(o + 4);
          if (type === NLMSG_ERROR) {
            const idx = this.rx.readUInt32LE(o + 8) - base;
            if (idx >= first && idx < last && errors[idx] === UNANSWERED) {
              errors[idx] = -this.rx.readInt32LE(o + 16);
              if (!barrier || idx === last - 1) pending--;
              const flags = this.rx.readUInt16LE(o + 6);
              if (flags & NLM_F_ACK_TLVS) {
                const inner = flags & NLM_F_CAPPED ? 16 : this.rx.readUInt32LE(o + 20);
                forEachAttr(this.rx, o + 20 + ((inner + 3) & ~3), o + len, (t, a, b) => {
                  if (t === NLMSGERR_ATTR_MSG) messages.set(idx, this.rx.toString('utf8', a, b).replace(/\0+$/, ''));
                });
              }
            }
          }
          o += (len + 3) & ~3;
        }
      }
      // Requests before the barrier that drew no error succeeded: the kernel answers in order.
      // Not when the barrier's own answer was lost: then the silent ones are unknown too.
      if (barrier && errors[last - 1] !== UNANSWERED && !replyLost(errors[last - 1]))
        for (let i = first; i < last; i++) if (errors[i] === UNANSWERED) errors[i] = 0;
      first = last;
      if (first < count) await new Promise<void>((r) => setImmediate(r));
    }
    return { errors, messages };
  }

  /**
   * Sends one dump request (already in `w`) and calls `visit` for each reply message with
   * the buffer and the message's [start, end). The buffer is reused: copy what you keep.
   */
  dump(w: MessageWriter, visit: (type: number, buf: Buffer, start: number, end: number) => void): void {
    this.check();
    this.seq = w.seqAfter;
    const seq = w.seqs[0];
    this.n.send(this.fd, w.buf, w.len);
    for (;;) {
      const got = this.n.recv(this.fd, this.rx, this.timeout);
      if (got === 0) throw new NetlinkError(ETIMEDOUT, 'no reply to a dump request');
      if (this.visitReplies(got, seq, visit)) return;
    }
  }

  /**
   * Hands `visit` each message of the dump `seq` among the `got` bytes read into rx; true once
   * the dump has ended (DONE, or an ERROR, thrown unless it acknowledges).
   */
  private visitReplies(got: number, seq: number, visit: (type: number, buf: Buffer, start: number, end: number) => void): boolean {
    let o = 0;
    while (o + 16 <= got) {
      const len = this.rx.readUInt32LE(o);
      if (len < 16 || o + len > got) break;
      const type = this.rx.readUInt16LE(o + 4);
      if (this.rx.readUInt32LE(o + 8) === seq) {
        if (type === NLMSG_DONE) return true;
        if (type === NLMSG_ERROR) {
          const err = -this.rx.readInt32LE(o + 16);
          if (err !== 0) throw new NetlinkError(err, 'dump failed');
          return true;
        }
        visit(type, this.rx, o, o + len);
      }
      o += (len + 3) & ~3;
    }
    return false;
  }

  /** Whether this addon can read a dump off the event loop (one built before `readAsync` cannot). */
  get canReadAsync(): boolean {
    return typeof this.n.readAsync === 'function';
  }

  /**
   * As `dump`, but the kernel's work runs on libuv's thread pool: its walk of what it dumps
   * happens inside the request's send (the whole walk, when the reply fits one read) and inside
   * each read of a long dump. `visit` is called on the event loop as each part arrives, at most
   * `partBytes` of messages at a time, so a long dump takes turns with the rest of the process.
   * The socket takes no other request until it settles; `close` meanwhile waits for it.
   */
  async dumpAsync(
    w: MessageWriter,
    visit: (type: number, buf: Buffer, start: number, end: number) => void,
    partBytes = DUMP_PART_BYTES,
  ): Promise<void> {
    this.check();
    const readAsync = this.n.readAsync;
    if (!readAsync) throw new Error('the felix netlink addon has no readAsync(): rebuild it with `npm run build:native`');
    this.seq = w.seqAfter;
    const seq = w.seqs[0];
    // Room for a whole datagram past the part's end: the addon reads while 64 KiB are left.
    const length = Math.min(this.rx.length, Math.max(partBytes, 0) + 65536);
    const read = (request: Buffer | null) =>
      new Promise<number>((resolve, reject) =>
        readAsync(this.fd, this.rx, length, this.timeout, request, (errno, bytes) => {
          if (errno === 0) resolve(bytes);
          else reject(new NetlinkError(Math.abs(errno), errno < 0 ? 'dump request not sent' : 'dump read failed'));
        }),
      );
    this.reading = true;
    try {
      let request: Buffer | null = w.buf.subarray(0, w.len);
      for (;;) {
        const got = await read(request);
        request = null;
        if (got === 0) throw new NetlinkError(ETIMEDOUT, 'no reply to a dump request');
        if (this.visitReplies(got, seq, visit)) return;
      }
    } finally {
      this.reading = false;
      if (this.closePending) this.close();
    }
  }

  /** Whether this addon can join multicast groups (one built before `join` cannot). */
  get canJoin(): boolean {
    return typeof this.n.join === 'function';
  }

  /** Subscribes to an rtnetlink multicast group (RTNLGRP_*): the kernel queues its changes here. */
  join(group: number): void {
    this.check();
    if (!this.n.join) throw new Error('the felix netlink addon has no join(): rebuild it with `npm run build:native`');
    this.n.join(this.fd, group);
  }

  /** Whether this addon can wake the event loop when the socket is readable (one built before `watch` cannot). */
  get canWatch(): boolean {
    return typeof this.n.watch === 'function' && typeof this.n.unwatch === 'function';
  }

  /**
   * Calls `ready` from the event loop each time the kernel has queued something (level
   * triggered: until it is drained). The watch does not keep the process alive unless asked.
   */
  watch(ready: () => void, keepAlive = false): void {
    this.check();
    if (!this.n.watch) throw new Error('the felix netlink addon has no watch(): rebuild it with `npm run build:native`');
    if (this.watching) throw new Error('netlink socket is already watched');
    this.watching = this.n.watch(this.fd, () => ready(), keepAlive);
  }

  /** Stops calling the watch's `ready`; `watch` may start again. */
  unwatch(): void {
    if (this.watching) this.n.unwatch?.(this.watching);
    this.watching = undefined;
  }

  /**
   * Reads whatever is queued (or `maxReads` receive buffers of it), without waiting, and calls
   * `visit` per message. Returns false when the kernel dropped messages for want of room
   * (ENOBUFS): then what changed is not known.
   */
  drain(visit: (type: number, buf: Buffer, start: number, end: number) => void, maxReads = Number.POSITIVE_INFINITY): boolean {
    this.check();
    for (let reads = 0; reads < maxReads; reads++) {
      let got: number;
      try {
        got = this.n.recv(this.fd, this.rx, 0);
      } catch (e) {
        if ((e as { errno?: number }).errno === ENOBUFS) return false;
        throw e;
      }
      if (got === 0) return true;
      let o = 0;
      while (o + 16 <= got) {
        const len = this.rx.readUInt32LE(o);
        if (len < 16 || o + len > got) break;
        visit(this.rx.readUInt16LE(o + 4), this.rx, o, o + len);
        o += (len + 3) & ~3;
      }
    }
    return true;
  }

  /** Runs `read` with the socket's descriptor and receive buffer: for readers the addon implements (felix/flows). */
  readRaw<T>(read: (fd: number, rx: Buffer) => T): T {
    this.check();
    return read(this.fd, this.rx);
  }

  /**
   * Sends `batch` (an nfnetlink BATCH_BEGIN … END, which the kernel applies whole or not at
   * all) in one sendmsg, then `barrier`, one request with NLM_F_ACK, in another. The kernel
   * handles a batch before it reads the next sendmsg, and answers in order, so the barrier's
   * ack comes after every error the batch drew: the batch asks for no acks of its own.
   * Returns each refused message's errno and extended-ack text by its index in `batch`;
   * `visit` sees the barrier's replies (a GETGEN's NEWGEN: the generation after the batch).
   */
  transact(
    batch: MessageWriter,
    barrier: MessageWriter,
    visit: (type: number, buf: Buffer, start: number, end: number) => void,
  ): Map<number, { errno: number; message?: string }> {
    this.check();
    this.seq = barrier.seqAfter;
    const refused = new Map<number, { errno: number; message?: string }>();
    const base = batch.seqs[0];
    const count = batch.count;
    const done = barrier.seqs[0];
    this.n.send(this.fd, batch.buf, batch.len);
    this.n.send(this.fd, barrier.buf, barrier.len);
    for (;;) {
      const got = this.n.recv(this.fd, this.rx, this.timeout);
      if (got === 0) throw new NetlinkError(ETIMEDOUT, 'no reply to an nftables batch');
      let o = 0;
      while (o + 16 <= got) {
        const len = this.rx.readUInt32LE(o);
        if (len < 16 || o + len > got) break;
        const type = this.rx.readUInt16LE(o + 4);
        const seq = this.rx.readUInt32LE(o + 8);
        if (seq === done) {
          if (type === NLMSG_ERROR) {
            const err = -this.rx.readInt32LE(o + 16);
            if (err !== 0) throw new NetlinkError(err, 'the request after an nftables batch failed');
            return refused;
          }
          visit(type, this.rx, o, o + len);
        } else if (type === NLMSG_ERROR && seq - base >= 0 && seq - base < count) {
          const errno = -this.rx.readInt32LE(o + 16);
          if (errno !== 0) refused.set(seq - base, { errno, ...this.ackText(o, len) });
        }
        o += (len + 3) & ~3;
      }
    }
  }

  /** The extended-ack text of the error message at `o`, if the kernel gave one. */
  private ackText(o: number, len: number): { message?: string } {
    const flags = this.rx.readUInt16LE(o + 6);
    if (!(flags & NLM_F_ACK_TLVS)) return {};
    let message: string | undefined;
    const inner = flags & NLM_F_CAPPED ? 16 : this.rx.readUInt32LE(o + 20);
    forEachAttr(this.rx, o + 20 + ((inner + 3) & ~3), o + len, (t, a, b) => {
      if (t === NLMSGERR_ATTR_MSG) message = this.rx.toString('utf8', a, b).replace(/\0+$/, '');
    });
    return message === undefined ? {} : { message };
  }

  close(): void {
    if (this.closed) return;
    if (this.reading) {
      // The descriptor must outlive the read on the thread pool (it could be reused meanwhile).
      this.closePending = true;
      return;
    }
    this.closed = true;
    // libuv must stop polling the fd before it is closed (and maybe reused).
    if (this.watching) this.n.unwatch?.(this.watching);
    this.watching = undefined;
    this.n.close(this.fd);
  }

  private check(): void {
    if (this.closed || this.closePending) throw new Error('netlink socket is closed');
    if (this.reading) throw new Error('netlink socket is busy with a dump');
  }
}
