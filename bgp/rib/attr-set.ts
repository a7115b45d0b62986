// Attribute interning. A Calico cluster has thousands of prefixes and a handful of distinct
// attribute sets, a full table ~1M prefixes and a few hundred thousand: every route points
// at one shared set, and the set carries the numbers the decision process reads (so comparing
// two routes never walks an AS_PATH). Sets are reference counted by the routes that hold them
// and leave the table when the last route goes.
//
// A set is keyed by its attributes' wire bytes: those of the UPDATE as received (less what
// routes do not share) when there are some, else the codec's canonical encoding. A set made
// from received bytes keeps only them (as its key) and its numbers, and decodes the full
// attributes when something asks: a decoded object costs about a kilobyte, the bytes tens
// of octets, and most sets are never asked (the decision process reads only the numbers).
import { ipv4NumberAt, parseIpv4Number } from '../../ip/index.js';
import { AttrType as T, decodePathAttributes, encodeMessage, formatIpv4, formatIpv6 } from '../codec/index.js';
import type { AsPathSegment, PathAttributes } from '../codec/index.js';
import { mergeAs4Path } from './as4.js';
import type { ExportCache } from './update-group.js';

export const NO_EXPORT = 0xffffff01;
export const NO_ADVERTISE = 0xffffff02;
export const NO_EXPORT_SUBCONFED = 0xffffff03;
/** RFC 8326: the route's origin is going away; receivers lower its preference. */
export const GRACEFUL_SHUTDOWN = 0xffff0000;
/** RFC 9494: a route kept past its peer's graceful restart, least preferred everywhere. */
export const LLGR_STALE = 0xffff0006;
/** RFC 9494: a route not to keep once its peer's graceful restart time has run out. */
export const NO_LLGR = 0xffff0007;

export const COMMUNITY_NO_EXPORT = 1;
export const COMMUNITY_NO_ADVERTISE = 2;
export const COMMUNITY_NO_EXPORT_SUBCONFED = 4;
export const COMMUNITY_LLGR_STALE = 8;
export const COMMUNITY_NO_LLGR = 16;
export const COMMUNITY_GRACEFUL_SHUTDOWN = 32;

const ORIGIN_RANK = { igp: 0, egp: 1, incomplete: 2 } as const;

/** An interned attribute set: what routes share. Never mutate `attributes`. */
export class AttrSet {
  refs = 0;
  /** -1 when absent: the reader applies the default. */
  readonly localPref: number;
  readonly asPathLength: number;
  readonly origin: number;
  /** -1 when absent (the decision process then uses 0, RFC 4271 §9.1.2.2 c). */
  readonly med: number;
  /** First AS of the leftmost AS_SEQUENCE, -1 when the path has none (a route of our own AS). */
  readonly neighborAs: number;
  /** As an unsigned 32-bit number, -1 when absent. */
  readonly originatorId: number;
  readonly clusterListLength: number;
  /** COMMUNITY_* bits of the well-known communities present. */
  readonly wellKnown: number;
  /** Routes with these attributes are loops by the interner's rule (our AS, router ID or cluster ID in them). */
  readonly looped: boolean;
  /** The update groups' export decisions for this set, one record per group (update-group.ts): they live and die with it. */
  exports: ExportCache | undefined = undefined;
  /** The attributes when they were given as an object; undefined when they are decoded from `key` on demand. */
  private readonly given: Readonly<PathAttributes> | undefined;

  /** `given` (frozen here) is kept as `attributes`; without it they are decoded from `key`, received octets, when asked for. */
  constructor(
    readonly key: string,
    n: Readonly<SetNumbers>,
    given: Readonly<PathAttributes> | undefined,
    looped: boolean,
  ) {
    this.localPref = n.localPref;
    this.asPathLength = n.asPathLength;
    this.origin = n.origin;
    this.med = n.med;
    this.neighborAs = n.neighborAs;
    this.originatorId = n.originatorId;
    this.clusterListLength = n.clusterListLength;
    this.wellKnown = n.wellKnown;
    this.looped = looped;
    this.given = given === undefined ? undefined : deepFreeze(given);
  }

  /** The full attributes, frozen. A lazily decoded set gives the same object while it is in the recent cache. */
  get attributes(): Readonly<PathAttributes> {
    return this.given ?? decoded(this);
  }
}

