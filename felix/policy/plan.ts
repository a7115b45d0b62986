// The transaction that makes a table equal the desired one, and nothing more: a pod that comes
// or goes changes set elements only; a changed rule flushes and refills its one chain. Pure:
// desired NftTable and current table (as read back, or as we believe it) in, operations out.
//
// Order inside the transaction, which nft applies top to bottom:
//   1. the table, new sets (with their elements) and new chains, so rules can use them;
//   2. flush the chains whose rules change or go, and those whose rules use a set or chain
//      that must go (a set or chain in use cannot be deleted);
//   3. delete chains and sets no longer wanted, and those whose kind changed (set type or
//      flags, base chain hook, priority or policy), then declare the latter anew;
//   4. set element deletions, then additions (so a wider prefix may replace narrower ones);
//   5. the rules of every flushed or new chain, in order.

import type { InstalledChain, InstalledSet, InstalledTable, NftOp } from './dataplane.js';
import type { NftChain, NftTable } from './nft-model.js';
import { tableState } from './table-state.js';

function sameBase(a: InstalledChain['base'], b: InstalledChain['base']): boolean {
  if (!a || !b) return a === b;
  return a.type === b.type && a.hook === b.hook && a.priority === b.priority && a.policy === b.policy;
}

function sameRules(a: InstalledChain, b: InstalledChain): boolean {
  if (a.rules.length !== b.rules.length) return false;
  for (let i = 0; i < a.rules.length; i++) if (a.rules[i].comment !== b.rules[i].comment) return false;
  return true;
}

function sameKind(a: InstalledSet, b: InstalledSet): boolean {
  return a.type === b.type && a.flags.length === b.flags.length && a.flags.every((f, i) => f === b.flags[i]);
}

const EMPTY: InstalledTable = { sets: new Map(), chains: new Map() };

/**
 * The operations, in order, that turn `current` into `desired`; `current` undefined means the
 * table does not exist. Throws NftTableError for a desired table nft could not be given.
 */
export function planTable(desired: NftTable, current: InstalledTable | undefined): NftOp[] {
  const want = tableState(desired);
  const have = current ?? EMPTY;
  const ops: NftOp[] = [];
  if (!current) ops.push({ kind: 'add table' });

  const recreateSets = new Set<string>();
  const dropSets = new Set<string>();
  for (const [name, w] of want.sets) {
    const h = have.sets.get(name);
    if (!h) ops.push(addSet(w));
    else if (h !== w && !sameKind(h, w)) recreateSets.add(name);
  }
  for (const name of have.sets.keys()) if (!want.sets.has(name)) dropSets.add(name);

  const recreateChains = new Set<string>();
  const dropChains = new Set<string>();
  const refill = new Set<string>();
  const byName = new Map<string, NftChain>(desired.chains.map((c) => [c.name, c]));
  for (const [name, w] of want.chains) {
    const h = have.chains.get(name);
    if (!h) {
      ops.push({ kind: 'add chain', chain: name, base: byName.get(name)!.base });
      if (w.rules.length) refill.add(name);
    } else if (h === w) continue;
    else if (!sameBase(h.base, w.base)) recreateChains.add(name);
    else if (!sameRules(h, w)) refill.add(name);
  }
  for (const name of have.chains.keys()) if (!want.chains.has(name)) dropChains.add(name);

  // A chain kept as it is but using a set or chain that goes must be emptied first, and refilled.
  const flush = new Set<string>();
  if (recreateSets.size || dropSets.size || dropChains.size || recreateChains.size) {
    for (const [name, h] of have.chains) {
      if (dropChains.has(name) || recreateChains.has(name)) continue;
      const uses = h.rules.some(
        (r) =>
          r.sets.some((s) => recreateSets.has(s) || dropSets.has(s)) || r.chains.some((c) => dropChains.has(c) || recreateChains.has(c)),
      );
      if (uses) refill.add(name);
    }
  }
  for (const name of refill) if (have.chains.has(name)) flush.add(name);
  // Chains that go are emptied before any is deleted, so no jump between them holds a delete up.
  for (const name of dropChains) flush.add(name);
  for (const name of recreateChains) flush.add(name);
  for (const name of flush) ops.push({ kind: 'flush chain', chain: name });

  for (const name of dropChains) ops.push({ kind: 'delete chain', chain: name });
  for (const name of recreateChains) ops.push({ kind: 'delete chain', chain: name });
  for (const name of dropSets) ops.push({ kind: 'delete set', set: name });
  for (const name of recreateSets) ops.push({ kind: 'delete set', set: name });
  for (const name of recreateSets) ops.push(addSet(want.sets.get(name)!));
  for (const name of recreateChains) {
    ops.push({ kind: 'add chain', chain: name, base: byName.get(name)!.base });
    refill.add(name);
  }

  const adds: NftOp[] = [];
  for (const [name, w] of want.sets) {
    const h = have.sets.get(name);
    if (!h || h === w || recreateSets.has(name)) continue;
    const gone: string[] = [];
    for (const e of h.elements) if (!w.elements.has(e)) gone.push(e);
    const added: string[] = [];
    for (const e of w.elements) if (!h.elements.has(e)) added.push(e);
    if (gone.length) ops.push({ kind: 'delete element', set: name, elements: gone });
    if (added.length) adds.push({ kind: 'add element', set: name, elements: added });
  }
  ops.push(...adds);

  for (const chain of desired.chains) {
    if (!refill.has(chain.name)) continue;
    const rules = want.chains.get(chain.name)!.rules;
    chain.rules.forEach((r, i) => {
      ops.push({ kind: 'add rule', chain: chain.name, expr: r.expr, comment: rules[i].comment });
    });
  }
  return ops;
}

function addSet(s: InstalledSet): NftOp {
  return { kind: 'add set', set: s.name, type: s.type, interval: s.flags.includes('interval'), elements: [...s.elements] };
}
