// The dataplane's flow events, as they happen: conntrack's NEW and DESTROY (a NETLINK_NETFILTER
// socket in those two multicast groups) and the packets felix's flow log rules hand to
// nfnetlink_log (a second socket bound to their group). Both sockets are woken by the event loop
// (the addon's uv_poll), never a timer; each wake-up reads a bounded amount, so a flood takes
// turns with the rest of the process instead of holding it. A socket rests only after a read
// that emptied its queue: one that stopped with its buffers full leaves the socket watched, and
// the queue wakes the loop again on its next turn, so the rest sets how many messages a read
// gathers, never how many a second the reader can take. What the kernel cannot queue it drops
// and says so (ENOBUFS): counted in `lost`, never buffered without bound here.

import { writeFileSync } from 'node:fs';
import { parseCidr } from '../../ip/index.js';
import { EBUSY, errnoText } from '../errno.js';
import { inNetns, loadNative } from '../netlink/native.js';
import { NETLINK_NETFILTER } from '../netlink/nf-constants.js';
import { NetlinkSocket } from '../netlink/socket.js';
import { NFNLGRP_CONNTRACK_DESTROY, NFNLGRP_CONNTRACK_NEW } from './constants.js';
import {
  AddressNames,
  BATCH_ROWS,
  CFG,
  DECIDED_MARK,
  DECIDED_PREFIX,
  F,
  H,
  HEADER,
  KIND_DENIALS,
  KIND_DESTROY,
  KIND_ENDS,
  KIND_NEW,
  KIND_PACKET,
  KIND_STARTS,
  ROW,
} from './batch.js';
import type { ConntrackEvent } from './conntrack-event.js';
import type { FlowAggregate } from './correlate.js';
import { type LoggedPacket, NFLOG_DATAGRAM_BYTES, nflogBind } from './nflog.js';

export interface FlowReaderOptions {
  /** Path of the network namespace to read; default the process's own. */
  readonly netns?: string;
  /** The nfnetlink_log group felix's flow log rules name. */
  readonly group: number;
  /** Turn on conntrack's byte and packet accounting (net.netfilter.nf_conntrack_acct) in the namespace. Default true. */
  readonly accounting?: boolean;
  /**
   * Batches read per wake-up and socket, while each fills its buffers, before the event loop gets
   * a turn. Default 1 (4 MiB: 2,048 conntrack events, or 64 datagrams of logged packets).
   */
  readonly readsPerWake?: number;
  /**
   * After a wake-up whose reads emptied the queue, the socket is not watched for this long, so
   * that messages are read many to a wake-up rather than one (a wake-up, with its timer and its
   * turn of JavaScript, costs more than many messages). Default 100 ms; 0 reads each message as
   * it comes. The kernel queues meanwhile (10,000 flows/s are 2,000 conntrack events in 100 ms,
   * in a 16 MiB buffer); a queue longer than a read is read on at once, not after another rest.
   * A logged Allow and its NEW, read from the two sockets, meet up to about this much apart
   * (plus nfnetlink_log's 50 ms): well within the correlator's and the fold's `pendingMs`.
   */
  readonly batchMs?: number;
}

/**
 * The addon's fold: flows whose rule is known in the addon (a join of an Allow's logged packet
 * and its NEW, or an Allow's number in the conntrack mark) are added up there, one aggregate per
 * naming and rule, and handed on every `holdMs` rather than one by one.
 */
export interface FlowFold {
  /** Writes what the fold may take now (batch.ts CFG) into `cfg`: called before each read (FlowCorrelator.foldSettings). */
  readonly settings: (cfg: Float64Array) => void;
  readonly onAggregate: (a: FlowAggregate) => void;
  /** How long the first flow of an aggregate waits for others. Default 100 ms. */
  readonly holdMs?: number;
}

type FlowRead = (fd: number, rx: Buffer, out: Float64Array, fold?: Float64Array, slotBytes?: number, nets?: Uint32Array) => number;

/** IPv4 networks the kernel's filter of conntrack events can hold. */
const MAX_FILTER_NETS = 16;

/** A conntrack event's room in the receive buffer: one message of a few hundred bytes to a datagram. */
const EVENT_SLOT_BYTES = 2048;

const flowRead = (): FlowRead | undefined => loadNative()?.flowRead as FlowRead | undefined;

