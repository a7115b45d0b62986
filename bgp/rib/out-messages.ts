// UPDATEs built from buckets of prefixes that share an exported attribute set: what an
// Adj-RIB-Out, or a subgroup of them in sync, packs and sends.
import { Afi, Safi } from '../codec/index.js';
import { v4WireLength, writeV4Key, writeV6Key, type PrefixKey, type V4Key, type V6Key } from './prefix.js';
import type { OutAttrSet } from './update-group.js';
import { writeUpdateHeader } from './wire.js';

/** How a family's prefixes are written: IPv6 in MP_REACH/MP_UNREACH, with ADD-PATH ids or not. */
export interface NlriShape {
  v6: boolean;
  addPath: boolean;
}

/** Prefixes (and their ADD-PATH ids) that go out under one set, or withdrawn. */
export class Bucket {
  readonly keys: PrefixKey[];
  readonly ids: number[];
  /**
   * Made with its first prefix when it has one: a list made by a literal is its exact size,
   * while the first push to an empty one reserves 17 slots, and most attribute sets of real
   * updates go out with one or two prefixes.
   */
  constructor(key?: PrefixKey, id = 0) {
    this.keys = key === undefined ? [] : [key];
    this.ids = key === undefined ? [] : [id];
  }
}

/** Octets the prefix takes in an UPDATE. */
export function wireLength(f: NlriShape, key: PrefixKey): number {
  return (f.v6 ? (key as V6Key).length : v4WireLength(key as V4Key)) + (f.addPath ? 4 : 0);
}

function writeNlri(f: NlriShape, b: Bucket, from: number, to: number, buf: Buffer, pos: number): number {
  for (let k = from; k < to; k++) {
    if (f.addPath) {
      buf.writeUInt32BE(b.ids[k], pos);
      pos += 4;
    }
    pos = f.v6 ? writeV6Key(b.keys[k] as V6Key, buf, pos) : writeV4Key(b.keys[k] as V4Key, buf, pos);
  }
  return pos;
}

/** How many entries from `from` fit in `room` octets; returns the end index and their size. */
function fitting(f: NlriShape, b: Bucket, from: number, room: number): [number, number] {
  let size = 0;
  let j = from;
  for (; j < b.keys.length; j++) {
    const l = wireLength(f, b.keys[j]);
    if (size + l > room) break;
    size += l;
  }
  return [j, size];
}

/**
 * Appends to `out` the UPDATEs announcing the bucket under the set, as many as its prefixes
 * need; returns the octets written. Prefixes left out because the attributes alone exceed the
 * message size limit are counted in `stats.tooLarge`.
 */
export function emitAnnounce(
  f: NlriShape,
  maxLength: number,
  set: OutAttrSet,
  b: Bucket,
  out: Buffer[],
  stats: { tooLarge: number },
): number {
  const attrs = set.attrBytes;
  const nh = set.mpNextHop;
  // IPv6: MP_REACH_NLRI goes first (RFC 7606 §5.1), always with a 2-octet length.
  const mpHead = f.v6 ? 4 + 5 + nh!.length : 0;
  const fixed = 23 + mpHead + attrs.length;
  let bytes = 0;
  let i = 0;
  while (i < b.keys.length) {
    const [j, nlriBytes] = fitting(f, b, i, maxLength - fixed);
    if (j === i) {
      stats.tooLarge++;
      i++;
      continue;
    }
    const size = fixed + nlriBytes;
    const buf = Buffer.allocUnsafe(size);
    writeUpdateHeader(buf, size);
    buf.writeUInt16BE(0, 19);
    // IPv6: every octet after this field is attributes; IPv4: the NLRI follow them.
    buf.writeUInt16BE(f.v6 ? size - 23 : attrs.length, 21);
    let pos = 23;
    if (f.v6) {
      buf[pos] = 0x90; // optional, extended length
      buf[pos + 1] = 14;
      buf.writeUInt16BE(5 + nh!.length + nlriBytes, pos + 2);
      buf.writeUInt16BE(Afi.IPV6, pos + 4);
      buf[pos + 6] = Safi.UNICAST;
      buf[pos + 7] = nh!.length;
      nh!.copy(buf, pos + 8);
      buf[pos + 8 + nh!.length] = 0;
      pos = writeNlri(f, b, i, j, buf, pos + mpHead);
      attrs.copy(buf, pos);
    } else {
      attrs.copy(buf, pos);
      writeNlri(f, b, i, j, buf, pos + attrs.length);
    }
    out.push(buf);
    bytes += size;
    i = j;
  }
  return bytes;
}

/** Appends to `out` the UPDATEs withdrawing the bucket's prefixes; returns the octets written. */
export function emitWithdraw(f: NlriShape, maxLength: number, b: Bucket, out: Buffer[]): number {
  const fixed = f.v6 ? 23 + 7 : 23;
  let bytes = 0;
  let i = 0;
  while (i < b.keys.length) {
    const [j, nlriBytes] = fitting(f, b, i, maxLength - fixed);
    const size = fixed + nlriBytes;
    const buf = Buffer.allocUnsafe(size);
    writeUpdateHeader(buf, size);
    if (f.v6) {
      buf.writeUInt16BE(0, 19);
      buf.writeUInt16BE(size - 23, 21);
      buf[23] = 0x90;
      buf[24] = 15;
      buf.writeUInt16BE(3 + nlriBytes, 25);
      buf.writeUInt16BE(Afi.IPV6, 27);
      buf[29] = Safi.UNICAST;
      writeNlri(f, b, i, j, buf, 30);
    } else {
      buf.writeUInt16BE(nlriBytes, 19);
      const pos = writeNlri(f, b, i, j, buf, 21);
      buf.writeUInt16BE(0, pos);
    }
    out.push(buf);
    bytes += size;
    i = j;
  }
  return bytes;
}
