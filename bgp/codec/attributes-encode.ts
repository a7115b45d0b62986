// Path attributes to the wire. A decoded UPDATE keeps its wire order and flags
// (`attributes.wire`) and is written back exactly; anything else is written canonically:
// ascending type code, the flags the RFCs give, extended length only past 255 octets.
import { isIpv6 } from './address.js';
import { canonicalFlags } from './attribute-rules.js';
import { AttrFlag, AttrType as T } from './constants.js';
import { familyOf } from './attributes-decode.js';
import type { AsPathSegment, AsPathSegmentType, CodecOptions, MpReach, MpUnreach, PathAttributes, RawAttribute } from './types.js';
import { writeNlriInto } from './nlri-encode.js';
import type { Writer } from './writer.js';

const SEGMENT_CODES: Record<AsPathSegmentType, number> = { set: 1, sequence: 2, 'confed-sequence': 3, 'confed-set': 4 };
const ORIGIN_CODES = { igp: 0, egp: 1, incomplete: 2 } as const;

/** The attributes PathAttributes names, by type code, in ascending order. */
const KNOWN: readonly (readonly [number, keyof PathAttributes])[] = [
  [T.ORIGIN, 'origin'],
  [T.AS_PATH, 'asPath'],
  [T.NEXT_HOP, 'nextHop'],
  [T.MULTI_EXIT_DISC, 'med'],
  [T.LOCAL_PREF, 'localPref'],
  [T.ATOMIC_AGGREGATE, 'atomicAggregate'],
  [T.AGGREGATOR, 'aggregator'],
  [T.COMMUNITIES, 'communities'],
  [T.ORIGINATOR_ID, 'originatorId'],
  [T.CLUSTER_LIST, 'clusterList'],
  [T.MP_REACH_NLRI, 'mpReach'],
  [T.MP_UNREACH_NLRI, 'mpUnreach'],
  [T.EXTENDED_COMMUNITIES, 'extendedCommunities'],
  [T.AS4_PATH, 'as4Path'],
  [T.AS4_AGGREGATOR, 'as4Aggregator'],
  [T.LARGE_COMMUNITY, 'largeCommunities'],
];
const KEY_OF: (keyof PathAttributes | undefined)[] = [];
for (const [type, key] of KNOWN) KEY_OF[type] = key;

/** Whether the set carries attribute `type`: named property loads, no keyed lookup by string. */
function carries(a: PathAttributes, type: number): boolean {
  switch (type) {
    case T.ORIGIN:
      return a.origin !== undefined;
    case T.AS_PATH:
      return a.asPath !== undefined;
    case T.NEXT_HOP:
      return a.nextHop !== undefined;
    case T.MULTI_EXIT_DISC:
      return a.med !== undefined;
    case T.LOCAL_PREF:
      return a.localPref !== undefined;
    case T.ATOMIC_AGGREGATE:
      return a.atomicAggregate === true;
    case T.AGGREGATOR:
      return a.aggregator !== undefined;
    case T.COMMUNITIES:
      return a.communities !== undefined;
    case T.ORIGINATOR_ID:
      return a.originatorId !== undefined;
    case T.CLUSTER_LIST:
      return a.clusterList !== undefined;
    case T.MP_REACH_NLRI:
      return a.mpReach !== undefined;
    case T.MP_UNREACH_NLRI:
      return a.mpUnreach !== undefined;
    case T.EXTENDED_COMMUNITIES:
      return a.extendedCommunities !== undefined;
    case T.AS4_PATH:
      return a.as4Path !== undefined;
    case T.AS4_AGGREGATOR:
      return a.as4Aggregator !== undefined;
    case T.LARGE_COMMUNITY:
      return a.largeCommunities !== undefined;
    default:
      return unknownOf(a, type) !== undefined;
  }
}

function unknownOf(a: PathAttributes, type: number): RawAttribute | undefined {
  const us = a.unknown;
  if (us === undefined) return undefined;
  for (let i = 0; i < us.length; i++) if (us[i].type === type) return us[i];
  return undefined;
}

/**
 * Attributes written so far in this call, by type: a generation number per type, so that
 * nothing is cleared or allocated per message (this runs once per UPDATE sent).
 */
