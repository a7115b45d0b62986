// The probe matrix's cases of Kubernetes AdminNetworkPolicy and BaselineAdminNetworkPolicy
// (policy.networking.k8s.io/v1alpha1), with Kubernetes and Calico policies beside them. They
// follow the network-policy-api conformance suite's scenarios (ANP over NetworkPolicy, Pass to
// NetworkPolicy or to the BANP, priorities, named ports, CIDR peers), recast on the matrix's
// namespaces x, y, z and pods a, b, c. The expected tables come from the reference evaluators.
import type { LabelSelector, Model, NetworkPolicy } from '../../support/policy/model.js';
import type {
  AdminEgressRule,
  AdminIngressRule,
  AdminNetworkPolicy,
  AdminSubject,
  BaselineAdminNetworkPolicy,
} from '../../support/policy/reference-admin.js';
import type { CasePolicies, MatrixCase } from './cases.js';

const nss = (ns: string): LabelSelector => ({ matchLabels: { ns } });
const inNs = (ns: string): AdminSubject => ({ namespaces: nss(ns) });
const EVERY_NAMESPACE = { namespaces: {} };

type AnpAction = 'Allow' | 'Deny' | 'Pass';

function anp(
  name: string,
  priority: number,
  subject: AdminSubject,
  rules: { ingress?: AdminIngressRule<AnpAction>[]; egress?: AdminEgressRule<AnpAction>[] },
): AdminNetworkPolicy {
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha1',
    kind: 'AdminNetworkPolicy',
    metadata: { name },
    spec: { priority, subject, ...rules },
  };
}

function banp(
  subject: AdminSubject,
  rules: { ingress?: AdminIngressRule<'Allow' | 'Deny'>[]; egress?: AdminEgressRule<'Allow' | 'Deny'>[] },
): BaselineAdminNetworkPolicy {
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha1',
    kind: 'BaselineAdminNetworkPolicy',
    metadata: { name: 'default' },
    spec: { subject, ...rules },
  };
}

function knp(namespace: string, name: string, spec: NetworkPolicy['spec']): NetworkPolicy {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec };
}

const denyAllIngress = (ns: string) => knp(ns, 'deny-all-ingress', { podSelector: {}, policyTypes: ['Ingress'] });
const from = <A>(action: A, ns: string | undefined, ports?: AdminIngressRule<A>['ports']): AdminIngressRule<A> => ({
  action,
  from: [ns === undefined ? EVERY_NAMESPACE : { namespaces: nss(ns) }],
  ...(ports ? { ports } : {}),
});

function ipOf(m: Model, key: string): string {
  const p = m.pods.find((x) => `${x.namespace}/${x.name}` === key);
  if (!p) throw new Error(`no pod ${key} in the model`);
  return p.ip;
}

const admin = (p: Partial<CasePolicies>): CasePolicies => ({ kubernetes: [], calico: [], ...p });

