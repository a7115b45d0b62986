// Attribute interning. A Calico cluster has thousands of prefixes and a handful of distinct
// attribute sets, a full table ~1M prefixes and a few hundred thousand: every route points
// at one shared, frozen set, and the set carries the numbers the decision process reads
// (so comparing two routes never walks an AS_PATH). Sets are reference counted by the routes
// that hold them and leave the table when the last route goes.
import { encodeMessage } from '../codec/index.js';
import type { AsPathSegment, PathAttributes } from '../codec/index.js';

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

  constructor(
    readonly key: string,
    readonly attributes: Readonly<PathAttributes>,
  ) {
    const a = attributes;
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
  }
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

export class AttrInterner {
  private readonly sets = new Map<string, AttrSet>();

  /** The shared set for these attributes (which must already be shareable: see shareableAttributes). */
  intern(a: PathAttributes): AttrSet {
    const key = attributesKey(a);
    let set = this.sets.get(key);
    if (set === undefined) {
      set = new AttrSet(key, deepFreeze(a));
      this.sets.set(key, set);
    }
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
