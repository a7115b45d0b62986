// The netlink dataplane's copy of its table: the kernel's table as last read, with each of its
// own committed transactions applied, in the form a read gives (InstalledTable). A resync can
// then answer from it when the ruleset's generation shows that nobody committed since.
//
// Only what a transaction does exactly is applied: an operation whose effect depends on what
// the kernel merges or splits (an interval set's elements added to or deleted from a set that
// has some), or that finds the copy different from what the kernel must have held (an element
// deleted that the copy lacks), makes `apply` return false, and the copy is then thrown away.
// Rules carry no counter here: counters are read from the kernel (readCounters).
//
// After a transaction that made the table from none, the copy is the desired state it was
// planned to make (planned-table.ts), shared and not replayed: it is lent from the start, so
// the copy changes none of it. Its maps keep the typeof they were declared with, which a read
// has not and nothing compares; a resync that finds the desired objects themselves passes over
// them at once.
//
// What was lent stays as it was: a set's or map's elements changed after a lend become a layer
// over the lent ones (the elements put in and taken out since), so one element's change costs
// the change and not a copy of the set; the layer is folded into a set of its own only once it
// has grown to a fair share of what it lies over.

import type { InstalledChain, InstalledMap, InstalledSet, InstalledTable, NftOp } from './dataplane.js';
import { canonicalElements } from './element-text.js';
import type { SliceRead, TableSlice } from './nftnl-read.js';
import { comparedSetFlags } from './set-flags.js';
import { ruleRefs } from './table-state.js';

interface Parts {
  sets: Map<string, InstalledSet>;
  maps: Map<string, InstalledMap>;
  chains: Map<string, InstalledChain>;
}

interface OwnSet extends InstalledSet {
  readonly elements: Set<string> | LayerSet;
}
interface OwnMap extends InstalledMap {
  readonly elements: Map<string, string> | LayerMap;
}
interface OwnChain extends InstalledChain {
  readonly rules: InstalledChain['rules'][number][];
}

export class TableCopy {
  /** undefined: the table does not exist. */
  private t: Parts | undefined;
  /**
   * Whether `t`'s maps were handed out by `lend`: the next change copies them first. What a
   * change made since the last lend is its own (`owned`) and changed in place; anything else
   * may be held by a caller and is copied before it changes.
   */
  private lent = { sets: false, maps: false, chains: false };
  private owned = new WeakSet<object>();

  /** Takes a read (or a planned table) as it is (the caller must not change it after): it is lent already. */
  constructor(table: InstalledTable | undefined) {
    this.t = table && {
      sets: table.sets as Map<string, InstalledSet>,
      maps: table.maps as Map<string, InstalledMap>,
      chains: table.chains as Map<string, InstalledChain>,
    };
    this.lent = { sets: true, maps: true, chains: true };
  }

  /**
   * The copy after `ops` made the table from none, `planned` being the state they were planned
   * to make, taken as it is: undefined when they do not make as many sets, maps, chains and
   * rules of those names, or do anything else.
   */
  static planned(planned: InstalledTable, ops: readonly NftOp[]): TableCopy | undefined {
    let sets = 0;
    let maps = 0;
    let chains = 0;
    let rules = 0;
    for (const op of ops) {
      if (op.kind === 'add set' && planned.sets.has(op.set)) sets++;
      else if (op.kind === 'add map' && planned.maps.has(op.map)) maps++;
      else if (op.kind === 'add chain' && planned.chains.has(op.chain)) chains++;
      else if (op.kind === 'add rule') rules++;
      else if (op.kind !== 'add table') return undefined;
    }
    if (sets !== planned.sets.size || maps !== planned.maps.size || chains !== planned.chains.size) return undefined;
    for (const c of planned.chains.values()) rules -= c.rules.length;
    return rules === 0 ? new TableCopy(planned) : undefined;
  }

  /** Whether the table exists. */
  exists(): boolean {
    return this.t !== undefined;
  }

  /** The table as it stands; it stays unchanged for the caller whatever is applied later. */
  lend(): InstalledTable | undefined {
    if (!this.t) return undefined;
    this.lent = { sets: true, maps: true, chains: true };
    this.owned = new WeakSet();
    return { sets: this.t.sets, maps: this.t.maps, chains: this.t.chains };
  }

  /** How many rules the table holds. */
  rules(): number {
    let n = 0;
    for (const c of this.t?.chains.values() ?? []) n += c.rules.length;
    return n;
  }

