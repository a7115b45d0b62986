// The transaction that makes a table equal the desired one, and nothing more: a pod that comes
// or goes changes set elements, map elements and its own chains; a changed rule flushes and
// refills its one chain. Pure: desired NftTable and current table (as read back, or as we
// believe it) in, operations out.
//
// Order inside the transaction, which nft applies top to bottom:
//   1. the table, new sets and new chains, so rules and map elements can use them;
//   2. map elements that go, that change verdict, or that jump to a chain that goes (a chain a
//      map element jumps to cannot be deleted); then flush the chains whose rules change or go,
//      and those whose rules use a set, map or chain that must go (one in use cannot be deleted);
//   3. delete maps, chains and sets no longer wanted, and those whose kind changed (set or map
//      type or flags, base chain hook, priority or policy), then declare the latter anew, and
//      the new maps with their elements (their chains exist by now);
//   4. set element deletions, then additions (so a wider prefix may replace narrower ones), then
//      map element additions;
//   5. the rules of every flushed or new chain, in order.

import type { InstalledChain, InstalledMap, InstalledSet, InstalledTable, NftOp } from './dataplane.js';
import { DerivedElements } from './derived-elements.js';
import { DerivedMapElements } from './derived-map-elements.js';
import { verdictChain } from './element-text.js';
import type { NftChain, NftMapElement, NftTable } from './nft-model.js';
import { tableState } from './table-state.js';

export function sameBase(a: InstalledChain['base'], b: InstalledChain['base']): boolean {
  if (!a || !b) return a === b;
  return a.type === b.type && a.hook === b.hook && a.priority === b.priority && a.policy === b.policy;
}

function sameRules(a: InstalledChain, b: InstalledChain): boolean {
  if (a.rules.length !== b.rules.length) return false;
  for (let i = 0; i < a.rules.length; i++) if (a.rules[i].comment !== b.rules[i].comment) return false;
  return true;
}

function sameFlags(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((f, i) => f === b[i]);
}

export function sameKind(a: InstalledSet, b: InstalledSet): boolean {
  return a.type === b.type && sameFlags(a.flags, b.flags) && a.timeout === b.timeout;
}

export function sameMapKind(a: InstalledMap, b: InstalledMap): boolean {
  return a.type === b.type && a.data === b.data && sameFlags(a.flags, b.flags);
}

const EMPTY: InstalledTable = { sets: new Map(), maps: new Map(), chains: new Map() };

/**
 * The operations, in order, that turn `current` into `desired` (whose tableState the caller may pass); `current` undefined means the
 * table does not exist. Throws NftTableError for a desired table nft could not be given.
 */
