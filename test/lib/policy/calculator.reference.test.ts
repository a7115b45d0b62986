// The calculation graph against the reference evaluators of test/support/policy, which were written from
// the Kubernetes and Calico documentation alone: for random policies over the probe matrix's
// cluster (namespaces x, y, z with pods a, b, c), every (from, to, probe) verdict read from the
// PolicyInput (explain's evaluator over the resolved sets and rules) must equal the reference's.
// A disagreement prints the policies and the first pairs that differ.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import { PolicyExplainer, policyInput } from '../../../lib/policy/index.js';
import type { Resource } from '../../../lib/resources/index.js';
import {
  type LabelSelector,
  type Model,
  type ModelPod,
  type NetworkPolicy,
  type NetworkPolicyPeer,
  type NetworkPolicyPort,
  type Probe,
  podKey,
  SERVED_PORTS,
} from '../../support/policy/model.js';
import { k8sAllows } from '../../support/policy/reference.js';
import { type CalicoEntityRule, type CalicoPolicy, type CalicoRule, calicoAllows } from '../../support/policy/reference-calico.js';
import { namespace } from './fixtures.js';
import { prng } from '../../support/prng.js';

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

function knpResource(p: NetworkPolicy): Resource {
  const spec = JSON.parse(JSON.stringify(p.spec));
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'KubernetesNetworkPolicy',
    metadata: { ...p.metadata },
    spec: { policyTypes: [], ...spec },
  };
}

function calicoResource(p: CalicoPolicy): Resource {
  const spec = { types: [], ...JSON.parse(JSON.stringify(p.spec)) };
  return p.kind === 'NetworkPolicy'
    ? { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { ...p.metadata }, spec }
    : { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name: p.metadata.name }, spec };
}

/** A seeded generator, so a failure names a case that reruns. */
function generator(seed: number) {
  const next = prng(seed);
  const rand = (n: number): number => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;
  const some = <T>(max: number, make: () => T): T[] => Array.from({ length: rand(max + 1) }, make);
  return { rand, pick, some };
}

const LABEL_SELECTORS: LabelSelector[] = [
  {},
  { matchLabels: { pod: 'a' } },
  { matchLabels: { pod: 'b' } },
  { matchExpressions: [{ key: 'pod', operator: 'In', values: ['a', 'c'] }] },
  { matchExpressions: [{ key: 'pod', operator: 'NotIn', values: ['a'] }] },
  { matchExpressions: [{ key: 'pod', operator: 'Exists' }] },
  { matchExpressions: [{ key: 'missing', operator: 'DoesNotExist' }] },
];
const NS_SELECTORS: LabelSelector[] = [
  {},
  { matchLabels: { ns: 'x' } },
  { matchLabels: { ns: 'y' } },
  { matchExpressions: [{ key: 'ns', operator: 'In', values: ['y', 'z'] }] },
];

function randomK8sPolicy(g: ReturnType<typeof generator>, index: number): NetworkPolicy {
  const peer = (): NetworkPolicyPeer => {
    switch (g.rand(4)) {
      case 0:
        return { podSelector: g.pick(LABEL_SELECTORS) };
      case 1:
        return { namespaceSelector: g.pick(NS_SELECTORS) };
      case 2:
        return { podSelector: g.pick(LABEL_SELECTORS), namespaceSelector: g.pick(NS_SELECTORS) };
      default:
        return g.pick([
          { ipBlock: { cidr: '10.65.0.0/16', except: ['10.65.1.0/24'] } },
          { ipBlock: { cidr: '10.65.2.0/24' } },
          { ipBlock: { cidr: '10.65.0.0/23', except: ['10.65.0.2/32', '10.65.1.4/32'] } },
        ]);
    }
  };
  const port = (): NetworkPolicyPort =>
    g.pick<NetworkPolicyPort>([
      { protocol: 'TCP', port: 80 },
      { port: 81 },
      { protocol: 'UDP', port: 80 },
      { protocol: 'UDP' },
      { protocol: 'TCP', port: 'serve-81-tcp' },
      { protocol: 'UDP', port: 'serve-80-udp' },
      { protocol: 'TCP', port: 79, endPort: 80 },
    ]);
  const rules = () => g.some(2, () => ({ peers: g.rand(3) ? g.some(2, peer) : undefined, ports: g.rand(2) ? g.some(2, port) : undefined }));
  const ingress = g.rand(4)
    ? rules().map((r) => ({ ...(r.peers ? { from: r.peers } : {}), ...(r.ports ? { ports: r.ports } : {}) }))
    : undefined;
  const egress = g.rand(3)
    ? rules().map((r) => ({ ...(r.peers ? { to: r.peers } : {}), ...(r.ports ? { ports: r.ports } : {}) }))
    : undefined;
  const policyTypes = g.pick([undefined, undefined, ['Ingress'], ['Egress'], ['Ingress', 'Egress']] as const);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: `k${index}`, namespace: g.pick(NAMESPACES) },
    spec: {
      podSelector: g.pick(LABEL_SELECTORS),
      ...(policyTypes ? { policyTypes: [...policyTypes] } : {}),
      ...(ingress ? { ingress } : {}),
      ...(egress ? { egress } : {}),
    },
  };
}

