// Path attributes to the wire. A decoded UPDATE keeps its wire order and flags
// (`attributes.wire`) and is written back exactly; anything else is written canonically:
// ascending type code, the flags the RFCs give, extended length only past 255 octets.
import { isIpv6 } from './address.js';
import { canonicalFlags } from './attribute-rules.js';
import { AttrFlag, AttrType as T } from './constants.js';
import { familyOf } from './family.js';
import type {
  Aggregator,
  AsPathSegment,
  AsPathSegmentType,
  CodecOptions,
  LargeCommunity,
  MpReach,
  MpUnreach,
  Origin,
  PathAttributes,
  RawAttribute,
} from './types.js';
import { writeNlriInto } from './nlri-encode.js';
import type { Writer } from './writer.js';

const SEGMENT_CODES: Record<AsPathSegmentType, number> = { set: 1, sequence: 2, 'confed-sequence': 3, 'confed-set': 4 };
const ORIGIN_CODES = { igp: 0, egp: 1, incomplete: 2 } as const;

/**
 * The attribute a key of PathAttributes names, as a bit of a 32-bit set: the bit is the type
 * code, except LARGE_COMMUNITY (32), which takes bit 31 (no known attribute has code 31), so
 * that ascending bits are ascending type codes. 0 for keys that are no attribute.
 */
function bitOfKey(key: string, v: unknown): number {
  switch (key) {
    case 'origin':
      return 1 << T.ORIGIN;
    case 'asPath':
      return 1 << T.AS_PATH;
    case 'nextHop':
      return 1 << T.NEXT_HOP;
    case 'med':
      return 1 << T.MULTI_EXIT_DISC;
    case 'localPref':
      return 1 << T.LOCAL_PREF;
    case 'atomicAggregate':
      return v === true ? 1 << T.ATOMIC_AGGREGATE : 0;
    case 'aggregator':
      return 1 << T.AGGREGATOR;
    case 'communities':
      return 1 << T.COMMUNITIES;
    case 'originatorId':
      return 1 << T.ORIGINATOR_ID;
    case 'clusterList':
      return 1 << T.CLUSTER_LIST;
    case 'mpReach':
      return 1 << T.MP_REACH_NLRI;
    case 'mpUnreach':
      return 1 << T.MP_UNREACH_NLRI;
    case 'extendedCommunities':
      return 1 << T.EXTENDED_COMMUNITIES;
    case 'as4Path':
      return 1 << T.AS4_PATH;
    case 'as4Aggregator':
      return 1 << T.AS4_AGGREGATOR;
    case 'largeCommunities':
      return LARGE_BIT;
    default:
      return 0;
  }
}

const LARGE_BIT = 1 << 31;

/** The set bit of a known attribute's type code, 0 for any other code. */
function bitOfType(type: number): number {
  if (type === T.LARGE_COMMUNITY) return LARGE_BIT;
  return type < 31 && KNOWN_BITS & (1 << type) ? 1 << type : 0;
}

function typeOfBit(bit: number): number {
  return bit === LARGE_BIT ? T.LARGE_COMMUNITY : 31 - Math.clz32(bit);
}

const KNOWN_BITS = [
  T.ORIGIN,
  T.AS_PATH,
  T.NEXT_HOP,
  T.MULTI_EXIT_DISC,
  T.LOCAL_PREF,
  T.ATOMIC_AGGREGATE,
  T.AGGREGATOR,
  T.COMMUNITIES,
  T.ORIGINATOR_ID,
  T.CLUSTER_LIST,
  T.MP_REACH_NLRI,
  T.MP_UNREACH_NLRI,
  T.EXTENDED_COMMUNITIES,
  T.AS4_PATH,
  T.AS4_AGGREGATOR,
].reduce((bits, t) => bits | (1 << t), 0);

/** Each present attribute's value by type code, found in the one pass over the keys. */
const valueAt: unknown[] = new Array(33).fill(undefined);

/** Unknown attributes written so far in this call, by type: a generation number per type. */
const writtenAt = new Uint32Array(256);
let generation = 0;

