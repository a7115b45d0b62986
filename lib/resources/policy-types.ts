// The policy kinds and what they select on, in the shapes their users write: Kubernetes
// networking.k8s.io/v1 NetworkPolicy and v1 Namespace, Calico projectcalico.org/v3
// NetworkPolicy and GlobalNetworkPolicy. What validation returns: defaults filled in
// (policyTypes, types, protocol TCP), everything else as written.

export const API_VERSION_K8S_NETWORKING = 'networking.k8s.io/v1';
export const API_VERSION_K8S_CORE = 'v1';

export type PolicyType = 'Ingress' | 'Egress';

// ---- Kubernetes ----

export type LabelSelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

export interface LabelSelectorRequirement {
  key: string;
  operator: LabelSelectorOperator;
  /** Non-empty for In and NotIn, absent for Exists and DoesNotExist. */
  values?: string[];
}

/** Every matchLabels pair and every expression must hold; `{}` selects everything. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface IPBlock {
  /** As written: Kubernetes accepts host bits (10.0.0.1/24 means 10.0.0.0/24). */
  cidr: string;
  /** Each strictly inside cidr. */
  except?: string[];
}

/**
 * One peer. ipBlock alone, or one or both selectors: podSelector alone means pods of the
 * policy's namespace; namespaceSelector alone, every pod of the selected namespaces; both,
 * pods matching podSelector inside the namespaces matching namespaceSelector (AND).
 */
export interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: IPBlock;
}

export type KubernetesProtocol = 'TCP' | 'UDP' | 'SCTP';

export interface NetworkPolicyPort {
  /** Defaulted to TCP. */
  protocol: KubernetesProtocol;
  /** A number, or the name of a port in the pod's WorkloadEndpoint `spec.ports`. Absent: every port. */
  port?: number | string;
  /** With a numeric port only: the range port..endPort. */
  endPort?: number;
}

/** `from` absent or empty: every source. `ports` absent or empty: every port. */
export interface NetworkPolicyIngressRule {
  ports?: NetworkPolicyPort[];
  from?: NetworkPolicyPeer[];
}

export interface NetworkPolicyEgressRule {
  ports?: NetworkPolicyPort[];
  to?: NetworkPolicyPeer[];
}

/**
 * Stored under kind KubernetesNetworkPolicy (Calico has a NetworkPolicy kind of its own) and
 * printed back as networking.k8s.io/v1 NetworkPolicy.
 */
export interface KubernetesNetworkPolicySpec {
  /** Pods of the policy's namespace it applies to; `{}` (the default) is all of them. */
  podSelector: LabelSelector;
  /** Defaulted when omitted: Ingress, plus Egress when there are egress rules. */
  policyTypes: PolicyType[];
  ingress?: NetworkPolicyIngressRule[];
  egress?: NetworkPolicyEgressRule[];
}

/** A Namespace has no spec we use; its labels are what namespaceSelectors match. */
export type NamespaceSpec = Record<string, never>;

/** Set on every Namespace when it is written, as the Kubernetes API server does. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

// ---- Calico ----

export type CalicoAction = 'Allow' | 'Deny' | 'Pass' | 'Log';

/** Names in Calico's spelling, or an IP protocol number 1-255. */
export type CalicoProtocol = 'TCP' | 'UDP' | 'ICMP' | 'ICMPv6' | 'SCTP' | 'UDPLite' | number;

/** A port number, a range "first:last", or a named port (the WorkloadEndpoint's spec.ports). */
export type CalicoPort = number | string;

export interface ICMPFields {
  type?: number;
  /** Only with type. */
  code?: number;
}

/** Calico's EntityRule: every field given must hold. */
export interface EntityRule {
  /** CIDRs or addresses, as written; any of them matches. */
  nets?: string[];
  notNets?: string[];
  /** Calico selector over endpoint labels. */
  selector?: string;
  notSelector?: string;
  /** Calico selector over namespace labels (global() allowed). */
  namespaceSelector?: string;
  ports?: CalicoPort[];
  notPorts?: CalicoPort[];
}

export interface CalicoRule {
  action: CalicoAction;
  ipVersion?: 4 | 6;
  protocol?: CalicoProtocol;
  notProtocol?: CalicoProtocol;
  icmp?: ICMPFields;
  notICMP?: ICMPFields;
  source?: EntityRule;
  destination?: EntityRule;
  metadata?: { annotations?: Record<string, string> };
}

/** projectcalico.org/v3 NetworkPolicy: namespaced, applies to endpoints of its namespace. */
export interface CalicoNetworkPolicySpec {
  /** The Tier the policy belongs to; absent: `default`. The name need not carry it (as Calico 3.31). */
  tier?: string;
  /** Lower first within its tier; absent after every ordered policy. */
  order?: number;
  /** Absent or empty: all(). */
  selector?: string;
  /**
   * Defaulted when omitted, as Calico does: Ingress and Egress when both kinds of rule are
   * present, Egress when only egress rules are, else Ingress.
   */
  types: PolicyType[];
  ingress?: CalicoRule[];
  egress?: CalicoRule[];
}

/** What a tier does with traffic that a policy of it selects and no rule of the tier decides. */
export type TierDefaultAction = 'Deny' | 'Pass';

/** projectcalico.org/v3 Tier: an ordered group of Calico policies (cluster-wide). */
export interface TierSpec {
  /** Lower first; absent after every ordered tier; ties by name. The default tier's is 1000000. */
  order?: number;
  /** Defaulted to Deny, as Calico does. */
  defaultAction: TierDefaultAction;
}

/** projectcalico.org/v3 GlobalNetworkPolicy: cluster-wide, optionally limited to namespaces by label. */
export interface GlobalNetworkPolicySpec extends CalicoNetworkPolicySpec {
  /** Calico selector over namespace labels: only endpoints in matching namespaces. */
  namespaceSelector?: string;
}

/** A named port of a workload, as Calico's WorkloadEndpoint carries its pod's container ports. */
export interface WorkloadEndpointPort {
  name: string;
  protocol: KubernetesProtocol;
  port: number;
}

/** Labels Calico sets on every WorkloadEndpoint besides the pod's own. */
export const LABEL_NAMESPACE = 'projectcalico.org/namespace';
export const LABEL_ORCHESTRATOR = 'projectcalico.org/orchestrator';
