// `nft -j list table` read into the keyed form the plan compares: sets with canonical elements,
// maps with canonical key → verdict (a map of another kind is read too, so the plan deletes
// it), chains with their rules in order, each rule known by its comment, with the sets, maps
// and chains it refers to and its counter. Objects the model does not write (flowtables,
// named counters) are not read.

import type {
  InstalledBase,
  InstalledChain,
  InstalledMap,
  InstalledRule,
  InstalledSet,
  InstalledTable,
  RuleCounterRow,
} from './dataplane.js';
import { canonicalElements, canonicalKey, canonicalVerdict, elementFromJson, verdictFromJson } from './element-text.js';
import { listedSetFlags } from './set-flags.js';

interface JsonSet {
  name: string;
  table: string;
  family: string;
  type: string | string[];
  flags?: string[];
  /** Seconds, for a set with `flags timeout`. */
  timeout?: number;
  elem?: unknown[];
}

interface JsonMap {
  name: string;
  table: string;
  family: string;
  type: string | string[];
  /** The data type: `verdict` for a verdict map. */
  map: string | string[];
  flags?: string[];
  /** `[key, data]` pairs. */
  elem?: unknown[];
}

interface JsonChain {
  name: string;
  table: string;
  family: string;
  type?: string;
  hook?: string;
  prio?: number;
  policy?: string;
}

interface JsonRule {
  chain: string;
  table: string;
  family: string;
  comment?: string;
  expr?: unknown[];
}

type Entry = { set?: JsonSet; map?: JsonMap; chain?: JsonChain; rule?: JsonRule };

function entries(json: string): Entry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (e) {
    throw new Error(`nft -j printed what is not JSON: ${(e as Error).message}`);
  }
  const list = (parsed as { nftables?: unknown }).nftables;
  if (!Array.isArray(list)) throw new Error('nft -j printed no "nftables" array');
  return list as Entry[];
}

/** Walks a rule's statements for `@set` and `@map` references, jump/goto targets and the first counter. */
function readExpr(expr: unknown, rule: { sets: Set<string>; chains: Set<string>; counter?: { packets: number; bytes: number } }): void {
  if (typeof expr === 'string') {
    if (expr.startsWith('@')) rule.sets.add(expr.slice(1));
    return;
  }
  if (!expr || typeof expr !== 'object') return;
  if (Array.isArray(expr)) {
    for (const e of expr) readExpr(e, rule);
    return;
  }
  for (const [k, v] of Object.entries(expr)) {
    if ((k === 'jump' || k === 'goto') && v && typeof v === 'object' && typeof (v as { target?: unknown }).target === 'string')
      rule.chains.add((v as { target: string }).target);
    else if (k === 'counter' && v && typeof v === 'object' && !rule.counter) {
      const c = v as { packets?: unknown; bytes?: unknown };
      if (typeof c.packets === 'number' && typeof c.bytes === 'number') rule.counter = { packets: c.packets, bytes: c.bytes };
    } else readExpr(v, rule);
  }
}

function readRule(r: JsonRule): InstalledRule {
  const acc: { sets: Set<string>; chains: Set<string>; counter?: { packets: number; bytes: number } } = {
    sets: new Set(),
    chains: new Set(),
  };
  readExpr(r.expr ?? [], acc);
  return { comment: r.comment ?? '', sets: [...acc.sets], chains: [...acc.chains], ...(acc.counter ? { counter: acc.counter } : {}) };
}

function readBase(c: JsonChain): InstalledBase | undefined {
  if (c.hook === undefined) return undefined;
  return { type: c.type ?? '', hook: c.hook, priority: c.prio ?? 0, policy: c.policy ?? 'accept' };
}

const joined = (type: string | string[]): string => (Array.isArray(type) ? type.join(' . ') : type);

function readMap(m: JsonMap): InstalledMap {
  const type = joined(m.type);
  const data = joined(m.map);
  const elements = new Map<string, string>();
  for (const e of m.elem ?? []) {
    if (!Array.isArray(e) || e.length !== 2) continue;
    const value = data === 'verdict' ? canonicalVerdict(verdictFromJson(e[1])) : canonicalKey(data, elementFromJson(e[1]));
    elements.set(canonicalKey(type, elementFromJson(e[0])), value);
  }
  return { name: m.name, type, data, flags: [...(m.flags ?? [])].sort(), elements };
}

/** The table `family name` out of `nft -j list table` output. */
export function readTableJson(json: string, family: string, name: string): InstalledTable {
  const sets = new Map<string, InstalledSet>();
  const maps = new Map<string, InstalledMap>();
  const chains = new Map<string, { name: string; base?: InstalledBase; rules: InstalledRule[] }>();
  const ours = (o: { table: string; family: string }) => o.table === name && o.family === family;
  for (const e of entries(json)) {
    if (e.set && ours(e.set)) {
      const s = e.set;
      const type = joined(s.type);
      const flags = listedSetFlags(s.flags ?? []);
      if (typeof s.timeout === 'number') {
        // The packet path's elements (session affinity): not ours to compare.
        sets.set(s.name, { name: s.name, type, flags, elements: new Set(), timeout: s.timeout });
        continue;
      }
      const elements = canonicalElements(type, flags.includes('interval'), (s.elem ?? []).map(elementFromJson));
      sets.set(s.name, { name: s.name, type, flags, elements: new Set(elements) });
    } else if (e.map && ours(e.map)) {
      maps.set(e.map.name, readMap(e.map));
    } else if (e.chain && ours(e.chain)) {
      const base = readBase(e.chain);
      chains.set(e.chain.name, { name: e.chain.name, ...(base ? { base } : {}), rules: [] });
    } else if (e.rule && ours(e.rule)) {
      chains.get(e.rule.chain)?.rules.push(readRule(e.rule));
    }
  }
  return { sets, maps, chains: chains as Map<string, InstalledChain> };
}

/** Every rule's counter out of `nft -j list table` output (terse or not). */
export function readCountersJson(json: string, family: string, name: string): RuleCounterRow[] {
  const out: RuleCounterRow[] = [];
  for (const e of entries(json)) {
    if (!e.rule || e.rule.table !== name || e.rule.family !== family) continue;
    const r = readRule(e.rule);
    if (r.counter) out.push({ chain: e.rule.chain, comment: r.comment, packets: r.counter.packets, bytes: r.counter.bytes });
  }
  return out;
}
