// The calculation graph against the reference evaluator for AdminNetworkPolicy and
// BaselineAdminNetworkPolicy (test/support/policy/reference-admin.ts, written from the
// network-policy-api reference and Calico's tiered-policy guide): random ANPs, a BANP, Kubernetes
// and Calico policies over the probe matrix's cluster; every (from, to, probe) verdict read from
// the PolicyInput felix compiles must equal the reference's.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import { PolicyExplainer, policyInput } from '../../../lib/policy/index.js';
import { type Resource, validateResource } from '../../../lib/resources/index.js';
import { type LabelSelector, type Model, type NetworkPolicy, type Probe, podKey, SERVED_PORTS } from '../../support/policy/model.js';
import type { AdminNetworkPolicy, AdminPeer, AdminPort, BaselineAdminNetworkPolicy } from '../../support/policy/reference-admin.js';
import { type CalicoPolicy, calicoAllows } from '../../support/policy/reference-calico.js';
import { prng } from '../../support/prng.js';
import { namespace } from './fixtures.js';

const NAMESPACES = ['x', 'y', 'z'];
const MODEL: Model = {
  namespaces: NAMESPACES.map((n) => ({ name: n, labels: { ns: n } })),
  pods: NAMESPACES.flatMap((ns, i) =>
    ['a', 'b', 'c'].map((name, j) => ({ namespace: ns, name, labels: { pod: name }, ip: `10.65.${i}.${j + 2}`, ports: SERVED_PORTS })),
  ),
};
const PROBES: Probe[] = [
  { protocol: 'TCP', port: 80 },
  { protocol: 'TCP', port: 81 },
  { protocol: 'UDP', port: 80 },
];

function clusterResources(): Resource[] {
  return [
    ...MODEL.namespaces.map((n) => namespace(n.name, { ...n.labels })),
    ...MODEL.pods.map(
      (p, i): Resource => ({
        apiVersion: 'projectcalico.org/v3',
        kind: 'WorkloadEndpoint',
        metadata: { name: `n${i % 2}-k8s-${p.name}-eth0`, namespace: p.namespace, labels: { ...p.labels } },
        spec: {
          node: `n${i % 2}`,
          pod: p.name,
          interfaceName: `cali${p.namespace}${p.name}`,
          ipNetworks: [`${p.ip}/32`],
          ports: p.ports.map((c) => ({ name: c.name!, protocol: c.protocol, port: c.containerPort })),
        },
      }),
    ),
  ];
}

const POD_SELECTORS: LabelSelector[] = [
  {},
  { matchLabels: { pod: 'a' } },
  { matchExpressions: [{ key: 'pod', operator: 'In', values: ['b', 'c'] }] },
  { matchExpressions: [{ key: 'pod', operator: 'NotIn', values: ['c'] }] },
];
const NS_SELECTORS: LabelSelector[] = [
  {},
  { matchLabels: { ns: 'x' } },
  { matchLabels: { ns: 'y' } },
  { matchExpressions: [{ key: 'ns', operator: 'In', values: ['y', 'z'] }] },
];
const PORTS: AdminPort[] = [
  { portNumber: { protocol: 'TCP', port: 80 } },
  { portNumber: { protocol: 'UDP', port: 80 } },
  { portRange: { protocol: 'TCP', start: 79, end: 81 } },
  { namedPort: 'serve-81-tcp' },
  { namedPort: 'serve-80-udp' },
];

function generator(seed: number) {
  const next = prng(seed);
  const rand = (n: number): number => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;
  const some = <T>(min: number, max: number, make: () => T): T[] => Array.from({ length: min + rand(max - min + 1) }, make);
  const subject = () =>
    rand(2) ? { namespaces: pick(NS_SELECTORS) } : { pods: { namespaceSelector: pick(NS_SELECTORS), podSelector: pick(POD_SELECTORS) } };
  const peer = (egress: boolean): AdminPeer => {
    const r = rand(egress ? 3 : 2);
    if (r === 0) return { namespaces: pick(NS_SELECTORS) };
    if (r === 1) return { pods: { namespaceSelector: pick(NS_SELECTORS), podSelector: pick(POD_SELECTORS) } };
    return { networks: [pick(['10.65.1.0/24', '10.65.2.3/32', '10.65.0.0/16'])] };
  };
  const rules = <A>(actions: readonly A[], egress: boolean) =>
    some(0, 3, () => {
      const peers = some(1, 2, () => peer(egress));
      const named = !peers.some((p) => p.networks);
      const ports = rand(2) ? some(1, 2, () => pick(named ? PORTS : PORTS.filter((p) => !p.namedPort))) : undefined;
      return { action: pick(actions), peers, ...(ports ? { ports } : {}) };
    });
  return { rand, pick, subject, rules };
}

function randomAdmin(g: ReturnType<typeof generator>, i: number): AdminNetworkPolicy {
  const ingress = g.rules(['Allow', 'Deny', 'Pass'] as const, false).map(({ peers, ...r }) => ({ ...r, from: peers }));
  const egress = g.rules(['Allow', 'Deny', 'Pass'] as const, true).map(({ peers, ...r }) => ({ ...r, to: peers }));
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha1',
    kind: 'AdminNetworkPolicy',
    metadata: { name: `anp${i}` },
    // Few priorities, so equal ones (ordered by name) come up.
    spec: {
      priority: g.pick([0, 10, 10, 1000]),
      subject: g.subject(),
      ...(ingress.length ? { ingress } : {}),
      ...(egress.length ? { egress } : {}),
    },
  };
}