/**
 * Writes the path attributes. Attribute sets come in many shapes (a decoder adds keys in
 * wire order), so every named load on one is megamorphic and costs a cache lookup; the
 * keys are read once here, through for-in and its per-shape key cache, and nothing else
 * reads `a` by name.
 */
export function writeAttributes(w: Writer, a: PathAttributes, options: CodecOptions): void {
  let present = 0;
  let wire: PathAttributes['wire'];
  let unknown: RawAttribute[] | undefined;
  for (const key in a) {
    const v = a[key as keyof PathAttributes];
    if (v === undefined) continue;
    const bit = bitOfKey(key, v);
    if (bit !== 0) {
      present |= bit;
      valueAt[bit === LARGE_BIT ? T.LARGE_COMMUNITY : 31 - Math.clz32(bit)] = v;
    } else if (key === 'wire') wire = v as PathAttributes['wire'];
    else if (key === 'unknown') unknown = v as RawAttribute[];
  }
  if (unknown !== undefined && unknown.length === 0) unknown = undefined;
  let g = 0;
  if (unknown !== undefined) {
    if (++generation === 0xffffffff) {
      writtenAt.fill(0);
      generation = 1;
    }
    g = generation;
  }
  if (wire !== undefined) {
    // A decoded UPDATE: its own order and flags, for the attributes it still carries.
    for (let i = 0; i < wire.length; i++) {
      const type = wire[i].type;
      const bit = bitOfType(type);
      if (bit !== 0) {
        if ((present & bit) === 0) continue;
        present &= ~bit;
        writeKnown(w, type, options, wire[i].flags);
      } else if (unknown !== undefined && writtenAt[type] !== g) {
        const u = unknownOf(unknown, type);
        if (u === undefined) continue;
        writeAttribute(w, type, u.value, options, wire[i].flags, u);
        writtenAt[type] = g;
      }
    }
  }
  if (unknown !== undefined) return writeRestWithUnknown(w, present, unknown, options, g);
  // The rest canonically, in ascending type code.
  while (present !== 0) {
    const bit = present & -present;
    present ^= bit;
    writeKnown(w, typeOfBit(bit), options, undefined);
  }
}

function unknownOf(us: readonly RawAttribute[], type: number): RawAttribute | undefined {
  for (let i = 0; i < us.length; i++) if (us[i].type === type) return us[i];
  return undefined;
}

/** The rest when unknown attributes are interleaved with the known ones by type code. */
function writeRestWithUnknown(w: Writer, present: number, unknown: readonly RawAttribute[], options: CodecOptions, g: number): void {
  const rest: number[] = [];
  for (let p = present; p !== 0; p &= p - 1) rest.push(typeOfBit(p & -p));
  for (const u of unknown) if (writtenAt[u.type] !== g && bitOfType(u.type) === 0) rest.push(u.type);
  rest.sort((x, y) => x - y);
  for (const type of rest) {
    if (bitOfType(type) !== 0) writeKnown(w, type, options, undefined);
    else if (writtenAt[type] !== g) {
      const u = unknownOf(unknown, type)!;
      writeAttribute(w, type, u.value, options, undefined, u);
      writtenAt[type] = g;
    }
  }
}

function writeKnown(w: Writer, type: number, options: CodecOptions, wireFlags: number | undefined): void {
  const v = valueAt[type];
  valueAt[type] = undefined; // no reference kept past this call
  writeAttribute(w, type, v, options, wireFlags, undefined);
}

function writeAttribute(
  w: Writer,
  type: number,
  v: unknown,
  options: CodecOptions,
  wireFlags: number | undefined,
  unknown: RawAttribute | undefined,
): void {
  const start = w.pos;
  w.ensure(3);
  w.pos += 3; // room for the short header; the value moves one octet on in the rare extended case
  writeValue(w, type, v, options);
  const length = w.pos - start - 3;
  if (length > 0xffff) throw new RangeError(`attribute ${type} is ${length} octets, more than an attribute can hold`);
  let flags = wireFlags ?? canonicalFlags(type, length, unknown?.flags);
  if (length > 255) flags |= AttrFlag.EXTENDED_LENGTH;
  if (flags & AttrFlag.EXTENDED_LENGTH) {
    w.ensure(1);
    w.buf.copyWithin(start + 4, start + 3, w.pos);
    w.pos += 1;
    w.buf.writeUInt16BE(length, start + 2);
  } else w.buf[start + 2] = length;
  w.buf[start] = flags;
  w.buf[start + 1] = type;
}