/** What the decision process reads of a set: AttrSet's fields of the same names. */
export interface SetNumbers {
  localPref: number;
  asPathLength: number;
  origin: number;
  med: number;
  neighborAs: number;
  originatorId: number;
  clusterListLength: number;
  wellKnown: number;
}

function wellKnownBit(c: number): number {
  // Every well-known community is 0xffffXXXX: one comparison for the common ones that are not.
  if (c < GRACEFUL_SHUTDOWN) return 0;
  switch (c) {
    case NO_EXPORT:
      return COMMUNITY_NO_EXPORT;
    case NO_ADVERTISE:
      return COMMUNITY_NO_ADVERTISE;
    case NO_EXPORT_SUBCONFED:
      return COMMUNITY_NO_EXPORT_SUBCONFED;
    case LLGR_STALE:
      return COMMUNITY_LLGR_STALE;
    case NO_LLGR:
      return COMMUNITY_NO_LLGR;
    case GRACEFUL_SHUTDOWN:
      return COMMUNITY_GRACEFUL_SHUTDOWN;
    default:
      return 0;
  }
}

/** The numbers of attributes given as an object. */
export function numbersOf(a: Readonly<PathAttributes>): SetNumbers {
  let wk = 0;
  if (a.communities) for (const c of a.communities) wk |= wellKnownBit(c);
  return {
    localPref: a.localPref ?? -1,
    asPathLength: asPathLength(a.asPath),
    origin: a.origin === undefined ? 0 : ORIGIN_RANK[a.origin],
    med: a.med ?? -1,
    neighborAs: neighborAs(a.asPath),
    originatorId: a.originatorId === undefined ? -1 : parseIpv4Number(a.originatorId, 'originatorId'),
    clusterListLength: a.clusterList?.length ?? 0,
    wellKnown: wk,
  };
}

/** Whose routes are loops (RFC 4271 §9, RFC 4456 §8): ours by AS, router ID or cluster ID. */
export class LoopRule {
  /** The IDs as numbers, -1 for none; an ID not written canonically matches nothing, as its text would not. */
  private readonly routerIdNumber: number;
  private readonly clusterIdNumber: number;
  constructor(
    readonly asn: number,
    readonly routerId: string,
    readonly clusterId: string | undefined,
  ) {
    // ip/ reads only canonical dotted quads (no leading zeros), so a text it reads is the one printed.
    this.routerIdNumber = ipv4NumberAt(routerId);
    this.clusterIdNumber = clusterId === undefined ? -1 : ipv4NumberAt(clusterId);
  }

  looped(a: Readonly<PathAttributes>): boolean {
    if (asPathContains(a.asPath, this.asn)) return true;
    if (a.originatorId !== undefined && a.originatorId === this.routerId) return true;
    if (this.clusterId !== undefined && a.clusterList?.includes(this.clusterId)) return true;
    return false;
  }

  /**
   * Reads the numbers of a key of received octets (see receivedKey: checked by the codec, AS
   * numbers of 4 octets) into `n`, with no objects made; returns whether its routes are loops.
   */
  readWire(key: string, n: SetNumbers): boolean {
    n.localPref = -1;
    n.asPathLength = 0;
    n.origin = 0;
    n.med = -1;
    n.neighborAs = -1;
    n.originatorId = -1;
    n.clusterListLength = 0;
    n.wellKnown = 0;
    let looped = false;
    for (let p = 0; p < key.length; ) {
      const extended = (key.charCodeAt(p) & 0x10) !== 0;
      const type = key.charCodeAt(p + 1);
      const vs = extended ? p + 4 : p + 3;
      const ve = vs + (extended ? (key.charCodeAt(p + 2) << 8) | key.charCodeAt(p + 3) : key.charCodeAt(p + 2));
      switch (type) {
        case T.ORIGIN:
          n.origin = key.charCodeAt(vs);
          break;
        case T.AS_PATH: {
          let decided = false;
          for (let q = vs; q < ve; ) {
            const segment = key.charCodeAt(q);
            const count = key.charCodeAt(q + 1);
            q += 2;
            if (segment === SEQUENCE) {
              n.asPathLength += count;
              if (!decided) n.neighborAs = u32(key, q);
              decided = true;
            } else if (segment === SET) {
              n.asPathLength += 1;
              decided = true;
            }
            for (let i = 0; i < count; i++, q += 4) if (u32(key, q) === this.asn) looped = true;
          }
          break;
        }
        case T.MULTI_EXIT_DISC:
          n.med = u32(key, vs);
          break;
        case T.LOCAL_PREF:
          n.localPref = u32(key, vs);
          break;
        case T.COMMUNITIES:
          for (let q = vs; q < ve; q += 4) n.wellKnown |= wellKnownBit(u32(key, q));
          break;
        case T.ORIGINATOR_ID:
          n.originatorId = u32(key, vs);
          if (n.originatorId === this.routerIdNumber) looped = true;
          break;
        case T.CLUSTER_LIST:
          n.clusterListLength = (ve - vs) >> 2;
          for (let q = vs; q < ve; q += 4) if (u32(key, q) === this.clusterIdNumber) looped = true;
          break;
      }
      p = ve;
    }
    return looped;
  }
}