const writtenAt = new Uint32Array(256);
let generation = 0;

export function writeAttributes(w: Writer, a: PathAttributes, options: CodecOptions): void {
  if (++generation === 0xffffffff) {
    writtenAt.fill(0);
    generation = 1;
  }
  const g = generation;
  const wire = a.wire;
  if (wire !== undefined) {
    // A decoded UPDATE: its own order and flags, for the attributes it still carries.
    for (let i = 0; i < wire.length; i++) {
      const type = wire[i].type;
      if (writtenAt[type] === g || !carries(a, type)) continue;
      writeAttribute(w, type, a, options, wire[i].flags);
      writtenAt[type] = g;
    }
  }
  if (a.unknown !== undefined && a.unknown.length > 0) return writeRestWithUnknown(w, a, options, g);
  // The rest canonically, in ascending type code, each test a named property load.
  if (a.origin !== undefined) writeIfNew(w, T.ORIGIN, a, options, g);
  if (a.asPath !== undefined) writeIfNew(w, T.AS_PATH, a, options, g);
  if (a.nextHop !== undefined) writeIfNew(w, T.NEXT_HOP, a, options, g);
  if (a.med !== undefined) writeIfNew(w, T.MULTI_EXIT_DISC, a, options, g);
  if (a.localPref !== undefined) writeIfNew(w, T.LOCAL_PREF, a, options, g);
  if (a.atomicAggregate === true) writeIfNew(w, T.ATOMIC_AGGREGATE, a, options, g);
  if (a.aggregator !== undefined) writeIfNew(w, T.AGGREGATOR, a, options, g);
  if (a.communities !== undefined) writeIfNew(w, T.COMMUNITIES, a, options, g);
  if (a.originatorId !== undefined) writeIfNew(w, T.ORIGINATOR_ID, a, options, g);
  if (a.clusterList !== undefined) writeIfNew(w, T.CLUSTER_LIST, a, options, g);
  if (a.mpReach !== undefined) writeIfNew(w, T.MP_REACH_NLRI, a, options, g);
  if (a.mpUnreach !== undefined) writeIfNew(w, T.MP_UNREACH_NLRI, a, options, g);
  if (a.extendedCommunities !== undefined) writeIfNew(w, T.EXTENDED_COMMUNITIES, a, options, g);
  if (a.as4Path !== undefined) writeIfNew(w, T.AS4_PATH, a, options, g);
  if (a.as4Aggregator !== undefined) writeIfNew(w, T.AS4_AGGREGATOR, a, options, g);
  if (a.largeCommunities !== undefined) writeIfNew(w, T.LARGE_COMMUNITY, a, options, g);
}

/** The rest when unknown attributes are interleaved with the known ones by type code. */
function writeRestWithUnknown(w: Writer, a: PathAttributes, options: CodecOptions, g: number): void {
  const rest: number[] = [];
  for (const [type] of KNOWN) if (writtenAt[type] !== g && carries(a, type)) rest.push(type);
  for (const u of a.unknown!) if (writtenAt[u.type] !== g) rest.push(u.type);
  rest.sort((x, y) => x - y);
  for (const type of rest) writeIfNew(w, type, a, options, g);
}

function writeIfNew(w: Writer, type: number, a: PathAttributes, options: CodecOptions, g: number): void {
  if (writtenAt[type] === g) return;
  writeAttribute(w, type, a, options, undefined);
  writtenAt[type] = g;
}

function writeAttribute(w: Writer, type: number, a: PathAttributes, options: CodecOptions, wireFlags: number | undefined): void {
  const start = w.pos;
  w.ensure(3);
  w.pos += 3; // room for the short header; the value moves one octet on in the rare extended case
  const unknown = KEY_OF[type] === undefined ? unknownOf(a, type) : undefined;
  writeValue(w, type, a, options, unknown);
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
    case T.COMMUNITIES: {
      const cs = a.communities!;
      w.ensure(cs.length * 4);
      for (let i = 0; i < cs.length; i++) {
        w.buf.writeUInt32BE(checkU32(cs[i], 'COMMUNITIES'), w.pos);
        w.pos += 4;
      }
      return;
    }
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