/** One attribute's value; `v` is the PathAttributes field of `type`, or an unknown one's octets. */
function writeValue(w: Writer, type: number, v: unknown, options: CodecOptions): void {
  const fourOctet = options.fourOctetAs !== false;
  switch (type) {
    case T.ORIGIN:
      return w.u8(ORIGIN_CODES[v as Origin]);
    case T.AS_PATH:
      return writeAsPath(w, v as AsPathSegment[], fourOctet, 'AS_PATH');
    case T.NEXT_HOP:
      return w.ipv4(v as string);
    case T.MULTI_EXIT_DISC:
    case T.LOCAL_PREF:
      return w.u32(v as number);
    case T.ATOMIC_AGGREGATE:
      return;
    case T.AGGREGATOR: {
      const ag = v as Aggregator;
      writeAsn(w, ag.asn, fourOctet, 'AGGREGATOR');
      return w.ipv4(ag.address);
    }
    case T.COMMUNITIES: {
      const cs = v as number[];
      w.ensure(cs.length * 4);
      const b = w.buf;
      let pos = w.pos;
      for (let i = 0; i < cs.length; i++) {
        let c = cs[i];
        // An int32 (negative for asn >= 32768 when built as `asn << 16 | value`) or a uint32.
        if ((c | 0) !== c && c >>> 0 !== c) c = checkU32(c, 'COMMUNITIES');
        b[pos] = c >>> 24;
        b[pos + 1] = c >>> 16;
        b[pos + 2] = c >>> 8;
        b[pos + 3] = c;
        pos += 4;
      }
      w.pos = pos;
      return;
    }
    case T.ORIGINATOR_ID:
      return w.ipv4(v as string);
    case T.CLUSTER_LIST:
      for (const id of v as string[]) w.ipv4(id);
      return;
    case T.MP_REACH_NLRI:
      return writeMpReach(w, v as MpReach, options);
    case T.MP_UNREACH_NLRI:
      return writeMpUnreach(w, v as MpUnreach, options);
    case T.EXTENDED_COMMUNITIES:
      for (const c of v as Buffer[]) {
        if (c.length !== 8) throw new RangeError(`an extended community is 8 octets, not ${c.length}`);
        w.bytes(c);
      }
      return;
    case T.AS4_PATH:
      return writeAsPath(w, v as AsPathSegment[], true, 'AS4_PATH');
    case T.AS4_AGGREGATOR: {
      const ag = v as Aggregator;
      w.u32(ag.asn);
      return w.ipv4(ag.address);
    }
    case T.LARGE_COMMUNITY:
      for (const [g, l1, l2] of v as LargeCommunity[]) {
        w.u32(g);
        w.u32(l1);
        w.u32(l2);
      }
      return;
    default:
      w.bytes(v as Buffer);
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
  for (let s = 0; s < segments.length; s++) {
    const seg = segments[s];
    const asns = seg.asns;
    const code = SEGMENT_CODES[seg.type];
    // A segment holds at most 255 ASes; longer ones continue in a segment of the same type.
    for (let i = 0; i < asns.length || i === 0; i += 255) {
      const end = Math.min(i + 255, asns.length);
      w.ensure(2 + (end - i) * 4);
      const b = w.buf;
      let pos = w.pos;
      b[pos++] = code;
      b[pos++] = end - i;
      for (let j = i; j < end; j++) {
        const asn = asns[j];
        if (fourOctet && asn >>> 0 === asn) {
          b[pos] = asn >>> 24;
          b[pos + 1] = asn >>> 16;
          b[pos + 2] = asn >>> 8;
          b[pos + 3] = asn;
          pos += 4;
        } else {
          // The checks and their errors: an AS that is no 32-bit value, or too big for 2 octets.
          w.pos = pos;
          writeAsn(w, asn, fourOctet, what);
          pos = w.pos;
        }
      }
      w.pos = pos;
    }
  }
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
