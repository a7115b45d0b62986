// The calculation graph as a holder: it keeps the cluster's policy-related resources and
// answers with felix's PolicyInput, doing per change only the work that change needs. A policy
// change converts that one policy and fills the sets it newly names; an endpoint change places
// that one endpoint in or out of each set (members change, rules do not) and, when it is this
// node's, re-reads which policies select it; a namespace relabel re-places its endpoints. A
// Tier change re-orders the tiers, which every endpoint's tiers follow.
import { recordInputChange, recordInputEdit } from '../../felix/policy/derivation.js';
import type { Policy, PolicyEndpoint, PolicyInput, PolicyTier } from '../../felix/policy/input.js';
import type { Labels, IPPool, Kind, Resource } from '../resources/index.js';
import { ADMIN_TIER_SPEC, BASELINE_TIER_SPEC } from './admin.js';
import { parsePolicyResource, POLICY_KINDS, type PolicyResourceKind } from './convert.js';
import { type LoweredPolicy, lowerPolicy } from './lower.js';
import { comparePolicies, compareTiers, DEFAULT_TIER_SPEC, type ParsedPolicy, type ParsedTier } from './model.js';
import { natPools } from './pools.js';
import { SelectionMatcher } from './selection.js';
import { SetTable } from './set-table.js';
import { isStagedKind, parseStagedPolicy, STAGED_KINDS, type StagedChange } from './staged.js';
import { namespaceLabels, type Workload, workloadOf } from './workload.js';

interface PolicyEntry {
  readonly parsed: ParsedPolicy;
  readonly lowered: LoweredPolicy;
}

interface LocalEndpoint {
  workload: Workload;
  /** Ids of the policies whose selection holds this endpoint. */
  readonly selectedBy: Set<string>;
  built?: PolicyEndpoint;
}

/** The tiers that are there without a Tier resource, as Calico creates them. */
const FIXED_TIERS: readonly ParsedTier[] = [DEFAULT_TIER_SPEC, ADMIN_TIER_SPEC, BASELINE_TIER_SPEC];
const FIXED_TIER_NAMES: ReadonlySet<string> = new Set(FIXED_TIERS.map((t) => t.name));

/** The kinds the calculation graph follows. */
export const CALCULATION_KINDS: readonly Kind[] = ['Tier', ...POLICY_KINDS, ...STAGED_KINDS, 'Namespace', 'WorkloadEndpoint', 'IPPool'];

export class PolicyCalculator {
  private readonly namespaces = new Map<string, Labels>();
  private readonly workloadMap = new Map<string, Workload>();
  private readonly byNamespace = new Map<string, Set<string>>();
  /** By `<kind> <datastore key>`. */
  private readonly policyMap = new Map<string, PolicyEntry>();
  private readonly policyIds = new Map<string, PolicyEntry>();
  private readonly local = new Map<string, LocalEndpoint>();
  private readonly poolMap = new Map<string, IPPool>();
  /** Tiers by name; the default tier and the admin policies' two are always there. */
  private readonly tierMap = new Map<string, ParsedTier>(FIXED_TIERS.map((t) => [t.name, t]));
  /** Staged policies by `<kind> <datastore key>`: the enforced policy id each one sets or deletes. */
  private readonly stagedMap = new Map<string, string>();
  private readonly matcher = new SelectionMatcher((ns) => this.namespaceLabelsOf(ns));
  private readonly sets = new SetTable(this.matcher);
  private ordered?: PolicyEntry[];
  private ranks?: Map<string, Ranked>;
  private endpointCache?: PolicyEndpoint[];
  private poolCache?: PolicyInput['pools'];
  private last?: PolicyInput;
  /** This node's endpoints (by workload key) and the policies (by id) that may have changed since the last input(). */
  private readonly touchedEndpoints = new Set<string>();
  private readonly touchedPolicies = new Set<string>();
  /** What the last input() handed out, by workload key and by policy id: what an edit says it changed. */
  private readonly givenEndpoints = new Map<string, PolicyEndpoint>();
  private readonly givenPolicies = new Map<string, Policy>();

  /** `nodeName`: whose workloads get a PolicyEndpoint; undefined: every node's (for explain). */
  constructor(readonly nodeName?: string) {}

