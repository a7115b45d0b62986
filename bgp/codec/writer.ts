// A growable output buffer shared by the encoders. An UPDATE is handed out as a view of
// it (see encodeMessage); growing copies what was written, so earlier views stay valid.
import { writeIpv4, writeIpv6 } from './address.js';

export class Writer {
  buf = Buffer.allocUnsafe(1 << 17);
  pos = 0;

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v;
  }

  u16(v: number): void {
    this.ensure(2);
    this.buf.writeUInt16BE(v, this.pos);
    this.pos += 2;
  }

  u32(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32BE(v, this.pos);
    this.pos += 4;
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  ipv4(s: string): void {
    this.ensure(4);
    writeIpv4(s, this.buf, this.pos);
    this.pos += 4;
  }

  ipv6(s: string): void {
    this.ensure(16);
    writeIpv6(s, this.buf, this.pos);
    this.pos += 16;
  }
}
