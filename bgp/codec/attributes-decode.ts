// Path attributes from the wire (RFC 4271 §4.3 and §5, and the RFCs of each attribute).
// Malformed attributes do not throw here: each becomes a Problem, with the RFC 7606 action,
// so that the UPDATE can still be read as far as the rules allow and nothing is lost.
import { formatIpv4, formatIpv6 } from './address.js';
import { canonicalFlags, ruleByType } from './attribute-rules.js';
import { familyOf } from './family.js';
import { AttrFlag, AttrType as T, UpdateSubcode as S } from './constants.js';
import type { ErrorAction } from './errors.js';
import { NlriSyntaxError, countNlri, readNlri } from './nlri.js';
import type { AsPathSegment, AsPathSegmentType, CodecOptions, MpReach, MpUnreach, Nlri, Origin, PathAttributes } from './types.js';

export interface Problem {
  action: ErrorAction;
  subcode: number;
  message: string;
  /** The NOTIFICATION data: usually the whole offending attribute. */
  data: Buffer;
}

const ORIGINS: readonly Origin[] = ['igp', 'egp', 'incomplete'];
const SEGMENT_TYPES: readonly (AsPathSegmentType | undefined)[] = [undefined, 'set', 'sequence', 'confed-sequence', 'confed-set'];

class Malformed extends Error {
  constructor(
    readonly subcode: number,
    message: string,
  ) {
    super(message);
  }
}

export function decodeAttributes(b: Buffer, pos: number, end: number, options: CodecOptions, problems: Problem[]): PathAttributes {
  const attrs: PathAttributes = {};
  walk(b, pos, end, options, problems, attrs);
  return attrs;
}

/**
 * checkAttributes met an MP attribute it leaves to the full decode: one of a family the codec
 * does not know, with ADD-PATH, or too short to say its family.
 */
export const NEEDS_DECODE = -1;

/**
 * Checks path attributes as decodeAttributes would, finding the same problems, but makes no
 * objects: a speaker that keys attribute sets by their octets need never see them as objects.
 * Returns a bitmask (unsigned) of the types 0-31 present, or NEEDS_DECODE (the check stops
 * there). Meaningful only without problems.
 */
export function checkAttributes(b: Buffer, pos: number, end: number, options: CodecOptions, problems: Problem[]): number {
  return walk(b, pos, end, options, problems, undefined);
}

