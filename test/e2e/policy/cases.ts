// The probe matrix's cases: policies in the shapes users write them (Kubernetes
// networking.k8s.io/v1 NetworkPolicy, Calico projectcalico.org/v3 Tier, NetworkPolicy and
// GlobalNetworkPolicy), built from the cluster as it is (an ipBlock needs the pods' addresses,
// learnt at run time), and the changes some cases make once their policies are in force.
// Every case's expected table comes from the reference evaluators, never from this file.
import type {
  Labels,
  LabelSelector,
  Model,
  NetworkPolicy,
  NetworkPolicyEgressRule,
  NetworkPolicyIngressRule,
  PolicyType,
} from '../../support/policy/model.js';
import type { CalicoPolicy, CalicoRule, CalicoTier } from '../../support/policy/reference-calico.js';
import type { AdminNetworkPolicy, BaselineAdminNetworkPolicy } from '../../support/policy/reference-admin.js';

export interface CasePolicies {
  readonly kubernetes: readonly NetworkPolicy[];
  readonly calico: readonly CalicoPolicy[];
  /** Tier resources the case's Calico policies name (applied first, deleted last). */
  readonly tiers?: readonly CalicoTier[];
  /** Kubernetes AdminNetworkPolicies and the BaselineAdminNetworkPolicy (cases-admin.ts). */
  readonly admin?: readonly AdminNetworkPolicy[];
  readonly baseline?: BaselineAdminNetworkPolicy;
}

/** A change made after the case's policies are in force; the matrix is checked again after it. */
export type CaseStep =
  | { readonly name: string; readonly relabelPod: { readonly namespace: string; readonly name: string; readonly labels: Labels } }
  | { readonly name: string; readonly relabelNamespace: { readonly name: string; readonly labels: Labels } }
  | { readonly name: string; readonly deletePolicies: true };

export interface MatrixCase {
  readonly name: string;
  readonly policies: (m: Model) => CasePolicies;
  readonly steps?: readonly CaseStep[];
}

const k8s = (...kubernetes: NetworkPolicy[]): CasePolicies => ({ kubernetes, calico: [] });

function knp(
  namespace: string,
  name: string,
  podSelector: LabelSelector,
  spec: { policyTypes?: PolicyType[]; ingress?: NetworkPolicyIngressRule[]; egress?: NetworkPolicyEgressRule[] },
): NetworkPolicy {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec: { podSelector, ...spec } };
}

const pods = (pod: string): LabelSelector => ({ matchLabels: { pod } });
const nss = (ns: string): LabelSelector => ({ matchLabels: { ns } });
const ALL: LabelSelector = {};

function ipOf(m: Model, key: string): string {
  const p = m.pods.find((x) => `${x.namespace}/${x.name}` === key);
  if (!p) throw new Error(`no pod ${key} in the model`);
  return p.ip;
}

function cnp(namespace: string, name: string, order: number, selector: string, spec: Partial<CalicoPolicy['spec']>): CalicoPolicy {
  return { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name, namespace }, spec: { order, selector, ...spec } };
}

function gnp(name: string, order: number, selector: string, spec: Partial<CalicoPolicy['spec']>): CalicoPolicy {
  return { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name }, spec: { order, selector, ...spec } };
}

const allow: CalicoRule = { action: 'Allow' };
const pass: CalicoRule = { action: 'Pass' };
const fromNs = (ns: string): CalicoRule['source'] => ({ namespaceSelector: `ns == '${ns}'` });
const inNs = (ns: string): string => `projectcalico.org/namespace == '${ns}'`;

function tierOf(name: string, order: number | undefined, defaultAction?: 'Deny' | 'Pass'): CalicoTier {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Tier',
    metadata: { name },
    spec: { ...(order !== undefined ? { order } : {}), ...(defaultAction ? { defaultAction } : {}) },
  };
}

/** A GlobalNetworkPolicy in a tier, named `<tier>.<name>` as Calico requires. */
function tgnp(tier: string, name: string, order: number | undefined, selector: string, spec: Partial<CalicoPolicy['spec']>): CalicoPolicy {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'GlobalNetworkPolicy',
    metadata: { name: `${tier}.${name}` },
    spec: { tier, ...(order !== undefined ? { order } : {}), selector, ...spec },
  };
}

