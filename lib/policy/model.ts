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

/**
 * Calico's own policies come first, in `order`; Kubernetes NetworkPolicies after, in a tier of
 * their own, as Calico places its `knp.default.*` conversions after the policies users write.
 */
export type TierName = 'calico' | 'kubernetes';
export const TIER_ORDER: readonly TierName[] = ['calico', 'kubernetes'];

export type PolicyKind = 'NetworkPolicy' | 'GlobalNetworkPolicy' | 'KubernetesNetworkPolicy';

export interface ParsedPolicy {
  /** Unique and stable: `knp.default.<namespace>.<name>`, `np.<namespace>.<name>`, `gnp.<name>`. */
  readonly id: string;
  readonly kind: PolicyKind;
  readonly name: string;
  readonly namespace?: string;
  readonly tier: TierName;
  /** Lower first; absent sorts after every ordered policy, as in Calico. */
  readonly order?: number;
  /** The endpoints the policy applies to. */
  readonly selection: EndpointSelection;
  /** Absent: not an ingress policy. Present and empty: isolates, allowing nothing. */
  readonly ingress?: readonly ParsedRule[];
  readonly egress?: readonly ParsedRule[];
}

/**
 * Calico's policy order: by `order` (missing last), then by name qualified by namespace
 * (`namespace/name`, a global policy's as `/name`, as Calico keys namespaced policies by
 * namespace), then by id so the order is total.
 */
export function comparePolicies(a: ParsedPolicy, b: ParsedPolicy): number {
  const ta = TIER_ORDER.indexOf(a.tier);
  const tb = TIER_ORDER.indexOf(b.tier);
  if (ta !== tb) return ta - tb;
  const oa = a.order ?? Number.POSITIVE_INFINITY;
  const ob = b.order ?? Number.POSITIVE_INFINITY;
  if (oa !== ob) return oa < ob ? -1 : 1;
  const na = `${a.namespace ?? ''}/${a.name}`;
  const nb = `${b.namespace ?? ''}/${b.name}`;
  if (na !== nb) return na < nb ? -1 : 1;
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
