// A set's members or elements as a sorted list of texts told as the list before it with a few
// texts added and removed, made whole only when someone reads it. A pod that joins a set of
// thousands then costs its own texts, not a copy of the set per version: the steps after the
// calculation graph work on the recorded change, and the whole list is read rarely (a dump, a
// set seen for the first time). Versions share the one whole list they come from.

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

// Past this many versions told from one whole list, a new version is made whole at once, so a
// list is never far from a whole one (reading it or asking for a text stays cheap) and old
// versions are not kept alive by the newest: a copy every so many changes, not every change.
const MAX_DEPTH = 32;

export class SortedTexts {
  private whole?: readonly string[];
  private from?: SortedTexts;
  private added?: ReadonlySet<string>;
  private removed?: ReadonlySet<string>;
  private constructor(
    readonly length: number,
    /** How many versions lie between this one and the whole list it is told from (0: whole). */
    private depth: number,
  ) {}

  /** A list already whole and sorted; it is not copied, so it must not change afterwards. */
  static of(sorted: readonly string[]): SortedTexts {
    const t = new SortedTexts(sorted.length, 0);
    t.whole = sorted;
    return t;
  }

  /**
   * This list with `removed` taken out and then `added` put in. Each removed text must be in
   * it, and each added text not in it once the removed are out (the caller knows the change).
   */
  changed(added: readonly string[], removed: readonly string[]): SortedTexts {
    const t = new SortedTexts(this.length + added.length - removed.length, this.depth + 1);
    t.from = this;
    t.added = new Set(added);
    t.removed = new Set(removed);
    if (t.depth >= MAX_DEPTH) t.list();
    return t;
  }

  has(text: string): boolean {
    for (let t: SortedTexts = this; ; t = t.from!) {
      if (t.whole) return t.whole[lowerBound(t.whole, text)] === text;
      if (t.added!.has(text)) return true;
      if (t.removed!.has(text)) return false;
    }
  }

  /** The whole list, sorted; made once, from the nearest whole list before it. */
  list(): readonly string[] {
    if (this.whole) return this.whole;
    const steps: SortedTexts[] = [];
    let t: SortedTexts = this;
    for (; !t.whole; t = t.from!) steps.push(t);
    const out = t.whole.slice();
    for (let i = steps.length - 1; i >= 0; i--) {
      const s = steps[i]!;
      for (const r of s.removed!) out.splice(lowerBound(out, r), 1);
      for (const a of s.added!) out.splice(lowerBound(out, a), 0, a);
    }
    this.whole = out;
    this.depth = 0;
    this.from = this.added = this.removed = undefined;
    return out;
  }
}

const told = new WeakMap<object, SortedTexts>();

/**
 * `o` with `field` read from `texts` on first use (an enumerable property like any other, so
 * spreads, JSON and deep comparison see the list). `o` must already have the field, so that its
 * place among the keys stays.
 */
export function withSortedTexts<T extends object>(o: T, field: keyof T & string, texts: SortedTexts): T {
  told.set(o, texts);
  Object.defineProperty(o, field, { get: () => texts.list(), enumerable: true, configurable: true });
  return o;
}

/** The list `o[field]` as SortedTexts: the one it was made from, or its plain (sorted) array taken as it is. */
export function sortedTextsOf<T extends object>(o: T, field: keyof T & string): SortedTexts {
  return told.get(o) ?? SortedTexts.of(o[field] as readonly string[]);
}
