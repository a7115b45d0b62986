// The policy dataplane in maps, following the kernel's rules that matter to the programmer: a
// transaction applies whole or not at all; a set, map or chain in use cannot be deleted (a
// chain is in use while a rule or a verdict map element jumps to it); a rule cannot use a set
// or map, nor a rule or map element jump to a chain, that does not exist, and neither may jump
// to a base chain; sets and maps share one namespace; deleting an element that is not there
// fails; a map key cannot be added again with another verdict; an interval set refuses
// overlapping elements, and a set without intervals any prefix or range; `add` of what exists
// is no error. Failures can be injected, and the table changed behind the programmer's back as
// another program or an operator would.

import type {
  InstalledChain,
  InstalledMap,
  InstalledSet,
  InstalledTable,
  NftApplyResult,
  NftDataplane,
  NftOp,
  RuleCounterRow,
} from './dataplane.js';
import { addressSpan, canonicalElements, canonicalKey, canonicalVerdict, verdictChain } from './element-text.js';
import type { NftBaseChain } from './nft-model.js';
import { POLICY_TABLE } from './nft-model.js';
import { opLine, renderTransaction } from './nft-script.js';
import { ruleRefs } from './table-state.js';
import { comparedSetFlags } from './set-flags.js';

interface MemRule {
  readonly expr: string;
  readonly comment: string;
  readonly sets: readonly string[];
  readonly chains: readonly string[];
  packets: number;
  bytes: number;
}

interface MemChain {
  readonly name: string;
  readonly base?: NftBaseChain;
  rules: MemRule[];
}

interface MemSet {
  readonly name: string;
  readonly type: string;
  readonly interval: boolean;
  readonly timeout?: number;
  elements: Set<string>;
}

interface MemMap {
  readonly name: string;
  readonly type: string;
  /** `verdict`, or a data map's data type. */
  readonly data: string;
  /** Canonical key → canonical verdict. */
  elements: Map<string, string>;
}

interface MemTable {
  sets: Map<string, MemSet>;
  maps: Map<string, MemMap>;
  chains: Map<string, MemChain>;
}

class Refused extends Error {}

export interface MemoryNftOptions {
  readonly table?: string;
}

export class MemoryNftDataplane implements NftDataplane {
  readonly family = 'inet' as const;
  readonly table: string;
  readonly description: string;
  private state?: MemTable;
  /** Every transaction applied, in order (refused ones are not here). */
  readonly applied: NftOp[][] = [];
  /** Transactions tried, applied or not. */
  attempts = 0;
  /** The next transaction is refused with this message (fault injection), then it clears. */
  failNext?: string;
  /** Refuses any transaction holding an operation this returns a message for (e.g. a bad rule). */
  reject?: (op: NftOp) => string | undefined;

  constructor(opts: MemoryNftOptions = {}) {
    this.table = opts.table ?? POLICY_TABLE;
    this.description = `in-memory nftables (table inet ${this.table})`;
  }

  async read(): Promise<InstalledTable | undefined> {
    const t = this.state;
    if (!t) return undefined;
    const sets = new Map<string, InstalledSet>();
    for (const s of t.sets.values())
      sets.set(
        s.name,
        s.timeout !== undefined
          ? { name: s.name, type: s.type, flags: comparedSetFlags(s), elements: new Set(), timeout: s.timeout }
          : { name: s.name, type: s.type, flags: comparedSetFlags(s), elements: new Set(s.elements) },
      );
    const maps = new Map<string, InstalledMap>();
    for (const m of t.maps.values())
      maps.set(m.name, { name: m.name, type: m.type, data: m.data, flags: [], elements: new Map(m.elements) });
    const chains = new Map<string, InstalledChain>();
    for (const c of t.chains.values())
      chains.set(c.name, {
        name: c.name,
        ...(c.base ? { base: { ...c.base } } : {}),
        rules: c.rules.map((r) => ({
          comment: r.comment,
          sets: r.sets,
          chains: r.chains,
          ...(hasCounter(r) ? { counter: { packets: r.packets, bytes: r.bytes } } : {}),
        })),
      });
    return { sets, maps, chains };
  }