function randomBaseline(g: ReturnType<typeof generator>): BaselineAdminNetworkPolicy {
  const ingress = g.rules(['Allow', 'Deny'] as const, false).map(({ peers, ...r }) => ({ ...r, from: peers }));
  const egress = g.rules(['Allow', 'Deny'] as const, true).map(({ peers, ...r }) => ({ ...r, to: peers }));
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha1',
    kind: 'BaselineAdminNetworkPolicy',
    metadata: { name: 'default' },
    spec: { subject: g.subject(), ...(ingress.length ? { ingress } : {}), ...(egress.length ? { egress } : {}) },
  };
}

function randomKubernetes(g: ReturnType<typeof generator>, i: number): NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: `k${i}`, namespace: g.pick(NAMESPACES) },
    spec: {
      podSelector: g.pick(POD_SELECTORS),
      policyTypes: [g.pick(['Ingress', 'Egress'] as const)],
      ingress: g.rand(2) ? [{ from: [{ namespaceSelector: g.pick(NS_SELECTORS) }] }] : [],
      egress: g.rand(2) ? [{ to: [{ podSelector: g.pick(POD_SELECTORS), namespaceSelector: g.pick(NS_SELECTORS) }] }] : [],
    },
  };
}

function randomCalico(g: ReturnType<typeof generator>, i: number): CalicoPolicy {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'GlobalNetworkPolicy',
    metadata: { name: `c${i}` },
    spec: {
      // Some join the admin tier, where they interleave with the ANPs by order.
      ...(g.rand(3) === 0 ? { tier: 'adminnetworkpolicy' } : {}),
      order: g.pick([5, 10, 500]),
      selector: g.pick(['all()', 'pod == "a"', 'projectcalico.org/namespace == "z"']),
      types: ['Ingress'],
      ingress: [{ action: g.pick(['Allow', 'Deny', 'Pass'] as const), source: { namespaceSelector: g.pick(['ns == "x"', 'ns != "y"']) } }],
    },
  };
}

/** Every resource goes through validation first, as `podroute apply` would take it. */
const resourceOf = (doc: unknown): Resource => validateResource(JSON.parse(JSON.stringify(doc)));

interface Generated {
  admin: AdminNetworkPolicy[];
  baseline?: BaselineAdminNetworkPolicy;
  kubernetes: NetworkPolicy[];
  calico: CalicoPolicy[];
}

function generate(seed: number): Generated {
  const g = generator(seed);
  const admin = Array.from({ length: 1 + g.rand(3) }, (_, i) => randomAdmin(g, i));
  const baseline = g.rand(3) ? randomBaseline(g) : undefined;
  const kubernetes = Array.from({ length: g.rand(3) }, (_, i) => randomKubernetes(g, i));
  const calico = Array.from({ length: g.rand(2) }, (_, i) => randomCalico(g, i));
  return { admin, ...(baseline ? { baseline } : {}), kubernetes, calico };
}

const resourcesOf = (p: Generated): Resource[] =>
  [...p.admin, ...(p.baseline ? [p.baseline] : []), ...p.kubernetes, ...p.calico].map(resourceOf);

describe('policy calculation against the reference: AdminNetworkPolicy and BaselineAdminNetworkPolicy', () => {
  it('200 random sets of ANPs, a BANP, Kubernetes and Calico policies: every pair and probe', () => {
    let allowed = 0;
    let denied = 0;
    for (let seed = 1; seed <= 200; seed++) {
      const p = generate(5000 + seed);
      const explainer = new PolicyExplainer([...clusterResources(), ...resourcesOf(p)]);
      const diff: string[] = [];
      for (const probe of PROBES)
        for (const from of MODEL.pods)
          for (const to of MODEL.pods) {
            const ours = explainer.verdict(podKey(from), podKey(to), probe.protocol.toLowerCase() as 'tcp' | 'udp', probe.port).allowed;
            const theirs = calicoAllows(MODEL, p, from, to, probe);
            if (theirs) allowed++;
            else denied++;
            if (ours !== theirs)
              diff.push(`${podKey(from)} -> ${podKey(to)} ${probe.protocol}/${probe.port}: ours ${ours}, reference ${theirs}`);
          }
      assert.deepEqual(diff, [], `seed ${5000 + seed}\n${JSON.stringify(p, null, 1)}\n${diff.slice(0, 10).join('\n')}`);
    }
    assert.ok(allowed > 5000 && denied > 5000, `the generator allows and denies enough to compare: allowed ${allowed}, denied ${denied}`);
  });

  it("felix compiles every generated node's input", () => {
    let rules = 0;
    for (let seed = 1; seed <= 50; seed++) {
      const resources = [...clusterResources(), ...resourcesOf(generate(5000 + seed))];
      for (const node of ['n0', 'n1']) rules += compilePolicy(policyInput(resources, node)).chains.reduce((n, c) => n + c.rules.length, 0);
    }
    assert.ok(rules > 500, `${rules} rules compiled`);
  });
});
