// The calculation graph's middle form, Calico's "parsed rules": every policy kind (Kubernetes
// NetworkPolicy, Calico NetworkPolicy and GlobalNetworkPolicy) is converted once into this
// shape, where peers are still selectors and not yet addresses. It depends on no endpoint, so a
// pod add never re-converts a policy; the resolution into sets happens after.
import type { PortRange, Protocol, RuleAction } from '../../felix/policy/input.js';

/**
 * The namespaces an endpoint selection looks in: one by name (a namespaced policy's own), those
 * whose labels match a selector (a rule's namespaceSelector), every namespace, or none
 * (Calico's `global()`: the non-namespaced endpoints, of which a podroute cluster has none).
 */
export type NamespaceScope =
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'selector'; readonly selector: string }
  | { readonly kind: 'all' }
  | { readonly kind: 'global' };

/** Endpoints whose labels match `selector` (canonical Calico text) inside `namespaces`. */
export interface EndpointSelection {
  readonly selector: string;
  readonly namespaces: NamespaceScope;
}

/** A named port, resolved per endpoint from its WorkloadEndpoint's `ports`. */
export interface NamedPort {
  readonly name: string;
}

export type PortMatch = PortRange | NamedPort;

export interface IcmpMatch {
  readonly type: number;
  readonly code?: number;
}

/** One side of a rule, as Calico's EntityRule: every field given must hold. */
export interface ParsedRuleSide {
  /** Canonical CIDRs, any of which matches. */
  readonly nets?: readonly string[];
  readonly notNets?: readonly string[];
  readonly selection?: EndpointSelection;
  readonly notSelection?: EndpointSelection;
  readonly ports?: readonly PortMatch[];
  readonly notPorts?: readonly PortMatch[];
}

export interface ParsedRule {
  /** Where in the resource the rule comes from, e.g. `spec.ingress[0].from[1]`. */
  readonly origin: string;
  readonly action: RuleAction;
  readonly ipVersion?: 4 | 6;
  readonly protocol?: Protocol;
  readonly notProtocol?: Protocol;
  readonly icmp?: IcmpMatch;
  readonly notIcmp?: IcmpMatch;
  readonly source: ParsedRuleSide;
  readonly destination: ParsedRuleSide;
}

/** A tier's name: `default` unless a Tier resource and the policy's `spec.tier` say otherwise. */
export type TierName = string;
export type TierDefaultAction = 'Deny' | 'Pass';

/** A tier as the calculation graph orders it: by `order` (absent: last), then by name. */
export interface ParsedTier {
  readonly name: TierName;
  readonly order?: number;
  readonly defaultAction: TierDefaultAction;
}

/** Where every policy without `spec.tier` lives, and every Kubernetes NetworkPolicy. */
export const DEFAULT_TIER = 'default';
/** Calico's order of the default tier: after any tier a user orders below a million. */
export const DEFAULT_TIER_ORDER = 1_000_000;
/** The default tier, always present; a Tier resource named `default` may not change it. */
export const DEFAULT_TIER_SPEC: ParsedTier = { name: DEFAULT_TIER, order: DEFAULT_TIER_ORDER, defaultAction: 'Deny' };
/** The order Calico gives every Kubernetes NetworkPolicy in the default tier. */
export const KUBERNETES_POLICY_ORDER = 1000;

/** Calico's tier order: by `order` (absent after every ordered tier), then by name. */
export function compareTiers(a: ParsedTier, b: ParsedTier): number {
  const oa = a.order ?? Number.POSITIVE_INFINITY;
  const ob = b.order ?? Number.POSITIVE_INFINITY;
  if (oa !== ob) return oa < ob ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

export type PolicyKind =
  | 'NetworkPolicy'
  | 'GlobalNetworkPolicy'
  | 'KubernetesNetworkPolicy'
  | 'AdminNetworkPolicy'
  | 'BaselineAdminNetworkPolicy';

export interface ParsedPolicy {
  /**
   * Unique and stable: `knp.default.<namespace>.<name>`, `np.<namespace>.<name>`, `gnp.<name>`,
   * `kanp.adminnetworkpolicy.<name>`, `kbanp.baselineadminnetworkpolicy.<name>`.
   */
  readonly id: string;
  readonly kind: PolicyKind;
  readonly name: string;
  readonly namespace?: string;
  readonly tier: TierName;
  /** Lower first; absent sorts after every ordered policy, as in Calico. Kubernetes policies: 1000. */
  readonly order?: number;
  /**
   * What Calico breaks ties in order by, built once: `<name>/<namespace>/<kind>`, a Kubernetes
   * policy's name being `knp.default.<name>` (policyTieKey).
   */
  readonly sortKey: string;
  /** The endpoints the policy applies to. */
  readonly selection: EndpointSelection;
  /** Absent: not an ingress policy. Present and empty: isolates, allowing nothing. */
  readonly ingress?: readonly ParsedRule[];
  readonly egress?: readonly ParsedRule[];
  /**
   * A staged Set (staged.ts): evaluated beside the enforced policies without deciding, in the
   * place of the enforced policy `replaces` names (which need not exist).
   */
  readonly staged?: { readonly replaces: string };
}

/**
 * Calico's policy order within a tier: by `order` (missing last), then as Calico's felix breaks
 * ties, by `<name>/<namespace>/<kind>` (a Kubernetes policy's name being `knp.default.<name>`),
 * then by id so the order is total.
 */
/** A policy's tie key in order: Calico's felix sorts equal orders by name, then namespace, then kind. */
export function policyTieKey(name: string, namespace: string | undefined, kind: PolicyKind): string {
  return `${name}/${namespace ?? ''}/${kind}`;
}

export function comparePolicies(a: ParsedPolicy, b: ParsedPolicy): number {
  const oa = a.order ?? Number.POSITIVE_INFINITY;
  const ob = b.order ?? Number.POSITIVE_INFINITY;
  if (oa !== ob) return oa < ob ? -1 : 1;
  if (a.sortKey !== b.sortKey) return a.sortKey < b.sortKey ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export class PolicyConversionError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'PolicyConversionError';
  }
}