export function planTable(desired: NftTable, current: InstalledTable | undefined, desiredState?: InstalledTable): NftOp[] {
  // The caller may have the desired table's state already (the programmer keeps it): not made twice.
  const want = desiredState ?? tableState(desired);
  const have = current ?? EMPTY;
  const haveMaps = have.maps;
  const ops: NftOp[] = [];
  if (!current) ops.push({ kind: 'add table' });

  // Sets and maps share one namespace: a new one whose name the other kind holds waits for its delete.
  const recreateSets = new Set<string>();
  const dropSets = new Set<string>();
  for (const [name, w] of want.sets) {
    const h = have.sets.get(name);
    if (!h) {
      if (haveMaps.has(name)) recreateSets.add(name);
      else ops.push(addSet(w));
    } else if (h !== w && !sameKind(h, w)) recreateSets.add(name);
  }
  for (const name of have.sets.keys()) if (!want.sets.has(name)) dropSets.add(name);

  const newMaps = new Set<string>();
  const recreateMaps = new Set<string>();
  const dropMaps = new Set<string>();
  for (const [name, w] of want.maps) {
    const h = haveMaps.get(name);
    if (!h) newMaps.add(name);
    else if (h !== w && !sameMapKind(h, w)) recreateMaps.add(name);
  }
  for (const name of haveMaps.keys()) if (!want.maps.has(name)) dropMaps.add(name);

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
  const chainGoes = (name: string | undefined) => name !== undefined && (dropChains.has(name) || recreateChains.has(name));

  // Elements of the maps that stay: those that go, change verdict or jump to a chain that goes
  // are deleted before any chain is; the wanted ones the map lacks then are added at the end.
  const mapAdds: NftOp[] = [];
  for (const [name, w] of want.maps) {
    const h = haveMaps.get(name);
    if (!h || recreateMaps.has(name)) continue;
    const gone: string[] = [];
    const added: NftMapElement[] = [];
    if (h !== w || dropChains.size || recreateChains.size) {
      for (const [key, verdict] of h.elements) {
        if (w.elements.get(key) !== verdict || chainGoes(verdictChain(verdict))) gone.push(key);
      }
    }
    if (h !== w || gone.length) {
      const deleted = new Set(gone);
      for (const [key, verdict] of w.elements) if (deleted.has(key) || h.elements.get(key) !== verdict) added.push({ key, verdict });
    }
    if (gone.length) ops.push({ kind: 'delete map element', map: name, keys: gone });
    if (added.length) mapAdds.push({ kind: 'add map element', map: name, elements: added });
  }

  // A chain kept as it is but using a set, map or chain that goes must be emptied first, and refilled.
  const flush = new Set<string>();
  const setGoes = (name: string) => recreateSets.has(name) || dropSets.has(name) || recreateMaps.has(name) || dropMaps.has(name);
  if (recreateSets.size || dropSets.size || recreateMaps.size || dropMaps.size || dropChains.size || recreateChains.size) {
    for (const [name, h] of have.chains) {
      if (chainGoes(name)) continue;
      if (h.rules.some((r) => r.sets.some(setGoes) || r.chains.some(chainGoes))) refill.add(name);
    }
  }
  for (const name of refill) if (have.chains.has(name)) flush.add(name);
  // Chains that go are emptied before any is deleted, so no jump between them holds a delete up.
  for (const name of dropChains) flush.add(name);
  for (const name of recreateChains) flush.add(name);
  for (const name of flush) ops.push({ kind: 'flush chain', chain: name });

  // Maps go first: their elements may jump to chains that go.
  for (const name of dropMaps) ops.push({ kind: 'delete map', map: name });
  for (const name of recreateMaps) ops.push({ kind: 'delete map', map: name });
  for (const name of dropChains) ops.push({ kind: 'delete chain', chain: name });
  for (const name of recreateChains) ops.push({ kind: 'delete chain', chain: name });
  for (const name of dropSets) ops.push({ kind: 'delete set', set: name });
  for (const name of recreateSets) if (have.sets.has(name)) ops.push({ kind: 'delete set', set: name });
  for (const name of recreateSets) ops.push(addSet(want.sets.get(name)!));
  for (const name of recreateChains) {
    ops.push({ kind: 'add chain', chain: name, base: byName.get(name)!.base });
    refill.add(name);
  }
  for (const name of [...recreateMaps, ...newMaps]) ops.push(addMap(want.maps.get(name)!));

  const adds: NftOp[] = [];
  for (const [name, w] of want.sets) {
    const h = have.sets.get(name);
    // A timeout set's elements are the packet path's (session affinity): never planned.
    if (!h || h === w || recreateSets.has(name) || w.timeout !== undefined) continue;
    const { gone, added } = elementChange(h, w);
    if (gone.length) ops.push({ kind: 'delete element', set: name, elements: gone });
    if (added.length) adds.push({ kind: 'add element', set: name, elements: added });
  }
  ops.push(...adds, ...mapAdds);

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
  return {
    kind: 'add set',
    set: s.name,
    type: s.type,
    interval: s.flags.includes('interval'),
    elements: [...s.elements],
    ...(s.timeout !== undefined ? { timeout: s.timeout } : {}),
  };
}

function addMap(m: InstalledMap): NftOp {
  return {
    kind: 'add map',
    map: m.name,
    type: m.type,
    ...(m.data !== 'verdict' ? { data: m.data } : {}),
    ...(m.typeof !== undefined ? { typeof: m.typeof } : {}),
    elements: [...m.elements].map(([key, verdict]) => ({ key, verdict })),
  };
}

/** What changed since a transaction was planned, by name: each with the state the kernel then held (undefined: none). */
export interface PendingChanges {
  readonly sets: Map<string, InstalledSet | undefined>;
  readonly maps: Map<string, InstalledMap | undefined>;
  readonly chains: Map<string, InstalledChain | undefined>;
}

/**
 * The transaction for the sets, maps and chains named in `changed`, from the state the kernel
 * holds of each to the state `want` holds (undefined in either: it comes or goes), in the order
 * planTable keeps; nothing else of the table is read. A set or map derived from the one the
 * kernel holds (DerivedElements, DerivedMapElements) gives its difference without either being
 * read whole. Undefined when the change is one planTable must order against the whole table (a
 * set or map changing kind, or becoming the other; a base chain's hook or priority changing).
 */