/** Kubernetes NetworkPolicy, field by field. */
export const KUBERNETES_CASES: readonly MatrixCase[] = [
  { name: 'deny-all ingress in x', policies: () => k8s(knp('x', 'deny-all-ingress', ALL, { policyTypes: ['Ingress'] })) },
  { name: 'deny-all egress in x', policies: () => k8s(knp('x', 'deny-all-egress', ALL, { policyTypes: ['Egress'] })) },
  { name: 'deny-all ingress and egress in y', policies: () => k8s(knp('y', 'deny-all', ALL, { policyTypes: ['Ingress', 'Egress'] })) },
  {
    name: 'allow all ingress {} lifts a deny-all in x, y stays isolated',
    policies: () =>
      k8s(
        knp('x', 'deny-all-ingress', ALL, { policyTypes: ['Ingress'] }),
        knp('y', 'deny-all-ingress', ALL, { policyTypes: ['Ingress'] }),
        knp('x', 'allow-all-ingress', ALL, { ingress: [{}] }),
      ),
  },
  {
    name: 'ingress to x/a from namespace y (namespaceSelector)',
    policies: () => k8s(knp('x', 'from-y', pods('a'), { ingress: [{ from: [{ namespaceSelector: nss('y') }] }] })),
  },
  {
    name: 'ingress to x/a from pod b of its own namespace (podSelector)',
    policies: () => k8s(knp('x', 'from-b', pods('a'), { ingress: [{ from: [{ podSelector: pods('b') }] }] })),
  },
  {
    name: 'ingress to x/a from pod c of namespace y (namespaceSelector AND podSelector in one peer)',
    policies: () =>
      k8s(knp('x', 'from-y-c', pods('a'), { ingress: [{ from: [{ namespaceSelector: nss('y'), podSelector: pods('c') }] }] })),
  },
  {
    name: 'ingress to x/a from namespace z OR pod b (two peers)',
    policies: () =>
      k8s(knp('x', 'z-or-b', pods('a'), { ingress: [{ from: [{ namespaceSelector: nss('z') }, { podSelector: pods('b') }] }] })),
  },
  {
    name: 'ingress to x/a from an ipBlock with except (y/b and z/c carved out)',
    policies: (m) =>
      k8s(
        knp('x', 'ipblock', pods('a'), {
          ingress: [{ from: [{ ipBlock: { cidr: '10.244.0.0/16', except: [`${ipOf(m, 'y/b')}/32`, `${ipOf(m, 'z/c')}/32`] } }] }],
        }),
      ),
  },
  {
    name: 'egress from y/b to an ipBlock holding only x/a',
    policies: (m) =>
      k8s(knp('y', 'to-xa', pods('b'), { policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: `${ipOf(m, 'x/a')}/32` } }] }] })),
  },
  {
    name: 'ingress to x/a on a named port (serve-81-tcp)',
    policies: () => k8s(knp('x', 'named-81', pods('a'), { ingress: [{ ports: [{ port: 'serve-81-tcp' }] }] })),
  },
  {
    name: 'ingress to y/a on a named UDP port (serve-80-udp)',
    policies: () => k8s(knp('y', 'named-udp', pods('a'), { ingress: [{ ports: [{ protocol: 'UDP', port: 'serve-80-udp' }] }] })),
  },
  {
    name: 'ingress to x/a from y on the range 80-81 (endPort)',
    policies: () =>
      k8s(knp('x', 'range', pods('a'), { ingress: [{ from: [{ namespaceSelector: nss('y') }], ports: [{ port: 80, endPort: 81 }] }] })),
  },
  {
    name: 'ingress to z/b on the range 81-90 (endPort; TCP 80 and UDP are outside)',
    policies: () => k8s(knp('z', 'range', pods('b'), { ingress: [{ ports: [{ protocol: 'TCP', port: 81, endPort: 90 }] }] })),
  },
  {
    name: 'egress from x to TCP 80 only',
    policies: () => k8s(knp('x', 'egress-80', ALL, { policyTypes: ['Egress'], egress: [{ ports: [{ protocol: 'TCP', port: 80 }] }] })),
  },
  {
    name: 'egress from x/a to namespace z only',
    policies: () => k8s(knp('x', 'to-z', pods('a'), { policyTypes: ['Egress'], egress: [{ to: [{ namespaceSelector: nss('z') }] }] })),
  },
  {
    name: 'two policies on x/a are unioned (y on TCP 80, z on TCP 81)',
    policies: () =>
      k8s(
        knp('x', 'y-80', pods('a'), { ingress: [{ from: [{ namespaceSelector: nss('y') }], ports: [{ port: 80 }] }] }),
        knp('x', 'z-81', pods('a'), { ingress: [{ from: [{ namespaceSelector: nss('z') }], ports: [{ port: 81 }] }] }),
      ),
  },
  {
    name: 'ingress and egress in one policy (y/b: in from x, out to z)',
    policies: () =>
      k8s(
        knp('y', 'both', pods('b'), {
          policyTypes: ['Ingress', 'Egress'],
          ingress: [{ from: [{ namespaceSelector: nss('x') }] }],
          egress: [{ to: [{ namespaceSelector: nss('z') }] }],
        }),
      ),
  },
  { name: 'UDP only into z', policies: () => k8s(knp('z', 'udp-only', ALL, { ingress: [{ ports: [{ protocol: 'UDP' }] }] })) },
  {
    name: 'policyTypes defaulting: egress rules without policyTypes isolate x/c both ways',
    policies: () => k8s(knp('x', 'defaulted', pods('c'), { egress: [{ to: [{ namespaceSelector: nss('y') }] }] })),
  },
  {
    name: 'an empty podSelector selects every pod of z (ingress from x only)',
    policies: () => k8s(knp('z', 'from-x', ALL, { ingress: [{ from: [{ namespaceSelector: nss('x') }] }] })),
  },
  {
    name: 'matchExpressions: In selects x/a and x/b; from namespaces NotIn z, pods NotIn c',
    policies: () =>
      k8s(
        knp(
          'x',
          'expressions',
          { matchExpressions: [{ key: 'pod', operator: 'In', values: ['a', 'b'] }] },
          {
            ingress: [
              {
                from: [
                  {
                    namespaceSelector: { matchExpressions: [{ key: 'ns', operator: 'NotIn', values: ['z'] }] },
                    podSelector: { matchExpressions: [{ key: 'pod', operator: 'NotIn', values: ['c'] }] },
                  },
                ],
              },
            ],
          },
        ),
      ),
  },
  {
    name: 'namespaceSelector {} admits every namespace, on TCP 81 only (into y/c)',
    policies: () => k8s(knp('y', 'any-ns-81', pods('c'), { ingress: [{ from: [{ namespaceSelector: {} }], ports: [{ port: 81 }] }] })),
  },
  {
    name: 'kubernetes.io/metadata.name, set on every namespace, selects z (into x/b)',
    policies: () =>
      k8s(
        knp('x', 'by-name', pods('b'), {
          ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'z' } } }] }],
        }),
      ),
  },
  {
    name: "egress of every namespace only to y, and y's ingress only from pods a",
    policies: () =>
      k8s(
        ...['x', 'y', 'z'].map((ns) =>
          knp(ns, 'egress-to-y', ALL, { policyTypes: ['Egress'], egress: [{ to: [{ namespaceSelector: nss('y') }] }] }),
        ),
        knp('y', 'from-a', ALL, { ingress: [{ from: [{ namespaceSelector: {}, podSelector: pods('a') }] }] }),
      ),
  },
  {
    name: 'policy deleted: a deny-all in z, then everything back',
    policies: () => k8s(knp('z', 'deny-all', ALL, { policyTypes: ['Ingress', 'Egress'] })),
    steps: [{ name: 'after podroute delete', deletePolicies: true }],
  },
  {
    name: 'pod relabelled: x/a admits pod=b; x/c becomes pod=b',
    policies: () => k8s(knp('x', 'from-b', pods('a'), { ingress: [{ from: [{ podSelector: pods('b') }] }] })),
    steps: [{ name: 'after x/c is relabelled pod=b', relabelPod: { namespace: 'x', name: 'c', labels: { pod: 'b' } } }],
  },
  {
    name: 'namespace relabelled: x/a admits team=blue; z gains team=blue',
    policies: () =>
      k8s(knp('x', 'from-blue', pods('a'), { ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'blue' } } }] }] })),
    steps: [{ name: 'after z is labelled team=blue', relabelNamespace: { name: 'z', labels: { ns: 'z', team: 'blue' } } }],
  },
];