/** Reads the attributes into `attrs`, or only checks them when it is undefined (see checkAttributes). */
function walk(b: Buffer, pos: number, end: number, options: CodecOptions, problems: Problem[], attrs: PathAttributes | undefined): number {
  const fourOctet = options.fourOctetAs !== false;
  let canonical = true;
  let lastType = 0;
  // Types seen so far, as a bitmask: a Set per UPDATE costs more than all the rest here.
  let seenLow = 0;
  let seenHigh: Set<number> | undefined;
  let count = 0;

  let p = pos;
  while (p < end) {
    const start = p;
    if (p + 3 > end || ((b[p] & AttrFlag.EXTENDED_LENGTH) !== 0 && p + 4 > end)) {
      problems.push({
        action: 'treat-as-withdraw',
        subcode: S.ATTRIBUTE_LENGTH_ERROR,
        message: 'attribute header overruns the path attributes',
        data: Buffer.alloc(0),
      });
      break;
    }
    const flags = b[p];
    const type = b[p + 1];
    const extended = (flags & AttrFlag.EXTENDED_LENGTH) !== 0;
    const length = extended ? b.readUInt16BE(p + 2) : b[p + 2];
    const vs = p + (extended ? 4 : 3);
    const ve = vs + length;
    if (ve > end) {
      // RFC 7606 §4: the Total Path Attribute Length still locates the NLRI field.
      const action = type === T.MP_REACH_NLRI || type === T.MP_UNREACH_NLRI ? 'session-reset' : 'treat-as-withdraw';
      problems.push({
        action,
        subcode: S.ATTRIBUTE_LENGTH_ERROR,
        message: `attribute ${type} overruns the path attributes`,
        data: Buffer.from(b.subarray(start, end)),
      });
      break;
    }
    p = ve;
    if (attrs === undefined && (type === T.MP_REACH_NLRI || type === T.MP_UNREACH_NLRI) && !checkableMp(b, vs, ve, options))
      return NEEDS_DECODE;

    const seen = type < 32 ? (seenLow & (1 << type)) !== 0 : (seenHigh?.has(type) ?? false);
    if (seen) {
      // RFC 7606 §3 (g): keep the first; a repeated MP attribute leaves the NLRI in doubt.
      const mp = type === T.MP_REACH_NLRI || type === T.MP_UNREACH_NLRI;
      problems.push({
        action: mp ? 'session-reset' : 'attribute-discard',
        subcode: S.MALFORMED_ATTRIBUTE_LIST,
        message: `attribute ${type} appears twice`,
        data: copy(b, start, ve),
      });
      continue;
    }
    if (type < 32) seenLow |= 1 << type;
    else (seenHigh ??= new Set()).add(type);
    const rule = ruleByType[type];
    if (attrs !== undefined) {
      if (count === layout.length) layout = grow(layout);
      layout[count++] = (type << 8) | flags;
      if (canonical && (type <= lastType || flags !== (rule ? canonicalFlags(type, length) : canonicalFlags(type, length, flags))))
        canonical = false;
      lastType = type;
    }

    if (!rule) {
      if ((flags & AttrFlag.OPTIONAL) === 0) {
        problems.push({
          action: 'session-reset',
          subcode: S.UNRECOGNIZED_WELL_KNOWN_ATTRIBUTE,
          message: `unrecognized well-known attribute ${type}`,
          data: copy(b, start, ve),
        });
      } else if (attrs !== undefined) {
        (attrs.unknown ??= []).push({ type, flags, value: Buffer.from(b.subarray(vs, ve)) });
      }
      continue;
    }
    try {
      if ((flags & (AttrFlag.OPTIONAL | AttrFlag.TRANSITIVE)) !== rule.flags) {
        throw new Malformed(S.ATTRIBUTE_FLAGS_ERROR, `attribute ${type} has flags 0x${flags.toString(16)}`);
      }
      decodeOne(type, b, vs, ve, fourOctet, options, attrs);
    } catch (e) {
      if (!(e instanceof Malformed)) throw e;
      problems.push({ action: rule.malformed, subcode: e.subcode, message: e.message, data: copy(b, start, ve) });
      if (attrs !== undefined) count--;
    }
  }
  if (attrs === undefined) return seenLow >>> 0;
  if (!canonical) {
    // Built only for the UPDATEs that need it; the layout itself is kept in a reused array.
    const wire = new Array<{ type: number; flags: number }>(count);
    for (let i = 0; i < count; i++) wire[i] = { type: layout[i] >> 8, flags: layout[i] & 0xff };
    attrs.wire = wire;
  }
  return seenLow >>> 0;
}

/**
 * Path attributes from bytes known to be well formed (ones that decoded cleanly before, or
 * that the codec wrote), with 4-octet AS numbers and no wire layout. Throws when they are not.
 */
export function decodePathAttributes(b: Buffer): PathAttributes {
  const problems: Problem[] = [];
  const a = decodeAttributes(b, 0, b.length, {}, problems);
  if (problems.length > 0) throw new TypeError(`path attributes: ${problems[0].message}`);
  delete a.wire;
  return a;
}

/** Each attribute's (type << 8 | flags), in wire order, for the UPDATE being decoded. */
let layout: Uint16Array = new Uint16Array(64);

function grow(a: Uint16Array): Uint16Array {
  const bigger = new Uint16Array(a.length * 2);
  bigger.set(a);
  return bigger;
}

function copy(b: Buffer, start: number, end: number): Buffer {
  return Buffer.from(b.subarray(start, end));
}

