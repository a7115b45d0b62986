// The compile of an input that the calculation graph says is the last one compiled with a few
// sets, endpoints or policies changed (derivation.ts, InputEdit): only their chains, their
// dispatch elements and the sets they move are compiled, every other part of the table is the
// last table's own object, and the new table records which parts changed (TableChange) for
// the programmer. What it keeps between compiles (who jumps to which policy, which chains name
// which set) is the whole compile's result, updated in place by each edit. Anything the edit
// cannot say alone (a name two owners meet in, a set that is gone but still named, a record
// that does not add up to the input) gives the whole compile back the work, which then refuses
// the input in its own words or compiles it whole.
import { type ChainSettings, type EndpointChain, endpointChain, type PolicyChain, policyChain } from './compile-chains.js';
import { PolicyCompileError } from './compile-error.js';
import { kernelAddressSets, kernelNamedPortSets } from './compile-sets.js';
import { type InputEdit, recordNftMapChange, recordTableChange, type TableChange } from './derivation.js';
import { type AddressSet, type NamedPortSet, type Policy, type PolicyEndpoint, type PolicyInput, policyTier } from './input.js';
import { addressSetName, type Direction, endpointChainName, FROM_ENDPOINT_MAP, namedPortSetName, TO_ENDPOINT_MAP } from './names.js';
import { type NamedListEdit, namedListOf, withNamedList } from './named-list.js';
import type { NftChain, NftMap, NftMapElement, NftSet, NftTable } from './nft-model.js';

export const IFNAME = /^[A-Za-z0-9_.:-]{1,15}$/;
const DIRECTIONS = ['ingress', 'egress'] as const;

