// A set's members or elements as a sorted list of texts kept in chunks, a new version sharing
// every chunk its change did not touch: a pod that joins a set of thousands then costs the one
// chunk it lands in and the list of chunks, not a copy of the set, and no version holds the
// versions before it. The whole list is made only when someone reads it (a dump, a set seen for
// the first time): the steps after the calculation graph work on the recorded change.

import { lazySource, withLazyList } from './lazy-field.js';

/** Where `a` is or would go in the sorted list (the order `<` gives text, as `sort()` does). */
export function lowerBound(list: readonly string[], a: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! < a) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first chunk whose first text is after `a` (the chunks' first texts are their heads). */
function chunkAfter(chunks: Chunks, a: string): number {
  let lo = 0;
  let hi = chunks.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (chunks[mid]![0]! <= a) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// A chunk that grows past twice this is split in two: a change copies at most that many texts
// besides the list of chunks (a set of 10,000 is about 150 chunks).
const CHUNK = 64;

type Chunks = readonly (readonly string[])[];

// A chunk copied for one change is made at its new length in one step: a copy that then grows by
// a text would allocate its backing store twice.
function copyWith(c: readonly string[], at: number, a: string): string[] {
  const n = new Array<string>(c.length + 1);
  for (let j = 0; j < at; j++) n[j] = c[j]!;
  n[at] = a;
  for (let j = at; j < c.length; j++) n[j + 1] = c[j]!;
  return n;
}

function copyWithout(c: readonly string[], at: number): string[] {
  const n = new Array<string>(c.length - 1);
  for (let j = 0; j < at; j++) n[j] = c[j]!;
  for (let j = at + 1; j < c.length; j++) n[j - 1] = c[j]!;
  return n;
}

export class SortedTexts {
  /** The whole list, when it was given whole or has been read. */
  private whole?: readonly string[];
  /** The texts in sorted chunks, none empty; made from `whole` on first change. */
  private chunks?: Chunks;
  private constructor(readonly length: number) {}

  /** A list already whole and sorted; it is not copied, so it must not change afterwards. */
  static of(sorted: readonly string[]): SortedTexts {
    const t = new SortedTexts(sorted.length);
    t.whole = sorted;
    return t;
  }

  /**
   * This list with `removed` taken out and then `added` put in. Each removed text must be in
   * it, and each added text not in it once the removed are out (the caller knows the change).
   */
  changed(added: readonly string[], removed: readonly string[]): SortedTexts {
    const chunks = this.chunked().slice() as string[][];
    // Chunks copied for this version, which it may change in place.
    const own = new Set<string[]>();
    for (const r of removed) {
      const i = chunkAfter(chunks, r) - 1;
      let c = chunks[i]!;
      if (own.has(c)) c.splice(lowerBound(c, r), 1);
      else {
        c = copyWithout(c, lowerBound(c, r));
        chunks[i] = c;
        own.add(c);
      }
      if (!c.length) chunks.splice(i, 1);
    }
    for (const a of added) {
      if (!chunks.length) {
        const c = [a];
        own.add(c);
        chunks.push(c);
        continue;
      }
      const i = Math.max(0, chunkAfter(chunks, a) - 1);
      let c = chunks[i]!;
      if (own.has(c)) c.splice(lowerBound(c, a), 0, a);
      else {
        c = copyWith(c, lowerBound(c, a), a);
        chunks[i] = c;
        own.add(c);
      }
      if (c.length > 2 * CHUNK) {
        const rest = c.splice(CHUNK);
        own.add(rest);
        chunks.splice(i + 1, 0, rest);
      }
    }
    const t = new SortedTexts(this.length + added.length - removed.length);
    t.chunks = chunks;
    return t;
  }

  has(text: string): boolean {
    if (this.whole) return this.whole[lowerBound(this.whole, text)] === text;
    const chunks = this.chunked();
    const i = chunkAfter(chunks, text) - 1;
    if (i < 0) return false;
    const c = chunks[i]!;
    return c[lowerBound(c, text)] === text;
  }

  /** The whole list, sorted; made once. */
  list(): readonly string[] {
    this.whole ??= ([] as string[]).concat(...this.chunks!);
    return this.whole;
  }

  private chunked(): Chunks {
    if (!this.chunks) {
      const w = this.whole!;
      const chunks: (readonly string[])[] = [];
      for (let i = 0; i < w.length; i += CHUNK) chunks.push(w.slice(i, i + CHUNK));
      this.chunks = chunks;
    }
    return this.chunks;
  }
}

/**
 * A copy of `o` with `field` read from `texts` on first use (an enumerable property like any
 * other, so spreads, JSON and deep comparison see the list). `o` must already have the field,
 * so that its place among the keys stays.
 */
export function withSortedTexts<T extends object>(o: T, field: keyof T & string, texts: SortedTexts): T {
  return withLazyList(o, field, texts);
}

/** The list `o[field]` as SortedTexts: the one it was made from, or its plain (sorted) array taken as it is. */
export function sortedTextsOf<T extends object>(o: T, field: keyof T & string): SortedTexts {
  const source = lazySource(o);
  return source instanceof SortedTexts ? source : SortedTexts.of(o[field] as readonly string[]);
}
