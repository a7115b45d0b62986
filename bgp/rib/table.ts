// The Loc-RIB's storage: prefix → the first Path of that prefix. The paths of a prefix
// form a singly linked list through Path.next, best first, then the rest of the ECMP set,
// then the others. That list is also every peer's Adj-RIB-In for the prefix (a path knows
// its peer), so a route costs one Path object plus its prefix's number, whatever the peer count.
import type { AttrSet, NextHop } from './attr-set.js';
import type { RibPeer } from './peer.js';
import type { PrefixKey } from './prefix.js';
import type { PrefixSlots } from './slots.js';

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

/**
 * A family's Loc-RIB, reached through the family's prefix numbers: key → number (one lookup
 * in PrefixSlots, which repeats the last answer for free), number → first Path (an array).
 * The change journal and the Adj-RIB-Outs hold numbers, so they reach a prefix's paths with no
 * lookup at all. The table holds the number of every prefix it has.
 */
export class NumberedTable implements PrefixTable<PrefixKey> {
  private readonly heads: Array<Path | undefined> = [];
  private count = 0;

  constructor(readonly slots: PrefixSlots) {}

  get(key: PrefixKey): Path | undefined {
    const n = this.slots.get(key);
    return n === undefined ? undefined : this.heads[n];
  }

  /** The first path of a prefix by its number. */
  head(n: number): Path | undefined {
    return this.heads[n];
  }

  set(key: PrefixKey, head: Path): void {
    const slots = this.slots;
    const heads = this.heads;
    let n = slots.get(key);
    if (n !== undefined && heads[n] !== undefined) {
      heads[n] = head;
      return;
    }
    n = n === undefined ? slots.add(key) : slots.hold(n);
    // Kept packed: grown one element at a time, never with a gap.
    while (heads.length <= n) heads.push(undefined);
    heads[n] = head;
    this.count++;
  }

  delete(key: PrefixKey): void {
    const n = this.slots.get(key);
    if (n === undefined || this.heads[n] === undefined) return;
    this.heads[n] = undefined;
    this.count--;
    this.slots.release(n);
  }

  get size(): number {
    return this.count;
  }

  /** The numbers of the prefixes in the table, in number order; safe while the table changes. */
  *numbers(): IterableIterator<number> {
    for (let n = 0; n < this.heads.length; n++) if (this.heads[n] !== undefined) yield n;
  }

  *keys(): IterableIterator<PrefixKey> {
    for (const n of this.numbers()) yield this.slots.keys[n];
  }

  forEach(fn: (head: Path, key: PrefixKey) => void): void {
    const heads = this.heads;
    for (let n = 0; n < heads.length; n++) {
      const h = heads[n];
      if (h !== undefined) fn(h, this.slots.keys[n]);
    }
  }
}
