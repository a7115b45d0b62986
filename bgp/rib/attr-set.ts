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
import { AttrType as T, decodePathAttributes, encodeMessage } from '../codec/index.js';
import type { AsPathSegment, PathAttributes } from '../codec/index.js';
import type { ExportCache } from './update-group.js';

export const NO_EXPORT = 0xffffff01;
export const NO_ADVERTISE = 0xffffff02;
export const NO_EXPORT_SUBCONFED = 0xffffff03;

export const COMMUNITY_NO_EXPORT = 1;
export const COMMUNITY_NO_ADVERTISE = 2;
export const COMMUNITY_NO_EXPORT_SUBCONFED = 4;

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

  /**
   * `a` gives the numbers; it is kept as `attributes` unless `key` holds the same attributes
   * as wire bytes (`lazy`), when it is dropped and decoded again only when asked for.
   */
  constructor(
    readonly key: string,
    a: Readonly<PathAttributes>,
    lazy = false,
    looped = false,
  ) {
    this.localPref = a.localPref ?? -1;
    this.asPathLength = asPathLength(a.asPath);
    this.origin = a.origin === undefined ? 0 : ORIGIN_RANK[a.origin];
    this.med = a.med ?? -1;
    this.neighborAs = neighborAs(a.asPath);
    this.originatorId = a.originatorId === undefined ? -1 : ipv4Number(a.originatorId);
    this.clusterListLength = a.clusterList?.length ?? 0;
    let wk = 0;
    if (a.communities) {
      for (const c of a.communities) {
        if (c === NO_EXPORT) wk |= COMMUNITY_NO_EXPORT;
        else if (c === NO_ADVERTISE) wk |= COMMUNITY_NO_ADVERTISE;
        else if (c === NO_EXPORT_SUBCONFED) wk |= COMMUNITY_NO_EXPORT_SUBCONFED;
      }
    }
    this.wellKnown = wk;
    this.looped = looped;
    this.given = lazy ? undefined : deepFreeze(a);
  }

  /** The full attributes, frozen. A lazily decoded set gives the same object while it is in the recent cache. */
  get attributes(): Readonly<PathAttributes> {
    return this.given ?? decoded(this);
  }
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

export function ipv4Number(s: string): number {
  const p = s.split('.');
  if (p.length !== 4) throw new TypeError(`not an IPv4 address: "${s}"`);
  let n = 0;
  for (const x of p) {
    const v = Number(x);
    if (!/^\d{1,3}$/.test(x) || v > 255) throw new TypeError(`not an IPv4 address: "${s}"`);
    n = n * 256 + v;
  }
  return n;
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
    const next = (b[p] & 0x10) !== 0 ? p + 4 + b.readUInt16BE(p + 2) : p + 3 + b[p + 2];
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

  /** `loops` marks the sets whose routes are dropped as loops (evaluated once per set). */
  constructor(private readonly loops: (a: Readonly<PathAttributes>) => boolean = () => false) {}

  /** The shared set for these attributes (which must already be shareable: see shareableAttributes). */
  intern(a: PathAttributes): AttrSet {
    const key = attributesKey(a);
    let set = this.sets.get(key);
    if (set === undefined) {
      set = new AttrSet(key, a, false, this.loops(a));
      this.sets.set(key, set);
    }
    return set;
  }

  /** The set of this key (see receivedKey), if one is held. */
  get(key: string): AttrSet | undefined {
    return this.sets.get(key);
  }

  /**
   * A new set for received attributes: `key` from receivedKey, `a` what the same bytes decode
   * to (shareable), read for the numbers and then dropped.
   */
  internReceived(key: string, a: Readonly<PathAttributes>): AttrSet {
    const set = new AttrSet(key, a, true, this.loops(a));
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
