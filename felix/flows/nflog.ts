// nfnetlink_log: the configuration that binds a socket to one `log group` (the kernel hands
// that group's packets to this socket only) and the packet as the correlator takes it: the
// rule's prefix and the flow of the packet's headers. The addon reads the messages
// (felix/native/flows.c).

import { NLM_F_ACK, NLM_F_REQUEST } from '../netlink/constants.js';
import { attrU32BE, nfBegin } from '../netlink/nf-message.js';
import type { MessageWriter } from '../netlink/writer.js';
import {
  NFNL_SUBSYS_ULOG,
  NFULA_CFG_CMD,
  NFULA_CFG_MODE,
  NFULA_CFG_NLBUFSIZ,
  NFULA_CFG_QTHRESH,
  NFULA_CFG_TIMEOUT,
  NFULNL_CFG_CMD_BIND,
  NFULNL_COPY_PACKET,
  NFULNL_MSG_CONFIG,
} from './constants.js';
import type { FlowTuple } from './tuple.js';

export interface NflogOptions {
  readonly group: number;
  /** Bytes of each packet copied: its network header and its ports (an IPv4 header with options is 60 bytes). Default 64. */
  readonly copyBytes?: number;
  /** The kernel sends when this many packets wait, or after `flushMs`, or when `bufferBytes` are full, whichever comes first. */
  readonly batch?: number;
  readonly flushMs?: number;
  /** The kernel's buffer of one datagram (NFULA_CFG_NLBUFSIZ). Default NFLOG_BUFFER_BYTES. */
  readonly bufferBytes?: number;
}

/** The buffer the reader asks nfnetlink_log for: some 200 packets a datagram, at 150 bytes a message with 64 copied. */
export const NFLOG_BUFFER_BYTES = 32 << 10;
/**
 * The room a datagram needs: the kernel fills the buffer as allocated, which rounds the size
 * asked up to the next power of two once its own bookkeeping is added.
 */
export const NFLOG_DATAGRAM_BYTES = 2 * NFLOG_BUFFER_BYTES;

const CONFIG = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;

/** Binds the socket to the group, copies `copyBytes` of each packet, and batches as asked: four acked requests. */
export function nflogBind(w: MessageWriter, o: NflogOptions): void {
  if (!Number.isInteger(o.group) || o.group < 0 || o.group > 65535) throw new RangeError(`nflog group ${o.group} is not 0 to 65535`);
  nfBegin(w, CONFIG, NLM_F_REQUEST | NLM_F_ACK, 0, o.group);
  w.attrBytes(NFULA_CFG_CMD, Uint8Array.of(NFULNL_CFG_CMD_BIND));
  w.end();
  nfBegin(w, CONFIG, NLM_F_REQUEST | NLM_F_ACK, 0, o.group);
  const mode = Buffer.alloc(6);
  mode.writeUInt32BE(o.copyBytes ?? 64, 0);
  mode[4] = NFULNL_COPY_PACKET;
  w.attrBytes(NFULA_CFG_MODE, mode);
  w.end();
  nfBegin(w, CONFIG, NLM_F_REQUEST | NLM_F_ACK, 0, o.group);
  attrU32BE(w, NFULA_CFG_QTHRESH, o.batch ?? 1_000);
  // In hundredths of a second.
  attrU32BE(w, NFULA_CFG_TIMEOUT, Math.max(1, Math.round((o.flushMs ?? 50) / 10)));
  w.end();
  nfBegin(w, CONFIG, NLM_F_REQUEST | NLM_F_ACK, 0, o.group);
  attrU32BE(w, NFULA_CFG_NLBUFSIZ, o.bufferBytes ?? NFLOG_BUFFER_BYTES);
  w.end();
}

export interface LoggedPacket {
  /** The log rule's prefix. */
  readonly prefix: string;
  /** As the rule saw the packet: after a Service's DNAT. */
  readonly tuple: FlowTuple;
  /** The packet's length on the wire (its IP total length). */
  readonly bytes: number;
  /** The tuple hashed (batch.ts F.KEY); tupleKey(tuple) when absent. */
  readonly key?: number;
  /** What names the flow apart from its client's port, hashed (batch.ts F.NAME). */
  readonly nameKey?: number;
}
