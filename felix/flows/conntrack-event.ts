// A conntrack event (ctnetlink NEW or DELETE, as the kernel multicasts them) read into a flow:
// its original and reply tuples (they differ when a Service's DNAT chose an endpoint), the
// packets and bytes of both directions (when net.netfilter.nf_conntrack_acct is on), its mark.

import { formatIpv4, formatIpv6 } from '../../ip/index.js';
import { findAttr } from '../netlink/nf-message.js';
import { forEachAttr } from '../netlink/writer.js';
import {
  CTA_COUNTERS_BYTES,
  CTA_COUNTERS_ORIG,
  CTA_COUNTERS_PACKETS,
  CTA_COUNTERS_REPLY,
  CTA_ID,
  CTA_IP_V4_DST,
  CTA_IP_V4_SRC,
  CTA_IP_V6_DST,
  CTA_IP_V6_SRC,
  CTA_MARK,
  CTA_PROTO_DST_PORT,
  CTA_PROTO_ICMP_CODE,
  CTA_PROTO_ICMP_TYPE,
  CTA_PROTO_ICMPV6_CODE,
  CTA_PROTO_ICMPV6_TYPE,
  CTA_PROTO_NUM,
  CTA_PROTO_SRC_PORT,
  CTA_STATUS,
  CTA_TUPLE_IP,
  CTA_TUPLE_ORIG,
  CTA_TUPLE_PROTO,
  CTA_TUPLE_REPLY,
  IPCTNL_MSG_CT_DELETE,
  IPCTNL_MSG_CT_NEW,
  NFNL_SUBSYS_CTNETLINK,
} from './constants.js';
import type { FlowTuple } from './tuple.js';

export interface ConntrackEvent {
  /** new: the connection's first packet was accepted; destroy: conntrack forgot it (closed or timed out). */
  readonly kind: 'new' | 'destroy';
  /** conntrack's id of the entry, the same in its NEW and its DESTROY. */
  readonly id: number;
  /** As the first packet came: the client's view (a Service's address when DNATed). */
  readonly orig: FlowTuple;
  /** As replies come: their source is the endpoint the connection went to. */
  readonly reply: FlowTuple;
  readonly status: number;
  readonly mark: number;
  /** Both directions; 0 without accounting. */
  readonly packets: number;
  readonly bytes: number;
}

const u64 = (buf: Buffer, at: number): number => buf.readUInt32BE(at) * 0x1_0000_0000 + buf.readUInt32BE(at + 4);

function readTuple(buf: Buffer, from: number, to: number): FlowTuple | undefined {
  let src = '';
  let dst = '';
  let proto = -1;
  let sport = 0;
  let dport = 0;
  forEachAttr(buf, from, to, (t, a, b) => {
    if (t === CTA_TUPLE_IP)
      forEachAttr(buf, a, b, (it, ia, ib) => {
        if (it === CTA_IP_V4_SRC && ib - ia >= 4) src = formatIpv4(buf, ia);
        else if (it === CTA_IP_V4_DST && ib - ia >= 4) dst = formatIpv4(buf, ia);
        else if (it === CTA_IP_V6_SRC && ib - ia >= 16) src = formatIpv6(buf, ia);
        else if (it === CTA_IP_V6_DST && ib - ia >= 16) dst = formatIpv6(buf, ia);
      });
    else if (t === CTA_TUPLE_PROTO)
      forEachAttr(buf, a, b, (pt, pa, pb) => {
        if (pb <= pa) return;
        if (pt === CTA_PROTO_NUM) proto = buf[pa]!;
        else if (pt === CTA_PROTO_SRC_PORT && pb - pa >= 2) sport = buf.readUInt16BE(pa);
        else if (pt === CTA_PROTO_DST_PORT && pb - pa >= 2) dport = buf.readUInt16BE(pa);
        else if (pt === CTA_PROTO_ICMP_TYPE || pt === CTA_PROTO_ICMPV6_TYPE) sport = buf[pa]!;
        else if (pt === CTA_PROTO_ICMP_CODE || pt === CTA_PROTO_ICMPV6_CODE) dport = buf[pa]!;
      });
  });
  return src && dst && proto >= 0 ? { proto, src, dst, sport, dport } : undefined;
}

function addCounters(buf: Buffer, at: [number, number] | undefined, into: { packets: number; bytes: number }): void {
  if (!at) return;
  const p = findAttr(buf, at[0], at[1], CTA_COUNTERS_PACKETS);
  const b = findAttr(buf, at[0], at[1], CTA_COUNTERS_BYTES);
  if (p && p[1] - p[0] >= 8) into.packets += u64(buf, p[0]);
  if (b && b[1] - b[0] >= 8) into.bytes += u64(buf, b[0]);
}

/** The event in the netlink message at buf[start, end), or undefined for any other message. */
export function readConntrackEvent(buf: Buffer, start: number, end: number): ConntrackEvent | undefined {
  const type = buf.readUInt16LE(start + 4);
  if (type >> 8 !== NFNL_SUBSYS_CTNETLINK) return undefined;
  const msg = type & 0xff;
  if (msg !== IPCTNL_MSG_CT_NEW && msg !== IPCTNL_MSG_CT_DELETE) return undefined;
  const from = start + 20;
  const origAt = findAttr(buf, from, end, CTA_TUPLE_ORIG);
  const replyAt = findAttr(buf, from, end, CTA_TUPLE_REPLY);
  if (!origAt || !replyAt) return undefined;
  const orig = readTuple(buf, origAt[0], origAt[1]);
  const reply = readTuple(buf, replyAt[0], replyAt[1]);
  if (!orig || !reply) return undefined;
  const idAt = findAttr(buf, from, end, CTA_ID);
  const statusAt = findAttr(buf, from, end, CTA_STATUS);
  const markAt = findAttr(buf, from, end, CTA_MARK);
  const counted = { packets: 0, bytes: 0 };
  addCounters(buf, findAttr(buf, from, end, CTA_COUNTERS_ORIG), counted);
  addCounters(buf, findAttr(buf, from, end, CTA_COUNTERS_REPLY), counted);
  return {
    kind: msg === IPCTNL_MSG_CT_NEW ? 'new' : 'destroy',
    id: idAt && idAt[1] - idAt[0] >= 4 ? buf.readUInt32BE(idAt[0]) : 0,
    orig,
    reply,
    status: statusAt && statusAt[1] - statusAt[0] >= 4 ? buf.readUInt32BE(statusAt[0]) : 0,
    mark: markAt && markAt[1] - markAt[0] >= 4 ? buf.readUInt32BE(markAt[0]) : 0,
    ...counted,
  };
}