  /**
   * Takes a created or updated resource. False when the kind is not one policy reads. A
   * resource that cannot be converted throws before anything changes.
   */
  put(r: Resource): boolean {
    const kind = r.kind as string;
    if ((POLICY_KINDS as readonly string[]).includes(kind)) {
      const parsed = parsePolicyResource(r)!;
      this.putPolicy(`${kind} ${keyOf(r.metadata)}`, parsed);
      return true;
    }
    if (isStagedKind(kind)) {
      this.putStaged(`${kind} ${keyOf(r.metadata)}`, parseStagedPolicy(r)!);
      return true;
    }
    if (r.kind === 'Tier') {
      // The fixed tiers cannot change (validation holds them to Calico's order and action).
      if (!FIXED_TIER_NAMES.has(r.metadata.name))
        this.putTier(r.metadata.name, {
          name: r.metadata.name,
          ...(r.spec.order !== undefined ? { order: r.spec.order } : {}),
          defaultAction: r.spec.defaultAction,
        });
      return true;
    }
    if (kind === 'Namespace') {
      this.putNamespace(r.metadata.name, r.metadata.labels);
      return true;
    }
    if (r.kind === 'WorkloadEndpoint') {
      this.putWorkload(workloadOf(r));
      return true;
    }
    if (r.kind === 'IPPool') {
      this.poolMap.set(r.metadata.name, r);
      this.poolCache = undefined;
      return true;
    }
    return false;
  }

  /** Takes a deletion by kind and datastore key (`name`, or `namespace/name`). */
  delete(kind: string, key: string): boolean {
    if ((POLICY_KINDS as readonly string[]).includes(kind)) {
      this.deletePolicy(`${kind} ${key}`);
      return true;
    }
    if (isStagedKind(kind)) {
      this.deletePolicy(`${kind} ${key}`);
      this.stagedMap.delete(`${kind} ${key}`);
      return true;
    }
    if (kind === 'Tier') {
      if (!FIXED_TIER_NAMES.has(key)) this.putTier(key, undefined);
      return true;
    }
    if (kind === 'Namespace') {
      this.putNamespace(key, undefined, true);
      return true;
    }
    if (kind === 'WorkloadEndpoint') {
      this.deleteWorkload(key);
      return true;
    }
    if (kind === 'IPPool') {
      this.poolMap.delete(key);
      this.poolCache = undefined;
      return true;
    }
    return false;
  }

  /** Felix's policy input now; the same object while nothing changed. */
  input(): PolicyInput {
    const sets = this.sets.addressSets();
    const namedPortSets = this.sets.namedPortSets();
    const policies = this.policyList();
    const endpoints = this.endpointList();
    this.poolCache ??= natPools(this.poolMap.values());
    const pools = this.poolCache;
    const l = this.last;
    if (
      l &&
      l.sets === sets &&
      l.namedPortSets === namedPortSets &&
      l.policies === policies &&
      l.endpoints === endpoints &&
      l.pools === pools
    ) {
      return l;
    }
    const next: PolicyInput = { sets, namedPortSets, policies, endpoints, pools };
    const endpointEdit = this.endpointEdit();
    const policyEdit = this.policyEdit();
    // Only members changed: felix redoes the sets that changed, not the table.
    const change =
      l && l.policies === policies && l.endpoints === endpoints && l.pools === pools && this.sets.changeFrom(l.sets, l.namedPortSets);
    if (change) recordInputChange(next, { from: l, ...change });
    else if (l && l.pools === pools) {
      // Endpoints, policies or sets that came or went: felix compiles what they touch.
      const sets = this.sets.editFrom(l.sets, l.namedPortSets);
      if (sets)
        recordInputEdit(next, {
          from: l,
          sets: sets.sets,
          namedPortSets: sets.namedPortSets,
          removedSets: sets.removedSets,
          removedNamedPortSets: sets.removedNamedPortSets,
          ...endpointEdit,
          ...policyEdit,
        });
    }
    this.last = next;
    return next;
  }

