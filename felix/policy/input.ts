// What the node agent tells felix about policy and NAT. Like the routes' FelixInput it is plain
// data, but already resolved: the agent's calculation graph has matched every selector against
// the cluster's endpoints and namespaces and turned every rule into matches on named sets, so
// felix needs no label logic. When a pod comes or goes only set members change, and felix turns
// that into set element updates, never a rule rewrite.
//
// Semantics (Calico's, which Kubernetes NetworkPolicy maps onto):
// - An endpoint's traffic in one direction runs through its tiers in order. In a tier, the
//   policies that select the endpoint run in order, and in a policy its rules in order: the
//   first Allow or Deny decides; Pass leaves the tier and goes on to the next one; Log logs and
//   goes on; a policy none of whose rules matched hands the packet to the next policy of the
//   tier. A tier in which nothing decided applies its default action: Deny (the default) drops
//   the packet, Pass goes on to the next tier. An endpoint with no tier in a direction, or that
//   passed through every tier, is allowed (what a Kubernetes pod's namespace profile does).
// - Replies of allowed connections always pass (conntrack).
// - Traffic from a pool with natOutgoing to an address outside every pool is masqueraded to
//   the node's address; pod to pod is never NATed.

export type Protocol = 'tcp' | 'udp' | 'sctp' | 'icmp' | 'icmpv6' | number;

/** A port or an inclusive range of ports. */
export interface PortRange {
  readonly first: number;
  readonly last: number;
}

/**
 * Addresses and networks that rules refer to by id: a selector's members, a rule's nets. Both
 * families may be mixed; felix keeps one kernel set per family. Members are CIDRs or bare
 * addresses (a host).
 */
export interface AddressSet {
  readonly id: string;
  readonly members: readonly string[];
  /**
   * Every member is a single address (a selector's endpoints): the set needs no interval flag,
   * which keeps nft from reading it back before every element change. A network is refused.
   */
  readonly hosts?: boolean;
}

/** (address, protocol, port) of every endpoint that names a port: how named ports are matched. */
export interface NamedPortSet {
  readonly id: string;
  readonly members: readonly { readonly address: string; readonly protocol: 'tcp' | 'udp' | 'sctp'; readonly port: number }[];
}

/**
 * What one rule matches: everything given must hold (AND). Within a list of sets a packet must
 * be in every set (AND: a pod selector and a namespace selector together); in a `not…` list,
 * in none of them. A list of ports matches any of its ranges. A disjunction is several rules.
 */
export interface RuleMatch {
  readonly ipVersion?: 4 | 6;
  readonly protocol?: Protocol;
  readonly notProtocol?: Protocol;
  readonly srcSets?: readonly string[];
  readonly notSrcSets?: readonly string[];
  readonly srcPorts?: readonly PortRange[];
  readonly notSrcPorts?: readonly PortRange[];
  readonly dstSets?: readonly string[];
  readonly notDstSets?: readonly string[];
  readonly dstPorts?: readonly PortRange[];
  readonly notDstPorts?: readonly PortRange[];
  /** The destination (address, protocol, port) is in this NamedPortSet. */
  readonly dstNamedPorts?: string;
  readonly icmp?: { readonly type: number; readonly code?: number };
  readonly notIcmp?: { readonly type: number; readonly code?: number };
}

export type RuleAction = 'Allow' | 'Deny' | 'Pass' | 'Log';

export interface PolicyRule {
  readonly action: RuleAction;
  readonly match: RuleMatch;
}

export interface Policy {
  /** Unique and stable: names the policy in chains and counters, e.g. "knp.default.allow-web". */
  readonly id: string;
  /** Absent: the policy does not apply to ingress. Present and empty: it isolates, allowing nothing. */
  readonly ingress?: readonly PolicyRule[];
  readonly egress?: readonly PolicyRule[];
  /**
   * A staged policy: it only counts. Endpoints name it where it would run, and each of its rules
   * counts the packets it would have been the first of the policy to match; it never decides
   * (no verdict, no Pass), so no packet's fate changes, and a tier that names only staged
   * policies for an endpoint is no tier for it (no default action).
   */
  readonly staged?: true;
}

/** What a tier does with a packet that none of its policies decided. */
export type TierDefaultAction = 'Deny' | 'Pass';

/** One tier of an endpoint's policy, in one direction: its name, the policies that select it in order, and its end. */
export interface PolicyTier {
  /** Names the tier in counters (`<iface>/<in|out>/tier/<name>`) and explanations. */
  readonly name: string;
  readonly policies: readonly string[];
  /** Absent: Deny. */
  readonly defaultAction?: TierDefaultAction;
}

/**
 * A tier: a PolicyTier, or just its policies in order (an unnamed tier that ends in Deny, as
 * every tier did before tiers had names).
 */
export type TierPolicies = readonly string[] | PolicyTier;

/** Any TierPolicies as a PolicyTier; an unnamed tier has the name "". */
export function policyTier(t: TierPolicies): PolicyTier {
  return isPolicyList(t) ? { name: '', policies: t } : t;
}

function isPolicyList(t: TierPolicies): t is readonly string[] {
  return Array.isArray(t);
}

export interface PolicyEndpoint {
  /** Host side of the pod's veth, e.g. "cali1a2b3c4d5e6". */
  readonly iface: string;
  /** The pod's addresses. */
  readonly addresses: readonly string[];
  /** Ingress (to the pod): its tiers in order, each the ids of the policies that apply. */
  readonly ingress: readonly TierPolicies[];
  /** Egress (from the pod). */
  readonly egress: readonly TierPolicies[];
}

export interface NatPool {
  readonly cidr: string;
  readonly natOutgoing: boolean;
}

export interface PolicyInput {
  readonly sets: readonly AddressSet[];
  readonly namedPortSets: readonly NamedPortSet[];
  readonly policies: readonly Policy[];
  /** This node's workloads only. */
  readonly endpoints: readonly PolicyEndpoint[];
  /** Every IP pool of the cluster, so that "outside every pool" is known. */
  readonly pools: readonly NatPool[];
}

export const EMPTY_POLICY_INPUT: PolicyInput = { sets: [], namedPortSets: [], policies: [], endpoints: [], pools: [] };