/** AS_PATH segment types (RFC 4271 §4.3). */
const SET = 1;
const SEQUENCE = 2;

function u32(s: string, p: number): number {
  return ((s.charCodeAt(p) << 24) | (s.charCodeAt(p + 1) << 16) | (s.charCodeAt(p + 2) << 8) | s.charCodeAt(p + 3)) >>> 0;
}

// Sets decoded lately. Readers come in bursts for one set (the prefixes of an UPDATE, each
// update group's export of a set), so a small cache answers nearly all and bounds the memory.
const RECENT = 1024;
const recent = new Map<AttrSet, Readonly<PathAttributes>>();

function decoded(set: AttrSet): Readonly<PathAttributes> {
  let a = recent.get(set);
  if (a === undefined) {
    a = deepFreeze(decodePathAttributes(Buffer.from(set.key, 'latin1')));
    if (recent.size >= RECENT) recent.delete(recent.keys().next().value as AttrSet);
    recent.set(set, a);
  }
  return a;
}

/** RFC 4271 §9.1.2.2 a: an AS_SET counts as one; confederation segments count as none (RFC 5065 §5.3). */
export function asPathLength(path: readonly AsPathSegment[] | undefined): number {
  if (!path) return 0;
  let n = 0;
  for (const seg of path) {
    if (seg.type === 'sequence') n += seg.asns.length;
    else if (seg.type === 'set') n += 1;
  }
  return n;
}

export function neighborAs(path: readonly AsPathSegment[] | undefined): number {
  if (!path) return -1;
  for (const seg of path) {
    if (seg.type === 'sequence' && seg.asns.length > 0) return seg.asns[0];
    if (seg.type === 'set') return -1;
  }
  return -1;
}

export function asPathContains(path: readonly AsPathSegment[] | undefined, asn: number): boolean {
  if (!path) return false;
  for (const seg of path) if (seg.asns.includes(asn)) return true;
  return false;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    if (!Buffer.isBuffer(o)) {
      Object.freeze(o);
      for (const v of Object.values(o as object)) deepFreeze(v);
    }
  }
  return o;
}

/**
 * Strips what is not shared between routes: the wire layout, the next hop (a route keeps
 * its own) and the MP_REACH/MP_UNREACH NLRI lists. Returns a fresh object.
 */
export function shareableAttributes(a: Readonly<PathAttributes>): PathAttributes {
  const out: PathAttributes = {};
  for (const k in a) {
    if (k === 'wire' || k === 'mpReach' || k === 'mpUnreach' || k === 'nextHop') continue;
    const v = a[k as keyof PathAttributes];
    if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  }
  return out;
}

/**
 * What of a peer's received attributes its routes share: receivedKey's rule on bytes, here on
 * objects. AS4_PATH and AS4_AGGREGATOR are merged in from a 2-octet speaker and mean nothing
 * between 4-octet ones (RFC 6793 §4.1); from another AS, LOCAL_PREF is ignored (RFC 4271
 * §5.1.5) and so are the reflection attributes.
 */
export function shareableReceived(received: Readonly<PathAttributes>, fourOctetAs: boolean, ebgp: boolean): PathAttributes {
  let base = shareableAttributes(received);
  if (!fourOctetAs) base = mergeAs4Path(base);
  else {
    delete base.as4Path;
    delete base.as4Aggregator;
  }
  if (ebgp) {
    delete base.localPref;
    delete base.originatorId;
    delete base.clusterList;
  }
  return base;
}

