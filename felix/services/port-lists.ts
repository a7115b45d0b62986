// What a map, the chains or the sets of the services' part are made of: one list per port, in
// the order of the ports' ids, so that the whole reads as a compile from scratch gives it, and a
// port's change replaces its list alone. Persistent: a change makes a new PortLists that shares
// all but one chunk of ports with the old one (which the old table goes on reading), so replacing
// one port's list copies about a hundred pointers whatever the number of ports.
import { byText } from './compile-port.js';

/** Ports per chunk: a chunk is split when it grows past twice this. */
const CHUNK = 128;

/** A run of ports in id order; never changed once made. */
interface Chunk<T> {
  readonly ids: readonly string[];
  readonly lists: readonly (readonly T[])[];
}

export class PortLists<T> {
  private flat?: readonly T[];
  private readonly chunks: readonly Chunk<T>[];
  /** The first id of each chunk, to find a port's chunk by binary search. */
  private readonly firsts: readonly string[];
  readonly size: number;

  /** `ids` sorted (byText), `lists[i]` the list of `ids[i]`; `made`: the chunks themselves (with). */
  constructor(
    ids: readonly string[] = [],
    lists: readonly (readonly T[])[] = [],
    made?: { readonly chunks: readonly Chunk<T>[]; readonly firsts: readonly string[]; readonly size: number },
  ) {
    if (made) {
      this.chunks = made.chunks;
      this.firsts = made.firsts;
      this.size = made.size;
      return;
    }
    const chunks: Chunk<T>[] = [];
    for (let i = 0; i < ids.length; i += CHUNK) chunks.push({ ids: ids.slice(i, i + CHUNK), lists: lists.slice(i, i + CHUNK) });
    this.chunks = chunks;
    this.firsts = chunks.map((c) => c.ids[0]!);
    this.size = ids.length;
  }

  /** The ports' ids in order (made when asked: a whole compile's comparisons read them). */
  get ids(): readonly string[] {
    return this.chunks.flatMap((c) => c.ids);
  }

  /** Each port's list, in the order of `ids`. */
  get lists(): readonly (readonly T[])[] {
    return this.chunks.flatMap((c) => c.lists);
  }

  /** Every port's list, one after the other; made once, when first read. */
  all(): readonly T[] {
    if (!this.flat) {
      const out: T[] = [];
      for (const c of this.chunks) for (const l of c.lists) for (const x of l) out.push(x);
      this.flat = out;
    }
    return this.flat;
  }

  get(id: string): readonly T[] | undefined {
    const c = this.chunks[this.chunkOf(id)];
    if (!c) return undefined;
    const i = find(c.ids, id);
    return c.ids[i] === id ? c.lists[i] : undefined;
  }

  /** The same with `id`'s list replaced, added, or (undefined) taken out; this one unchanged. */
  with(id: string, list: readonly T[] | undefined): PortLists<T> {
    const ci = this.chunkOf(id);
    const c = this.chunks[ci];
    if (!c) {
      if (list === undefined) return this;
      return new PortLists<T>([], [], { chunks: [{ ids: [id], lists: [list] }], firsts: [id], size: 1 });
    }
    const i = find(c.ids, id);
    const here = c.ids[i] === id;
    if (!here && list === undefined) return this;
    if (here && list !== undefined) {
      // A port's list replaced: the same ids, one chunk's lists copied.
      const lists = [...c.lists];
      lists[i] = list;
      const chunks = [...this.chunks];
      chunks[ci] = { ids: c.ids, lists };
      return new PortLists<T>([], [], { chunks, firsts: this.firsts, size: this.size });
    }
    const ids = [...c.ids];
    const lists = [...c.lists];
    let size = this.size;
    if (list === undefined) {
      ids.splice(i, 1);
      lists.splice(i, 1);
      size--;
    } else if (here) lists[i] = list;
    else {
      ids.splice(i, 0, id);
      lists.splice(i, 0, list);
      size++;
    }
    const chunks = [...this.chunks];
    const firsts = [...this.firsts];
    if (!ids.length) {
      chunks.splice(ci, 1);
      firsts.splice(ci, 1);
    } else if (ids.length > 2 * CHUNK) {
      const half = ids.length >> 1;
      chunks.splice(ci, 1, { ids: ids.slice(0, half), lists: lists.slice(0, half) }, { ids: ids.slice(half), lists: lists.slice(half) });
      firsts.splice(ci, 1, ids[0]!, ids[half]!);
    } else {
      chunks[ci] = { ids, lists };
      firsts[ci] = ids[0]!;
    }
    return new PortLists<T>([], [], { chunks, firsts, size });
  }

  /** The chunk that holds `id` or would: the last whose first id does not sort after it (the first chunk for an id before all). */
  private chunkOf(id: string): number {
    const i = find(this.firsts, id);
    return this.firsts[i] === id ? i : Math.max(0, i - 1);
  }
}

/** The first index whose id does not sort before `id`. */
function find(ids: readonly string[], id: string): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (byText(ids[mid]!, id) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Builds a PortLists from ports met in the order of their ids. */
export class PortListsBuilder<T> {
  private readonly ids: string[] = [];
  private readonly lists: (readonly T[])[] = [];

  push(id: string, list: readonly T[]): void {
    this.ids.push(id);
    this.lists.push(list);
  }

  done(): PortLists<T> {
    return new PortLists(this.ids, this.lists);
  }
}