  /** Each set's and map's elements and each chain's rules, counted: how much reading each costs. */
  sizes(): { sets: [string, number][]; chains: [string, number][] } {
    const t = this.t;
    if (!t) return { sets: [], chains: [] };
    const sets: [string, number][] = [];
    for (const s of t.sets.values()) sets.push([s.name, s.elements.size]);
    for (const m of t.maps.values()) sets.push([m.name, m.elements.size]);
    const chains: [string, number][] = [];
    for (const c of t.chains.values()) chains.push([c.name, c.rules.length]);
    return { sets, chains };
  }

  /**
   * Where a slice of the kernel's table, read at the copy's generation, differs from the copy
   * (`set X`, `chain X`, …); undefined where it agrees. Rules are compared by their comments,
   * as the plan compares them.
   */
  differs(slice: TableSlice, read: SliceRead): string | undefined {
    const t = this.t;
    if (!t) return 'the table';
    if (read.setNames.size !== t.sets.size + t.maps.size) return 'the names of sets and maps';
    for (const [name, isMap] of read.setNames) if (!(isMap ? t.maps : t.sets).has(name)) return `the name ${name}`;
    for (const name of slice.sets) {
      const s = t.sets.get(name);
      const m = t.maps.get(name);
      if (s ? !sameSet(s, read.sets.get(name)) : m ? !sameMap(m, read.maps.get(name)) : read.setNames.has(name)) return `set ${name}`;
    }
    for (const name of slice.chains) {
      const rules = t.chains.get(name)?.rules ?? [];
      const got = read.rules.get(name) ?? [];
      if (got.length !== rules.length || got.some((r, i) => r.comment !== rules[i].comment)) return `chain ${name}`;
    }
    if (read.chains) {
      if (read.chains.size !== t.chains.size) return 'the names of chains';
      for (const [name, c] of read.chains) {
        const mine = t.chains.get(name);
        if (!mine || !sameBase(mine.base, c.base)) return `chain ${name}`;
      }
    }
    return undefined;
  }

  /** Applies a transaction the kernel committed; false when the copy can no longer be trusted. */
  apply(ops: readonly NftOp[]): boolean {
    for (const op of ops) if (!this.step(op)) return false;
    return true;
  }

  /**
   * The table, its `kind` of objects its own to change: each of the three is copied (its
   * objects, not their elements) only when first changed after a lend, so that an element's
   * change does not copy the table's thousands of chains.
   */
  private parts(kind?: keyof Parts): Parts | undefined {
    const t = this.t;
    if (t && kind && this.lent[kind]) {
      this.lent[kind] = false;
      if (kind === 'sets') t.sets = new Map(t.sets);
      else if (kind === 'maps') t.maps = new Map(t.maps);
      else t.chains = new Map(t.chains);
    }
    return t;
  }

  private set(t: Parts, name: string): OwnSet | undefined {
    const s = t.sets.get(name);
    if (!s || this.owned.has(s)) return s as OwnSet | undefined;
    const copy: OwnSet = { ...s, elements: LayerSet.over(s.elements) };
    this.own(t.sets, name, copy);
    return copy;
  }

  private map(t: Parts, name: string): OwnMap | undefined {
    const m = t.maps.get(name);
    if (!m || this.owned.has(m)) return m as OwnMap | undefined;
    const copy: OwnMap = { ...m, elements: LayerMap.over(m.elements) };
    this.own(t.maps, name, copy);
    return copy;
  }

  private chain(t: Parts, name: string): OwnChain | undefined {
    const c = t.chains.get(name);
    if (!c || this.owned.has(c)) return c as OwnChain | undefined;
    const copy: OwnChain = { ...c, rules: [...c.rules] };
    this.own(t.chains, name, copy);
    return copy;
  }

  private own<T extends object>(into: Map<string, T>, name: string, value: T): void {
    into.set(name, value);
    this.owned.add(value);
  }