/**
 * The canonical key of an attribute set: its encoding, as the codec writes it canonically
 * (ascending type codes, canonical flags). Two sets with the same key mean the same thing
 * on the wire.
 */
export function attributesKey(a: Readonly<PathAttributes>): string {
  const b = encodeMessage({ type: 'update', withdrawn: [], attributes: a as PathAttributes, nlri: [] }, { extendedMessage: true });
  return b.toString('latin1', 23);
}

/**
 * The key of the attributes routes share, from the path attributes of a cleanly decoded UPDATE
 * of a 4-octet-AS peer: the received bytes less NEXT_HOP and the MP attributes (a route keeps
 * its own next hop and NLRI), AS4_PATH and AS4_AGGREGATOR (meaningless between 4-octet
 * speakers, RFC 6793 §4.1) and, from an external peer, LOCAL_PREF, ORIGINATOR_ID and
 * CLUSTER_LIST (RFC 4271 §5.1.5, RFC 4456). Anything else stays as received, flags and order too.
 */
export function receivedKey(b: Buffer, external: boolean): string {
  let n = 0;
  let keptFrom = 0;
  let p = 0;
  while (p < b.length) {
    const type = b[p + 1];
    const next = attributeEnd(b, p);
    if (notShared(type, external)) {
      n = copyRun(b, keptFrom, p, scratchFor(b.length), n);
      keptFrom = next;
    }
    p = next;
  }
  if (keptFrom === 0) return b.toString('latin1');
  n = copyRun(b, keptFrom, b.length, scratchFor(b.length), n);
  // One flat string: a concatenation would keep its parts alive beside the flattened key.
  return scratch.toString('latin1', 0, n);
}

/** Where the attribute that starts at p in well-formed attribute octets ends. */
function attributeEnd(b: Buffer, p: number): number {
  return (b[p] & 0x10) !== 0 ? p + 4 + b.readUInt16BE(p + 2) : p + 3 + b[p + 2];
}

/** The NEXT_HOP of a cleanly decoded UPDATE's attribute octets, as text; undefined without one. */
export function receivedNextHop(b: Buffer): string | undefined {
  for (let p = 0; p < b.length; p = attributeEnd(b, p)) {
    if (b[p + 1] === T.NEXT_HOP) return formatIpv4(b, (b[p] & 0x10) !== 0 ? p + 4 : p + 3);
  }
  return undefined;
}

/** An MP_REACH_NLRI or MP_UNREACH_NLRI attribute as received, read from its octets. */
export interface ReceivedMp {
  afi: number;
  safi: number;
  /** MP_REACH_NLRI's next hop, and the link-local one after it (RFC 2545), as text. */
  nextHop: string | undefined;
  linkLocal: string | undefined;
  /** The prefix field, sharing the received octets. */
  prefixes: Buffer;
}

/**
 * The MP_REACH_NLRI (14) or MP_UNREACH_NLRI (15) attribute in a cleanly decoded UPDATE's
 * attribute octets (which the codec checked as it would have decoded them); undefined without one.
 */
export function receivedMp(b: Buffer, type: typeof T.MP_REACH_NLRI | typeof T.MP_UNREACH_NLRI): ReceivedMp | undefined {
  for (let p = 0; p < b.length; p = attributeEnd(b, p)) {
    if (b[p + 1] !== type) continue;
    const vs = (b[p] & 0x10) !== 0 ? p + 4 : p + 3;
    const end = attributeEnd(b, p);
    const afi = b.readUInt16BE(vs);
    const safi = b[vs + 2];
    if (type === T.MP_UNREACH_NLRI) return { afi, safi, nextHop: undefined, linkLocal: undefined, prefixes: b.subarray(vs + 3, end) };
    // Next hop length (4, 16 or 32), next hop, a reserved octet, then the prefixes.
    const nhLen = b[vs + 3];
    const nh = vs + 4;
    const nextHop = nhLen === 4 ? formatIpv4(b, nh) : formatIpv6(b, nh);
    const linkLocal = nhLen === 32 ? formatIpv6(b, nh + 16) : undefined;
    return { afi, safi, nextHop, linkLocal, prefixes: b.subarray(nh + nhLen + 1, end) };
  }
  return undefined;
}

