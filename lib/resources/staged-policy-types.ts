// Calico's staged policies (projectcalico.org/v3 StagedNetworkPolicy, StagedGlobalNetworkPolicy,
// StagedKubernetesNetworkPolicy): the spec of the policy they preview plus `stagedAction`. A
// staged Set previews the policy as written (replacing an enforced one of the same kind and
// name, or added beside the others); a staged Delete previews that enforced policy gone, and
// carries nothing but the action (and, for the Calico kinds, the tier).
import type { CalicoNetworkPolicySpec, GlobalNetworkPolicySpec, KubernetesNetworkPolicySpec } from './policy-types.js';

export type StagedAction = 'Set' | 'Delete';

export interface StagedDelete {
  stagedAction: 'Delete';
  /** The tier of the policy it removes; absent: default. */
  tier?: string;
}

export type StagedNetworkPolicySpec = (CalicoNetworkPolicySpec & { stagedAction: 'Set' }) | StagedDelete;
export type StagedGlobalNetworkPolicySpec = (GlobalNetworkPolicySpec & { stagedAction: 'Set' }) | StagedDelete;
export type StagedKubernetesNetworkPolicySpec = (KubernetesNetworkPolicySpec & { stagedAction: 'Set' }) | { stagedAction: 'Delete' };