const CALICO_SELECTORS = [
  'all()',
  'pod == "a"',
  'pod != "b"',
  'pod in {"b", "c"}',
  'has(pod)',
  '!has(pod)',
  'projectcalico.org/namespace == "y"',
];
const CALICO_NS_SELECTORS = ['all()', 'ns == "x"', 'ns in {"y", "z"}', 'ns != "z"'];

function randomCalicoPolicy(g: ReturnType<typeof generator>, index: number): CalicoPolicy {
  const entity = (destination: boolean, tcp: boolean): CalicoEntityRule | undefined => {
    const e: Record<string, unknown> = {};
    if (g.rand(3) === 0) e.selector = g.pick(CALICO_SELECTORS);
    if (g.rand(4) === 0) e.notSelector = g.pick(CALICO_SELECTORS);
    if (g.rand(4) === 0) e.namespaceSelector = g.pick(CALICO_NS_SELECTORS);
    if (g.rand(5) === 0) e.nets = [g.pick(['10.65.0.0/16', '10.65.1.0/24', '10.65.2.3'])];
    if (g.rand(6) === 0) e.notNets = [g.pick(['10.65.0.0/24', '10.65.1.2/32'])];
    if (destination && tcp && g.rand(3) === 0) e.ports = g.some(2, () => g.pick<number | string>([80, 81, '80:81', 'serve-81-tcp']));
    if (destination && tcp && g.rand(5) === 0) e.notPorts = [g.pick<number | string>([80, '81:90'])];
    if (Array.isArray(e.ports) && e.ports.length === 0) delete e.ports;
    return Object.keys(e).length ? (e as CalicoEntityRule) : undefined;
  };
  const rule = (): CalicoRule => {
    const protocol = g.pick([undefined, 'TCP', 'TCP', 'UDP'] as const);
    const source = entity(false, false);
    const destination = entity(true, protocol === 'TCP');
    return {
      action: g.pick(['Allow', 'Allow', 'Deny', 'Pass', 'Log'] as const),
      ...(protocol ? { protocol } : {}),
      ...(g.rand(8) === 0 ? { notProtocol: 'UDP' as const } : {}),
      ...(source ? { source } : {}),
      ...(destination ? { destination } : {}),
    };
  };
  const global = g.rand(2) === 0;
  const types = g.pick([undefined, ['Ingress'], ['Egress'], ['Ingress', 'Egress']] as const);
  const ingress = g.rand(4) ? g.some(3, rule) : undefined;
  const egress = g.rand(3) ? g.some(3, rule) : undefined;
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: global ? 'GlobalNetworkPolicy' : 'NetworkPolicy',
    metadata: global ? { name: `c${index}` } : { name: `c${index}`, namespace: g.pick(NAMESPACES) },
    spec: {
      ...(g.rand(4) ? { order: g.rand(3) * 10 } : {}),
      ...(g.rand(2) ? { selector: g.pick(CALICO_SELECTORS) } : {}),
      ...(global && g.rand(4) === 0 ? { namespaceSelector: g.pick(CALICO_NS_SELECTORS) } : {}),
      ...(types ? { types: [...types] } : {}),
      ...(ingress ? { ingress } : {}),
      ...(egress ? { egress } : {}),
    },
  };
}