export const ADMIN_CASES: readonly MatrixCase[] = [
  {
    // Every ANP comes before any NetworkPolicy: its Allow admits what the deny-all would drop.
    name: 'ANP Allow over a Kubernetes deny: x denies all ingress, an ANP at priority 10 admits y into x',
    policies: () =>
      admin({ admin: [anp('allow-y-into-x', 10, inNs('x'), { ingress: [from('Allow', 'y')] })], kubernetes: [denyAllIngress('x')] }),
  },
  {
    name: 'ANP Deny over a Kubernetes allow: y admits everything, an ANP at priority 10 denies z into y',
    policies: () =>
      admin({
        admin: [anp('deny-z-into-y', 10, inNs('y'), { ingress: [from('Deny', 'z')] })],
        kubernetes: [knp('y', 'allow-all', { podSelector: {}, policyTypes: ['Ingress'], ingress: [{}] })],
      }),
  },
  {
    // Pass skips the rest of the ANPs' rules; the NetworkPolicy of x then decides for y.
    name: 'ANP Pass to a Kubernetes policy: into x/a, y is passed and every other namespace denied; x admits y on TCP 80 only',
    policies: () =>
      admin({
        admin: [
          anp(
            'pass-y-deny-rest',
            10,
            { pods: { namespaceSelector: nss('x'), podSelector: { matchLabels: { pod: 'a' } } } },
            {
              ingress: [from('Pass', 'y'), from('Deny', undefined)],
            },
          ),
        ],
        kubernetes: [
          knp('x', 'y-on-80', {
            podSelector: {},
            policyTypes: ['Ingress'],
            ingress: [{ from: [{ namespaceSelector: nss('y') }], ports: [{ protocol: 'TCP', port: 80 }] }],
          }),
        ],
      }),
  },
  {
    // Lower priority first: the Deny of TCP 81 at 5 runs before the Allow at 20.
    name: 'ANP priority: a Deny of z on TCP 81 at priority 5 runs before an Allow of z at 20; y denies the rest',
    policies: () =>
      admin({
        admin: [
          anp('allow-z', 20, inNs('y'), { ingress: [from('Allow', 'z')] }),
          anp('no-81-from-z', 5, inNs('y'), { ingress: [from('Deny', 'z', [{ portNumber: { protocol: 'TCP', port: 81 } }])] }),
        ],
        kubernetes: [denyAllIngress('y')],
      }),
  },
  {
    // The BANP decides for pods no NetworkPolicy selects.
    name: 'BANP under a namespace without policies: z denies ingress from x',
    policies: () => admin({ baseline: banp(inNs('z'), { ingress: [from('Deny', 'x')] }) }),
  },
  {
    // A NetworkPolicy that selects the pod takes over: what it does not admit is dropped at the
    // end of the default tier, what it admits never meets the BANP.
    name: 'BANP overridden by a Kubernetes policy: the BANP denies everything into every namespace; y admits x',
    policies: () =>
      admin({
        baseline: banp({ namespaces: {} }, { ingress: [from('Deny', undefined)] }),
        kubernetes: [
          knp('y', 'from-x', { podSelector: {}, policyTypes: ['Ingress'], ingress: [{ from: [{ namespaceSelector: nss('x') }] }] }),
        ],
      }),
    steps: [{ name: 'after the policies are deleted', deletePolicies: true }],
  },
  {
    name: 'ANP named port: into z only the port named serve-81-tcp is allowed, from anywhere',
    policies: () =>
      admin({
        admin: [
          anp('z-81-only', 1, inNs('z'), { ingress: [from('Allow', undefined, [{ namedPort: 'serve-81-tcp' }]), from('Deny', undefined)] }),
        ],
      }),
  },
  {
    // Pass with no NetworkPolicy for the pod goes on to the BANP, past the ANP Deny after it.
    name: 'ANP Pass to the BANP: y is passed into x at priority 5 before a Deny of all at 10; the BANP denies y on TCP 81',
    policies: () =>
      admin({
        admin: [
          anp('pass-y', 5, inNs('x'), { ingress: [from('Pass', 'y')] }),
          anp('deny-all', 10, inNs('x'), { ingress: [from('Deny', undefined)] }),
        ],
        baseline: banp(inNs('x'), { ingress: [from('Deny', 'y', [{ portNumber: { protocol: 'TCP', port: 81 } }])] }),
      }),
  },
  {
    name: 'ANP egress: x may not reach the address of y/b (networks), nor any pod of z on UDP (portRange)',
    policies: (m) =>
      admin({
        admin: [
          anp('x-egress', 10, inNs('x'), {
            egress: [
              { action: 'Deny', to: [{ networks: [`${ipOf(m, 'y/b')}/32`] }] },
              { action: 'Deny', to: [{ namespaces: nss('z') }], ports: [{ portRange: { protocol: 'UDP', start: 1, end: 1024 } }] },
            ],
          }),
        ],
      }),
  },
  {
    // Calico policies may live in the admin tier too, ordered among the ANPs by order.
    name: 'a Calico GlobalNetworkPolicy in tier adminnetworkpolicy at order 5 denies z into y before an ANP Allow at priority 10',
    policies: () =>
      admin({
        admin: [anp('allow-into-y', 10, inNs('y'), { ingress: [from('Allow', undefined)] })],
        kubernetes: [denyAllIngress('y')],
        calico: [
          {
            apiVersion: 'projectcalico.org/v3',
            kind: 'GlobalNetworkPolicy',
            metadata: { name: 'no-z-into-y' },
            spec: {
              tier: 'adminnetworkpolicy',
              order: 5,
              selector: "projectcalico.org/namespace == 'y'",
              types: ['Ingress'],
              ingress: [{ action: 'Deny', source: { namespaceSelector: "ns == 'z'" } }],
            },
          },
        ],
      }),
  },
];
