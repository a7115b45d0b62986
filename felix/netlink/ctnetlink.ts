// The kernel's conntrack table over ctnetlink (NETLINK_NETFILTER, subsystem CTNETLINK): a dump
// of the entries that match a query, narrowed by the kernel where it can (CTA_FILTER, Linux 5.8
// on) and checked again here, and the deletion of exact entries. Numbers from
// <linux/netfilter/nfnetlink_conntrack.h>; the filter flags are the kernel's own (nf_internals.h).

import { formatAddress, parseAddress } from '../../ip/index.js';
import { ENOENT, errnoText } from '../errno.js';
import { AF_INET, AF_INET6, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST } from './constants.js';
import { NETLINK_NETFILTER } from './nf-constants.js';
import { NetlinkError, NetlinkSocket } from './socket.js';
import { type MessageWriter, forEachAttr } from './writer.js';

export const NFNL_SUBSYS_CTNETLINK = 1;
/** Also the type of a dump's replies. */
export const IPCTNL_MSG_CT_NEW = 0;
export const IPCTNL_MSG_CT_GET = 1;
export const IPCTNL_MSG_CT_DELETE = 2;
/** A ctnetlink message type: the subsystem in the high byte. */
export const ctMsg = (m: number): number => (NFNL_SUBSYS_CTNETLINK << 8) | m;

export const CTA_TUPLE_ORIG = 1;
export const CTA_TUPLE_REPLY = 2;
export const CTA_STATUS = 3;
export const CTA_ID = 12;
export const CTA_ZONE = 18;
export const CTA_FILTER = 25;

export const CTA_TUPLE_IP = 1;
export const CTA_TUPLE_PROTO = 2;
export const CTA_IP_V4_SRC = 1;
export const CTA_IP_V4_DST = 2;
export const CTA_IP_V6_SRC = 3;
export const CTA_IP_V6_DST = 4;
export const CTA_PROTO_NUM = 1;
export const CTA_PROTO_SRC_PORT = 2;
export const CTA_PROTO_DST_PORT = 3;

export const CTA_FILTER_ORIG_FLAGS = 1;
export const CTA_FILTER_REPLY_FLAGS = 2;
export const CTA_FILTER_F_CTA_IP_SRC = 1 << 0;
export const CTA_FILTER_F_CTA_IP_DST = 1 << 1;
export const CTA_FILTER_F_CTA_PROTO_NUM = 1 << 3;
export const CTA_FILTER_F_CTA_PROTO_SRC_PORT = 1 << 4;
export const CTA_FILTER_F_CTA_PROTO_DST_PORT = 1 << 5;

export const IPPROTO_TCP = 6;
export const IPPROTO_UDP = 17;
export const IPPROTO_SCTP = 132;

/** One direction of a connection as conntrack keys it. */
export interface ConntrackTuple {
  readonly src: string;
  readonly dst: string;
  readonly protocol: number;
  /** 0 for a protocol without ports. */
  readonly srcPort: number;
  readonly dstPort: number;
}

export interface ConntrackEntry {
  readonly family: 4 | 6;
  /** As the first packet came (a Service's frontend, for a DNATed connection). */
  readonly orig: ConntrackTuple;
  /** As replies come: the source is where the connection went (the frontend itself when no NAT touched it). */
  readonly reply: ConntrackTuple;
  /** conntrack's id of the entry: a deletion names it, so a new entry with the same tuple is spared. */
  readonly id: number;
  /** The conntrack zone (0: the default). */
  readonly zone: number;
  readonly status: number;
}

/** The entries a dump asks for: every field given must match. */
export interface ConntrackQuery {
  readonly family: 4 | 6;
  readonly protocol: number;
  readonly orig?: { readonly dst?: string; readonly dstPort?: number };
  readonly reply?: { readonly src?: string };
}

/** A failure of the kernel's, its errno named ("EPERM: …"). */
export class ConntrackError extends Error {
  constructor(
    readonly errno: number,
    what: string,
  ) {
    super(`${what}: ${errnoText(errno)}`);
    this.name = 'ConntrackError';
  }
}

/** The errno of what the addon or the socket threw, if it carries one. */
const errnoOf = (e: unknown): number | undefined =>
  e instanceof NetlinkError ? e.errno : typeof (e as { errno?: unknown })?.errno === 'number' ? (e as { errno: number }).errno : undefined;

/** Starts a ctnetlink message: the netlink header and nfgenmsg (family, version 0, res_id 0). */
function ctBegin(w: MessageWriter, msg: number, flags: number, family: 4 | 6): number {
  const seq = w.begin(ctMsg(msg), flags);
  w.u8(family === 4 ? AF_INET : AF_INET6);
  w.u8(0);
  w.u16(0);
  return seq;
}

function addressBytes(text: string, family: 4 | 6, field: string): Uint8Array {
  const a = parseAddress(text, field);
  if (a.family !== family) throw new Error(`${field}: ${text} is not an IPv${family} address`);
  return a.bytes;
}

