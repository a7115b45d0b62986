// A compiled table's sets as a list in name order kept in chunks, a new version sharing every
// chunk its change did not touch: a pod add that rebuilds two sets of hundreds then costs the
// chunks they are in and the short list of chunks, not a copy of the table's list. The whole
// list is made only when someone reads it (a whole compare, a dump).

import { lazySource, withLazyList } from './lazy-field.js';

// A chunk that grows past twice this is split in two.
const CHUNK = 32;

interface Named {
  readonly name: string;
}

/** Where `name` is or would go in a list in name order (the order `<` gives text). */
function lowerBound(list: readonly Named[], name: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.name < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The chunk whose first name is the last at or before `name` (0 when none is). */
function chunkOf(heads: readonly string[], name: string): number {
  let lo = 0;
  let hi = heads.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (heads[mid]! <= name) lo = mid + 1;
    else hi = mid;
  }
  return Math.max(0, lo - 1);
}

export class NamedList<T extends Named> {
  /** The whole list, when it was given whole or has been read. */
  private whole?: readonly T[];
  /** The parts in chunks, none empty, and each chunk's first name; made from `whole` on first use. */
  private chunks?: readonly (readonly T[])[];
  private heads?: readonly string[];
  private constructor(readonly length: number) {}

  /** A list already in name order, names distinct; it is not copied, so it must not change afterwards. */
  static of<T extends Named>(sorted: readonly T[]): NamedList<T> {
    const l = new NamedList<T>(sorted.length);
    l.whole = sorted;
    return l;
  }

  /** @internal */
  static made<T extends Named>(chunks: readonly (readonly T[])[], heads: readonly string[], length: number): NamedList<T> {
    const l = new NamedList<T>(length);
    l.chunks = chunks;
    l.heads = heads;
    return l;
  }

  get(name: string): T | undefined {
    if (this.whole) {
      const p = this.whole[lowerBound(this.whole, name)];
      return p?.name === name ? p : undefined;
    }
    const { chunks, heads } = this.chunked();
    if (!chunks.length) return undefined;
    const c = chunks[chunkOf(heads, name)]!;
    const p = c[lowerBound(c, name)];
    return p?.name === name ? p : undefined;
  }

  /** An edit of this list: the new version it makes leaves this one as it is. */
  edit(): NamedListEdit<T> {
    const { chunks, heads } = this.chunked();
    return new NamedListEdit(chunks, heads, this.length);
  }

  /** The whole list, in name order; made once. */
  list(): readonly T[] {
    this.whole ??= ([] as T[]).concat(...this.chunks!);
    return this.whole;
  }

  private chunked(): { chunks: readonly (readonly T[])[]; heads: readonly string[] } {
    if (!this.chunks) {
      const w = this.whole!;
      const chunks: (readonly T[])[] = [];
      for (let i = 0; i < w.length; i += CHUNK) chunks.push(w.slice(i, i + CHUNK));
      this.chunks = chunks;
      this.heads = chunks.map((c) => c[0]!.name);
    }
    return { chunks: this.chunks, heads: this.heads! };
  }
}

export class NamedListEdit<T extends Named> {
  private readonly chunks: T[][];
  private readonly heads: string[];
  /** Chunks copied for this edit, which it may change in place. */
  private readonly own = new Set<T[]>();

  constructor(
    chunks: readonly (readonly T[])[],
    heads: readonly string[],
    private length: number,
  ) {
    this.chunks = chunks.slice() as T[][];
    this.heads = heads.slice();
  }

  get(name: string): T | undefined {
    if (!this.chunks.length) return undefined;
    const c = this.chunks[chunkOf(this.heads, name)]!;
    const p = c[lowerBound(c, name)];
    return p?.name === name ? p : undefined;
  }

  /** Puts `part` in place of the one of its name, or among the others by name. */
  put(part: T): void {
    if (!this.chunks.length) {
      const c = [part];
      this.own.add(c);
      this.chunks.push(c);
      this.heads.push(part.name);
      this.length++;
      return;
    }
    const i = chunkOf(this.heads, part.name);
    const c = this.mine(i);
    const at = lowerBound(c, part.name);
    if (c[at]?.name === part.name) {
      c[at] = part;
      return;
    }
    c.splice(at, 0, part);
    this.length++;
    this.heads[i] = c[0]!.name;
    if (c.length > 2 * CHUNK) {
      const rest = c.splice(CHUNK);
      this.own.add(rest);
      this.chunks.splice(i + 1, 0, rest);
      this.heads.splice(i + 1, 0, rest[0]!.name);
    }
  }

  /** Takes out the part of that name; false when there is none. */
  remove(name: string): boolean {
    if (!this.chunks.length) return false;
    const i = chunkOf(this.heads, name);
    const at = lowerBound(this.chunks[i]!, name);
    if (this.chunks[i]![at]?.name !== name) return false;
    const c = this.mine(i);
    c.splice(at, 1);
    this.length--;
    if (c.length) this.heads[i] = c[0]!.name;
    else {
      this.chunks.splice(i, 1);
      this.heads.splice(i, 1);
    }
    return true;
  }

  /** The new version; the edit must not be used afterwards. */
  done(): NamedList<T> {
    return NamedList.made(this.chunks, this.heads, this.length);
  }

  private mine(i: number): T[] {
    let c = this.chunks[i]!;
    if (!this.own.has(c)) {
      c = c.slice();
      this.chunks[i] = c;
      this.own.add(c);
    }
    return c;
  }
}

/**
 * A copy of `o` with `field` read from `list` on first use (an enumerable property like any
 * other). `o` must already have the field, so that its place among the keys stays.
 */
export function withNamedList<O extends object, T extends Named>(o: O, field: keyof O & string, list: NamedList<T>): O {
  return withLazyList(o, field, list);
}

/** The list `o[field]` as a NamedList: the one it was made from, or its plain array (in name order) taken as it is. */
export function namedListOf<T extends Named, O extends object>(o: O, field: keyof O & string): NamedList<T> {
  const source = lazySource(o);
  return source instanceof NamedList ? (source as NamedList<T>) : NamedList.of(o[field] as readonly T[]);
}