  async readCounters(): Promise<RuleCounterRow[]> {
    const out: RuleCounterRow[] = [];
    for (const c of this.state?.chains.values() ?? [])
      for (const r of c.rules) if (hasCounter(r)) out.push({ chain: c.name, comment: r.comment, packets: r.packets, bytes: r.bytes });
    return out;
  }

  async apply(ops: readonly NftOp[]): Promise<NftApplyResult> {
    this.attempts++;
    const table = { family: this.family, name: this.table };
    let script: string;
    try {
      script = renderTransaction(table, ops);
    } catch (e) {
      return { ok: false, error: (e as Error).message, script: '' };
    }
    if (this.failNext !== undefined) {
      const error = this.failNext;
      this.failNext = undefined;
      return { ok: false, error, script };
    }
    // Copy on write: the transaction works on a copy of the maps and of what it touches, and
    // replaces the state only when every operation went through.
    const work: MemTable | undefined = this.state && {
      sets: new Map(this.state.sets),
      maps: new Map(this.state.maps),
      chains: new Map(this.state.chains),
    };
    const draft = { table: work, touchedSets: new Set<string>(), touchedMaps: new Set<string>(), touchedChains: new Set<string>() };
    for (let i = 0; i < ops.length; i++) {
      try {
        const injected = this.reject?.(ops[i]);
        if (injected) throw new Refused(injected);
        this.step(draft, ops[i]);
      } catch (e) {
        if (!(e instanceof Refused)) throw e;
        return { ok: false, error: `line ${i + 1} (${opLine(table, ops[i])}): Error: ${e.message}`, script };
      }
    }
    this.state = draft.table;
    this.applied.push([...ops]);
    return { ok: true, script };
  }

