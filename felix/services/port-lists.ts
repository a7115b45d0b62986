// What a map, the chains or the sets of the services' part are made of: one list per port, in
// the order of the ports' ids, so that the whole reads as a compile from scratch gives it, and a
// port's change replaces its list alone. Never changed in place once a table was made of it: a
// change copies the two arrays (pointers only) and the old table keeps reading the old ones.
import { byText } from './compile-port.js';

export class PortLists<T> {
  private flat?: readonly T[];

  constructor(
    readonly ids: readonly string[] = [],
    readonly lists: readonly (readonly T[])[] = [],
  ) {}

  get size(): number {
    return this.ids.length;
  }

  /** Every port's list, one after the other; made once, when first read. */
  all(): readonly T[] {
    this.flat ??= this.lists.flat();
    return this.flat;
  }

  get(id: string): readonly T[] | undefined {
    const i = this.find(id);
    return this.ids[i] === id ? this.lists[i] : undefined;
  }

  /** The same with `id`'s list replaced, added, or (undefined) taken out. */
  with(id: string, list: readonly T[] | undefined): PortLists<T> {
    const i = this.find(id);
    const here = this.ids[i] === id;
    if (!here && list === undefined) return this;
    const ids = [...this.ids];
    const lists = [...this.lists];
    if (list === undefined) {
      ids.splice(i, 1);
      lists.splice(i, 1);
    } else if (here) lists[i] = list;
    else {
      ids.splice(i, 0, id);
      lists.splice(i, 0, list);
    }
    return new PortLists(ids, lists);
  }

  /** The first index whose id does not sort before `id`. */
  private find(id: string): number {
    let lo = 0;
    let hi = this.ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (byText(this.ids[mid]!, id) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
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
