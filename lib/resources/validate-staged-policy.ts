// Staged policies, checked as Calico's validator checks them: `stagedAction` is Set (the
// default) or Delete; a staged Set is held to every rule of the policy kind it previews; a staged
// Delete names a policy by its kind and name only, so every spec field but the action (and, for
// the Calico kinds, the tier) must be empty. Errors name the field, as for the enforced kinds.
import type { Checker, Obj } from './checker.js';
import type { CalicoNetworkPolicySpec, GlobalNetworkPolicySpec } from './policy-types.js';
import type {
  StagedAction,
  StagedGlobalNetworkPolicySpec,
  StagedKubernetesNetworkPolicySpec,
  StagedNetworkPolicySpec,
} from './staged-policy-types.js';
import { checkCalicoPolicy, policyTier } from './validate-calico-policy.js';
import { checkKubernetesNetworkPolicy } from './validate-kubernetes.js';

const ACTIONS: readonly StagedAction[] = ['Set', 'Delete'];
const ENTERPRISE_ACTIONS: readonly string[] = ['Learn', 'Ignore'];

function stagedAction(c: Checker, s: Obj): StagedAction {
  if (ENTERPRISE_ACTIONS.includes(s.stagedAction as string))
    c.fail(
      'spec.stagedAction',
      `${String(s.stagedAction)} belongs to Calico Enterprise's policy recommendation and is not supported by podroute (Set or Delete)`,
    );
  return c.oneOf(s, 'stagedAction', 'spec', ACTIONS, 'Set');
}

/** Everything but the action, as the enforced kind's validator reads it. */
function withoutAction(s: Obj): Obj {
  const { stagedAction: _action, ...rest } = s;
  return rest;
}

/** A staged Delete: only `keep` (besides the action) may be given. */
function checkDeleteEmpty(c: Checker, s: Obj, keep: readonly string[]): void {
  for (const [k, v] of Object.entries(s)) {
    if (v === undefined || v === null || k === 'stagedAction' || keep.includes(k)) continue;
    c.fail(`spec.${k}`, `must be empty when stagedAction is Delete: a staged Delete previews the enforced policy of its name gone`);
  }
}

/** A StagedNetworkPolicy's spec, or a StagedGlobalNetworkPolicy's when `global`. */
export function checkStagedCalicoPolicy(c: Checker, s: Obj, global: boolean): StagedNetworkPolicySpec | StagedGlobalNetworkPolicySpec {
  const action = stagedAction(c, s);
  if (action === 'Delete') {
    checkDeleteEmpty(c, s, ['tier']);
    const tier = policyTier(c, s);
    return { stagedAction: 'Delete', ...(tier !== undefined ? { tier } : {}) };
  }
  const spec = checkCalicoPolicy(c, withoutAction(s), global) as CalicoNetworkPolicySpec | GlobalNetworkPolicySpec;
  return { stagedAction: 'Set', ...spec };
}

export function checkStagedKubernetesPolicy(c: Checker, s: Obj): StagedKubernetesNetworkPolicySpec {
  const action = stagedAction(c, s);
  if (action === 'Delete') {
    checkDeleteEmpty(c, s, []);
    return { stagedAction: 'Delete' };
  }
  return { stagedAction: 'Set', ...checkKubernetesNetworkPolicy(c, withoutAction(s)) };
}