  private step(d: { table?: MemTable; touchedSets: Set<string>; touchedMaps: Set<string>; touchedChains: Set<string> }, op: NftOp): void {
    if (op.kind === 'add table') {
      d.table ??= { sets: new Map(), maps: new Map(), chains: new Map() };
      return;
    }
    const t = d.table;
    if (!t) throw new Refused('No such file or directory (no table)');
    const set = (name: string): MemSet => {
      const s = t.sets.get(name);
      if (!s) throw new Refused(`No such file or directory (set ${name})`);
      if (!d.touchedSets.has(name)) {
        const copy = { ...s, elements: new Set(s.elements) };
        t.sets.set(name, copy);
        d.touchedSets.add(name);
        return copy;
      }
      return s;
    };
    const map = (name: string): MemMap => {
      const m = t.maps.get(name);
      if (!m) throw new Refused(`No such file or directory (map ${name})`);
      if (!d.touchedMaps.has(name)) {
        const copy = { ...m, elements: new Map(m.elements) };
        t.maps.set(name, copy);
        d.touchedMaps.add(name);
        return copy;
      }
      return m;
    };
    const chain = (name: string): MemChain => {
      const c = t.chains.get(name);
      if (!c) throw new Refused(`No such file or directory (chain ${name})`);
      if (!d.touchedChains.has(name)) {
        const copy = { ...c, rules: [...c.rules] };
        t.chains.set(name, copy);
        d.touchedChains.add(name);
        return copy;
      }
      return c;
    };
    const inUse = (pick: (r: MemRule) => readonly string[], name: string): boolean => {
      for (const c of t.chains.values()) for (const r of c.rules) if (pick(r).includes(name)) return true;
      return false;
    };
    const jumpedToByMap = (name: string): boolean => {
      for (const m of t.maps.values()) for (const v of m.elements.values()) if (verdictChain(v) === name) return true;
      return false;
    };
    const jumpTarget = (name: string): void => {
      const target = t.chains.get(name);
      if (!target) throw new Refused(`No such file or directory (chain ${name})`);
      if (target.base) throw new Refused(`Operation not supported (jump to base chain ${name})`);
    };
    const addMapElements = (m: MemMap, elements: readonly { key: string; verdict: string }[]): void => {
      for (const e of elements) {
        const key = canonicalKey(m.type, e.key);
        const verdict = m.data === 'verdict' ? canonicalVerdict(e.verdict) : canonicalKey(m.data, e.verdict);
        const target = m.data === 'verdict' ? verdictChain(verdict) : undefined;
        if (target !== undefined) jumpTarget(target);
        const had = m.elements.get(key);
        if (had !== undefined && had !== verdict) throw new Refused(`File exists (${key} in ${m.name} maps to ${had})`);
        m.elements.set(key, verdict);
      }
    };
    switch (op.kind) {
      case 'add set': {
        if (t.maps.has(op.set)) throw new Refused(`File exists (map ${op.set})`);
        const had = t.sets.get(op.set);
        if (had && (had.type !== op.type || had.interval !== op.interval || had.timeout !== op.timeout))
          throw new Refused(`File exists (set ${op.set} of another kind)`);
        if (!had) {
          const timeout = op.timeout !== undefined ? { timeout: op.timeout } : {};
          t.sets.set(op.set, { name: op.set, type: op.type, interval: op.interval, ...timeout, elements: new Set() });
          d.touchedSets.add(op.set);
        }
        addElements(set(op.set), op.elements);
        return;
      }
      case 'delete set':
        set(op.set);
        if (inUse((r) => r.sets, op.set)) throw new Refused(`Device or resource busy (set ${op.set} is in use)`);
        t.sets.delete(op.set);
        return;
      case 'add element':
        addElements(set(op.set), op.elements);
        return;
      case 'delete element': {
        const s = set(op.set);
        for (const e of canonicalElements(s.type, s.interval, op.elements)) {
          if (!s.elements.delete(e)) throw new Refused(`element does not exist (${e} in ${op.set})`);
        }
        return;
      }
      case 'add map': {
        if (t.sets.has(op.map)) throw new Refused(`File exists (set ${op.map})`);
        const had = t.maps.get(op.map);
        const data = op.data ?? 'verdict';
        if (had && (had.type !== op.type || had.data !== data)) throw new Refused(`File exists (map ${op.map} of another kind)`);
        if (!had) {
          t.maps.set(op.map, { name: op.map, type: op.type, data, elements: new Map() });
          d.touchedMaps.add(op.map);
        }
        addMapElements(map(op.map), op.elements);
        return;
      }
      case 'delete map':
        map(op.map);
        if (inUse((r) => r.sets, op.map)) throw new Refused(`Device or resource busy (map ${op.map} is in use)`);
        t.maps.delete(op.map);
        return;
      case 'add map element':
        addMapElements(map(op.map), op.elements);
        return;
      case 'delete map element': {
        const m = map(op.map);
        for (const k of op.keys) {
          const key = canonicalKey(m.type, k);
          if (!m.elements.delete(key)) throw new Refused(`element does not exist (${key} in ${op.map})`);
        }
        return;
      }
      case 'add chain': {
        const had = t.chains.get(op.chain);
        if (had) {
          if (!sameBase(had.base, op.base)) throw new Refused(`File exists (chain ${op.chain} with another hook, priority or policy)`);
          return;
        }
        t.chains.set(op.chain, { name: op.chain, ...(op.base ? { base: { ...op.base } } : {}), rules: [] });
        d.touchedChains.add(op.chain);
        return;
      }
      case 'flush chain':
        chain(op.chain).rules = [];
        return;
      case 'delete chain':
        chain(op.chain);
        if (inUse((r) => r.chains, op.chain)) throw new Refused(`Device or resource busy (chain ${op.chain} is jumped to)`);
        if (jumpedToByMap(op.chain)) throw new Refused(`Device or resource busy (chain ${op.chain} is jumped to by a map element)`);
        t.chains.delete(op.chain);
        return;
      case 'add rule': {
        const c = chain(op.chain);
        if (Buffer.byteLength(op.comment) > 127) throw new Refused('comment too long, 128 characters maximum allowed');
        const refs = ruleRefs(op.expr);
        for (const s of refs.sets) if (!t.sets.has(s) && !t.maps.has(s)) throw new Refused(`No such file or directory (set ${s})`);
        for (const j of refs.chains) jumpTarget(j);
        c.rules.push({ expr: op.expr, comment: op.comment, sets: refs.sets, chains: refs.chains, packets: 0, bytes: 0 });
        return;
      }
    }
  }

