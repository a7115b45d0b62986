// nfnetlink_log: the configuration that binds a socket to one `log group` (the kernel hands
// that group's packets to this socket only) and the packet messages it then receives, read
// into the rule's prefix and the flow of the packet's headers.

import { formatIpv4, formatIpv6 } from '../../ip/index.js';
import { NLM_F_ACK, NLM_F_REQUEST } from '../netlink/constants.js';
import { attrU32BE, findAttr, nfBegin } from '../netlink/nf-message.js';
import type { MessageWriter } from '../netlink/writer.js';
import {
  NFNL_SUBSYS_ULOG,
  NFULA_CFG_CMD,
  NFULA_CFG_MODE,
  NFULA_CFG_QTHRESH,
  NFULA_CFG_TIMEOUT,
  NFULA_PAYLOAD,
  NFULA_PREFIX,
  NFULNL_CFG_CMD_BIND,
  NFULNL_COPY_PACKET,
  NFULNL_MSG_CONFIG,
  NFULNL_MSG_PACKET,
} from './constants.js';
import type { FlowTuple } from './tuple.js';

export interface NflogOptions {
  readonly group: number;
  /** Bytes of each packet copied: its network and transport headers are enough. */
  readonly copyBytes?: number;
  /** The kernel sends when this many packets wait, or after `flushMs`, whichever comes first. */
  readonly batch?: number;
  readonly flushMs?: number;
}

const CONFIG = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;

/** Binds the socket to the group, copies `copyBytes` of each packet, and batches as asked: three acked requests. */
export function nflogBind(w: MessageWriter, o: NflogOptions): void {
  if (!Number.isInteger(o.group) || o.group < 0 || o.group > 65535) throw new RangeError(`nflog group ${o.group} is not 0 to 65535`);
  nfBegin(w, CONFIG, NLM_F_REQUEST | NLM_F_ACK, 0, o.group);
  w.attrBytes(NFULA_CFG_CMD, Uint8Array.of(NFULNL_CFG_CMD_BIND));
  w.end();
  nfBegin(w, CONFIG, NLM_F_REQUEST | NLM_F_ACK, 0, o.group);
  const mode = Buffer.alloc(6);
  mode.writeUInt32BE(o.copyBytes ?? 96, 0);
  mode[4] = NFULNL_COPY_PACKET;
  w.attrBytes(NFULA_CFG_MODE, mode);
  w.end();
  nfBegin(w, CONFIG, NLM_F_REQUEST | NLM_F_ACK, 0, o.group);
  attrU32BE(w, NFULA_CFG_QTHRESH, o.batch ?? 32);
  // In hundredths of a second.
  attrU32BE(w, NFULA_CFG_TIMEOUT, Math.max(1, Math.round((o.flushMs ?? 50) / 10)));
  w.end();
}

export interface LoggedPacket {
  /** The log rule's prefix. */
  readonly prefix: string;
  readonly tuple: FlowTuple;
  /** The packet's length on the wire (its IP total length). */
  readonly bytes: number;
}

/** The flow of the IP packet at buf[from, to): undefined when too short or not IP. */
export function packetTuple(buf: Buffer, from: number, to: number): { tuple: FlowTuple; bytes: number } | undefined {
  if (to - from < 20) return undefined;
  const version = buf[from]! >> 4;
  let proto: number;
  let src: string;
  let dst: string;
  let l4: number;
  let bytes: number;
  if (version === 4) {
    proto = buf[from + 9]!;
    src = formatIpv4(buf, from + 12);
    dst = formatIpv4(buf, from + 16);
    l4 = from + (buf[from]! & 0x0f) * 4;
    bytes = buf.readUInt16BE(from + 2);
  } else if (version === 6 && to - from >= 40) {
    proto = buf[from + 6]!;
    src = formatIpv6(buf, from + 8);
    dst = formatIpv6(buf, from + 24);
    l4 = from + 40;
    bytes = buf.readUInt16BE(from + 4) + 40;
  } else return undefined;
  let sport = 0;
  let dport = 0;
  if ((proto === 6 || proto === 17 || proto === 132) && l4 + 4 <= to) {
    sport = buf.readUInt16BE(l4);
    dport = buf.readUInt16BE(l4 + 2);
  } else if ((proto === 1 || proto === 58) && l4 + 2 <= to) {
    // As conntrack keys ICMP: type and code.
    sport = buf[l4]!;
    dport = buf[l4 + 1]!;
  }
  return { tuple: { proto, src, dst, sport, dport }, bytes };
}

/** The packet message at buf[start, end), or undefined for any other message. */
export function readLoggedPacket(buf: Buffer, start: number, end: number): LoggedPacket | undefined {
  if (buf.readUInt16LE(start + 4) !== ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET)) return undefined;
  const from = start + 20;
  const prefixAt = findAttr(buf, from, end, NFULA_PREFIX);
  const payloadAt = findAttr(buf, from, end, NFULA_PAYLOAD);
  if (!prefixAt || !payloadAt) return undefined;
  let e = prefixAt[1];
  while (e > prefixAt[0] && buf[e - 1] === 0) e--;
  const packet = packetTuple(buf, payloadAt[0], payloadAt[1]);
  if (!packet) return undefined;
  return { prefix: buf.toString('latin1', prefixAt[0], e), ...packet };
}