let scratch = Buffer.alloc(4096);

/**
 * Copies b[from, to) to out at n and returns the new end. The runs are a few dozen octets, where
 * a loop beats Buffer.copy's trip through the runtime (a tenth of the key's cost on real traffic).
 */
function copyRun(b: Buffer, from: number, to: number, out: Buffer, n: number): number {
  if (to - from > 256) return n + b.copy(out, n, from, to);
  for (let i = from; i < to; i++) out[n++] = b[i];
  return n;
}

function scratchFor(length: number): Buffer {
  if (scratch.length < length) scratch = Buffer.alloc(Math.max(length, scratch.length * 2));
  return scratch;
}

/** Whether receivedKey leaves an attribute of this type out of the key (see there). */
export function notShared(type: number, external: boolean): boolean {
  switch (type) {
    case T.NEXT_HOP:
    case T.MP_REACH_NLRI:
    case T.MP_UNREACH_NLRI:
    case T.AS4_PATH:
    case T.AS4_AGGREGATOR:
      return true;
    case T.LOCAL_PREF:
    case T.ORIGINATOR_ID:
    case T.CLUSTER_LIST:
      return external;
    default:
      return false;
  }
}

export class AttrInterner {
  private readonly sets = new Map<string, AttrSet>();
  /** Reused by internReceived: the numbers are copied into the set. */
  private readonly numbers: SetNumbers = numbersOf({});

  /** `loops` marks the sets whose routes are dropped as loops (evaluated once per set). */
  constructor(private readonly loops: LoopRule) {}

  /** The shared set for these attributes (which must already be shareable: see shareableAttributes). */
  intern(a: PathAttributes): AttrSet {
    const key = attributesKey(a);
    let set = this.sets.get(key);
    if (set === undefined) {
      set = new AttrSet(key, numbersOf(a), a, this.loops.looped(a));
      this.sets.set(key, set);
    }
    return set;
  }

  /** The set of this key (see receivedKey), if one is held. */
  get(key: string): AttrSet | undefined {
    return this.sets.get(key);
  }

  /** A new set for received attributes, `key` from receivedKey: read from the octets, no objects made. */
  internReceived(key: string): AttrSet {
    const looped = this.loops.readWire(key, this.numbers);
    const set = new AttrSet(key, this.numbers, undefined, looped);
    this.sets.set(key, set);
    return set;
  }

  acquire(set: AttrSet): void {
    if (set.refs++ === 0 && this.sets.get(set.key) !== set) this.sets.set(set.key, set);
  }

  release(set: AttrSet): void {
    if (--set.refs === 0 && this.sets.get(set.key) === set) this.sets.delete(set.key);
  }

  /** Forgets a set that was interned but taken by no route (all its prefixes rejected). */
  dropIfUnused(set: AttrSet): void {
    if (set.refs === 0 && this.sets.get(set.key) === set) this.sets.delete(set.key);
  }

  get size(): number {
    return this.sets.size;
  }
}

/** A route's next hop: shared, since a table has few distinct ones. */
export class NextHop {
  refs = 0;
  constructor(
    readonly key: string,
    readonly address: string,
    /** RFC 2545: the link-local address sent after the global one. */
    readonly linkLocal: string | undefined,
  ) {}
}

export class NextHopInterner {
  private readonly hops = new Map<string, NextHop>();

  intern(address: string, linkLocal?: string): NextHop {
    const key = linkLocal === undefined ? address : address + '%' + linkLocal;
    let nh = this.hops.get(key);
    if (nh === undefined) {
      nh = new NextHop(key, address, linkLocal);
      this.hops.set(key, nh);
    }
    return nh;
  }

  acquire(nh: NextHop): void {
    if (nh.refs++ === 0 && this.hops.get(nh.key) !== nh) this.hops.set(nh.key, nh);
  }

  release(nh: NextHop): void {
    if (--nh.refs === 0 && this.hops.get(nh.key) === nh) this.hops.delete(nh.key);
  }

  dropIfUnused(nh: NextHop): void {
    if (nh.refs === 0 && this.hops.get(nh.key) === nh) this.hops.delete(nh.key);
  }

  get size(): number {
    return this.hops.size;
  }
}