export function planChanges(changed: PendingChanges, want: InstalledTable, defs: ReadonlyMap<string, NftChain>): NftOp[] | undefined {
  const ops: NftOp[] = [];
  const newSets: InstalledSet[] = [];
  const dropSets: string[] = [];
  const setEdits: { name: string; h: InstalledSet; w: InstalledSet }[] = [];
  for (const [name, h] of changed.sets) {
    const w = want.sets.get(name);
    if (h && w) {
      if (!sameKind(h, w)) return undefined;
      if (h !== w && w.timeout === undefined) setEdits.push({ name, h, w });
    } else if (w) {
      if (changed.maps.get(name)) return undefined; // a map of that name goes first
      newSets.push(w);
    } else if (h) dropSets.push(name);
  }
  const newMaps: InstalledMap[] = [];
  const dropMaps: string[] = [];
  const mapEdits: { name: string; h: InstalledMap; w: InstalledMap }[] = [];
  for (const [name, h] of changed.maps) {
    const w = want.maps.get(name);
    if (h && w) {
      if (!sameMapKind(h, w)) return undefined;
      if (h !== w) mapEdits.push({ name, h, w });
    } else if (w) {
      if (changed.sets.get(name)) return undefined;
      newMaps.push(w);
    } else if (h) dropMaps.push(name);
  }
  const newChains: string[] = [];
  const dropChains: string[] = [];
  const refill: string[] = [];
  for (const [name, h] of changed.chains) {
    const w = want.chains.get(name);
    if (h && w) {
      if (h === w) continue;
      if (!sameBase(h.base, w.base)) return undefined;
      if (!sameRules(h, w)) refill.push(name);
    } else if (w) newChains.push(name);
    else if (h) dropChains.push(name);
  }

  // 1. New sets and chains, so that rules and map elements can use them.
  for (const s of newSets) ops.push(addSet(s));
  for (const name of newChains) ops.push({ kind: 'add chain', chain: name, base: defs.get(name)!.base });
  // 2. Map elements that go or change, then the chains that are refilled or go are emptied.
  const mapAdds: NftOp[] = [];
  for (const { name, h, w } of mapEdits) {
    const { gone, added } = mapElementChange(h, w);
    if (gone.length) ops.push({ kind: 'delete map element', map: name, keys: gone });
    if (added.length) mapAdds.push({ kind: 'add map element', map: name, elements: added });
  }
  for (const name of refill) ops.push({ kind: 'flush chain', chain: name });
  for (const name of dropChains) ops.push({ kind: 'flush chain', chain: name });
  // 3. Maps, chains and sets that go (no rule uses them now), then the new maps, whose elements may jump to new chains.
  for (const name of dropMaps) ops.push({ kind: 'delete map', map: name });
  for (const name of dropChains) ops.push({ kind: 'delete chain', chain: name });
  for (const name of dropSets) ops.push({ kind: 'delete set', set: name });
  for (const m of newMaps) ops.push(addMap(m));
  // 4. Set elements out, then in; map elements in.
  const adds: NftOp[] = [];
  for (const { name, h, w } of setEdits) {
    const { gone, added } = elementChange(h, w);
    if (gone.length) ops.push({ kind: 'delete element', set: name, elements: gone });
    if (added.length) adds.push({ kind: 'add element', set: name, elements: added });
  }
  ops.push(...adds, ...mapAdds);
  // 5. The rules of the new and refilled chains.
  for (const name of [...newChains, ...refill]) {
    const rules = want.chains.get(name)!.rules;
    defs.get(name)!.rules.forEach((r, i) => {
      ops.push({ kind: 'add rule', chain: name, expr: r.expr, comment: rules[i]!.comment });
    });
  }
  return ops;
}

/** The keys `w` lacks or maps otherwise than `h`, and the elements it has more or otherwise: from the difference `w` records where it came from `h`, else key by key. */
function mapElementChange(h: InstalledMap, w: InstalledMap): { gone: string[]; added: NftMapElement[] } {
  const d = w.elements instanceof DerivedMapElements ? w.elements.changeFrom(h.elements) : undefined;
  if (d) return { gone: d.removed, added: d.added.map(([key, verdict]) => ({ key, verdict })) };
  const gone: string[] = [];
  for (const [key, verdict] of h.elements) if (w.elements.get(key) !== verdict) gone.push(key);
  const added: NftMapElement[] = [];
  for (const [key, verdict] of w.elements) if (h.elements.get(key) !== verdict) added.push({ key, verdict });
  return { gone, added };
}

/** The elements `w` lacks and has more than `h`: from the difference `w` records where it came from `h`, else element by element. */
function elementChange(h: InstalledSet, w: InstalledSet): { gone: string[]; added: string[] } {
  const d = w.elements instanceof DerivedElements ? w.elements.changeFrom(h.elements) : undefined;
  if (d) return { gone: d.removed, added: d.added };
  const gone: string[] = [];
  for (const e of h.elements) if (!w.elements.has(e)) gone.push(e);
  const added: string[] = [];
  for (const e of w.elements) if (!h.elements.has(e)) added.push(e);
  return { gone, added };
}