/** Calico policy, and Calico over Kubernetes. */
export const CALICO_CASES: readonly MatrixCase[] = [
  {
    name: 'Calico order: a Deny at 10 (from y into x/a) before an Allow at 20',
    policies: () => ({
      kubernetes: [],
      calico: [
        cnp('x', 'deny-y', 10, "pod == 'a'", {
          types: ['Ingress'],
          ingress: [{ action: 'Deny', source: { namespaceSelector: "ns == 'y'" } }],
        }),
        cnp('x', 'allow-rest', 20, 'all()', { types: ['Ingress'], ingress: [allow] }),
      ],
    }),
  },
  {
    name: 'Calico order: an Allow at 5 (from z) wins over a Deny at 10 (everything into x/a)',
    policies: () => ({
      kubernetes: [],
      calico: [
        cnp('x', 'allow-z', 5, "pod == 'a'", {
          types: ['Ingress'],
          ingress: [{ action: 'Allow', source: { namespaceSelector: "ns == 'z'" } }],
        }),
        cnp('x', 'deny-all', 10, "pod == 'a'", { types: ['Ingress'], ingress: [{ action: 'Deny' }] }),
      ],
    }),
  },
  {
    // Tier reference, "How policy is evaluated": Pass goes to the next tier holding a policy for
    // the endpoint; the Kubernetes policies are in the same (default) tier, so Pass skips them.
    name: 'Calico Pass skips the rest of the default tier: z passes a Kubernetes deny-all of x, x and y do not',
    policies: () => ({
      kubernetes: [knp('x', 'deny-all-ingress', ALL, { policyTypes: ['Ingress'] })],
      calico: [
        gnp('pass-z', 10, "projectcalico.org/namespace == 'x'", {
          types: ['Ingress'],
          ingress: [{ action: 'Pass', source: { namespaceSelector: "ns == 'z'" } }],
        }),
      ],
    }),
  },
  {
    name: 'GlobalNetworkPolicy over all namespaces: no pod c reaches any pod a',
    policies: () => ({
      kubernetes: [],
      calico: [
        gnp('c-not-to-a', 10, "pod == 'a'", {
          types: ['Ingress'],
          ingress: [{ action: 'Deny', source: { selector: "pod == 'c'" } }, allow],
        }),
      ],
    }),
  },
  {
    name: 'GlobalNetworkPolicy egress: Deny TCP 81 everywhere, Allow the rest',
    policies: () => ({
      kubernetes: [],
      calico: [
        gnp('no-81', 10, 'all()', {
          types: ['Egress'],
          egress: [{ action: 'Deny', protocol: 'TCP', destination: { ports: [81] } }, allow],
        }),
      ],
    }),
  },
  {
    name: 'Calico named ports without a protocol: z sends only to serve-81-tcp and serve-80-udp',
    policies: () => ({
      kubernetes: [],
      calico: [
        cnp('z', 'named-any', 10, 'all()', {
          types: ['Egress'],
          egress: [{ action: 'Allow', destination: { ports: ['serve-81-tcp', 'serve-80-udp'] } }],
        }),
      ],
    }),
  },
  {
    name: 'Calico NetworkPolicy in y: Log, then Allow only UDP to the named port serve-80-udp',
    policies: () => ({
      kubernetes: [],
      calico: [
        cnp('y', 'udp-named', 10, 'all()', {
          types: ['Ingress'],
          ingress: [{ action: 'Log' }, { action: 'Allow', protocol: 'UDP', destination: { ports: ['serve-80-udp'] } }],
        }),
      ],
    }),
  },
];