/**
 * A dump request narrowed to `q` (CTA_FILTER). IPv6 addresses are left to the caller's check:
 * the kernel's IPv6 address match is inverted (it skips the entries that equal the filter's
 * address), so only the protocol and the port narrow an IPv6 dump.
 */
export function writeConntrackDump(w: MessageWriter, q: ConntrackQuery): number {
  const seq = ctBegin(w, IPCTNL_MSG_CT_GET, NLM_F_REQUEST | NLM_F_DUMP, q.family);
  const byAddress = q.family === 4;
  let origFlags = CTA_FILTER_F_CTA_PROTO_NUM;
  let replyFlags = 0;
  w.nestBegin(CTA_TUPLE_ORIG);
  if (byAddress && q.orig?.dst !== undefined) {
    w.nestBegin(CTA_TUPLE_IP);
    w.attrBytes(CTA_IP_V4_DST, addressBytes(q.orig.dst, 4, 'orig.dst'));
    w.nestEnd();
    origFlags |= CTA_FILTER_F_CTA_IP_DST;
  }
  w.nestBegin(CTA_TUPLE_PROTO);
  w.attrU8(CTA_PROTO_NUM, q.protocol);
  if (q.orig?.dstPort !== undefined) {
    w.attrU16BE(CTA_PROTO_DST_PORT, q.orig.dstPort);
    origFlags |= CTA_FILTER_F_CTA_PROTO_DST_PORT;
  }
  w.nestEnd();
  w.nestEnd();
  if (byAddress && q.reply?.src !== undefined) {
    w.nestBegin(CTA_TUPLE_REPLY);
    w.nestBegin(CTA_TUPLE_IP);
    w.attrBytes(CTA_IP_V4_SRC, addressBytes(q.reply.src, 4, 'reply.src'));
    w.nestEnd();
    w.nestEnd();
    replyFlags |= CTA_FILTER_F_CTA_IP_SRC;
  }
  w.nestBegin(CTA_FILTER);
  w.attrU32(CTA_FILTER_ORIG_FLAGS, origFlags);
  if (replyFlags) w.attrU32(CTA_FILTER_REPLY_FLAGS, replyFlags);
  w.nestEnd();
  w.end();
  return seq;
}

/** A deletion of exactly `e`: its original tuple, its id (a new entry with that tuple is not it) and its zone. */
export function writeConntrackDelete(w: MessageWriter, e: ConntrackEntry): number {
  const seq = ctBegin(w, IPCTNL_MSG_CT_DELETE, NLM_F_REQUEST | NLM_F_ACK, e.family);
  const t = e.orig;
  w.nestBegin(CTA_TUPLE_ORIG);
  w.nestBegin(CTA_TUPLE_IP);
  w.attrBytes(e.family === 4 ? CTA_IP_V4_SRC : CTA_IP_V6_SRC, addressBytes(t.src, e.family, 'orig.src'));
  w.attrBytes(e.family === 4 ? CTA_IP_V4_DST : CTA_IP_V6_DST, addressBytes(t.dst, e.family, 'orig.dst'));
  w.nestEnd();
  w.nestBegin(CTA_TUPLE_PROTO);
  w.attrU8(CTA_PROTO_NUM, t.protocol);
  w.attrU16BE(CTA_PROTO_SRC_PORT, t.srcPort);
  w.attrU16BE(CTA_PROTO_DST_PORT, t.dstPort);
  w.nestEnd();
  w.nestEnd();
  w.attrU32(CTA_ID, 0);
  w.buf.writeUInt32BE(e.id >>> 0, w.len - 4);
  if (e.zone) w.attrU16BE(CTA_ZONE, e.zone);
  w.end();
  return seq;
}

function readTuple(buf: Buffer, from: number, to: number): ConntrackTuple | undefined {
  let src: string | undefined;
  let dst: string | undefined;
  let protocol = 0;
  let srcPort = 0;
  let dstPort = 0;
  forEachAttr(buf, from, to, (type, a, b) => {
    if (type === CTA_TUPLE_IP)
      forEachAttr(buf, a, b, (t, x, y) => {
        const bytes = Uint8Array.prototype.slice.call(buf, x, y);
        if (t === CTA_IP_V4_SRC || t === CTA_IP_V6_SRC) src = formatAddress(bytes);
        else if (t === CTA_IP_V4_DST || t === CTA_IP_V6_DST) dst = formatAddress(bytes);
      });
    else if (type === CTA_TUPLE_PROTO)
      forEachAttr(buf, a, b, (t, x, y) => {
        if (t === CTA_PROTO_NUM && y > x) protocol = buf[x]!;
        else if (t === CTA_PROTO_SRC_PORT && y - x >= 2) srcPort = buf.readUInt16BE(x);
        else if (t === CTA_PROTO_DST_PORT && y - x >= 2) dstPort = buf.readUInt16BE(x);
      });
  });
  return src !== undefined && dst !== undefined ? { src, dst, protocol, srcPort, dstPort } : undefined;
}