export const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** One endpoint as compiled: its chains (the memo's, and the one in the table) and its dispatch elements. */
export interface CompiledEndpoint {
  readonly endpoint: PolicyEndpoint;
  readonly compiled: Record<Direction, EndpointChain>;
  /** The chain in the table: the compiled one, or the one before when its rules are the same. */
  readonly chains: Record<Direction, NftChain>;
  readonly from: NftMapElement;
  readonly to: NftMapElement;
}

/** One policy's chain for one direction: the memo's, and the one in the table. */
export interface CompiledPolicy {
  readonly compiled: PolicyChain;
  readonly chain: NftChain;
}

/** What a compile made, and what the next edit needs of it. Its maps and lists are changed in place by that edit. */
export interface CompiledState {
  readonly input: PolicyInput;
  /** The options, as one text. */
  readonly options: string;
  readonly settings: ChainSettings;
  readonly table: NftTable;
  /** forward, postrouting and the ingress dispatch: the chains before the endpoints'. */
  readonly fixedChains: readonly NftChain[];
  readonly setsById: Map<string, AddressSet>;
  readonly namedPortsById: Map<string, NamedPortSet>;
  readonly policiesById: Map<string, Policy>;
  /** By interface, and the interfaces in order. */
  readonly endpoints: Map<string, CompiledEndpoint>;
  readonly ifaces: string[];
  /** Policy id → the interfaces whose tiers (either direction) name it. */
  readonly naming: Map<string, Set<string>>;
  /** Per direction, policy id → how many endpoint chains jump to it. */
  readonly jumps: Record<Direction, Map<string, number>>;
  readonly policyChains: Record<Direction, Map<string, CompiledPolicy>>;
  /** Ids of the policies with a chain in the table, in order. */
  readonly policyOrder: string[];
  /** Set id → how many policy chains in the table name it. */
  readonly setUses: Map<string, number>;
  readonly namedPortUses: Map<string, number>;
  /** Chain name → who made it (`endpoint <iface> <dir>`, `policy <id> <dir>`, or a fixed chain's). */
  readonly chainOwners: Map<string, string>;
}

/** The edit does not add up to the input, or needs what only the whole compile can say. */
class WholeCompile extends Error {}

export const dispatchElement = (iface: string, dir: Direction): NftMapElement => ({
  key: `"${iface}"`,
  verdict: `jump ${endpointChainName(iface, dir)}`,
});

export const endpointOwner = (iface: string, dir: Direction): string => `endpoint ${iface} ${dir}`;
export const policyOwner = (id: string, dir: Direction): string => `policy ${id} ${dir}`;

/** The ids an endpoint's tiers name, in either direction. */
export function namedPolicies(e: PolicyEndpoint): Set<string> {
  const ids = new Set<string>();
  for (const dir of DIRECTIONS) for (const tier of e[dir]) for (const id of policyTier(tier).policies) ids.add(id);
  return ids;
}

export function countUp(counts: Map<string, number>, id: string): number {
  const n = (counts.get(id) ?? 0) + 1;
  counts.set(id, n);
  return n;
}

function countDown(counts: Map<string, number>, id: string): number {
  const n = (counts.get(id) ?? 0) - 1;
  if (n <= 0) counts.delete(id);
  else counts.set(id, n);
  return n;
}

function sameRules(a: NftChain, b: NftChain): boolean {
  if (a.name !== b.name || a.base !== b.base || a.rules.length !== b.rules.length) return false;
  for (let i = 0; i < a.rules.length; i++) if (a.rules[i]!.expr !== b.rules[i]!.expr || a.rules[i]!.id !== b.rules[i]!.id) return false;
  return true;
}

/** Where `key` is or would go in a list kept in text order. */
function lowerBound<T>(list: readonly T[], key: string, of: (t: T) => string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (of(list[mid]!) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const self = (s: string): string => s;

function insertSorted(list: string[], key: string): void {
  const at = lowerBound(list, key, self);
  if (list[at] !== key) list.splice(at, 0, key);
}

function removeSorted(list: string[], key: string): void {
  const at = lowerBound(list, key, self);
  if (list[at] === key) list.splice(at, 1);
}

/**
 * The table for `input`, which `edit` says is `last.input` changed, from `last`; undefined
 * when the whole compile must say it (and `last` is then spent: its maps were changed).
 */
export function compileEdit(input: PolicyInput, edit: InputEdit, last: CompiledState): CompiledState | undefined {
  try {
    return applyEdit(input, edit, last);
  } catch (e) {
    if (e instanceof WholeCompile || e instanceof PolicyCompileError) return undefined;
    throw e;
  }
}

/** The parts by id with those removed and put as the edit says; the ids it touched. A removed id that was not there: the record does not add up. */
function applyParts<T extends { readonly id: string }>(byId: Map<string, T>, removed: readonly string[], put: readonly T[]): Set<string> {
  const touched = new Set<string>();
  for (const id of removed) {
    if (!byId.delete(id)) throw new WholeCompile();
    touched.add(id);
  }
  for (const part of put) {
    byId.set(part.id, part);
    touched.add(part.id);
  }
  return touched;
}

function applyEdit(input: PolicyInput, edit: InputEdit, s: CompiledState): CompiledState {
  if (input.pools !== edit.from.pools) throw new WholeCompile();
  const settings = s.settings;

  // The input's parts by id, as the edit says they became.
  const touchedSets = applyParts(s.setsById, edit.removedSets, edit.sets);
  const touchedNamedPorts = applyParts(s.namedPortsById, edit.removedNamedPortSets, edit.namedPortSets);
  const touchedPolicies = applyParts(s.policiesById, edit.removedPolicies, edit.policies);
  // Ids that appear twice, or a record that misses a part, show as a count that differs.
  if (
    s.setsById.size !== input.sets.length ||
    s.namedPortsById.size !== input.namedPortSets.length ||
    s.policiesById.size !== input.policies.length
  )
    throw new WholeCompile();

  // Chains that changed: each name's chain before (first seen) and now (undefined: gone).
  const chainBefore = new Map<string, NftChain | undefined>();
  const chainNow = new Map<string, NftChain | undefined>();
  const putChain = (chain: NftChain, owner: string, before: NftChain | undefined) => {
    const had = s.chainOwners.get(chain.name);
    if (had !== undefined && had !== owner) throw new WholeCompile(); // two owners, one name: the whole compile says whose
    s.chainOwners.set(chain.name, owner);
    if (!chainBefore.has(chain.name)) chainBefore.set(chain.name, before);
    chainNow.set(chain.name, chain);
  };
  const dropChain = (chain: NftChain) => {
    s.chainOwners.delete(chain.name);
    if (!chainBefore.has(chain.name)) chainBefore.set(chain.name, chain);
    chainNow.set(chain.name, undefined);
  };

  // Endpoints: what each jumps to, and which policies' use changed.
  const jumpsChanged: Record<Direction, Set<string>> = { ingress: new Set(touchedPolicies), egress: new Set(touchedPolicies) };
  let dispatchChanged = false;
  // Endpoints that left the dispatch maps and came into them: the maps' change, as a difference.
  const leftDispatch: CompiledEndpoint[] = [];
  const cameToDispatch: CompiledEndpoint[] = [];
  const unplace = (c: CompiledEndpoint) => {
    for (const dir of DIRECTIONS) {
      for (const id of c.compiled[dir].jumps) {
        countDown(s.jumps[dir], id);
        jumpsChanged[dir].add(id);
      }
    }
    for (const id of namedPolicies(c.endpoint)) s.naming.get(id)?.delete(c.endpoint.iface);
  };
  const place = (c: CompiledEndpoint) => {
    for (const dir of DIRECTIONS) {
      for (const id of c.compiled[dir].jumps) {
        countUp(s.jumps[dir], id);
        jumpsChanged[dir].add(id);
      }
    }
    for (const id of namedPolicies(c.endpoint)) {
      let ifaces = s.naming.get(id);
      if (!ifaces) s.naming.set(id, (ifaces = new Set()));
      ifaces.add(c.endpoint.iface);
    }
  };
  for (const iface of edit.removedEndpoints) {
    const c = s.endpoints.get(iface);
    if (!c) throw new WholeCompile();
    unplace(c);
    s.endpoints.delete(iface);
    removeSorted(s.ifaces, iface);
    for (const dir of DIRECTIONS) dropChain(c.chains[dir]);
    leftDispatch.push(c);
    dispatchChanged = true;
  }
  // The endpoints put, and those whose tiers name a policy that changed (whether it applies may have).
  const redo = new Map<string, PolicyEndpoint>();
  for (const e of edit.endpoints) redo.set(e.iface, e);
  for (const id of touchedPolicies) {
    for (const iface of s.naming.get(id) ?? []) if (!redo.has(iface)) redo.set(iface, s.endpoints.get(iface)!.endpoint);
  }
  for (const [iface, e] of redo) {
    if (!IFNAME.test(iface)) throw new WholeCompile();
    const old = s.endpoints.get(iface);
    const compiled = {
      egress: endpointChain(e, 'egress', s.policiesById, settings),
      ingress: endpointChain(e, 'ingress', s.policiesById, settings),
    };
    if (old && old.endpoint === e && old.compiled.egress === compiled.egress && old.compiled.ingress === compiled.ingress) continue;
    const chains = {
      egress: old && sameRules(old.chains.egress, compiled.egress.chain) ? old.chains.egress : compiled.egress.chain,
      ingress: old && sameRules(old.chains.ingress, compiled.ingress.chain) ? old.chains.ingress : compiled.ingress.chain,
    };
    if (old) unplace(old);
    else {
      insertSorted(s.ifaces, iface);
      dispatchChanged = true;
    }
    const c: CompiledEndpoint = {
      endpoint: e,
      compiled,
      chains,
      from: old?.from ?? dispatchElement(iface, 'egress'),
      to: old?.to ?? dispatchElement(iface, 'ingress'),
    };
    place(c);
    s.endpoints.set(iface, c);
    if (!old) cameToDispatch.push(c);
    for (const dir of DIRECTIONS) if (chains[dir] !== old?.chains[dir]) putChain(chains[dir], endpointOwner(iface, dir), old?.chains[dir]);
  }
  if (s.endpoints.size !== input.endpoints.length) throw new WholeCompile();

  // Policy chains: those whose use began or ended, and the used ones that changed.
  const setUseChanged = new Set<string>();
  const namedPortUseChanged = new Set<string>();
  const use = (pc: PolicyChain, by: 1 | -1) => {
    for (const id of pc.sets) if ((by > 0 ? countUp(s.setUses, id) : countDown(s.setUses, id) + 1) === 1) setUseChanged.add(id);
    for (const id of pc.namedPorts)
      if ((by > 0 ? countUp(s.namedPortUses, id) : countDown(s.namedPortUses, id) + 1) === 1) namedPortUseChanged.add(id);
  };
  for (const dir of DIRECTIONS) {
    for (const id of jumpsChanged[dir]) {
      const old = s.policyChains[dir].get(id);
      if (s.jumps[dir].has(id)) {
        const p = s.policiesById.get(id);
        const rules = p?.[dir];
        if (!p || rules === undefined) throw new WholeCompile();
        const compiled = policyChain(p, dir, rules, s.setsById, s.namedPortsById, settings);
        if (old?.compiled === compiled) continue;
        const chain = old && sameRules(old.chain, compiled.chain) ? old.chain : compiled.chain;
        if (old) use(old.compiled, -1);
        use(compiled, 1);
        s.policyChains[dir].set(id, { compiled, chain });
        if (!old) insertSorted(s.policyOrder, id);
        if (chain !== old?.chain) putChain(chain, policyOwner(id, dir), old?.chain);
      } else if (old) {
        use(old.compiled, -1);
        s.policyChains[dir].delete(id);
        if (!s.policyChains[dir === 'ingress' ? 'egress' : 'ingress'].has(id)) removeSorted(s.policyOrder, id);
        dropChain(old.chain);
      }
    }
  }

  // Sets: those whose use began or ended, and the used ones the edit rebuilt. The table's list
  // is a new version sharing the chunks the edit did not touch, not a copy.
  let sets: NamedListEdit<NftSet> | undefined;
  const changedSets: NftSet[] = [];
  const removedSets: string[] = [];
  const oldSets = namedListOf<NftSet, NftTable>(s.table, 'sets');
  const edited = (
    ids: Set<string>,
    touched: Set<string>,
    uses: Map<string, number>,
    name: (id: string, f: 4 | 6) => string,
    parts: (id: string) => readonly NftSet[],
  ) => {
    for (const id of new Set([...ids, ...touched])) {
      const used = uses.has(id);
      const before = oldSets.get(name(id, 4)) !== undefined;
      if (!used && !before) continue;
      sets ??= oldSets.edit();
      if (used && before) {
        if (!touched.has(id)) continue;
        for (const next of parts(id)) {
          if (sets.get(next.name) === next) continue;
          sets.put(next);
          changedSets.push(next);
        }
        continue;
      }
      // A set that came is named whole, one that went by name: the table's own names, as TableDelta asks.
      for (const family of [4, 6] as const) {
        if (used) {
          if (sets.get(name(id, family))) throw new WholeCompile();
        } else {
          if (!sets.remove(name(id, family))) throw new WholeCompile();
          removedSets.push(name(id, family));
        }
      }
      if (used)
        for (const next of parts(id)) {
          sets.put(next);
          changedSets.push(next);
        }
    }
  };
  // A set the input no longer has but a chain still names: the whole compile refuses it.
  for (const id of edit.removedSets) if (s.setUses.has(id)) throw new WholeCompile();
  for (const id of edit.removedNamedPortSets) if (s.namedPortUses.has(id)) throw new WholeCompile();
  edited(setUseChanged, touchedSets, s.setUses, addressSetName, (id) => {
    const set = s.setsById.get(id)!;
    return kernelAddressSets(set, () => input.sets.indexOf(set));
  });
  edited(namedPortUseChanged, touchedNamedPorts, s.namedPortUses, namedPortSetName, (id) => {
    const set = s.namedPortsById.get(id)!;
    return kernelNamedPortSets(set, () => input.namedPortSets.indexOf(set));
  });

  // The dispatch maps, when an endpoint came or went.
  let maps = s.table.maps ?? [];
  const changedMaps: NftMap[] = [];
  if (dispatchChanged) {
    const before = new Map((s.table.maps ?? []).map((m) => [m.name, m]));
    const changed = (name: string, element: (c: CompiledEndpoint) => NftMapElement): NftMap => {
      const next: NftMap = { name, type: 'ifname', elements: s.ifaces.map((iface) => element(s.endpoints.get(iface)!)) };
      // Recorded as the elements that came and went, so the programmer plans those, not the map whole.
      const from = before.get(name);
      if (from) recordNftMapChange(next, { from, added: cameToDispatch.map(element), removed: leftDispatch.map(element) });
      return next;
    };
    maps = [changed(FROM_ENDPOINT_MAP, (c) => c.from), changed(TO_ENDPOINT_MAP, (c) => c.to)];
    changedMaps.push(...maps);
  }

  // The chains, in the whole compile's order, when one changed.
  const changedChains: NftChain[] = [];
  const removedChains: string[] = [];
  for (const [name, now] of chainNow) {
    const before = chainBefore.get(name);
    if (now === before) continue;
    if (now) changedChains.push(now);
    else if (before) removedChains.push(name);
  }
  let chains = s.table.chains;
  if (changedChains.length || removedChains.length) {
    // Indexed loops into a list made at its length: this runs on every local pod add, over every
    // chain of the table, and iterators allocated a result per step there.
    const { fixedChains, ifaces, endpoints, policyOrder } = s;
    const ingress = s.policyChains.ingress;
    const egress = s.policyChains.egress;
    const list: NftChain[] = new Array(fixedChains.length + 2 * ifaces.length + 2 * policyOrder.length);
    let n = 0;
    for (let i = 0; i < fixedChains.length; i++) list[n++] = fixedChains[i]!;
    for (let i = 0; i < ifaces.length; i++) {
      const c = endpoints.get(ifaces[i]!)!.chains;
      list[n++] = c.egress;
      list[n++] = c.ingress;
    }
    for (let i = 0; i < policyOrder.length; i++) {
      const id = policyOrder[i]!;
      const pi = ingress.get(id);
      if (pi) list[n++] = pi.chain;
      const po = egress.get(id);
      if (po) list[n++] = po.chain;
    }
    list.length = n;
    chains = list;
  }

  const table = withNamedList<NftTable, NftSet>(
    { family: 'inet', name: s.table.name, sets: [], maps, chains },
    'sets',
    sets?.done() ?? oldSets,
  );
  const change: { -readonly [K in keyof TableChange]: TableChange[K] } = { from: s.table, sets: changedSets };
  if (removedSets.length) change.removedSets = removedSets;
  if (changedMaps.length) change.maps = changedMaps;
  if (changedChains.length) change.chains = changedChains;
  if (removedChains.length) change.removedChains = removedChains;
  recordTableChange(table, change);
  return { ...s, input, table };
}