  // What another program or an operator does, outside any transaction of ours.

  /** `nft delete rule`: the index-th rule of a chain. */
  deleteRule(chain: string, index: number): void {
    const c = this.state?.chains.get(chain);
    if (!c || index < 0 || index >= c.rules.length) throw new Error(`no rule ${index} in chain ${chain}`);
    c.rules = c.rules.filter((_, i) => i !== index);
  }

  /** `nft delete element`. */
  deleteElement(set: string, element: string): void {
    const s = this.state?.sets.get(set);
    if (!s) throw new Error(`no set ${set}`);
    const [e] = canonicalElements(s.type, s.interval, [element]);
    if (!s.elements.delete(e)) throw new Error(`no element ${element} in set ${set}`);
  }

  /** `nft delete element` on a map, by key. */
  deleteMapElement(map: string, key: string): void {
    const m = this.state?.maps.get(map);
    if (!m) throw new Error(`no map ${map}`);
    if (!m.elements.delete(canonicalKey(m.type, key))) throw new Error(`no element ${key} in map ${map}`);
  }

  /** Counts packets on every rule whose comment starts with `prefix` (as traffic would). */
  count(prefix: string, packets: number, bytes: number): void {
    for (const c of this.state?.chains.values() ?? [])
      for (const r of c.rules)
        if (r.comment.startsWith(prefix) && hasCounter(r)) {
          r.packets += packets;
          r.bytes += bytes;
        }
  }

  /** The rule text of a chain as written (expr and comment), for tests. */
  rules(chain: string): string[] {
    return (this.state?.chains.get(chain)?.rules ?? []).map((r) => `${r.expr} comment "${r.comment}"`);
  }

  /** Whether the table exists. */
  get exists(): boolean {
    return this.state !== undefined;
  }

  close(): void {}
}

/** A set without `flags interval` takes single addresses only: nft refuses a prefix (even a /32) or a range. */
function refuseSpan(s: MemSet, element: string): void {
  const types = s.type.split(' . ');
  const parts = types.length === 1 ? [element] : element.split(' . ');
  parts.forEach((part, i) => {
    if ((types[i] === 'ipv4_addr' || types[i] === 'ipv6_addr') && /[/-]/.test(part))
      throw new Refused(
        `You must add 'flags interval' to your set declaration if you want to add prefix elements (${element.trim()} in ${s.name})`,
      );
  });
}

function hasCounter(r: MemRule): boolean {
  return /(^|\s)counter(\s|$)/.test(r.expr);
}

function sameBase(a: NftBaseChain | undefined, b: NftBaseChain | undefined): boolean {
  if (!a || !b) return a === b;
  return a.type === b.type && a.hook === b.hook && a.priority === b.priority && a.policy === b.policy;
}

function addElements(s: MemSet, elements: readonly string[]): void {
  if (!s.interval) for (const e of elements) refuseSpan(s, e);
  // canonicalElements has merged the new ones among themselves; only the set's own can clash.
  const single = s.interval && (s.type === 'ipv4_addr' || s.type === 'ipv6_addr') && s.elements.size > 0;
  for (const e of canonicalElements(s.type, s.interval, elements)) {
    if (s.elements.has(e)) continue;
    if (single) {
      const span = addressSpan(e);
      for (const other of s.elements) {
        const o = addressSpan(other);
        if (span && o && o.family === span.family && o.first <= span.last && span.first <= o.last)
          throw new Refused(`conflicting intervals specified (${e} and ${other} in ${s.name})`);
      }
    }
    s.elements.add(e);
  }
}
