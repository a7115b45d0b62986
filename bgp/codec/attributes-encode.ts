// Path attributes to the wire. A decoded UPDATE keeps its wire order and flags
// (`attributes.wire`) and is written back exactly; anything else is written canonically:
// ascending type code, the flags the RFCs give, extended length only past 255 octets.
import { isIpv6 } from './address.js';
import { canonicalFlags } from './attribute-rules.js';
import { AttrFlag, AttrType as T } from './constants.js';
import { familyOf } from './attributes-decode.js';
import { nlriWireLength, writeNlri } from './nlri.js';
import type { AsPathSegment, AsPathSegmentType, CodecOptions, MpReach, MpUnreach, Nlri, PathAttributes, RawAttribute } from './types.js';
import type { Writer } from './writer.js';

const SEGMENT_CODES: Record<AsPathSegmentType, number> = { set: 1, sequence: 2, 'confed-sequence': 3, 'confed-set': 4 };
const ORIGIN_CODES = { igp: 0, egp: 1, incomplete: 2 } as const;

/** Type codes of the attributes this object carries, known ones first in ascending order. */
function presentTypes(a: PathAttributes): number[] {
  const t: number[] = [];
  if (a.origin !== undefined) t.push(T.ORIGIN);
  if (a.asPath !== undefined) t.push(T.AS_PATH);
  if (a.nextHop !== undefined) t.push(T.NEXT_HOP);
  if (a.med !== undefined) t.push(T.MULTI_EXIT_DISC);
  if (a.localPref !== undefined) t.push(T.LOCAL_PREF);
  if (a.atomicAggregate) t.push(T.ATOMIC_AGGREGATE);
  if (a.aggregator !== undefined) t.push(T.AGGREGATOR);
  if (a.communities !== undefined) t.push(T.COMMUNITIES);
  if (a.originatorId !== undefined) t.push(T.ORIGINATOR_ID);
  if (a.clusterList !== undefined) t.push(T.CLUSTER_LIST);
  if (a.mpReach !== undefined) t.push(T.MP_REACH_NLRI);
  if (a.mpUnreach !== undefined) t.push(T.MP_UNREACH_NLRI);
  if (a.extendedCommunities !== undefined) t.push(T.EXTENDED_COMMUNITIES);
  if (a.as4Path !== undefined) t.push(T.AS4_PATH);
  if (a.as4Aggregator !== undefined) t.push(T.AS4_AGGREGATOR);
  if (a.largeCommunities !== undefined) t.push(T.LARGE_COMMUNITY);
  if (a.unknown) for (const u of a.unknown) t.push(u.type);
  return t.sort((x, y) => x - y);
}

export function writeAttributes(w: Writer, a: PathAttributes, options: CodecOptions): void {
  const present = presentTypes(a);
  if (!a.wire) {
    for (const type of present) writeAttribute(w, type, a, options, undefined);
    return;
  }
  const written = new Set<number>();
  for (const { type, flags } of a.wire) {
    if (written.has(type) || !present.includes(type)) continue;
    writeAttribute(w, type, a, options, flags);
    written.add(type);
  }
  for (const type of present) if (!written.has(type)) writeAttribute(w, type, a, options, undefined);
}

function writeAttribute(w: Writer, type: number, a: PathAttributes, options: CodecOptions, wireFlags: number | undefined): void {
  const start = w.pos;
  w.ensure(4);
  w.pos += 4; // room for the longest header; shifted back when the short form fits
  const unknown = a.unknown?.find((u) => u.type === type);
  writeValue(w, type, a, options, unknown);
  const length = w.pos - start - 4;
  if (length > 0xffff) throw new RangeError(`attribute ${type} is ${length} octets, more than an attribute can hold`);
  let flags = wireFlags ?? canonicalFlags(type, length, unknown?.flags);
  if (length > 255) flags |= AttrFlag.EXTENDED_LENGTH;
  const b = w.buf;
  b[start] = flags;
  b[start + 1] = type;
  if (flags & AttrFlag.EXTENDED_LENGTH) {
    b.writeUInt16BE(length, start + 2);
  } else {
    b[start + 2] = length;
    b.copyWithin(start + 3, start + 4, w.pos);
    w.pos -= 1;
  }
}