/**
 * Calico's tiers with Kubernetes and Calico policies together: each case names the sentence of
 * Calico's Tier reference ("How policy is evaluated", spec) or tiered policy guide it shows.
 */
export const TIER_CASES: readonly MatrixCase[] = [
  {
    // A policy that selects the endpoint and matches no rule hands the packet to the next policy of its tier.
    name: 'default tier: a Calico Deny of y at order 500, then a Kubernetes allow-all (order 1000) lets x and z into x',
    policies: () => ({
      kubernetes: [knp('x', 'allow-all', ALL, { ingress: [{}] })],
      calico: [cnp('x', 'deny-y', 500, 'all()', { types: ['Ingress'], ingress: [{ action: 'Deny', source: fromNs('y') }] })],
    }),
  },
  {
    // Kubernetes policies are order 1000 of the default tier: a Calico policy at 2000 still runs after them.
    name: 'default tier: a Kubernetes policy admits y into x/a, a Calico Allow of z at order 2000 comes after it',
    policies: () => ({
      kubernetes: [knp('x', 'from-y', pods('a'), { ingress: [{ from: [{ namespaceSelector: nss('y') }] }] })],
      calico: [cnp('x', 'late-z', 2000, "pod == 'a'", { types: ['Ingress'], ingress: [{ action: 'Allow', source: fromNs('z') }] })],
    }),
  },
  {
    // Order decides inside the default tier: a Deny at 999 comes before the Kubernetes allow-all at 1000.
    name: 'default tier: a Calico Deny of TCP 81 at order 999 before a Kubernetes allow-all into y',
    policies: () => ({
      kubernetes: [knp('y', 'allow-all', ALL, { ingress: [{}] })],
      calico: [
        cnp('y', 'no-81', 999, 'all()', {
          types: ['Ingress'],
          ingress: [{ action: 'Deny', protocol: 'TCP', destination: { ports: [81] } }],
        }),
      ],
    }),
  },
  {
    // A policy that selects and matches nothing, with nothing after it: the end of the tier denies.
    name: 'default tier: a Calico policy on z/b that matches only x, with no later policy, denies the rest at the end of the tier',
    policies: () => ({
      kubernetes: [],
      calico: [cnp('z', 'only-x', 100, "pod == 'b'", { types: ['Ingress'], ingress: [{ action: 'Allow', source: fromNs('x') }] })],
    }),
  },
  {
    // Pass inside the default tier skips the Calico Deny after it as well.
    name: 'default tier: Pass from z at order 100 skips a Calico deny-all at order 200 into y/b',
    policies: () => ({
      kubernetes: [],
      calico: [
        cnp('y', 'pass-z', 100, "pod == 'b'", { types: ['Ingress'], ingress: [{ action: 'Pass', source: fromNs('z') }] }),
        cnp('y', 'deny-all', 200, "pod == 'b'", { types: ['Ingress'], ingress: [{ action: 'Deny' }] }),
      ],
    }),
  },
  {
    // A GlobalNetworkPolicy interleaves too: order 1500 runs after the Kubernetes policies of z.
    name: 'default tier: a Kubernetes policy admits x into z; a GlobalNetworkPolicy at order 1500 adds y on TCP 81',
    policies: () => ({
      kubernetes: [knp('z', 'from-x', ALL, { ingress: [{ from: [{ namespaceSelector: nss('x') }] }] })],
      calico: [
        gnp('y-81', 1500, inNs('z'), {
          types: ['Ingress'],
          ingress: [{ action: 'Allow', protocol: 'TCP', source: fromNs('y'), destination: { ports: [81] } }],
        }),
      ],
    }),
  },
  {
    // Pass sends the packet to the next tier that has a policy for the endpoint.
    name: 'tiers: security allows y into x and passes z to the default tier, where a Kubernetes deny-all drops it',
    policies: () => ({
      tiers: [tierOf('security', 100)],
      kubernetes: [knp('x', 'deny-all-ingress', ALL, { policyTypes: ['Ingress'] })],
      calico: [
        tgnp('security', 'y-in-z-on', 10, inNs('x'), {
          types: ['Ingress'],
          ingress: [
            { action: 'Allow', source: fromNs('y') },
            { action: 'Pass', source: fromNs('z') },
          ],
        }),
      ],
    }),
  },
  {
    // A tier ends in Deny by default: what security neither allows nor passes never reaches the default tier.
    name: 'tiers: security denies y into x and passes the rest; the default tier admits only z into x',
    policies: () => ({
      tiers: [tierOf('security', 100)],
      kubernetes: [knp('x', 'from-z', ALL, { ingress: [{ from: [{ namespaceSelector: nss('z') }] }] })],
      calico: [tgnp('security', 'no-y', 10, inNs('x'), { types: ['Ingress'], ingress: [{ action: 'Deny', source: fromNs('y') }, pass] })],
    }),
  },
  {
    // defaultAction Pass: what the tier did not decide goes on; past the last tier, the profile allows.
    name: 'a Tier with defaultAction Pass: platform denies TCP 81 into z, everything else goes on and is allowed',
    policies: () => ({
      tiers: [tierOf('platform', 50, 'Pass')],
      kubernetes: [],
      calico: [
        tgnp('platform', 'no-81', undefined, inNs('z'), {
          types: ['Ingress'],
          ingress: [{ action: 'Deny', protocol: 'TCP', destination: { ports: [81] } }],
        }),
      ],
    }),
  },
  {
    name: 'a Tier with defaultAction Pass, then the default tier: platform denies y into x, a Kubernetes policy admits only z',
    policies: () => ({
      tiers: [tierOf('platform', 50, 'Pass')],
      kubernetes: [knp('x', 'from-z', ALL, { ingress: [{ from: [{ namespaceSelector: nss('z') }] }] })],
      calico: [tgnp('platform', 'no-y', undefined, inNs('x'), { types: ['Ingress'], ingress: [{ action: 'Deny', source: fromNs('y') }] })],
    }),
  },
  {
    // defaultAction Deny (the default) ends the evaluation before the default tier's allow-all.
    name: 'a Tier with defaultAction Deny: platform admits only TCP 80 into y; the default tier allow-all never sees the rest',
    policies: () => ({
      tiers: [tierOf('platform', 50)],
      kubernetes: [knp('y', 'allow-all', ALL, { ingress: [{}] })],
      calico: [
        tgnp('platform', 'only-80', undefined, inNs('y'), {
          types: ['Ingress'],
          ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [80] } }],
        }),
      ],
    }),
  },
  {
    // Tiers are sorted by order, smallest first.
    name: 'tier order: security (10) denies z into y before platform (20) allows everything into y',
    policies: () => ({
      tiers: [tierOf('platform', 20), tierOf('security', 10)],
      kubernetes: [],
      calico: [
        tgnp('platform', 'allow-all', undefined, inNs('y'), { types: ['Ingress'], ingress: [allow] }),
        tgnp('security', 'no-z', undefined, inNs('y'), { types: ['Ingress'], ingress: [{ action: 'Deny', source: fromNs('z') }, pass] }),
      ],
    }),
  },
  {
    // Tiers of equal order run by name.
    name: 'tier order ties by name: tiers a and b both at 10; a denies x into z before b allows everything',
    policies: () => ({
      tiers: [tierOf('b', 10), tierOf('a', 10)],
      kubernetes: [],
      calico: [
        tgnp('b', 'allow-all', undefined, inNs('z'), { types: ['Ingress'], ingress: [allow] }),
        tgnp('a', 'no-x', undefined, inNs('z'), { types: ['Ingress'], ingress: [{ action: 'Deny', source: fromNs('x') }, pass] }),
      ],
    }),
  },
  {
    // Egress follows the same tiers: the source's egress policies, tier by tier.
    name: 'egress across tiers: security denies x to z and passes the rest; a Kubernetes egress policy lets x reach y only',
    policies: () => ({
      tiers: [tierOf('security', 100)],
      kubernetes: [knp('x', 'to-y', ALL, { policyTypes: ['Egress'], egress: [{ to: [{ namespaceSelector: nss('y') }] }] })],
      calico: [
        tgnp('security', 'x-not-to-z', undefined, inNs('x'), {
          types: ['Egress'],
          egress: [{ action: 'Deny', destination: { namespaceSelector: "ns == 'z'" } }, pass],
        }),
      ],
    }),
  },
];
