// A BGPPeer's BGPFilters as the speaker's import and export policies, with Calico's semantics:
// the filters run in the order the peer names them, each rule of a filter in its order; the
// first rule that matches a route decides (Accept or Reject), a filter none of whose rules
// match hands the route to the next, and a route no rule decides gets the default: accepted on
// import, and on export what podroute sends that peer anyway (as Calico's filter functions run
// before its own export filter). Rules read the route's family list (V4 or V6) only.
import type { PolicyFunction, PolicyRoute } from '../../bgp/index.js';
import { cidrContains, familyBits, parseCidr, type Cidr } from '../../ip/index.js';
import type { BGPFilterRule, BGPFilterSpec } from '../resources/index.js';

/** One rule, ready to test a route: its prefix test (none: any prefix) and whether only peers' routes count. */
interface CompiledRule {
  prefix: ((p: Cidr) => boolean) | undefined;
  remotePeers: boolean;
  accept: boolean;
}

export interface FilterPolicies {
  importPolicy: PolicyFunction | undefined;
  exportPolicy: PolicyFunction | undefined;
}

/** Whether a rule's CIDR match holds for a prefix (the rule's matchOperator and prefixLength). */
export function cidrMatch(rule: Pick<BGPFilterRule, 'cidr' | 'matchOperator' | 'prefixLength'>): (p: Cidr) => boolean {
  if (rule.cidr === undefined) return () => true;
  const net = parseCidr(rule.cidr, 'cidr', false);
  const longest = familyBits(net.family);
  // Calico's prefix set: from the CIDR's length (or min, if longer) up to the family's longest (or max).
  const lo = Math.max(net.prefixLength, rule.prefixLength?.min ?? 0);
  const hi = Math.min(longest, rule.prefixLength?.max ?? longest);
  const inside = (p: Cidr) => p.prefixLength >= lo && p.prefixLength <= hi && cidrContains(net, p);
  const equal = (p: Cidr) => p.prefixLength === net.prefixLength && cidrContains(net, p);
  switch (rule.matchOperator ?? 'In') {
    case 'In':
      return inside;
    case 'NotIn':
      return (p) => !inside(p);
    case 'Equal':
      return equal;
    case 'NotEqual':
      return (p) => !equal(p);
  }
}

function compile(rules: readonly BGPFilterRule[]): CompiledRule[] {
  return rules.map((r) => ({
    prefix: r.cidr === undefined ? undefined : cidrMatch(r),
    remotePeers: r.source === 'RemotePeers',
    accept: r.action === 'Accept',
  }));
}

/** The decision of the rules for a route, or undefined when none matches. */
function decide(lists: readonly CompiledRule[][], route: PolicyRoute): boolean | undefined {
  let prefix: Cidr | undefined;
  for (const rules of lists) {
    for (const r of rules) {
      if (r.remotePeers && route.neighbor === undefined) continue;
      if (r.prefix !== undefined && !r.prefix((prefix ??= parseCidr(route.prefix, 'prefix', false)))) continue;
      return r.accept;
    }
  }
  return undefined;
}

type Direction = 'import' | 'export';

/** The lists of one direction per family, in the filters' order; undefined when no filter has one. */
function listsOf(filters: readonly BGPFilterSpec[], direction: Direction): { v4: CompiledRule[][]; v6: CompiledRule[][] } | undefined {
  const v4 = filters.flatMap((f) => (f[`${direction}V4`]?.length ? [compile(f[`${direction}V4`]!)] : []));
  const v6 = filters.flatMap((f) => (f[`${direction}V6`]?.length ? [compile(f[`${direction}V6`]!)] : []));
  return v4.length === 0 && v6.length === 0 ? undefined : { v4, v6 };
}

/**
 * The policies of a peer whose filters are `filters` (their specs, in the peer's order).
 * `exportDefault`: what the peer is sent when no rule decides (undefined: everything).
 */
export function filterPolicies(filters: readonly BGPFilterSpec[], exportDefault?: PolicyFunction): FilterPolicies {
  const imports = listsOf(filters, 'import');
  const exports = listsOf(filters, 'export');
  return {
    importPolicy: imports && ((route) => decide(route.family === 'ipv6-unicast' ? imports.v6 : imports.v4, route) ?? true),
    exportPolicy: exports
      ? (route) => decide(route.family === 'ipv6-unicast' ? exports.v6 : exports.v4, route) ?? (exportDefault ? exportDefault(route) : true)
      : exportDefault,
  };
}

/**
 * The policies of every peer, made once per distinct set of filters and default: the speaker
 * keeps a peer in the update group of its export policy object, and sends its whole table again
 * when that object changes, so an unchanged filter must give back the same objects.
 */
export class FilterPolicyCache {
  private entries = new Map<string, FilterPolicies>();
  private used = new Map<string, FilterPolicies>();
  private readonly defaults = new Map<PolicyFunction, number>();

  policies(filters: readonly BGPFilterSpec[], exportDefault?: PolicyFunction): FilterPolicies {
    if (filters.length === 0) return { importPolicy: undefined, exportPolicy: exportDefault };
    let d = exportDefault === undefined ? 0 : this.defaults.get(exportDefault);
    if (d === undefined) this.defaults.set(exportDefault!, (d = this.defaults.size + 1));
    const key = `${d} ${JSON.stringify(filters)}`;
    const p = this.used.get(key) ?? this.entries.get(key) ?? filterPolicies(filters, exportDefault);
    this.used.set(key, p);
    return p;
  }

  /** Forgets the policies no peer asked for since the last sweep. */
  sweep(): void {
    this.entries = this.used;
    this.used = new Map();
  }
}
