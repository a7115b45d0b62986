// nfnetlink messages: the header every nf_tables message carries (nfgenmsg: family, version,
// resource id), the batch that makes a list of them one transaction, the generation request,
// and the big-endian attributes nf_tables speaks. Built into a MessageWriter like rtnetlink's.

import { NLM_F_ACK, NLM_F_REQUEST } from './constants.js';
import {
  NFNL_BATCH_GENID,
  NFNL_MSG_BATCH_BEGIN,
  NFNL_MSG_BATCH_END,
  NFNL_SUBSYS_NFTABLES,
  NFT_MSG_GETGEN,
  NFTA_GEN_ID,
  nftMsg,
} from './nf-constants.js';
import { forEachAttr, type MessageWriter } from './writer.js';

/** Starts an nf_tables message `msg` (NFT_MSG_*) for `family`; returns its sequence number. */
export function nfBegin(w: MessageWriter, msg: number, flags: number, family: number, resId = 0): number {
  const seq = w.begin(msg, flags);
  w.u8(family);
  w.u8(0);
  w.u16(((resId & 0xff) << 8) | (resId >> 8));
  return seq;
}

/** Opens a batch for nf_tables; `genid` (non-zero) makes the kernel refuse it if another commit came after that generation. */
export function batchBegin(w: MessageWriter, genid: number): number {
  const seq = nfBegin(w, NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, 0, NFNL_SUBSYS_NFTABLES);
  if (genid) attrU32BE(w, NFNL_BATCH_GENID, genid);
  w.end();
  return seq;
}

export function batchEnd(w: MessageWriter): number {
  const seq = nfBegin(w, NFNL_MSG_BATCH_END, NLM_F_REQUEST, 0, NFNL_SUBSYS_NFTABLES);
  w.end();
  return seq;
}

/** NFT_MSG_GETGEN: the ruleset's generation, bumped by every commit of any table. */
export function getGen(w: MessageWriter): number {
  const seq = nfBegin(w, nftMsg(NFT_MSG_GETGEN), NLM_F_REQUEST | NLM_F_ACK, 0);
  w.end();
  return seq;
}

// Written in place (an attribute of host order, its value turned big-endian): a batch carries
// hundreds of thousands of these, and a small buffer each was garbage for all of them.
export function attrU32BE(w: MessageWriter, type: number, v: number): void {
  w.attrU32(type, v);
  w.buf.writeUInt32BE(v >>> 0, w.len - 4);
}

export function attrI32BE(w: MessageWriter, type: number, v: number): void {
  w.attrU32(type, v);
  w.buf.writeInt32BE(v, w.len - 4);
}

export function attrU64BE(w: MessageWriter, type: number, v: number): void {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(BigInt(v), 0);
  w.attrBytes(type, b);
}

/** Offset of the first attribute of the nf message starting at `start`. */
export const nfAttrsStart = (start: number): number => start + 20;

/** The attributes in buf[from, to) by type: [start, end) of each value (the last one of a type wins). */
export function attrs(buf: Buffer, from: number, to: number): Map<number, [number, number]> {
  const m = new Map<number, [number, number]>();
  forEachAttr(buf, from, to, (t, a, b) => m.set(t, [a, b]));
  return m;
}

/** The value of the first attribute of `type` in buf[from, to), without building a map (for hot loops). */
export function findAttr(buf: Buffer, from: number, to: number, type: number): [number, number] | undefined {
  let o = from;
  while (o + 4 <= to) {
    const len = buf.readUInt16LE(o);
    if (len < 4 || o + len > to) return undefined;
    if ((buf.readUInt16LE(o + 2) & 0x3fff) === type) return [o + 4, o + len];
    o += (len + 3) & ~3;
  }
  return undefined;
}

/** A NUL-terminated string attribute. */
export function attrText(buf: Buffer, at: [number, number] | undefined): string | undefined {
  if (!at) return undefined;
  let end = at[1];
  while (end > at[0] && buf[end - 1] === 0) end--;
  return buf.toString('utf8', at[0], end);
}

export function attrU32(buf: Buffer, at: [number, number] | undefined): number | undefined {
  return at && at[1] - at[0] >= 4 ? buf.readUInt32BE(at[0]) : undefined;
}

export function attrI32(buf: Buffer, at: [number, number] | undefined): number | undefined {
  return at && at[1] - at[0] >= 4 ? buf.readInt32BE(at[0]) : undefined;
}

export function attrU64(buf: Buffer, at: [number, number] | undefined): number | undefined {
  return at && at[1] - at[0] >= 8 ? Number(buf.readBigUInt64BE(at[0])) : undefined;
}

/** The generation in a NEWGEN reply at buf[start, end). */
export function readGen(buf: Buffer, start: number, end: number): number | undefined {
  return attrU32(buf, attrs(buf, nfAttrsStart(start), end).get(NFTA_GEN_ID));
}