/** The entry in a ctnetlink message at buf[start, end) (a dump's reply or an event); undefined when it has no tuples. */
export function readConntrackEntry(buf: Buffer, start: number, end: number): ConntrackEntry | undefined {
  const family = buf[start + 16] === AF_INET6 ? 6 : 4;
  let orig: ConntrackTuple | undefined;
  let reply: ConntrackTuple | undefined;
  let id = 0;
  let zone = 0;
  let status = 0;
  forEachAttr(buf, start + 20, end, (type, a, b) => {
    if (type === CTA_TUPLE_ORIG) orig = readTuple(buf, a, b);
    else if (type === CTA_TUPLE_REPLY) reply = readTuple(buf, a, b);
    else if (type === CTA_ID && b - a >= 4) id = buf.readUInt32BE(a);
    else if (type === CTA_ZONE && b - a >= 2) zone = buf.readUInt16BE(a);
    else if (type === CTA_STATUS && b - a >= 4) status = buf.readUInt32BE(a);
  });
  return orig && reply ? { family, orig, reply, id, zone, status } : undefined;
}

/**
 * Whether an entry is one of those `q` asks for: the kernel's narrowing is checked again, as a
 * kernel before 5.8 ignores it and IPv6 addresses are not given to it.
 */
export function conntrackMatcher(q: ConntrackQuery): (e: ConntrackEntry) => boolean {
  // Addresses in canonical text, as entries are read.
  const dst = q.orig?.dst === undefined ? undefined : formatAddress(addressBytes(q.orig.dst, q.family, 'orig.dst'));
  const src = q.reply?.src === undefined ? undefined : formatAddress(addressBytes(q.reply.src, q.family, 'reply.src'));
  const port = q.orig?.dstPort;
  return (e) =>
    e.family === q.family &&
    e.orig.protocol === q.protocol &&
    (dst === undefined || e.orig.dst === dst) &&
    (port === undefined || e.orig.dstPort === port) &&
    (src === undefined || e.reply.src === src);
}

export interface ConntrackDeleted {
  /** Entries the kernel deleted. */
  readonly deleted: number;
  /** Entries already gone (timed out, or deleted by someone else, since the dump). */
  readonly gone: number;
  /** Entries the kernel refused to delete, each with its errno. */
  readonly failed: readonly { readonly entry: ConntrackEntry; readonly errno: number }[];
}

/** A ctnetlink socket in a network namespace (or the process's own). */
export class Ctnetlink {
  private constructor(private readonly socket: NetlinkSocket) {}

  /** Throws a ConntrackError naming the errno (no addon, no such namespace, no CAP_NET_ADMIN). */
  static open(opts: { netns?: string; replyTimeoutMs?: number } = {}): Ctnetlink {
    try {
      return new Ctnetlink(
        NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: opts.netns, bufferBytes: 4 << 20, replyTimeoutMs: opts.replyTimeoutMs }),
      );
    } catch (e) {
      const errno = errnoOf(e);
      if (errno === undefined) throw e;
      throw new ConntrackError(errno, `ctnetlink socket${opts.netns ? ` in ${opts.netns}` : ''}`);
    }
  }

  /**
   * The entries that match `q`. The kernel walks its whole conntrack hash for any dump (7 ms for
   * 262,144 buckets), so it does so off the event loop, on libuv's thread pool, and the entries
   * are read as they come; with an addon built before that, on the event loop. Rejects with a
   * ConntrackError naming the errno the dump drew.
   */
  async list(q: ConntrackQuery): Promise<ConntrackEntry[]> {
    const out: ConntrackEntry[] = [];
    const matches = conntrackMatcher(q);
    const w = this.socket.writer(256);
    writeConntrackDump(w, q);
    const visit = (type: number, buf: Buffer, start: number, end: number) => {
      if (type !== ctMsg(IPCTNL_MSG_CT_NEW)) return;
      const e = readConntrackEntry(buf, start, end);
      if (e && matches(e)) out.push(e);
    };
    try {
      if (this.socket.canReadAsync) await this.socket.dumpAsync(w, visit);
      else this.socket.dump(w, visit);
    } catch (e) {
      const errno = errnoOf(e);
      if (errno === undefined) throw e;
      throw new ConntrackError(errno, 'conntrack dump');
    }
    return out;
  }

  /** Deletes exactly these entries, all in one send; one already gone counts as such, not as a failure. */
  async delete(entries: readonly ConntrackEntry[]): Promise<ConntrackDeleted> {
    if (entries.length === 0) return { deleted: 0, gone: 0, failed: [] };
    const w = this.socket.writer(entries.length * 96);
    for (const e of entries) writeConntrackDelete(w, e);
    const { errors } = await this.socket.execute(w);
    let deleted = 0;
    let gone = 0;
    const failed: { entry: ConntrackEntry; errno: number }[] = [];
    errors.forEach((errno, i) => {
      if (errno === 0) deleted++;
      else if (errno === ENOENT) gone++;
      else failed.push({ entry: entries[i]!, errno });
    });
    return { deleted, gone, failed };
  }

  close(): void {
    this.socket.close();
  }
}