/** Every (from, to, probe) where the two disagree, as lines. */
function disagreements(resources: Resource[], reference: (f: ModelPod, t: ModelPod, p: Probe) => boolean): string[] {
  const explainer = new PolicyExplainer([...clusterResources(), ...resources]);
  const out: string[] = [];
  for (const probe of PROBES)
    for (const from of MODEL.pods)
      for (const to of MODEL.pods) {
        const ours = explainer.verdict(podKey(from), podKey(to), probe.protocol.toLowerCase() as 'tcp' | 'udp', probe.port).allowed;
        const theirs = reference(from, to, probe);
        if (ours !== theirs)
          out.push(`${podKey(from)} -> ${podKey(to)} ${probe.protocol}/${probe.port}: ours ${ours}, reference ${theirs}`);
      }
  return out;
}

describe('policy calculation against the reference evaluators', () => {
  it('Kubernetes NetworkPolicy: 150 random sets of 1-4 policies, every pair and probe', () => {
    for (let seed = 1; seed <= 150; seed++) {
      const g = generator(seed);
      const policies = Array.from({ length: 1 + g.rand(4) }, (_, i) => randomK8sPolicy(g, i));
      const diff = disagreements(policies.map(knpResource), (f, t, p) => k8sAllows(MODEL, policies, f, t, p));
      assert.deepEqual(diff, [], `seed ${seed}\n${JSON.stringify(policies, null, 1)}\n${diff.slice(0, 10).join('\n')}`);
    }
  });

  it('Calico and Kubernetes policies together: 150 random sets, every pair and probe', () => {
    for (let seed = 1; seed <= 150; seed++) {
      const g = generator(1000 + seed);
      const calico = Array.from({ length: 1 + g.rand(3) }, (_, i) => randomCalicoPolicy(g, i));
      const kubernetes = Array.from({ length: g.rand(3) }, (_, i) => randomK8sPolicy(g, i));
      const resources = [...calico.map(calicoResource), ...kubernetes.map(knpResource)];
      const diff = disagreements(resources, (f, t, p) => calicoAllows(MODEL, { calico, kubernetes }, f, t, p));
      assert.deepEqual(diff, [], `seed ${seed}\n${JSON.stringify({ calico, kubernetes }, null, 1)}\n${diff.slice(0, 10).join('\n')}`);
    }
  });

  it("felix compiles every generated node's input (the contract holds both ways)", () => {
    let rules = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const g = generator(1000 + seed);
      const calico = Array.from({ length: 1 + g.rand(3) }, (_, i) => randomCalicoPolicy(g, i));
      const kubernetes = Array.from({ length: g.rand(3) }, (_, i) => randomK8sPolicy(g, i));
      const resources = [...clusterResources(), ...calico.map(calicoResource), ...kubernetes.map(knpResource)];
      for (const node of ['n0', 'n1']) {
        const table = compilePolicy(policyInput(resources, node));
        rules += table.chains.reduce((n, c) => n + c.rules.length, 0);
      }
    }
    assert.ok(rules > 1000, `${rules} rules compiled`);
  });

  it('the generator covers what it should (so the comparison is not vacuous)', () => {
    let denied = 0;
    let allowed = 0;
    for (let seed = 1; seed <= 20; seed++) {
      const g = generator(seed);
      const policies = Array.from({ length: 1 + g.rand(4) }, (_, i) => randomK8sPolicy(g, i));
      for (const probe of PROBES)
        for (const f of MODEL.pods)
          for (const t of MODEL.pods) {
            if (k8sAllows(MODEL, policies, f, t, probe)) allowed++;
            else denied++;
          }
    }
    assert.ok(denied > 500 && allowed > 500, `allowed ${allowed}, denied ${denied}`);
  });
});
