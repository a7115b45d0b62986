// Kubernetes' policy.networking.k8s.io/v1alpha1 AdminNetworkPolicy and BaselineAdminNetworkPolicy,
// in the shape their users write them: cluster-scoped policies of a cluster's administrators,
// whose rules take an action of their own (Allow, Deny, Pass; the baseline's Allow or Deny).
// What validation returns: protocols defaulted to TCP, everything else as written.
import type { KubernetesProtocol, LabelSelector } from './policy-types.js';

export const API_VERSION_K8S_POLICY = 'policy.networking.k8s.io/v1alpha1';

export type AdminNetworkPolicyRuleAction = 'Allow' | 'Deny' | 'Pass';
export type BaselineAdminNetworkPolicyRuleAction = 'Allow' | 'Deny';

/** Pods matching podSelector inside the namespaces matching namespaceSelector (both required; `{}` is every one). */
export interface NamespacedPod {
  namespaceSelector: LabelSelector;
  podSelector: LabelSelector;
}

/** Exactly one field: every pod of the namespaces, or the pods chosen by both selectors. */
export interface AdminNetworkPolicySubject {
  namespaces?: LabelSelector;
  pods?: NamespacedPod;
}

/** Exactly one field. A named port is looked up on the destination pod; protocols default to TCP. */
export interface AdminNetworkPolicyPort {
  portNumber?: { protocol: KubernetesProtocol; port: number };
  namedPort?: string;
  portRange?: { protocol: KubernetesProtocol; start: number; end: number };
}

/** Exactly one field. */
export interface AdminNetworkPolicyIngressPeer {
  namespaces?: LabelSelector;
  pods?: NamespacedPod;
}

/** Exactly one field; `networks` are CIDRs as written (host bits allowed). */
export interface AdminNetworkPolicyEgressPeer extends AdminNetworkPolicyIngressPeer {
  networks?: string[];
}

export interface AdminNetworkPolicyIngressRule<A extends string = AdminNetworkPolicyRuleAction> {
  /** At most 100 characters; names the rule, nothing else. */
  name?: string;
  action: A;
  from: AdminNetworkPolicyIngressPeer[];
  /** Absent: every port. */
  ports?: AdminNetworkPolicyPort[];
}

export interface AdminNetworkPolicyEgressRule<A extends string = AdminNetworkPolicyRuleAction> {
  name?: string;
  action: A;
  to: AdminNetworkPolicyEgressPeer[];
  ports?: AdminNetworkPolicyPort[];
}

export interface AdminNetworkPolicySpec {
  /** 0 (first) to 1000. */
  priority: number;
  subject: AdminNetworkPolicySubject;
  ingress?: AdminNetworkPolicyIngressRule[];
  egress?: AdminNetworkPolicyEgressRule[];
}

/** The cluster's one BaselineAdminNetworkPolicy, named `default`. */
export interface BaselineAdminNetworkPolicySpec {
  subject: AdminNetworkPolicySubject;
  ingress?: AdminNetworkPolicyIngressRule<BaselineAdminNetworkPolicyRuleAction>[];
  egress?: AdminNetworkPolicyEgressRule<BaselineAdminNetworkPolicyRuleAction>[];
}
