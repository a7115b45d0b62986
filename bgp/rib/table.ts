// The Loc-RIB's storage: prefix key → the first Path of that prefix. The paths of a prefix
// form a singly linked list through Path.next, best first, then the rest of the ECMP set,
// then the others. That list is also every peer's Adj-RIB-In for the prefix (a path knows
// its peer), so a route costs one Path object plus one Map entry, whatever the peer count.
import type { AttrSet, NextHop } from './attr-set.js';
import type { RibPeer } from './peer.js';
import type { PrefixKey, V4Key, V6Key } from './prefix.js';
import { V4Map } from './v4-map.js';

const STALE = 1;
const MP_SHIFT = 1;
const MP_MASK = 0x3f << MP_SHIFT;
const ID_SHIFT = 7;

/** One route: a peer's path to a prefix (the prefix is the table key, not stored here). */
export class Path {
  constructor(
    readonly peer: RibPeer,
    /** The ADD-PATH identifier the peer sent, 0 without ADD-PATH. */
    readonly pathId: number,
    readonly nextHop: NextHop,
    readonly attrs: AttrSet,
    public next: Path | null,
    /** Packed small numbers (kept a Smi): stale bit, ECMP count (on the first path), local path id. */
    public meta: number,
  ) {}
}

export function isStale(p: Path): boolean {
  return (p.meta & STALE) !== 0;
}

export function setStale(p: Path, stale: boolean): void {
  p.meta = stale ? p.meta | STALE : p.meta & ~STALE;
}

/** How many paths, from the first, form the ECMP set (read on the first path). */
export function multipathCount(head: Path): number {
  return (head.meta & MP_MASK) >> MP_SHIFT;
}

export function setMultipathCount(head: Path, n: number): void {
  head.meta = (head.meta & ~MP_MASK) | (Math.min(n, 63) << MP_SHIFT);
}

/** The path identifier we send with ADD-PATH: stable for the life of the path, unique within the prefix. */
export function localPathId(p: Path): number {
  return p.meta >>> ID_SHIFT;
}

export function metaWithId(id: number): number {
  return id << ID_SHIFT;
}

/** The smallest local path id not used by any path of this prefix. */
export function freeLocalPathId(head: Path | null): number {
  for (let id = 1; ; id++) {
    let used = false;
    for (let p = head; p !== null; p = p.next) {
      if (localPathId(p) === id) {
        used = true;
        break;
      }
    }
    if (!used) return id;
  }
}

export interface PrefixTable<K extends PrefixKey> {
  get(key: K): Path | undefined;
  set(key: K, head: Path): void;
  delete(key: K): void;
  readonly size: number;
  keys(): IterableIterator<K>;
  forEach(fn: (head: Path, key: K) => void): void;
}

/** IPv4: one Map per prefix length, keyed by the address as an int32 (see V4Map). */
export class V4Table extends V4Map<Path> implements PrefixTable<V4Key> {}

export class V6Table implements PrefixTable<V6Key> {
  private readonly map = new Map<string, Path>();

  get(key: V6Key): Path | undefined {
    return this.map.get(key);
  }

  set(key: V6Key, head: Path): void {
    this.map.set(key, head);
  }

  delete(key: V6Key): void {
    this.map.delete(key);
  }

  get size(): number {
    return this.map.size;
  }

  keys(): IterableIterator<V6Key> {
    return this.map.keys();
  }

  forEach(fn: (head: Path, key: V6Key) => void): void {
    for (const [key, head] of this.map) fn(head, key);
  }
}
