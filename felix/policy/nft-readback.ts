// `nft -j list table` read into the keyed form the plan compares: sets with canonical elements,
// chains with their rules in order, each rule known by its comment, with the sets and chains
// it refers to and its counter. Objects the model does not write (maps, flowtables, named
// counters) are not read.

import type { InstalledBase, InstalledChain, InstalledRule, InstalledSet, InstalledTable, RuleCounterRow } from './dataplane.js';
import { canonicalElements, elementFromJson } from './element-text.js';

interface JsonSet {
  name: string;
  table: string;
  family: string;
  type: string | string[];
  flags?: string[];
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

type Entry = { set?: JsonSet; chain?: JsonChain; rule?: JsonRule };

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

/** Walks a rule's statements for `@set` references, jump/goto targets and the first counter. */
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

/** The table `family name` out of `nft -j list table` output. */
export function readTableJson(json: string, family: string, name: string): InstalledTable {
  const sets = new Map<string, InstalledSet>();
  const chains = new Map<string, { name: string; base?: InstalledBase; rules: InstalledRule[] }>();
  const ours = (o: { table: string; family: string }) => o.table === name && o.family === family;
  for (const e of entries(json)) {
    if (e.set && ours(e.set)) {
      const s = e.set;
      const type = Array.isArray(s.type) ? s.type.join(' . ') : s.type;
      const flags = [...(s.flags ?? [])].sort();
      const elements = canonicalElements(type, flags.includes('interval'), (s.elem ?? []).map(elementFromJson));
      sets.set(s.name, { name: s.name, type, flags, elements: new Set(elements) });
    } else if (e.chain && ours(e.chain)) {
      const base = readBase(e.chain);
      chains.set(e.chain.name, { name: e.chain.name, ...(base ? { base } : {}), rules: [] });
    } else if (e.rule && ours(e.rule)) {
      chains.get(e.rule.chain)?.rules.push(readRule(e.rule));
    }
  }
  return { sets, chains: chains as Map<string, InstalledChain> };
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
