// The staged notion for the reference evaluator, written from Calico's staged policy documentation
// (never from lib/policy or felix/policy, which it checks):
// - [staged-preview] Staged network policy reference: a staged policy's rules "are used to preview
//   network behavior and do not enforce network traffic". So the enforced verdict is computed
//   without them: calicoAllows over the enforced policies alone.
// - [staged-set] A staged policy with stagedAction Set (the default) previews the policy it stages
//   as enforced: the enforced policy of the same kind (StagedNetworkPolicy: NetworkPolicy,
//   StagedGlobalNetworkPolicy: GlobalNetworkPolicy, StagedKubernetesNetworkPolicy: Kubernetes
//   NetworkPolicy) and the same namespace and name is replaced by it; with none, it is added.
// - [staged-delete] stagedAction Delete previews that enforced policy deleted.
// - [staged-tier] A staged policy has the tier and order of the policy it stages, so "as if" is
//   the ordinary evaluation (reference-calico.ts) over the policies as they would be.
import type { Model, NetworkPolicy, Probe } from './model.js';
import { type CalicoPolicy, type ClusterPolicies, calicoTruthTable } from './reference-calico.js';
import type { TruthTable } from './truth-table.js';

export type StagedAction = 'Set' | 'Delete';

export interface StagedCalicoPolicy {
  readonly apiVersion: 'projectcalico.org/v3';
  readonly kind: 'StagedNetworkPolicy' | 'StagedGlobalNetworkPolicy';
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly spec: CalicoPolicy['spec'] & { readonly stagedAction?: StagedAction };
}

export interface StagedKubernetesPolicy {
  readonly apiVersion: 'projectcalico.org/v3';
  readonly kind: 'StagedKubernetesNetworkPolicy';
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec: (NetworkPolicy['spec'] & { readonly stagedAction?: 'Set' }) | { readonly stagedAction: 'Delete' };
}

export type StagedPolicy = StagedCalicoPolicy | StagedKubernetesPolicy;

const sameName = (a: { name: string; namespace?: string }, b: { name: string; namespace?: string }): boolean =>
  a.name === b.name && (a.namespace ?? '') === (b.namespace ?? '');

/** The cluster's policies as if the staged ones were enforced ([staged-set], [staged-delete], [staged-tier]). */
export function asIfEnforced(policies: ClusterPolicies, staged: readonly StagedPolicy[]): ClusterPolicies {
  let calico = [...policies.calico];
  let kubernetes = [...policies.kubernetes];
  for (const s of staged) {
    const { stagedAction, ...spec } = s.spec;
    if (s.kind === 'StagedKubernetesNetworkPolicy') {
      kubernetes = kubernetes.filter((p) => !sameName(p.metadata, s.metadata));
      if (stagedAction !== 'Delete')
        kubernetes.push({
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: s.metadata,
          spec: spec as NetworkPolicy['spec'],
        });
    } else {
      const kind = s.kind === 'StagedNetworkPolicy' ? 'NetworkPolicy' : 'GlobalNetworkPolicy';
      calico = calico.filter((p) => !(p.kind === kind && sameName(p.metadata, s.metadata)));
      if (stagedAction !== 'Delete')
        calico.push({ apiVersion: 'projectcalico.org/v3', kind, metadata: s.metadata, spec: spec as CalicoPolicy['spec'] });
    }
  }
  return { ...policies, calico, kubernetes };
}

/** The truth table as if the staged policies were enforced. */
export function stagedTruthTable(
  model: Model,
  policies: ClusterPolicies,
  staged: readonly StagedPolicy[],
  probes: readonly Probe[],
): TruthTable {
  return calicoTruthTable(model, asIfEnforced(policies, staged), probes);
}