export interface FlowReaderStats {
  conntrackEvents: number;
  loggedPackets: number;
  /** Times the kernel dropped messages it had no room to queue. */
  lost: number;
  /** Reads that found a datagram bigger than its slot (the rest of it lost). */
  truncated: number;
  /** Aggregates the addon's fold handed on, and the flows (starts, ends, refused packets) they stood for. */
  aggregates: number;
  folded: number;
}

/**
 * Sets net.netfilter.nf_conntrack_acct in the namespace; false when it could not (reported by the
 * caller). Also nf_conntrack_timestamp, when it can: a DESTROY then says when its connection
 * started, which no table here has to keep.
 */
export function enableConntrackAccounting(netns?: string): boolean {
  try {
    inNetns(netns, () => writeFileSync('/proc/sys/net/netfilter/nf_conntrack_acct', '1'));
  } catch {
    return false;
  }
  try {
    inNetns(netns, () => writeFileSync('/proc/sys/net/netfilter/nf_conntrack_timestamp', '1'));
  } catch {
    // Without it an end whose start this process forgot is timed at its end, as before.
  }
  return true;
}

export class FlowReader {
  readonly stats: FlowReaderStats = { conntrackEvents: 0, loggedPackets: 0, lost: 0, truncated: 0, aggregates: 0, folded: 0 };
  /** Whether byte and packet counts will come (accounting was on or could be turned on). */
  readonly accounting: boolean;
  private closed = false;

  private constructor(
    private readonly conntrack: NetlinkSocket,
    private readonly nflog: NetlinkSocket,
    accounting: boolean,
    private readonly onConntrack: (e: ConntrackEvent) => void,
    private readonly onPacket: (p: LoggedPacket) => void,
  ) {
    this.accounting = accounting;
  }

  private fold: (FlowFold & { state: Float64Array; holdMs: number }) | undefined;
  /** The fold's bytes: where an aggregate's prefix is. */
  private foldBytes: Buffer | undefined;
  /** Prefixes by their number in the fold (a number keeps its prefix). */
  private readonly foldPrefixes = new Map<number, string>();
  /** Reads what the fold holds once it is due, when no wake-up comes first. */
  private foldTimer: NodeJS.Timeout | undefined;

