// A map's elements as another map's with a few keys taken out and a few put in, kept as that
// difference until someone reads them whole: a replaced service endpoint changes a map of
// thousands by two elements, and neither its desired state nor the plan copies the thousands.
// Read whole (a resync compares every element), it becomes a map of its own once, and lets go
// of the maps it came from. The map's counterpart of DerivedElements.
const MAX_CHAIN = 256;

export class DerivedMapElements implements ReadonlyMap<string, string> {
  private base?: ReadonlyMap<string, string>;
  private added: readonly (readonly [string, string])[];
  private removed: readonly string[];
  private own?: Map<string, string>;
  private readonly depth: number;

  /** `removed` keys must be in `base`; `added` keys must not be in it once those are out: the caller has checked both. */
  constructor(base: ReadonlyMap<string, string>, added: readonly (readonly [string, string])[], removed: readonly string[]) {
    this.base = base;
    this.added = added;
    this.removed = removed;
    // The line below this one is folded, not this: this still tells its difference from `base`.
    if (base instanceof DerivedMapElements && base.own === undefined && base.depth >= MAX_CHAIN) base.whole();
    this.depth = base instanceof DerivedMapElements && base.own === undefined ? base.depth + 1 : 1;
  }

  /**
   * The keys taken out of `base` and the elements put in to make this, without reading either
   * whole (a key whose verdict changed is in both); undefined when this was not derived from `base`.
   */
  changeFrom(base: ReadonlyMap<string, string>): { removed: string[]; added: [string, string][] } | undefined {
    const steps: DerivedMapElements[] = [];
    let at: ReadonlyMap<string, string> | undefined = this;
    while (at !== base) {
      if (!(at instanceof DerivedMapElements) || at.base === undefined || steps.length > MAX_CHAIN) return undefined;
      steps.push(at);
      at = at.base;
    }
    // Oldest first. Per key: whether `base`'s element goes, and what is there at the end.
    const net = new Map<string, { out: boolean; value?: string }>();
    for (let i = steps.length - 1; i >= 0; i--) {
      for (const k of steps[i]!.removed) {
        const had = net.get(k);
        if (!had) net.set(k, { out: true });
        else if (had.out) had.value = undefined;
        else net.delete(k); // put in and taken out again: no change
      }
      for (const [k, v] of steps[i]!.added) {
        const had = net.get(k);
        if (had) had.value = v;
        else net.set(k, { out: false, value: v });
      }
    }
    const removed: string[] = [];
    const added: [string, string][] = [];
    for (const [k, e] of net) {
      if (e.out) removed.push(k);
      if (e.value !== undefined) added.push([k, e.value]);
    }
    return { removed, added };
  }

  private whole(): Map<string, string> {
    if (this.own) return this.own;
    const steps: DerivedMapElements[] = [];
    let at: ReadonlyMap<string, string> = this;
    while (at instanceof DerivedMapElements && at.own === undefined) {
      steps.push(at);
      at = at.base!;
    }
    const own = new Map(at instanceof DerivedMapElements ? at.own! : at);
    for (let i = steps.length - 1; i >= 0; i--) {
      for (const k of steps[i]!.removed) own.delete(k);
      for (const [k, v] of steps[i]!.added) own.set(k, v);
    }
    this.own = own;
    this.base = undefined;
    this.added = [];
    this.removed = [];
    return own;
  }

  get size(): number {
    return this.whole().size;
  }

  get(key: string): string | undefined {
    return this.whole().get(key);
  }

  has(key: string): boolean {
    return this.whole().has(key);
  }

  forEach(callbackfn: (value: string, key: string, map: ReadonlyMap<string, string>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.whole()) callbackfn.call(thisArg, v, k, this);
  }

  entries(): MapIterator<[string, string]> {
    return this.whole().entries();
  }

  keys(): MapIterator<string> {
    return this.whole().keys();
  }

  values(): MapIterator<string> {
    return this.whole().values();
  }

  [Symbol.iterator](): MapIterator<[string, string]> {
    return this.whole()[Symbol.iterator]();
  }
}