  private step(op: NftOp): boolean {
    if (op.kind === 'add table') {
      this.t ??= { sets: new Map(), maps: new Map(), chains: new Map() };
      return true;
    }
    const t = this.parts(partOf(op.kind));
    if (!t) return false;
    switch (op.kind) {
      case 'add set': {
        const had = t.sets.get(op.set);
        if (!had) {
          const timeout = op.timeout !== undefined;
          // A new interval set holds exactly the intervals written, read back as canonical ones.
          const elements = timeout ? [] : op.interval ? canonicalElements(op.type, true, op.elements) : op.elements;
          this.own(t.sets, op.set, {
            name: op.set,
            type: op.type,
            flags: comparedSetFlags(op),
            elements: new Set(elements),
            ...(timeout ? { timeout: op.timeout } : {}),
          });
          return true;
        }
        return this.addElements(t, op.set, op.elements);
      }
      case 'add element':
        return this.addElements(t, op.set, op.elements);
      case 'delete element': {
        const s = this.set(t, op.set);
        if (!s || s.flags.includes('interval')) return false;
        if (s.timeout !== undefined) return true;
        for (const e of op.elements) if (!s.elements.delete(e)) return false;
        return true;
      }
      case 'delete set':
        return t.sets.delete(op.set);
      case 'add map': {
        if (!t.maps.has(op.map))
          this.own(t.maps, op.map, { name: op.map, type: op.type, data: op.data ?? 'verdict', flags: [], elements: new Map() });
        return this.addMapElements(t, op.map, op.elements);
      }
      case 'add map element':
        return this.addMapElements(t, op.map, op.elements);
      case 'delete map element': {
        const m = this.map(t, op.map);
        if (!m) return false;
        for (const k of op.keys) if (!m.elements.delete(k)) return false;
        return true;
      }
      case 'delete map':
        return t.maps.delete(op.map);
      case 'add chain':
        if (!t.chains.has(op.chain))
          this.own(t.chains, op.chain, { name: op.chain, ...(op.base ? { base: { ...op.base } } : {}), rules: [] });
        return true;
      case 'flush chain': {
        const c = this.chain(t, op.chain);
        if (!c) return false;
        c.rules.length = 0;
        return true;
      }
      case 'delete chain':
        return t.chains.delete(op.chain);
      case 'add rule': {
        const c = this.chain(t, op.chain);
        if (!c) return false;
        const refs = ruleRefs(op.expr);
        c.rules.push({ comment: op.comment, sets: refs.sets, chains: refs.chains });
        return true;
      }
    }
  }

  private addElements(t: Parts, name: string, elements: readonly string[]): boolean {
    const s = this.set(t, name);
    if (!s) return false;
    if (s.timeout !== undefined || !elements.length) return true;
    // The kernel keeps an interval set's intervals as written; a read merges them: not modelled.
    if (s.flags.includes('interval')) return false;
    for (const e of elements) s.elements.add(e);
    return true;
  }

  private addMapElements(t: Parts, name: string, elements: readonly { key: string; verdict: string }[]): boolean {
    const m = this.map(t, name);
    if (!m) return false;
    for (const e of elements) {
      const had = m.elements.get(e.key);
      // The kernel refuses a key with another value; having committed, it did not have one.
      if (had !== undefined && had !== e.verdict) return false;
      m.elements.set(e.key, e.verdict);
    }
    return true;
  }
}

function sameFlags(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((f, i) => f === b[i]);
}

function sameSet(a: InstalledSet, b: InstalledSet | undefined): boolean {
  if (a === b) return true;
  if (!b || a.type !== b.type || a.timeout !== b.timeout || !sameFlags(a.flags, b.flags) || a.elements.size !== b.elements.size)
    return false;
  for (const e of b.elements) if (!a.elements.has(e)) return false;
  return true;
}

function sameMap(a: InstalledMap, b: InstalledMap | undefined): boolean {
  if (a === b) return true;
  if (!b || a.type !== b.type || a.data !== b.data || !sameFlags(a.flags, b.flags) || a.elements.size !== b.elements.size) return false;
  for (const [k, v] of b.elements) if (a.elements.get(k) !== v) return false;
  return true;
}

function sameBase(a: InstalledChain['base'], b: InstalledChain['base']): boolean {
  if (!a || !b) return a === b;
  return a.type === b.type && a.hook === b.hook && a.priority === b.priority && a.policy === b.policy;
}

/** Which of the table's three kinds of objects an operation changes (none: the table itself). */
function partOf(kind: NftOp['kind']): keyof Parts | undefined {
  switch (kind) {
    case 'add set':
    case 'delete set':
    case 'add element':
    case 'delete element':
      return 'sets';
    case 'add map':
    case 'delete map':
    case 'add map element':
    case 'delete map element':
      return 'maps';
    case 'add table':
      return undefined;
    default:
      return 'chains';
  }
}

/** A layer is folded into a set of its own once it holds more than this share of what it lies over, plus a few. */
const fold = (changes: number, under: number): boolean => changes > 256 + (under >> 2);