function writeValue(w: Writer, type: number, a: PathAttributes, options: CodecOptions, unknown: RawAttribute | undefined): void {
  const fourOctet = options.fourOctetAs !== false;
  switch (type) {
    case T.ORIGIN:
      return w.u8(ORIGIN_CODES[a.origin!]);
    case T.AS_PATH:
      return writeAsPath(w, a.asPath!, fourOctet, 'AS_PATH');
    case T.NEXT_HOP:
      return w.ipv4(a.nextHop!);
    case T.MULTI_EXIT_DISC:
      return w.u32(a.med!);
    case T.LOCAL_PREF:
      return w.u32(a.localPref!);
    case T.ATOMIC_AGGREGATE:
      return;
    case T.AGGREGATOR:
      writeAsn(w, a.aggregator!.asn, fourOctet, 'AGGREGATOR');
      return w.ipv4(a.aggregator!.address);
    case T.COMMUNITIES:
      for (const c of a.communities!) w.u32(checkU32(c, 'COMMUNITIES'));
      return;
    case T.ORIGINATOR_ID:
      return w.ipv4(a.originatorId!);
    case T.CLUSTER_LIST:
      for (const id of a.clusterList!) w.ipv4(id);
      return;
    case T.MP_REACH_NLRI:
      return writeMpReach(w, a.mpReach!, options);
    case T.MP_UNREACH_NLRI:
      return writeMpUnreach(w, a.mpUnreach!, options);
    case T.EXTENDED_COMMUNITIES:
      for (const c of a.extendedCommunities!) {
        if (c.length !== 8) throw new RangeError(`an extended community is 8 octets, not ${c.length}`);
        w.bytes(c);
      }
      return;
    case T.AS4_PATH:
      return writeAsPath(w, a.as4Path!, true, 'AS4_PATH');
    case T.AS4_AGGREGATOR:
      w.u32(a.as4Aggregator!.asn);
      return w.ipv4(a.as4Aggregator!.address);
    case T.LARGE_COMMUNITY:
      for (const [g, l1, l2] of a.largeCommunities!) {
        w.u32(g);
        w.u32(l1);
        w.u32(l2);
      }
      return;
    default:
      w.bytes(unknown!.value);
  }
}

/** Accepts a negative int32 too: `(asn << 16) | value` is negative in JavaScript for asn >= 32768. */
function checkU32(v: number, what: string): number {
  if (!Number.isInteger(v) || v < -0x80000000 || v > 0xffffffff) throw new RangeError(`${what}: ${v} is not a 32-bit value`);
  return v >>> 0;
}

function writeAsn(w: Writer, asn: number, fourOctet: boolean, what: string): void {
  if (fourOctet) return w.u32(asn);
  if (asn > 0xffff) {
    throw new RangeError(
      `${what}: AS ${asn} does not fit in 2 octets; a 2-octet session carries AS_TRANS and AS4_PATH/AS4_AGGREGATOR instead`,
    );
  }
  w.u16(asn);
}

function writeAsPath(w: Writer, segments: readonly AsPathSegment[], fourOctet: boolean, what: string): void {
  for (const seg of segments) {
    // A segment holds at most 255 ASes; longer ones continue in a segment of the same type.
    for (let i = 0; i < seg.asns.length || i === 0; i += 255) {
      const part = seg.asns.slice(i, i + 255);
      w.u8(SEGMENT_CODES[seg.type]);
      w.u8(part.length);
      for (const asn of part) writeAsn(w, asn, fourOctet, what);
    }
  }
}

function writeNlriInto(w: Writer, entries: readonly Nlri[], ipv6: boolean, addPath: boolean): void {
  w.ensure(nlriWireLength(entries, addPath));
  w.pos = writeNlri(entries, ipv6, addPath, w.buf, w.pos);
}

function writeMpReach(w: Writer, mp: MpReach, options: CodecOptions): void {
  w.u16(mp.afi);
  w.u8(mp.safi);
  const family = familyOf(mp.afi, mp.safi);
  if (mp.raw || !family) return w.bytes(mp.raw ?? Buffer.alloc(0));
  const nh = mp.nextHop;
  if (nh === undefined) throw new TypeError(`MP_REACH_NLRI for ${family} needs a next hop`);
  if (isIpv6(nh)) {
    w.u8(mp.linkLocalNextHop !== undefined ? 32 : 16);
    w.ipv6(nh);
    if (mp.linkLocalNextHop !== undefined) w.ipv6(mp.linkLocalNextHop);
  } else {
    w.u8(4);
    w.ipv4(nh);
  }
  w.u8(mp.reserved ?? 0);
  writeNlriInto(w, mp.nlri ?? [], family === 'ipv6-unicast', options.addPath?.[family] === true);
}

function writeMpUnreach(w: Writer, mp: MpUnreach, options: CodecOptions): void {
  w.u16(mp.afi);
  w.u8(mp.safi);
  const family = familyOf(mp.afi, mp.safi);
  if (mp.raw || !family) return w.bytes(mp.raw ?? Buffer.alloc(0));
  writeNlriInto(w, mp.withdrawn ?? [], family === 'ipv6-unicast', options.addPath?.[family] === true);
}

export { writeNlriInto };
