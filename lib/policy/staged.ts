// Staged policies in the calculation graph. A staged Set becomes a parsed policy like the one it
// previews, under an id of its own (`staged:<enforced id>`) and marked staged: it is ordered
// where that policy would be (same tier, order and tie key), selects the same endpoints, and
// felix counts its rules without letting them decide. A staged Delete is only the id of the
// enforced policy it previews gone. "As if" a staged policy were enforced means: every enforced
// policy a staged one names is taken out, and the staged Sets take part.
import { policyTier, type TierPolicies } from '../../felix/policy/input.js';
import type { Resource } from '../resources/index.js';
import { calicoPolicyId, globalPolicyId, parseCalicoPolicy, parseGlobalPolicy } from './calico.js';
import { kubernetesPolicyId, parseKubernetesPolicy } from './kubernetes.js';
import type { ParsedPolicy } from './model.js';

export const STAGED_KINDS = ['StagedNetworkPolicy', 'StagedGlobalNetworkPolicy', 'StagedKubernetesNetworkPolicy'] as const;
export type StagedKind = (typeof STAGED_KINDS)[number];

/** Calico names a staged policy by its enforced name behind `staged:`. */
export const STAGED_PREFIX = 'staged:';

export function stagedPolicyId(enforcedId: string): string {
  return `${STAGED_PREFIX}${enforcedId}`;
}

export function isStagedKind(kind: string): kind is StagedKind {
  return (STAGED_KINDS as readonly string[]).includes(kind);
}

/** What a staged resource previews: a policy set (parsed, staged) or one deleted (its enforced id). */
export type StagedChange =
  | { readonly action: 'Set'; readonly parsed: ParsedPolicy }
  | { readonly action: 'Delete'; readonly replaces: string };

/** A staged resource's change; undefined for any other kind. */
export function parseStagedPolicy(r: Resource): StagedChange | undefined {
  const namespace = r.metadata.namespace ?? 'default';
  const name = r.metadata.name;
  let enforced: ParsedPolicy;
  switch (r.kind) {
    case 'StagedNetworkPolicy': {
      if (r.spec.stagedAction === 'Delete') return { action: 'Delete', replaces: calicoPolicyId(namespace, name) };
      const { stagedAction: _a, ...spec } = r.spec;
      enforced = parseCalicoPolicy({ ...r, kind: 'NetworkPolicy', spec });
      break;
    }
    case 'StagedGlobalNetworkPolicy': {
      if (r.spec.stagedAction === 'Delete') return { action: 'Delete', replaces: globalPolicyId(name) };
      const { stagedAction: _a, ...spec } = r.spec;
      enforced = parseGlobalPolicy({ ...r, kind: 'GlobalNetworkPolicy', spec });
      break;
    }
    case 'StagedKubernetesNetworkPolicy': {
      if (r.spec.stagedAction === 'Delete') return { action: 'Delete', replaces: kubernetesPolicyId(namespace, name) };
      const { stagedAction: _a, ...spec } = r.spec;
      enforced = parseKubernetesPolicy({ ...r, apiVersion: 'networking.k8s.io/v1', kind: 'KubernetesNetworkPolicy', spec });
      break;
    }
    default:
      return undefined;
  }
  return { action: 'Set', parsed: { ...enforced, id: stagedPolicyId(enforced.id), staged: { replaces: enforced.id } } };
}

/**
 * An endpoint's tiers as if the staged policies were enforced: the enforced policies a staged
 * one names are gone, the staged ones (already in place in `tiers`, marked staged in the
 * policies) take part, and a tier left with no policy is no tier at all.
 */
export function asIfTiers(tiers: readonly TierPolicies[], replaced: ReadonlySet<string>): TierPolicies[] {
  const out: TierPolicies[] = [];
  for (const given of tiers) {
    const t = policyTier(given);
    const policies = t.policies.filter((id) => !replaced.has(id));
    if (policies.length > 0) out.push({ ...t, policies });
  }
  return out;
}