  /** This node's endpoints put and (by interface) removed since the last input(); what is handed out now is remembered. */
  private endpointEdit(): { endpoints: PolicyEndpoint[]; removedEndpoints: string[] } {
    const endpoints: PolicyEndpoint[] = [];
    const removedEndpoints: string[] = [];
    for (const key of this.touchedEndpoints) {
      const before = this.givenEndpoints.get(key);
      const now = this.local.get(key)?.built;
      if (before === now) continue;
      if (before && before.iface !== now?.iface) removedEndpoints.push(before.iface);
      if (now) {
        endpoints.push(now);
        this.givenEndpoints.set(key, now);
      } else this.givenEndpoints.delete(key);
    }
    this.touchedEndpoints.clear();
    return { endpoints, removedEndpoints };
  }

  /** The policies put and (by id) removed since the last input(). */
  private policyEdit(): { policies: Policy[]; removedPolicies: string[] } {
    const policies: Policy[] = [];
    const removedPolicies: string[] = [];
    for (const id of this.touchedPolicies) {
      const before = this.givenPolicies.get(id);
      const now = this.policyIds.get(id)?.lowered.policy;
      if (before === now) continue;
      if (now) {
        policies.push(now);
        this.givenPolicies.set(id, now);
      } else {
        removedPolicies.push(id);
        this.givenPolicies.delete(id);
      }
    }
    this.touchedPolicies.clear();
    return { policies, removedPolicies };
  }

  /** A tier by name: a Tier resource's, the default one, or for a tier no Tier names, one that denies and sorts last. */
  tier(name: string): ParsedTier {
    return this.tierMap.get(name) ?? { name, defaultAction: 'Deny' };
  }

  /** The parsed policies in evaluation order (tier, then order). */
  parsedPolicies(): readonly ParsedPolicy[] {
    return this.orderedPolicies().map((e) => e.parsed);
  }

  /** The enforced policy ids some staged policy sets or deletes: those "as if" leaves out. Empty when nothing is staged. */
  stagedReplaced(): ReadonlySet<string> {
    return new Set(this.stagedMap.values());
  }

  /** Whether any staged policy is held. */
  get hasStaged(): boolean {
    return this.stagedMap.size > 0;
  }

  workloads(): ReadonlyMap<string, Workload> {
    return this.workloadMap;
  }

  namespaceLabelsOf(name: string): Labels {
    return this.namespaces.get(name) ?? namespaceLabels(name);
  }

  /** A policy's parsed and lowered forms, by policy id. */
  policy(id: string): { readonly parsed: ParsedPolicy; readonly lowered: LoweredPolicy } | undefined {
    return this.policyIds.get(id);
  }

  /** The PolicyEndpoint of one of this node's workloads, by WorkloadEndpoint key. */
  endpoint(key: string): PolicyEndpoint | undefined {
    const l = this.local.get(key);
    if (!l) return undefined;
    l.built ??= endpointOf(l, this.rank(), (t) => this.tier(t));
    return l.built;
  }

  /** Whether a workload is in a selection, as the sets see it. */
  get selections(): SelectionMatcher {
    return this.matcher;
  }

  private putPolicy(mapKey: string, parsed: ParsedPolicy): void {
    const lowered = lowerPolicy(parsed);
    // Every selector compiles before anything changes, so a bad one leaves the old state whole.
    this.matcher.selector(parsed.selection.selector);
    if (parsed.selection.namespaces.kind === 'selector') this.matcher.selector(parsed.selection.namespaces.selector);
    for (const spec of lowered.sets.values()) {
      const selections = spec.kind === 'selection' ? [spec.selection] : spec.kind === 'namedPorts' ? spec.within : [];
      for (const s of selections) {
        this.matcher.selector(s.selector);
        if (s.namespaces.kind === 'selector') this.matcher.selector(s.namespaces.selector);
      }
    }
    const other = this.policyIds.get(parsed.id);
    if (other && other !== this.policyMap.get(mapKey)) throw new Error(`policy id ${parsed.id} is already taken`);
    const entry: PolicyEntry = { parsed, lowered };
    this.touchedPolicies.add(parsed.id);
    for (const [id, spec] of lowered.sets) this.sets.ref(id, spec, this.workloadsIn);
    const old = this.policyMap.get(mapKey);
    if (old) this.dropPolicy(old);
    this.policyMap.set(mapKey, entry);
    this.policyIds.set(parsed.id, entry);
    for (const l of this.local.values()) {
      if (this.matcher.matches(parsed.selection, l.workload)) {
        l.selectedBy.add(parsed.id);
        this.endpointChanged(l);
      }
    }
    this.placePolicy(old, entry);
  }