  /**
   * Opens both sockets and starts reading: `onConntrack` and `onPacket` run on the event loop.
   * Throws when the addon cannot watch sockets, or the group is taken by another reader.
   */
  static async open(
    o: FlowReaderOptions,
    onConntrack: (e: ConntrackEvent) => void,
    onPacket: (p: LoggedPacket) => void,
    fold?: FlowFold,
  ): Promise<FlowReader> {
    const accounting = o.accounting === false ? false : enableConntrackAccounting(o.netns);
    const conntrack = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: o.netns, bufferBytes: 16 << 20 });
    let nflog: NetlinkSocket | undefined;
    try {
      if (!conntrack.canWatch || !conntrack.canJoin || !loadNative()?.flowRead)
        throw new Error('the felix netlink addon cannot watch or read flow log sockets: rebuild it with `npm run build:native`');
      conntrack.join(NFNLGRP_CONNTRACK_NEW);
      conntrack.join(NFNLGRP_CONNTRACK_DESTROY);
      nflog = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: o.netns, bufferBytes: 4 << 20 });
      const w = nflog.writer(256);
      nflogBind(w, { group: o.group });
      const r = await nflog.execute(w);
      const failed = [...r.errors].find((e) => e !== 0);
      if (failed !== undefined)
        throw new Error(
          `nfnetlink_log group ${o.group}: ${errnoText(failed, failed === EBUSY ? 'another program reads this group' : undefined)}`,
        );
    } catch (e) {
      conntrack.close();
      nflog?.close();
      throw e;
    }
    const reader = new FlowReader(conntrack, nflog, accounting, onConntrack, onPacket);
    // A read of no socket still says the addon's layout (an addon built before a header field
    // was added leaves it 0).
    flowRead()?.(-1, Buffer.alloc(1 << 16), reader.rows);
    if (reader.rows[H.ROW] !== ROW || reader.rows[H.HEADER] !== HEADER) {
      reader.close();
      throw new Error('the felix netlink addon writes flow rows of another layout: rebuild it with `npm run build:native`');
    }
    if (fold) {
      reader.fold = { ...fold, state: new Float64Array(reader.rows[H.FOLD_SIZE]!), holdMs: fold.holdMs ?? 100 };
      reader.foldBytes = Buffer.from(reader.fold.state.buffer);
    }
    const reads = o.readsPerWake ?? 1;
    const batchMs = o.batchMs ?? 100;
    for (const [sock, slot] of [
      [conntrack, EVENT_SLOT_BYTES],
      [nflog, NFLOG_DATAGRAM_BYTES],
    ] as const) {
      const ready = () => {
        // Full buffers: the socket stays watched, and what is still queued wakes the loop again
        // once the rest of the process has had its turn.
        if (reader.read(sock, reads, slot) || batchMs <= 0 || reader.closed) return;
        sock.unwatch();
        const t: NodeJS.Timeout = setTimeout(() => {
          reader.resume.delete(t);
          if (!reader.closed) sock.watch(ready);
        }, batchMs).unref();
        reader.resume.add(t);
      };
      sock.watch(ready);
    }
    return reader;
  }

  /** Timers that watch a socket again after its pause. */
  private readonly resume = new Set<NodeJS.Timeout>();

  private readonly rows = new Float64Array(HEADER + BATCH_ROWS * ROW);
  private readonly names = new AddressNames();

  /**
   * Up to `reads` batches of what the socket has queued (none: what the fold holds), each row
   * handed on as its event, reading on while a batch fills its buffers. Returns whether the last
   * batch stopped full (the socket may hold more), false once one found the queue empty.
   */
  private read(sock: NetlinkSocket | undefined, reads: number, slot = EVENT_SLOT_BYTES, all = false): boolean {
    const read = flowRead();
    if ((this.closed && !all) || !read) return false;
    const rows = this.rows;
    const fold = this.fold;
    for (let r = 0; r < reads; r++) {
      let n: number;
      let rx: Buffer | undefined;
      if (fold) {
        fold.settings(fold.state);
        fold.state[CFG.HOLD_MS] = fold.holdMs;
      }
      try {
        if (sock)
          n = sock.readRaw((fd, buf) => {
            rx = buf;
            return read(fd, buf, rows, fold?.state, slot);
          });
        else {
          rx = this.idleRx;
          n = read(all ? -2 : -1, rx, rows, fold?.state);
        }
      } catch {
        // A read error other than ENOBUFS leaves the socket as it is; the next wake-up tries again.
        this.stats.lost++;
        return false;
      }
      const lost = rows[H.LOST]!;
      if (lost & 1) this.stats.lost++;
      if (lost & 2) this.stats.truncated++;
      this.stats.conntrackEvents += rows[H.EVENTS]!;
      this.stats.loggedPackets += rows[H.PACKETS]!;
      for (let i = 0, at = HEADER; i < n && (!this.closed || all); i++, at += ROW) {
        const kind = rows[at + F.KIND];
        if (kind === KIND_PACKET) this.onPacket(this.packet(rows, at, rx!));
        else if (kind === KIND_NEW || kind === KIND_DESTROY) this.onConntrack(this.event(rows, at));
        else if (fold && kind! >= KIND_STARTS && kind! <= KIND_DENIALS) fold.onAggregate(this.aggregate(rows, at));
      }
      if (fold && rows[H.HELD]! > 0 && !this.foldTimer && !this.closed) {
        this.foldTimer = setTimeout(() => {
          this.foldTimer = undefined;
          this.read(undefined, 1);
        }, fold.holdMs).unref();
      }
      if (!sock || this.closed || rows[H.MORE] !== 1) return false;
    }
    return true;
  }

  /** The buffer of a read with no socket (what the fold holds). */
  private readonly idleRx = Buffer.alloc(1 << 16);

  private aggregate(rows: Float64Array, at: number): FlowAggregate {
    const kind = rows[at + F.KIND];
    const denied = kind === KIND_DENIALS;
    const count = rows[at + F.COUNT]!;
    this.stats.aggregates++;
    this.stats.folded += count;
    const tuple = this.names.tuple(rows, at, F.A_SRC);
    const family = rows[at + F.FAMILY]!;
    let endpoint: { address: string; port: number } | undefined;
    if (!denied) {
      const address = this.names.name(rows, at + F.B_SRC, family);
      const port = rows[at + F.B_SPORT]!;
      if (address !== tuple.dst || port !== tuple.dport) endpoint = { address, port };
    }
    const decided = rows[at + F.DECIDED];
    let rule: string | number | null = null;
    if (decided === DECIDED_MARK) rule = rows[at + F.DECISION]!;
    else if (decided === DECIDED_PREFIX) {
      const place = rows[at + F.DECISION]!;
      rule = this.foldPrefixes.get(place) ?? null;
      if (rule === null) {
        // A number is a place and the fold's generation of its table: a new generation, new numbers.
        if (this.foldPrefixes.size >= 4_096) this.foldPrefixes.clear();
        const from = rows[at + F.PREFIX_AT]!;
        rule = this.foldBytes!.toString('latin1', from, from + rows[at + F.PREFIX_LEN]!);
        this.foldPrefixes.set(place, rule);
      }
    }
    return {
      phase: kind === KIND_STARTS ? 'start' : kind === KIND_ENDS ? 'end' : 'denied',
      count,
      tuple,
      endpoint,
      rule,
      packets: rows[at + F.PACKETS]!,
      bytes: rows[at + F.BYTES]!,
      timeMs: rows[at + F.LAST]!,
      startMs: rows[at + F.START] || undefined,
      nameKey: rows[at + F.NAME]!,
    };
  }

  private event(rows: Float64Array, at: number): ConntrackEvent {
    return {
      kind: rows[at + F.KIND] === KIND_NEW ? 'new' : 'destroy',
      id: rows[at + F.ID]!,
      orig: this.names.tuple(rows, at, F.A_SRC),
      reply: this.names.tuple(rows, at, F.B_SRC),
      key: rows[at + F.KEY]!,
      nameKey: rows[at + F.NAME]!,
      startMs: rows[at + F.START] || undefined,
      status: rows[at + F.STATUS]!,
      mark: rows[at + F.MARK]!,
      packets: rows[at + F.PACKETS]!,
      bytes: rows[at + F.BYTES]!,
    };
  }

  private packet(rows: Float64Array, at: number, rx: Buffer): LoggedPacket {
    const from = rows[at + F.PREFIX_AT]!;
    return {
      prefix: rx.toString('latin1', from, from + rows[at + F.PREFIX_LEN]!),
      tuple: this.names.tuple(rows, at, F.A_SRC),
      bytes: rows[at + F.BYTES]!,
      key: rows[at + F.KEY]!,
      nameKey: rows[at + F.NAME]!,
    };
  }

  /**
   * Has the kernel drop, before they are queued, the IPv4 conntrack events of flows that touch no
   * address in `cidrs` (none of the original tuple's addresses, nor the reply's source: the
   * endpoint a DNAT chose). IPv6 events still all come. No IPv4 network, or more than 16: no
   * filter. Returns whether a filter is on.
   */
  keepOnly(cidrs: readonly string[]): boolean {
    const read = flowRead();
    if (this.closed || !read) return false;
    const nets: number[] = [];
    for (const text of cidrs) {
      const c = parseCidr(text, 'cidr', false);
      if (c.family !== 4) continue;
      const mask = c.prefixLength === 0 ? 0 : (0xffffffff << (32 - c.prefixLength)) >>> 0;
      nets.push(((c.bytes[0]! << 24) | (c.bytes[1]! << 16) | (c.bytes[2]! << 8) | c.bytes[3]!) >>> 0, mask);
    }
    const on = nets.length > 0 && nets.length <= 2 * MAX_FILTER_NETS;
    const errno = this.conntrack.readRaw((fd, buf) => read(fd, buf, this.rows, undefined, undefined, Uint32Array.from(on ? nets : [])));
    if (errno !== 0) throw new Error(`conntrack event filter: ${errnoText(errno)}`);
    return on;
  }

  /** Stops reading; what the fold holds is handed on first. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.foldTimer);
    this.foldTimer = undefined;
    // Each read tells up to 1,024 aggregates; the fold holds at most 4,096 waits.
    for (let i = 0; i < 8 && this.fold; i++) {
      this.read(undefined, 1, EVENT_SLOT_BYTES, true);
      if (this.rows[H.HELD] === 0) break;
    }
    for (const t of this.resume) clearTimeout(t);
    this.conntrack.close();
    this.nflog.close();
  }
}