// The checks below throw with a message built only when they fail: a template string in an
// argument would be built for every attribute of every UPDATE.
function lengthOk(ok: boolean, name: string, len: number): void {
  if (!ok) throw new Malformed(S.ATTRIBUTE_LENGTH_ERROR, `${name} length ${len}`);
}

/** RFC 4271 §6.3: 0.0.0.0, 255.255.255.255 and multicast addresses are no host's. */
function isHostAddress(a: number): boolean {
  return a !== 0 && a !== 0xffffffff && a >>> 28 !== 0xe;
}

/** Checks one attribute's value and, when `a` is given, sets it there (see walk). */
function decodeOne(
  type: number,
  b: Buffer,
  vs: number,
  ve: number,
  fourOctet: boolean,
  options: CodecOptions,
  a: PathAttributes | undefined,
): void {
  const len = ve - vs;
  switch (type) {
    case T.ORIGIN:
      lengthOk(len === 1, 'ORIGIN', len);
      if (b[vs] > 2) throw new Malformed(S.INVALID_ORIGIN_ATTRIBUTE, `ORIGIN value ${b[vs]}`);
      if (a) a.origin = ORIGINS[b[vs]];
      return;
    case T.AS_PATH: {
      const n = checkAsPath(b, vs, ve, fourOctet ? 4 : 2, S.MALFORMED_AS_PATH, 'AS_PATH');
      if (a) a.asPath = readAsPath(b, vs, ve, fourOctet ? 4 : 2, n);
      return;
    }
    case T.NEXT_HOP:
      lengthOk(len === 4, 'NEXT_HOP', len);
      // RFC 4271 §6.3: an address no host can have is an invalid next hop; the route is ignored.
      if (!isHostAddress(b.readUInt32BE(vs)))
        throw new Malformed(S.INVALID_NEXT_HOP_ATTRIBUTE, `NEXT_HOP ${formatIpv4(b, vs)} is not a host address`);
      if (a) a.nextHop = formatIpv4(b, vs);
      return;
    case T.MULTI_EXIT_DISC:
      lengthOk(len === 4, 'MULTI_EXIT_DISC', len);
      if (a) a.med = b.readUInt32BE(vs);
      return;
    case T.LOCAL_PREF:
      lengthOk(len === 4, 'LOCAL_PREF', len);
      if (a) a.localPref = b.readUInt32BE(vs);
      return;
    case T.ATOMIC_AGGREGATE:
      lengthOk(len === 0, 'ATOMIC_AGGREGATE', len);
      if (a) a.atomicAggregate = true;
      return;
    case T.AGGREGATOR: {
      const asLen = fourOctet ? 4 : 2;
      lengthOk(len === asLen + 4, 'AGGREGATOR', len);
      if (a) a.aggregator = { asn: fourOctet ? b.readUInt32BE(vs) : b.readUInt16BE(vs), address: formatIpv4(b, vs + asLen) };
      return;
    }
    case T.COMMUNITIES: {
      lengthOk(len > 0 && len % 4 === 0, 'COMMUNITIES', len);
      if (!a) return;
      const c = new Array<number>(len >> 2);
      for (let i = 0; i < c.length; i++) c[i] = b.readUInt32BE(vs + 4 * i);
      a.communities = c;
      return;
    }
    case T.ORIGINATOR_ID:
      lengthOk(len === 4, 'ORIGINATOR_ID', len);
      if (a) a.originatorId = formatIpv4(b, vs);
      return;
    case T.CLUSTER_LIST: {
      lengthOk(len > 0 && len % 4 === 0, 'CLUSTER_LIST', len);
      if (!a) return;
      const ids: string[] = [];
      for (let o = vs; o < ve; o += 4) ids.push(formatIpv4(b, o));
      a.clusterList = ids;
      return;
    }
    // A check meets them only for a family it knows, without ADD-PATH (checkableMp).
    case T.MP_REACH_NLRI:
      if (a) a.mpReach = readMpReach(b, vs, ve, options);
      else checkMpReach(b, vs, ve);
      return;
    case T.MP_UNREACH_NLRI:
      if (a) a.mpUnreach = readMpUnreach(b, vs, ve, options);
      else checkMpNlri(b, vs + 3, ve, familyOf(b.readUInt16BE(vs), b[vs + 2])!, 'MP_UNREACH_NLRI');
      return;
    case T.EXTENDED_COMMUNITIES: {
      lengthOk(len > 0 && len % 8 === 0, 'EXTENDED_COMMUNITIES', len);
      if (!a) return;
      const c: Buffer[] = [];
      for (let o = vs; o < ve; o += 8) c.push(Buffer.from(b.subarray(o, o + 8)));
      a.extendedCommunities = c;
      return;
    }
    case T.AS4_PATH: {
      const n = checkAsPath(b, vs, ve, 4, S.OPTIONAL_ATTRIBUTE_ERROR, 'AS4_PATH');
      if (a) a.as4Path = readAsPath(b, vs, ve, 4, n);
      return;
    }
    case T.AS4_AGGREGATOR:
      lengthOk(len === 8, 'AS4_AGGREGATOR', len);
      if (a) a.as4Aggregator = { asn: b.readUInt32BE(vs), address: formatIpv4(b, vs + 4) };
      return;
    case T.LARGE_COMMUNITY: {
      lengthOk(len > 0 && len % 12 === 0, 'LARGE_COMMUNITY', len);
      if (!a) return;
      const c: [number, number, number][] = [];
      for (let o = vs; o < ve; o += 12) c.push([b.readUInt32BE(o), b.readUInt32BE(o + 4), b.readUInt32BE(o + 8)]);
      a.largeCommunities = c;
      return;
    }
  }
}

