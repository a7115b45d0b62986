// One entry for every policy kind: the resource in, its parsed policy out.
import type { Resource } from '../resources/index.js';
import { parseAdminPolicy, parseBaselinePolicy } from './admin.js';
import { parseCalicoPolicy, parseGlobalPolicy } from './calico.js';
import { parseKubernetesPolicy } from './kubernetes.js';
import type { ParsedPolicy } from './model.js';

export const POLICY_KINDS = [
  'NetworkPolicy',
  'GlobalNetworkPolicy',
  'KubernetesNetworkPolicy',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
] as const;
export type PolicyResourceKind = (typeof POLICY_KINDS)[number];

/** The parsed policy of a policy resource; undefined for any other kind. */
export function parsePolicyResource(r: Resource): ParsedPolicy | undefined {
  switch (r.kind) {
    case 'KubernetesNetworkPolicy':
      return parseKubernetesPolicy(r);
    case 'NetworkPolicy':
      return parseCalicoPolicy(r);
    case 'GlobalNetworkPolicy':
      return parseGlobalPolicy(r);
    case 'AdminNetworkPolicy':
      return parseAdminPolicy(r);
    case 'BaselineAdminNetworkPolicy':
      return parseBaselinePolicy(r);
    default:
      return undefined;
  }
}
