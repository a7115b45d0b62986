// Builds many netlink messages back to back in one growing buffer, so a whole batch goes
// to the kernel in one sendmsg. Each message gets its own sequence number; the offsets let
// the sender cut the batch at message boundaries.

import { NLA_F_NESTED } from './constants.js';

export class MessageWriter {
  buf: Buffer;
  len = 0;
  /** Start offset of each message, in order. */
  readonly starts: number[] = [];
  /** Sequence number of each message, in order. */
  readonly seqs: number[] = [];
  private msgStart = -1;
  private readonly nests: number[] = [];

  constructor(
    private nextSeq: number,
    capacity = 1 << 16,
  ) {
    this.buf = Buffer.allocUnsafe(capacity);
  }

  get count(): number {
    return this.seqs.length;
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  /** Starts a message; returns its sequence number. */
  begin(type: number, flags: number): number {
    this.reserve(16);
    const seq = this.nextSeq++;
    if (this.nextSeq > 0x7fffffff) this.nextSeq = 1;
    const b = this.buf,
      o = this.len;
    this.msgStart = o;
    b.writeUInt32LE(0, o);
    b.writeUInt16LE(type, o + 4);
    b.writeUInt16LE(flags, o + 6);
    b.writeUInt32LE(seq, o + 8);
    b.writeUInt32LE(0, o + 12);
    this.len += 16;
    this.starts.push(o);
    this.seqs.push(seq);
    return seq;
  }

  end(): void {
    this.buf.writeUInt32LE(this.len - this.msgStart, this.msgStart);
    this.msgStart = -1;
  }

  /** Next sequence number this writer would hand out (to continue numbering elsewhere). */
  get seqAfter(): number {
    return this.nextSeq;
  }

  u8(v: number): void {
    this.reserve(1);
    this.buf[this.len++] = v;
  }
  u16(v: number): void {
    this.reserve(2);
    this.buf.writeUInt16LE(v, this.len);
    this.len += 2;
  }
  u32(v: number): void {
    this.reserve(4);
    this.buf.writeUInt32LE(v >>> 0, this.len);
    this.len += 4;
  }
  i32(v: number): void {
    this.reserve(4);
    this.buf.writeInt32LE(v, this.len);
    this.len += 4;
  }

  private pad(): void {
    const p = (4 - (this.len & 3)) & 3;
    this.reserve(p);
    for (let i = 0; i < p; i++) this.buf[this.len++] = 0;
  }

  attrBytes(type: number, data: Uint8Array): void {
    this.reserve(4 + data.length + 3);
    this.buf.writeUInt16LE(4 + data.length, this.len);
    this.buf.writeUInt16LE(type, this.len + 2);
    this.buf.set(data, this.len + 4);
    this.len += 4 + data.length;
    this.pad();
  }
  attrU32(type: number, v: number): void {
    this.reserve(8);
    this.buf.writeUInt16LE(8, this.len);
    this.buf.writeUInt16LE(type, this.len + 2);
    this.buf.writeUInt32LE(v >>> 0, this.len + 4);
    this.len += 8;
  }
  attrU8(type: number, v: number): void {
    this.reserve(8);
    this.buf.writeUInt16LE(5, this.len);
    this.buf.writeUInt16LE(type, this.len + 2);
    this.buf[this.len + 4] = v;
    this.len += 5;
    this.pad();
  }
  attrU16BE(type: number, v: number): void {
    this.reserve(8);
    this.buf.writeUInt16LE(6, this.len);
    this.buf.writeUInt16LE(type, this.len + 2);
    this.buf.writeUInt16BE(v & 0xffff, this.len + 4);
    this.len += 6;
    this.pad();
  }
  /** A NUL-terminated string, encoded straight into the buffer. */
  attrString(type: number, s: string): void {
    this.reserve(4 + s.length * 3 + 1 + 3);
    const n = this.buf.write(s, this.len + 4, 'utf8');
    this.buf[this.len + 4 + n] = 0;
    this.buf.writeUInt16LE(4 + n + 1, this.len);
    this.buf.writeUInt16LE(type, this.len + 2);
    this.len += 4 + n + 1;
    this.pad();
  }

  /** Opens a nested attribute. RTA_MULTIPATH is a plain blob to the kernel: no NESTED flag. */
  nestBegin(type: number, nestedFlag = true): void {
    this.reserve(4);
    this.nests.push(this.len);
    this.buf.writeUInt16LE(0, this.len);
    this.buf.writeUInt16LE(nestedFlag ? type | NLA_F_NESTED : type, this.len + 2);
    this.len += 4;
  }
  nestEnd(): void {
    const start = this.nests.pop()!;
    this.buf.writeUInt16LE(this.len - start, start);
  }

  /** Marks a spot whose u16 length is filled in later by `patchLength`. */
  mark(): number {
    return this.len;
  }
  patchLength(at: number): void {
    this.buf.writeUInt16LE(this.len - at, at);
  }
}

/** Walks the attributes in buf[start, end): calls visit(type, valueStart, valueEnd). */
export function forEachAttr(buf: Buffer, start: number, end: number, visit: (type: number, from: number, to: number) => void): void {
  let o = start;
  while (o + 4 <= end) {
    const len = buf.readUInt16LE(o);
    if (len < 4 || o + len > end) break;
    visit(buf.readUInt16LE(o + 2) & 0x3fff, o + 4, o + len);
    o += (len + 3) & ~3;
  }
}