/** Checks an AS_PATH or AS4_PATH value; returns its number of segments. */
function checkAsPath(b: Buffer, p: number, end: number, asLen: 2 | 4, subcode: number, name: string): number {
  let n = 0;
  while (p < end) {
    if (p + 2 > end) throw new Malformed(subcode, `${name} segment header is cut short`);
    if (SEGMENT_TYPES[b[p]] === undefined) throw new Malformed(subcode, `${name} segment type ${b[p]}`);
    const count = b[p + 1];
    if (count <= 0) throw new Malformed(subcode, `${name} segment of length 0`);
    p += 2 + count * asLen;
    if (p > end) throw new Malformed(subcode, `${name} segment overruns the attribute`);
    n++;
  }
  return n;
}

/** The segments of a checked AS_PATH of `n` segments. */
function readAsPath(b: Buffer, p: number, end: number, asLen: 2 | 4, n: number): AsPathSegment[] {
  // Made at its size: an empty array that is pushed to reserves 17 slots, and nearly every path
  // has one segment (on a replay of real updates the AS_PATHs were a tenth of all allocation,
  // and those unused slots a third of that).
  const segments = new Array<AsPathSegment>(n);
  n = 0;
  while (p < end) {
    const type = SEGMENT_TYPES[b[p]] as AsPathSegmentType;
    const count = b[p + 1];
    p += 2;
    const asns = new Array<number>(count);
    for (let i = 0; i < count; i++, p += asLen) asns[i] = asLen === 4 ? b.readUInt32BE(p) : b.readUInt16BE(p);
    segments[n++] = { type, asns };
  }
  return segments;
}

function readMpNlri(b: Buffer, p: number, end: number, ipv6: boolean, addPath: boolean, name: string): Nlri[] {
  const out: Nlri[] = [];
  try {
    readNlri(b, p, end, ipv6, addPath, out);
  } catch (e) {
    if (e instanceof NlriSyntaxError) throw new Malformed(S.OPTIONAL_ATTRIBUTE_ERROR, `${name}: ${e.message}`);
    throw e;
  }
  return out;
}

