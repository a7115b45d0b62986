// A set's elements as another set's with a few added and removed, kept as that difference until
// someone reads them whole. A pod that comes or goes changes a set of thousands by one address:
// the desired state of that set is then its last state and the one address, the plan sends the
// one address, and no step copies the thousands. Read whole (a resync compares every element),
// it becomes a set of its own once, and lets go of the sets it came from.
const MAX_CHAIN = 256;

export class DerivedElements implements ReadonlySet<string> {
  private base?: ReadonlySet<string>;
  private added: readonly string[];
  private removed: readonly string[];
  private own?: Set<string>;
  /** How many DerivedElements lie between this and a set of its own. */
  private readonly depth: number;

  /** `added` must not be in `base`, `removed` must be: the caller has checked both. */
  constructor(base: ReadonlySet<string>, added: readonly string[], removed: readonly string[]) {
    this.base = base;
    this.added = added;
    this.removed = removed;
    // A long line of differences is folded once, so neither memory nor a read grows with the
    // number of changes. The line below this one is folded, not this: this still tells its
    // difference from the set it came from, so the plan of the change that folds sends its
    // elements and does not compare the two sets element by element.
    if (base instanceof DerivedElements && base.own === undefined && base.depth >= MAX_CHAIN) base.whole();
    this.depth = base instanceof DerivedElements && base.own === undefined ? base.depth + 1 : 1;
  }

  /**
   * What was added to and removed from `base` to make this, without reading either whole;
   * undefined when this was not derived from `base` (then compare them element by element).
   */
  changeFrom(base: ReadonlySet<string>): { added: string[]; removed: string[] } | undefined {
    const steps: DerivedElements[] = [];
    let at: ReadonlySet<string> | undefined = this;
    while (at !== base) {
      if (!(at instanceof DerivedElements) || at.base === undefined || steps.length > MAX_CHAIN) return undefined;
      steps.push(at);
      at = at.base;
    }
    // Oldest first: an element added then removed again is no change.
    const net = new Map<string, boolean>();
    for (let i = steps.length - 1; i >= 0; i--) {
      for (const e of steps[i]!.removed) {
        if (net.get(e) === true) net.delete(e);
        else net.set(e, false);
      }
      for (const e of steps[i]!.added) {
        if (net.get(e) === false) net.delete(e);
        else net.set(e, true);
      }
    }
    const added: string[] = [];
    const removed: string[] = [];
    for (const [e, isAdded] of net) (isAdded ? added : removed).push(e);
    return { added, removed };
  }

  private whole(): Set<string> {
    if (this.own) return this.own;
    const steps: DerivedElements[] = [];
    let at: ReadonlySet<string> = this;
    while (at instanceof DerivedElements && at.own === undefined) {
      steps.push(at);
      at = at.base!;
    }
    const own = new Set(at instanceof DerivedElements ? at.own! : at);
    for (let i = steps.length - 1; i >= 0; i--) {
      for (const e of steps[i]!.removed) own.delete(e);
      for (const e of steps[i]!.added) own.add(e);
    }
    this.own = own;
    this.base = undefined;
    this.added = this.removed = [];
    return own;
  }

  get size(): number {
    return this.whole().size;
  }

  has(value: string): boolean {
    return this.whole().has(value);
  }

  forEach(callbackfn: (value: string, value2: string, set: ReadonlySet<string>) => void, thisArg?: unknown): void {
    for (const v of this.whole()) callbackfn.call(thisArg, v, v, this);
  }

  entries(): SetIterator<[string, string]> {
    return this.whole().entries();
  }

  keys(): SetIterator<string> {
    return this.whole().keys();
  }

  values(): SetIterator<string> {
    return this.whole().values();
  }

  [Symbol.iterator](): SetIterator<string> {
    return this.whole()[Symbol.iterator]();
  }
}