  /**
   * A policy put keeps its place in the evaluation order when its tier, order and tie keys are
   * those of the one it replaces: the order is then the last one with that entry replaced, not
   * sorted again (a rule edited is most policy changes).
   */
  private placePolicy(old: PolicyEntry | undefined, entry: PolicyEntry): void {
    const ranked = old && this.ordered && this.ranks?.get(old.parsed.id);
    const a = old?.parsed;
    const b = entry.parsed;
    if (!ranked || ranked.entry !== old || a!.id !== b.id || a!.tier !== b.tier || a!.order !== b.order || a!.sortKey !== b.sortKey) {
      this.ordered = undefined;
      return;
    }
    const ordered = this.ordered!.slice();
    ordered[ranked.rank] = entry;
    this.ordered = ordered;
    this.ranks!.set(b.id, { rank: ranked.rank, entry });
  }

  /** A staged Set is a policy like the others (marked staged); a staged Delete holds no policy, only what it removes. */
  private putStaged(mapKey: string, change: StagedChange): void {
    if (change.action === 'Set') {
      this.putPolicy(mapKey, change.parsed);
      this.stagedMap.set(mapKey, change.parsed.staged!.replaces);
    } else {
      this.deletePolicy(mapKey);
      this.stagedMap.set(mapKey, change.replaces);
    }
  }

  private deletePolicy(mapKey: string): void {
    const old = this.policyMap.get(mapKey);
    if (!old) return;
    this.dropPolicy(old);
    this.policyMap.delete(mapKey);
    this.ordered = undefined;
  }

  /** Takes a policy out: its sets' references, and its place under the endpoints it selected. */
  private dropPolicy(old: PolicyEntry): void {
    for (const id of old.lowered.sets.keys()) this.sets.unref(id);
    this.policyIds.delete(old.parsed.id);
    this.touchedPolicies.add(old.parsed.id);
    for (const l of this.local.values()) if (l.selectedBy.delete(old.parsed.id)) this.endpointChanged(l);
  }

  /**
   * An endpoint's tiers depend only on the policies that select it and their order among
   * themselves, so a policy change rebuilds the endpoints it selected or selects, no other.
   */
  private endpointChanged(l: LocalEndpoint): void {
    l.built = undefined;
    this.touchedEndpoints.add(l.workload.key);
    this.endpointCache = undefined;
  }

  private putTier(name: string, tier: ParsedTier | undefined): void {
    if (tier) this.tierMap.set(name, tier);
    else this.tierMap.delete(name);
    // Every endpoint's tiers follow the tiers' order and their default actions.
    this.ordered = undefined;
    for (const l of this.local.values()) this.endpointChanged(l);
  }

  private putNamespace(name: string, labels: Readonly<Record<string, string>> | undefined, deleted = false): void {
    if (deleted) this.namespaces.delete(name);
    else this.namespaces.set(name, namespaceLabels(name, labels));
    for (const key of this.byNamespace.get(name) ?? []) this.placeWorkload(this.workloadMap.get(key)!);
  }

  private putWorkload(w: Workload): void {
    const old = this.workloadMap.get(w.key);
    if (old && old.namespace !== w.namespace) this.byNamespace.get(old.namespace)?.delete(w.key);
    this.workloadMap.set(w.key, w);
    let inNs = this.byNamespace.get(w.namespace);
    if (!inNs) this.byNamespace.set(w.namespace, (inNs = new Set()));
    inNs.add(w.key);
    this.placeWorkload(w);
  }

  private deleteWorkload(key: string): void {
    const old = this.workloadMap.get(key);
    if (!old) return;
    this.workloadMap.delete(key);
    this.byNamespace.get(old.namespace)?.delete(key);
    this.sets.deleteWorkload(key);
    if (this.local.delete(key)) {
      this.endpointCache = undefined;
      this.touchedEndpoints.add(key);
    }
  }

