// The netlink dataplane's copy of its table: the kernel's table as last read, with each of its
// own committed transactions applied, in the form a read gives (InstalledTable). A resync can
// then answer from it when the ruleset's generation shows that nobody committed since.
//
// Only what a transaction does exactly is applied: an operation whose effect depends on what
// the kernel merges or splits (an interval set's elements added to or deleted from a set that
// has some), or that finds the copy different from what the kernel must have held (an element
// deleted that the copy lacks), makes `apply` return false, and the copy is then thrown away.
// Rules carry no counter here: counters are read from the kernel (readCounters).

import type { InstalledChain, InstalledMap, InstalledSet, InstalledTable, NftOp } from './dataplane.js';
import { canonicalElements } from './element-text.js';
import { comparedSetFlags } from './set-flags.js';
import { ruleRefs } from './table-state.js';

interface Parts {
  sets: Map<string, InstalledSet>;
  maps: Map<string, InstalledMap>;
  chains: Map<string, InstalledChain>;
}

interface OwnSet extends InstalledSet {
  readonly elements: Set<string>;
}
interface OwnMap extends InstalledMap {
  readonly elements: Map<string, string>;
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
  private lent = false;
  private owned = new WeakSet<object>();

  /** Takes a read as it is (the caller must not change it after): it is lent already. */
  constructor(table: InstalledTable | undefined) {
    this.t = table && {
      sets: table.sets as Map<string, InstalledSet>,
      maps: table.maps as Map<string, InstalledMap>,
      chains: table.chains as Map<string, InstalledChain>,
    };
    this.lent = true;
  }

  /** The table as it stands; it stays unchanged for the caller whatever is applied later. */
  lend(): InstalledTable | undefined {
    if (!this.t) return undefined;
    this.lent = true;
    this.owned = new WeakSet();
    return { sets: this.t.sets, maps: this.t.maps, chains: this.t.chains };
  }

  /** How many rules the table holds. */
  rules(): number {
    let n = 0;
    for (const c of this.t?.chains.values() ?? []) n += c.rules.length;
    return n;
  }

  /** Applies a transaction the kernel committed; false when the copy can no longer be trusted. */
  apply(ops: readonly NftOp[]): boolean {
    for (const op of ops) if (!this.step(op)) return false;
    return true;
  }

  private parts(): Parts | undefined {
    if (this.t && this.lent) {
      this.t = { sets: new Map(this.t.sets), maps: new Map(this.t.maps), chains: new Map(this.t.chains) };
      this.lent = false;
    }
    return this.t;
  }

  private set(t: Parts, name: string): OwnSet | undefined {
    const s = t.sets.get(name);
    if (!s || this.owned.has(s)) return s as OwnSet | undefined;
    const copy: OwnSet = { ...s, elements: new Set(s.elements) };
    this.own(t.sets, name, copy);
    return copy;
  }

  private map(t: Parts, name: string): OwnMap | undefined {
    const m = t.maps.get(name);
    if (!m || this.owned.has(m)) return m as OwnMap | undefined;
    const copy: OwnMap = { ...m, elements: new Map(m.elements) };
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
    const t = this.parts();
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
