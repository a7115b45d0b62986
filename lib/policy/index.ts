// lib/policy: Calico's calculation graph. Policies of every kind, namespaces, workload
// endpoints and pools in; felix's resolved PolicyInput out (sets with members, rules naming
// sets, tiers per local endpoint, NAT pools); and the explanation of one pod's policy.
export { PolicyCalculator, CALCULATION_KINDS } from './calculator.js';
export { policyInput } from './calculate.js';
export { parsePolicyResource, POLICY_KINDS, type PolicyResourceKind } from './convert.js';
export { parseKubernetesPolicy, kubernetesPolicyId, kubernetesPolicyTypes } from './kubernetes.js';
export {
  parseAdminPolicy,
  parseBaselinePolicy,
  adminPolicyId,
  baselinePolicyId,
  ADMIN_TIER,
  ADMIN_TIER_SPEC,
  BASELINE_TIER,
  BASELINE_TIER_SPEC,
} from './admin.js';
export { parseCalicoPolicy, parseGlobalPolicy, calicoPolicyId, globalPolicyId, calicoPolicyTypes } from './calico.js';
export { lowerPolicy, type LoweredPolicy } from './lower.js';
export { STAGED_KINDS, parseStagedPolicy, stagedPolicyId, asIfTiers, type StagedChange, type StagedKind } from './staged.js';
export { setId, type SetSpec } from './set-spec.js';
export { natPools } from './pools.js';
export { workloadOf, namespaceLabels, type Workload, type WorkloadPort } from './workload.js';
export {
  evaluateTiers,
  ruleMatches,
  SetIndex,
  type EvaluateOptions,
  type Packet,
  type Direction,
  type DirectionVerdict,
  type RuleRef,
} from './evaluate.js';
export {
  comparePolicies,
  compareTiers,
  PolicyConversionError,
  DEFAULT_TIER,
  DEFAULT_TIER_ORDER,
  DEFAULT_TIER_SPEC,
  KUBERNETES_POLICY_ORDER,
  type ParsedTier,
  type TierDefaultAction,
  type EndpointSelection,
  type NamespaceScope,
  type ParsedPolicy,
  type ParsedRule,
  type ParsedRuleSide,
  type PortMatch,
  type TierName,
} from './model.js';
export {
  PolicyExplainer,
  explainPod,
  verdict,
  type PodExplanation,
  type DirectionExplanation,
  type TierExplanation,
  type PolicyExplanation,
  type RuleExplanation,
  type ConnectionVerdict,
  type StagedVerdict,
  type StepVerdict,
  type PodRef,
} from './explain.js';
export { formatPodExplanation, formatVerdict } from './explain-format.js';
export { ruleText, sideText, selectionText } from './describe.js';