/**
 * A set's elements as `base` (never changed here) with `plus` put in and `minus` taken out;
 * `plus` holds none of `base`, `minus` only elements of it.
 */
export class LayerSet implements ReadonlySet<string> {
  private constructor(
    private readonly base: ReadonlySet<string>,
    private readonly plus: Set<string>,
    private readonly minus: Set<string>,
  ) {}

  /** A layer of its own to change over `elements`, which stay as they are. */
  static over(elements: ReadonlySet<string>): LayerSet {
    if (!(elements instanceof LayerSet)) return new LayerSet(elements, new Set(), new Set());
    if (fold(elements.plus.size + elements.minus.size, elements.base.size)) return new LayerSet(new Set(elements), new Set(), new Set());
    return new LayerSet(elements.base, new Set(elements.plus), new Set(elements.minus));
  }

  add(e: string): this {
    if (!this.minus.delete(e) && !this.base.has(e)) this.plus.add(e);
    return this;
  }

  /** False when it was not there. */
  delete(e: string): boolean {
    if (this.plus.delete(e)) return true;
    if (!this.base.has(e) || this.minus.has(e)) return false;
    this.minus.add(e);
    return true;
  }

  get size(): number {
    return this.base.size - this.minus.size + this.plus.size;
  }

  has(e: string): boolean {
    return this.plus.has(e) || (!this.minus.has(e) && this.base.has(e));
  }

  *values(): SetIterator<string> {
    const minus = this.minus;
    if (minus.size) {
      for (const e of this.base) if (!minus.has(e)) yield e;
    } else yield* this.base;
    yield* this.plus;
  }

  keys(): SetIterator<string> {
    return this.values();
  }

  *entries(): SetIterator<[string, string]> {
    for (const e of this.values()) yield [e, e];
  }

  [Symbol.iterator](): SetIterator<string> {
    return this.values();
  }

  forEach(callbackfn: (value: string, value2: string, set: ReadonlySet<string>) => void, thisArg?: unknown): void {
    for (const e of this.values()) callbackfn.call(thisArg, e, e, this);
  }
}

/**
 * A map's elements as `base` (never changed here) with `plus` put in over it and `minus`'s keys
 * of it taken out; `plus` and `minus` share no key.
 */
export class LayerMap implements ReadonlyMap<string, string> {
  private constructor(
    private readonly base: ReadonlyMap<string, string>,
    private readonly plus: Map<string, string>,
    private readonly minus: Set<string>,
    /** How many of `plus`'s keys `base` lacks. */
    private added: number,
  ) {}

  /** A layer of its own to change over `elements`, which stay as they are. */
  static over(elements: ReadonlyMap<string, string>): LayerMap {
    if (!(elements instanceof LayerMap)) return new LayerMap(elements, new Map(), new Set(), 0);
    if (fold(elements.plus.size + elements.minus.size, elements.base.size)) return new LayerMap(new Map(elements), new Map(), new Set(), 0);
    return new LayerMap(elements.base, new Map(elements.plus), new Set(elements.minus), elements.added);
  }

  set(k: string, v: string): this {
    if (this.minus.delete(k)) this.plus.set(k, v);
    else {
      if (!this.plus.has(k) && !this.base.has(k)) this.added++;
      this.plus.set(k, v);
    }
    return this;
  }

  /** False when it was not there. */
  delete(k: string): boolean {
    if (this.plus.delete(k)) {
      if (this.base.has(k)) this.minus.add(k);
      else this.added--;
      return true;
    }
    if (!this.base.has(k) || this.minus.has(k)) return false;
    this.minus.add(k);
    return true;
  }

  get size(): number {
    return this.base.size - this.minus.size + this.added;
  }

  get(k: string): string | undefined {
    const v = this.plus.get(k);
    if (v !== undefined || this.minus.has(k)) return v;
    return this.base.get(k);
  }

  has(k: string): boolean {
    return this.plus.has(k) || (!this.minus.has(k) && this.base.has(k));
  }

  *entries(): MapIterator<[string, string]> {
    const { plus, minus } = this;
    if (minus.size || plus.size) {
      for (const kv of this.base) if (!minus.has(kv[0]) && !plus.has(kv[0])) yield kv;
    } else yield* this.base;
    yield* plus;
  }

  *keys(): MapIterator<string> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): MapIterator<string> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): MapIterator<[string, string]> {
    return this.entries();
  }

  forEach(callbackfn: (value: string, key: string, map: ReadonlyMap<string, string>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) callbackfn.call(thisArg, v, k, this);
  }
}
