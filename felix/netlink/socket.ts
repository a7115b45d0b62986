// A rtnetlink socket that sends a whole batch of requests per sendmsg and matches every
// ack or error back to its request by sequence number.

import { NLMSG_DONE, NLMSG_ERROR, NLMSGERR_ATTR_MSG, NLM_F_ACK, NLM_F_ACK_TLVS, NLM_F_CAPPED, NETLINK_ROUTE } from './constants.js';
import { inNetns, loadNative, nativeLoadError, type NetlinkNative } from './native.js';
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
  /** The netlink protocol: NETLINK_ROUTE (default), or NETLINK_GENERIC for a generic family such as WireGuard's. */
  readonly protocol?: number;
}

const RECV_BYTES = 4 << 20;

export class NetlinkSocket {
  private seq = 1;
  private readonly rx = Buffer.allocUnsafe(RECV_BYTES);
  private closed = false;
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
      let o = 0;
      while (o + 16 <= got) {
        const len = this.rx.readUInt32LE(o);
        if (len < 16 || o + len > got) break;
        const type = this.rx.readUInt16LE(o + 4);
        if (this.rx.readUInt32LE(o + 8) === seq) {
          if (type === NLMSG_DONE) return;
          if (type === NLMSG_ERROR) {
            const err = -this.rx.readInt32LE(o + 16);
            if (err !== 0) throw new NetlinkError(err, 'dump failed');
            return;
          }
          visit(type, this.rx, o, o + len);
        }
        o += (len + 3) & ~3;
      }
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.n.close(this.fd);
  }

  private check(): void {
    if (this.closed) throw new Error('netlink socket is closed');
  }
}
