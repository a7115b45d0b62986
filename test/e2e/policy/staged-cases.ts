// The probe matrix's staged cases: enforced policies (Kubernetes and Calico, in the shapes users
// write them) beside staged ones. The matrix measured must be the enforced policies' alone; what
// the staged ones would do is the reference's "as if" (test/support/policy/reference-staged.ts).
import type { NetworkPolicy } from '../../support/policy/model.js';
import type { CalicoPolicy, CalicoRule, CalicoTier } from '../../support/policy/reference-calico.js';
import type { StagedPolicy } from '../../support/policy/reference-staged.js';
import type { CasePolicies } from './cases.js';

export interface StagedCase {
  readonly name: string;
  /** The enforced policies, and the staged ones beside them. */
  readonly policies: () => CasePolicies & { readonly staged: readonly StagedPolicy[] };
  /** The staged rule (`<policy id>/<in|out>/<rule>`) whose counter must count the probes it would decide. */
  readonly counted?: string;
}

const denyFromNs = (ns: string): CalicoRule => ({ action: 'Deny', source: { namespaceSelector: `ns == '${ns}'` } });
const inNs = (ns: string): string => `projectcalico.org/namespace == '${ns}'`;

function knp(namespace: string, name: string, spec: NetworkPolicy['spec']): NetworkPolicy {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec };
}

const denyAllIngressZ = knp('z', 'deny-all', { podSelector: {}, policyTypes: ['Ingress'] });
const allowAllIngressX = knp('x', 'allow-all', { podSelector: {}, ingress: [{}] });

export const STAGED_CASES: readonly StagedCase[] = [
  {
    // Staged network policy reference: staged rules preview behaviour and do not enforce traffic.
    // Its Allow keeps the preview to y: without it the staged policy would isolate x (its tier's end).
    name: 'a staged deny of y into x changes nothing (z stays isolated by its Kubernetes deny-all) while its counter counts y into x',
    policies: () => ({
      kubernetes: [denyAllIngressZ],
      calico: [],
      staged: [
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'StagedNetworkPolicy',
          metadata: { name: 'deny-y', namespace: 'x' },
          spec: { stagedAction: 'Set', order: 10, selector: 'all()', types: ['Ingress'], ingress: [denyFromNs('y'), { action: 'Allow' }] },
        },
      ],
    }),
    counted: 'staged:np.x.deny-y/in/0',
  },
  {
    name: 'a staged Set replaces a Calico allow of x by a deny of y, before a Kubernetes allow-all',
    policies: () => ({
      kubernetes: [allowAllIngressX, denyAllIngressZ],
      calico: [
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'NetworkPolicy',
          metadata: { name: 'web', namespace: 'x' },
          spec: { order: 100, selector: "pod == 'a'", types: ['Ingress'], ingress: [{ action: 'Allow' }] },
        },
      ],
      staged: [
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'StagedNetworkPolicy',
          metadata: { name: 'web', namespace: 'x' },
          spec: { order: 100, selector: "pod == 'a'", types: ['Ingress'], ingress: [denyFromNs('y')] },
        },
      ],
    }),
  },
  {
    name: 'a staged Delete of the Kubernetes deny-all of z previews z open',
    policies: () => ({
      kubernetes: [denyAllIngressZ],
      calico: [],
      staged: [
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'StagedKubernetesNetworkPolicy',
          metadata: { name: 'deny-all', namespace: 'z' },
          spec: { stagedAction: 'Delete' },
        },
      ],
    }),
  },
  {
    name: 'a staged GlobalNetworkPolicy in tier security denies x into y and passes the rest to the default tier',
    policies: () => ({
      tiers: [
        { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 'security' }, spec: { order: 100 } } satisfies CalicoTier,
      ],
      kubernetes: [denyAllIngressZ],
      calico: [],
      staged: [
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'StagedGlobalNetworkPolicy',
          metadata: { name: 'no-x-into-y' },
          spec: { tier: 'security', selector: inNs('y'), types: ['Ingress'], ingress: [denyFromNs('x'), { action: 'Pass' }] },
        },
      ],
    }),
  },
  {
    name: 'a staged Kubernetes policy isolating y but for x, and a staged Delete of an enforced GlobalNetworkPolicy deny',
    policies: () => ({
      kubernetes: [],
      calico: [
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'GlobalNetworkPolicy',
          metadata: { name: 'no-c' },
          spec: {
            order: 10,
            selector: "pod == 'a'",
            types: ['Ingress'],
            ingress: [{ action: 'Deny', source: { selector: "pod == 'c'" } }],
          },
        } satisfies CalicoPolicy,
      ],
      staged: [
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'StagedKubernetesNetworkPolicy',
          metadata: { name: 'from-x', namespace: 'y' },
          spec: { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'x' } } }] }] },
        },
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'StagedGlobalNetworkPolicy',
          metadata: { name: 'no-c' },
          spec: { stagedAction: 'Delete' },
        },
      ],
    }),
  },
];