/** Whether an MP attribute is one checkAttributes checks itself: of a known family, without ADD-PATH. */
function checkableMp(b: Buffer, vs: number, ve: number, options: CodecOptions): boolean {
  if (ve - vs < 3) return false;
  const family = familyOf(b.readUInt16BE(vs), b[vs + 2]);
  return family !== undefined && options.addPath?.[family] !== true;
}

/** readMpReach's checks, for a known family (checkableMp), without making the next hop or the prefixes. */
function checkMpReach(b: Buffer, vs: number, ve: number): void {
  if (ve - vs < 5) throw new Malformed(S.OPTIONAL_ATTRIBUTE_ERROR, 'MP_REACH_NLRI is shorter than its fixed fields');
  const family = familyOf(b.readUInt16BE(vs), b[vs + 2])!;
  const nhLen = b[vs + 3];
  const p = vs + 4;
  if (p + nhLen + 1 > ve) throw new Malformed(S.OPTIONAL_ATTRIBUTE_ERROR, `MP_REACH_NLRI next hop length ${nhLen} overruns the attribute`);
  if (nhLen !== 4 && nhLen !== 16 && nhLen !== 32)
    throw new Malformed(S.OPTIONAL_ATTRIBUTE_ERROR, `MP_REACH_NLRI next hop length ${nhLen} for ${family}`);
  checkMpNlri(b, p + nhLen + 1, ve, family, 'MP_REACH_NLRI');
}

function checkMpNlri(b: Buffer, p: number, end: number, family: string, name: string): void {
  try {
    countNlri(b, p, end, family === 'ipv6-unicast', false);
  } catch (e) {
    if (e instanceof NlriSyntaxError) throw new Malformed(S.OPTIONAL_ATTRIBUTE_ERROR, `${name}: ${e.message}`);
    throw e;
  }
}

function readMpReach(b: Buffer, vs: number, ve: number, options: CodecOptions): MpReach {
  if (ve - vs < 5) throw new Malformed(S.OPTIONAL_ATTRIBUTE_ERROR, 'MP_REACH_NLRI is shorter than its fixed fields');
  const afi = b.readUInt16BE(vs);
  const safi = b[vs + 2];
  const family = familyOf(afi, safi);
  if (!family) return { afi, safi, raw: Buffer.from(b.subarray(vs + 3, ve)) };
  const nhLen = b[vs + 3];
  let p = vs + 4;
  if (p + nhLen + 1 > ve) throw new Malformed(S.OPTIONAL_ATTRIBUTE_ERROR, `MP_REACH_NLRI next hop length ${nhLen} overruns the attribute`);
  const mp: MpReach = { afi, safi };
  if (nhLen === 4) {
    mp.nextHop = formatIpv4(b, p);
  } else if (nhLen === 16 || nhLen === 32) {
    mp.nextHop = formatIpv6(b, p);
    if (nhLen === 32) mp.linkLocalNextHop = formatIpv6(b, p + 16);
  } else {
    throw new Malformed(S.OPTIONAL_ATTRIBUTE_ERROR, `MP_REACH_NLRI next hop length ${nhLen} for ${family}`);
  }
  p += nhLen;
  if (b[p] !== 0) mp.reserved = b[p];
  mp.nlri = readMpNlri(b, p + 1, ve, family === 'ipv6-unicast', options.addPath?.[family] === true, 'MP_REACH_NLRI');
  return mp;
}

function readMpUnreach(b: Buffer, vs: number, ve: number, options: CodecOptions): MpUnreach {
  if (ve - vs < 3) throw new Malformed(S.OPTIONAL_ATTRIBUTE_ERROR, 'MP_UNREACH_NLRI is shorter than its fixed fields');
  const afi = b.readUInt16BE(vs);
  const safi = b[vs + 2];
  const family = familyOf(afi, safi);
  if (!family) return { afi, safi, raw: Buffer.from(b.subarray(vs + 3, ve)) };
  return {
    afi,
    safi,
    withdrawn: readMpNlri(b, vs + 3, ve, family === 'ipv6-unicast', options.addPath?.[family] === true, 'MP_UNREACH_NLRI'),
  };
}