  /** Re-places one endpoint: in the sets, and (when it is this node's) under the policies. */
  private placeWorkload(w: Workload): void {
    this.sets.putWorkload(w);
    const isLocal = this.nodeName === undefined || w.node === this.nodeName;
    if (!isLocal) {
      if (this.local.delete(w.key)) {
        this.endpointCache = undefined;
        this.touchedEndpoints.add(w.key);
      }
      return;
    }
    const selectedBy = new Set<string>();
    for (const e of this.policyMap.values()) if (this.matcher.matches(e.parsed.selection, w)) selectedBy.add(e.parsed.id);
    this.local.set(w.key, { workload: w, selectedBy });
    this.endpointCache = undefined;
    this.touchedEndpoints.add(w.key);
  }

  private orderedPolicies(): PolicyEntry[] {
    if (!this.ordered) {
      // A tier no Tier resource names sorts after every tier that one does, as Calico's felix sorts an invalid tier.
      const known = (t: string): number => (this.tierMap.has(t) ? 0 : 1);
      this.ordered = [...this.policyMap.values()].sort((a, b) => {
        const ta = a.parsed.tier;
        const tb = b.parsed.tier;
        if (ta !== tb) return known(ta) - known(tb) || compareTiers(this.tier(ta), this.tier(tb));
        return comparePolicies(a.parsed, b.parsed);
      });
      this.ranks = new Map(this.ordered.map((e, i) => [e.parsed.id, { rank: i, entry: e }]));
    }
    return this.ordered;
  }

  /** Each policy's place in the evaluation order, by id. */
  private rank(): ReadonlyMap<string, Ranked> {
    this.orderedPolicies();
    return this.ranks!;
  }

  /** The endpoints of one namespace, or of all: what a new set is filled from. */
  private readonly workloadsIn = (namespace: string | undefined): Iterable<Workload> => {
    if (namespace === undefined) return this.workloadMap.values();
    return [...(this.byNamespace.get(namespace) ?? [])].map((key) => this.workloadMap.get(key)!);
  };

  private policyListCache?: { from: PolicyEntry[]; list: PolicyInput['policies'] };

  private policyList(): PolicyInput['policies'] {
    const ordered = this.orderedPolicies();
    if (this.policyListCache?.from !== ordered) this.policyListCache = { from: ordered, list: ordered.map((e) => e.lowered.policy) };
    return this.policyListCache.list;
  }

  private endpointList(): PolicyEndpoint[] {
    if (this.endpointCache) return this.endpointCache;
    const rank = this.rank();
    const list = [...this.local.values()].map((l) => {
      l.built ??= endpointOf(l, rank, (t) => this.tier(t));
      return l.built;
    });
    this.endpointCache = list.sort((a, b) => (a.iface < b.iface ? -1 : a.iface > b.iface ? 1 : 0));
    return this.endpointCache;
  }
}

interface Ranked {
  readonly rank: number;
  readonly entry: PolicyEntry;
}

/**
 * An endpoint's tiers per direction: the selecting policies of that direction, grouped by tier in
 * the evaluation order, each tier with its default action; a tier with none of them is left out.
 */
function endpointOf(l: LocalEndpoint, rank: ReadonlyMap<string, Ranked>, tierOf: (name: string) => ParsedTier): PolicyEndpoint {
  const selecting = [...l.selectedBy].map((id) => rank.get(id)!).sort((a, b) => a.rank - b.rank);
  const tiers = (direction: 'ingress' | 'egress'): PolicyTier[] => {
    const out: { name: string; policies: string[] }[] = [];
    for (const r of selecting) {
      if (r.entry.parsed[direction] === undefined) continue;
      const last = out[out.length - 1];
      if (last?.name === r.entry.parsed.tier) last.policies.push(r.entry.parsed.id);
      else out.push({ name: r.entry.parsed.tier, policies: [r.entry.parsed.id] });
    }
    return out.map((t) => ({ ...t, defaultAction: tierOf(t.name).defaultAction }));
  };
  return { iface: l.workload.iface, addresses: l.workload.addresses, ingress: tiers('ingress'), egress: tiers('egress') };
}

function keyOf(m: { name: string; namespace?: string }): string {
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

export type { PolicyResourceKind };
