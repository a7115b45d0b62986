// The reference evaluators checked on small clusters whose answers were worked out by hand from
// the Kubernetes and Calico documentation: if the oracle is wrong, the matrix proves nothing.
import assert from 'node:assert/strict';
import { parseCalicoSelector } from './calico-selector.js';
import {
  type Model,
  type ModelPod,
  type NetworkPolicy,
  type NetworkPolicyEgressRule,
  type NetworkPolicyIngressRule,
  type LabelSelector,
  type PolicyType,
  type Probe,
  SERVED_PORTS,
  labelSelectorMatches,
} from './model.js';
import {
  type CalicoPolicy,
  type CalicoRule,
  type CalicoTier,
  calicoAllows,
  calicoPolicyTypes,
  calicoTruthTable,
} from './reference-calico.js';
import { effectivePolicyTypes, inIpBlock, k8sAllows, k8sTruthTable } from './reference.js';
import { TruthTable, formatComparison } from './truth-table.js';

const TCP80: Probe = { protocol: 'TCP', port: 80 };
const TCP81: Probe = { protocol: 'TCP', port: 81 };
const UDP80: Probe = { protocol: 'UDP', port: 80 };
const PROBES = [TCP80, TCP81, UDP80];

const pod = (namespace: string, name: string, ip: string): ModelPod => ({
  namespace,
  name,
  labels: { pod: name },
  ip,
  ports: SERVED_PORTS,
});
const XA = pod('x', 'a', '10.0.0.1');
const XB = pod('x', 'b', '10.0.0.2');
const YA = pod('y', 'a', '10.0.1.1');
const MODEL: Model = {
  namespaces: [
    { name: 'x', labels: { ns: 'x' } },
    { name: 'y', labels: { ns: 'y' } },
  ],
  pods: [XA, XB, YA],
};

function knp(
  namespace: string,
  name: string,
  podSelector: LabelSelector,
  rules: { ingress?: NetworkPolicyIngressRule[]; egress?: NetworkPolicyEgressRule[]; policyTypes?: PolicyType[] },
): NetworkPolicy {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec: { podSelector, ...rules } };
}

/** The pairs (from→to) allowed for one probe, self excluded: a readable fingerprint of a table. */
function allowedPairs(allows: (f: ModelPod, t: ModelPod, p: Probe) => boolean, probe: Probe): string[] {
  const out: string[] = [];
  for (const f of MODEL.pods)
    for (const t of MODEL.pods) if (f !== t && allows(f, t, probe)) out.push(`${f.namespace}${f.name}>${t.namespace}${t.name}`);
  return out;
}
const k8s = (policies: NetworkPolicy[], probe = TCP80) => allowedPairs((f, t, p) => k8sAllows(MODEL, policies, f, t, p), probe);
const ALL = ['xa>xb', 'xa>ya', 'xb>xa', 'xb>ya', 'ya>xa', 'ya>xb'];

describe('policy reference: Kubernetes NetworkPolicy', () => {
  it('no policy: every pod reaches every pod on every probe', () => {
    for (const p of PROBES) assert.deepEqual(k8s([], p), ALL);
    const t = k8sTruthTable(MODEL, [], PROBES);
    assert.equal(t.allowedCount(TCP80), 9);
  });

  it('deny-all ingress isolates every pod of the namespace, not its egress; a pod still reaches itself', () => {
    const deny = knp('x', 'deny', {}, { policyTypes: ['Ingress'] });
    assert.deepEqual(k8s([deny]), ['xa>ya', 'xb>ya']);
    assert.equal(k8sAllows(MODEL, [deny], XA, XA, TCP80), true);
  });

  it('deny-all egress stops what the namespace sends, not what it receives', () => {
    assert.deepEqual(k8s([knp('x', 'deny', {}, { policyTypes: ['Egress'] })]), ['ya>xa', 'ya>xb']);
  });

  it('policyTypes defaults to Ingress, plus Egress only when there are egress rules', () => {
    const egressOnly = knp(
      'x',
      'e',
      { matchLabels: { pod: 'a' } },
      { egress: [{ to: [{ namespaceSelector: { matchLabels: { ns: 'y' } } }] }] },
    );
    assert.deepEqual(effectivePolicyTypes(egressOnly), ['Ingress', 'Egress']);
    // Defaulted: x/a is isolated for ingress too (no ingress rule) and may send only to y.
    assert.deepEqual(k8s([egressOnly]), ['xa>ya', 'xb>ya', 'ya>xb']);
    const explicit = knp(
      'x',
      'e',
      { matchLabels: { pod: 'a' } },
      { policyTypes: ['Egress'], egress: egressOnly.spec.egress! as NetworkPolicyEgressRule[] },
    );
    assert.deepEqual(k8s([explicit]), ['xa>ya', 'xb>xa', 'xb>ya', 'ya>xa', 'ya>xb']);
    assert.deepEqual(effectivePolicyTypes(knp('x', 'i', {}, { egress: [] })), ['Ingress']);
  });

  it('an allow-all ingress rule {} on an isolated pod lets everything in', () => {
    assert.deepEqual(k8s([knp('x', 'deny', {}, { policyTypes: ['Ingress'] }), knp('x', 'all', {}, { ingress: [{}] })]), ALL);
  });

  it('a podSelector peer selects in the policy namespace only', () => {
    const p = knp('x', 'from-a', { matchLabels: { pod: 'b' } }, { ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'a' } } }] }] });
    // y/a carries pod=a too, but lives in y.
    assert.deepEqual(k8s([p]), ['xa>xb', 'xa>ya', 'xb>xa', 'xb>ya', 'ya>xa']);
  });

  it('namespaceSelector and podSelector in one peer mean both; as two peers, either', () => {
    const both = knp(
      'x',
      'and',
      { matchLabels: { pod: 'a' } },
      {
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'y' } }, podSelector: { matchLabels: { pod: 'a' } } }] }],
      },
    );
    assert.deepEqual(k8s([both]), ['xa>xb', 'xa>ya', 'xb>ya', 'ya>xa', 'ya>xb']);
    const either = knp(
      'x',
      'or',
      { matchLabels: { pod: 'a' } },
      {
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'y' } } }, { podSelector: { matchLabels: { pod: 'b' } } }] }],
      },
    );
    assert.deepEqual(k8s([either]), ALL);
    const nsOnly = knp('x', 'ns', { matchLabels: { pod: 'a' } }, { ingress: [{ from: [{ namespaceSelector: {} }] }] });
    assert.deepEqual(k8s([nsOnly]), ALL, 'namespaceSelector {} selects every namespace');
  });

  it('ipBlock matches the pod address against cidr minus except', () => {
    assert.equal(inIpBlock('10.0.0.2', { cidr: '10.0.0.0/16', except: ['10.0.0.2/32'] }), false);
    assert.equal(inIpBlock('10.0.1.1', { cidr: '10.0.0.0/16', except: ['10.0.0.2/32'] }), true);
    assert.equal(inIpBlock('10.1.0.1', { cidr: '10.0.0.0/16' }), false);
    const p = knp(
      'x',
      'ip',
      { matchLabels: { pod: 'a' } },
      { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/16', except: ['10.0.0.2/32'] } }] }] },
    );
    assert.deepEqual(k8s([p]), ['xa>xb', 'xa>ya', 'xb>ya', 'ya>xa', 'ya>xb']);
  });

  it('named ports resolve against the destination pod, with their protocol', () => {
    const named = (port: string, protocol?: 'TCP' | 'UDP') =>
      knp('x', 'named', { matchLabels: { pod: 'a' } }, { ingress: [{ ports: [{ port, ...(protocol ? { protocol } : {}) }] }] });
    assert.deepEqual(k8s([named('serve-81-tcp')], TCP81), ALL);
    assert.deepEqual(k8s([named('serve-81-tcp')], TCP80), ['xa>xb', 'xa>ya', 'xb>ya', 'ya>xb']);
    assert.deepEqual(k8s([named('serve-80-udp', 'UDP')], UDP80), ALL);
    // Port name of a TCP port with protocol UDP: nothing resolves.
    assert.deepEqual(k8s([named('serve-81-tcp', 'UDP')], UDP80), ['xa>xb', 'xa>ya', 'xb>ya', 'ya>xb']);
    // A pod without that port name is not reachable through it.
    const bare: Model = { ...MODEL, pods: MODEL.pods.map((p) => (p === XA ? { ...p, ports: [] } : p)) };
    assert.equal(k8sAllows(bare, [named('serve-81-tcp')], XB, bare.pods[0]!, TCP81), false);
  });

  it('endPort makes an inclusive range; protocol defaults to TCP; a port entry without port is the whole protocol', () => {
    const range = knp('x', 'r', { matchLabels: { pod: 'a' } }, { ingress: [{ ports: [{ port: 80, endPort: 81 }] }] });
    assert.deepEqual(k8s([range], TCP80), ALL);
    assert.deepEqual(k8s([range], TCP81), ALL);
    assert.deepEqual(k8s([range], UDP80), ['xa>xb', 'xa>ya', 'xb>ya', 'ya>xb']);
    const udp = knp('x', 'u', { matchLabels: { pod: 'a' } }, { ingress: [{ ports: [{ protocol: 'UDP' }] }] });
    assert.deepEqual(k8s([udp], UDP80), ALL);
    assert.deepEqual(k8s([udp], TCP81), ['xa>xb', 'xa>ya', 'xb>ya', 'ya>xb']);
  });

  it('egress to one namespace on one port; a rule needs peer AND port', () => {
    const p = knp(
      'x',
      'e',
      { matchLabels: { pod: 'a' } },
      {
        policyTypes: ['Egress'],
        egress: [{ to: [{ namespaceSelector: { matchLabels: { ns: 'y' } } }], ports: [{ protocol: 'TCP', port: 80 }] }],
      },
    );
    assert.deepEqual(k8s([p], TCP80), ['xa>ya', 'xb>xa', 'xb>ya', 'ya>xa', 'ya>xb']);
    assert.deepEqual(k8s([p], TCP81), ['xb>xa', 'xb>ya', 'ya>xa', 'ya>xb']);
  });

  it('policies selecting one pod are unioned; a connection needs egress and ingress', () => {
    const only80 = knp('x', 'p80', { matchLabels: { pod: 'a' } }, { ingress: [{ ports: [{ port: 80 }] }] });
    const only81 = knp('x', 'p81', { matchLabels: { pod: 'a' } }, { ingress: [{ ports: [{ port: 81 }] }] });
    assert.deepEqual(k8s([only80, only81], TCP81), ALL);
    assert.deepEqual(k8s([only80], TCP81), ['xa>xb', 'xa>ya', 'xb>ya', 'ya>xb']);
    const ingressFromY = knp(
      'x',
      'in',
      { matchLabels: { pod: 'a' } },
      { ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'y' } } }] }] },
    );
    const yEgressNone = knp('y', 'out', {}, { policyTypes: ['Egress'] });
    assert.deepEqual(k8s([ingressFromY, yEgressNone]), ['xa>xb', 'xa>ya', 'xb>ya']);
  });

  it('label selectors: matchExpressions In, NotIn (a missing key is not in), Exists, DoesNotExist', () => {
    const l = { pod: 'a', tier: 'web' };
    assert.equal(labelSelectorMatches({ matchExpressions: [{ key: 'pod', operator: 'In', values: ['a', 'b'] }] }, l), true);
    assert.equal(labelSelectorMatches({ matchExpressions: [{ key: 'role', operator: 'NotIn', values: ['db'] }] }, l), true);
    assert.equal(labelSelectorMatches({ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['web'] }] }, l), false);
    assert.equal(labelSelectorMatches({ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, l), true);
    assert.equal(labelSelectorMatches({ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, l), false);
    assert.equal(labelSelectorMatches({ matchLabels: { pod: 'a' }, matchExpressions: [{ key: 'x', operator: 'Exists' }] }, l), false);
    assert.equal(labelSelectorMatches({}, {}), true);
  });
});

const cnp = (
  namespace: string,
  name: string,
  order: number | undefined,
  selector: string,
  spec: Partial<CalicoPolicy['spec']>,
): CalicoPolicy => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name, namespace },
  spec: { ...(order === undefined ? {} : { order }), selector, ...spec },
});
const gnp = (name: string, order: number | undefined, selector: string, spec: Partial<CalicoPolicy['spec']>): CalicoPolicy => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name },
  spec: { ...(order === undefined ? {} : { order }), selector, ...spec },
});
const calico = (c: CalicoPolicy[], k: NetworkPolicy[] = [], probe = TCP80) =>
  allowedPairs((f, t, p) => calicoAllows(MODEL, { calico: c, kubernetes: k }, f, t, p), probe);
const fromY: CalicoRule = { action: 'Allow', source: { namespaceSelector: "ns == 'y'" } };

describe('policy reference: Calico tiers', () => {
  it('with no Calico policy it is the Kubernetes evaluator', () => {
    const deny = knp('x', 'deny', {}, { policyTypes: ['Ingress'] });
    assert.deepEqual(calico([], [deny]), k8s([deny]));
    assert.deepEqual(calicoTruthTable(MODEL, { calico: [], kubernetes: [] }, PROBES).differences(k8sTruthTable(MODEL, [], PROBES)), []);
  });

  it('order: a Deny at order 10 wins over an Allow at order 20, and the other way round', () => {
    const deny = cnp('x', 'deny', 10, "pod == 'a'", {
      types: ['Ingress'],
      ingress: [{ action: 'Deny', source: { namespaceSelector: "ns == 'y'" } }],
    });
    const allow = cnp('x', 'allow', 20, "pod == 'a'", { types: ['Ingress'], ingress: [{ action: 'Allow' }] });
    assert.deepEqual(calico([deny, allow]), ['xa>xb', 'xa>ya', 'xb>xa', 'xb>ya', 'ya>xb']);
    const early = { ...allow, spec: { ...allow.spec, order: 5 } };
    assert.deepEqual(calico([deny, early]), ALL);
    // No order sorts after every ordered policy.
    const unordered = cnp('x', 'allow', undefined, "pod == 'a'", { types: ['Ingress'], ingress: [{ action: 'Allow' }] });
    assert.deepEqual(calico([unordered, deny]), ['xa>xb', 'xa>ya', 'xb>xa', 'xb>ya', 'ya>xb']);
  });

  it('[tier-eval] a tier that selects the endpoint but decides nothing drops', () => {
    const onlyY = cnp('x', 'only-y', 10, "pod == 'a'", { types: ['Ingress'], ingress: [fromY] });
    assert.deepEqual(calico([onlyY]), ['xa>xb', 'xa>ya', 'xb>ya', 'ya>xa', 'ya>xb']);
    const logOnly = cnp('x', 'log', 10, "pod == 'a'", { types: ['Ingress'], ingress: [{ action: 'Log' }] });
    assert.deepEqual(calico([logOnly]), ['xa>xb', 'xa>ya', 'xb>ya', 'ya>xb'], 'Log goes on, then the end of the tier drops');
  });

  it('[tier-eval] Pass leaves the tier, skipping its later policies, Kubernetes ones included; past the last tier: allowed', () => {
    const pass = cnp('x', 'pass', 10, "pod == 'a'", {
      types: ['Ingress'],
      ingress: [{ action: 'Pass', source: { namespaceSelector: "ns == 'y'" } }],
    });
    const allowRest = cnp('x', 'rest', 20, "pod == 'a'", { types: ['Ingress'], ingress: [{ action: 'Deny' }] });
    assert.deepEqual(calico([pass, allowRest]), ['xa>xb', 'xa>ya', 'xb>ya', 'ya>xa', 'ya>xb']);
    const kDeny = knp('x', 'deny', {}, { policyTypes: ['Ingress'] });
    assert.deepEqual(calico([pass, allowRest], [kDeny]), ['xa>ya', 'xb>ya', 'ya>xa'], 'y passed x/a; the deny-all holds x/b');
  });

  it('[tier-eval][rule-eval] a policy that matches no rule hands the packet to the next policy of its tier', () => {
    const denyY = cnp('x', 'deny-y', 500, 'all()', {
      types: ['Ingress'],
      ingress: [{ action: 'Deny', source: { namespaceSelector: "ns == 'y'" } }],
    });
    const allowAll = knp('x', 'allow-all', {}, { ingress: [{}] });
    assert.deepEqual(calico([denyY], [allowAll]), ['xa>xb', 'xa>ya', 'xb>xa', 'xb>ya']);
    const denyX = cnp('y', 'deny-x', 500, 'all()', {
      types: ['Ingress'],
      ingress: [{ action: 'Deny', source: { namespaceSelector: "ns == 'x'" } }],
    });
    assert.deepEqual(calico([denyX], []), ['xa>xb', 'xb>xa', 'ya>xa', 'ya>xb'], 'without a later policy, the end of the tier drops');
  });

  it('[knp-order][policy-order] Kubernetes policies are order 1000 of the default tier: a Calico policy at 2000 comes after them', () => {
    const kAllowY = knp('x', 'from-y', {}, { ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'y' } } }] }] });
    const late = cnp('x', 'late-allow', 2000, 'all()', { types: ['Ingress'], ingress: [{ action: 'Allow' }] });
    const early = cnp('x', 'early-deny', 999, 'all()', {
      types: ['Ingress'],
      ingress: [{ action: 'Deny', source: { namespaceSelector: "ns == 'y'" } }],
    });
    assert.deepEqual(calico([late], [kAllowY]), ALL, 'what the Kubernetes policy does not allow, the later Calico one does');
    assert.deepEqual(calico([early, late], [kAllowY]), ['xa>xb', 'xa>ya', 'xb>xa', 'xb>ya'], 'a Deny at 999 comes first');
  });

  it('[tier-eval][tier-spec] tiers by order, lowest first; a tier with defaultAction Pass sends on what it did not decide', () => {
    const tiers: CalicoTier[] = [
      { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 'platform' }, spec: { order: 100, defaultAction: 'Pass' } },
      { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 'security' }, spec: { order: 50 } },
    ];
    const denyY = {
      ...cnp('x', 'platform.deny-y', undefined, 'all()', {
        types: ['Ingress'],
        ingress: [{ action: 'Deny', source: { namespaceSelector: "ns == 'y'" } }],
      }),
    };
    const inPlatform: CalicoPolicy = { ...denyY, spec: { ...denyY.spec, tier: 'platform' } };
    const run = (c: CalicoPolicy[], k: NetworkPolicy[] = []) =>
      allowedPairs((f, t, p) => calicoAllows(MODEL, { calico: c, kubernetes: k, tiers }, f, t, p), TCP80);
    assert.deepEqual(run([inPlatform]), ['xa>xb', 'xa>ya', 'xb>xa', 'xb>ya'], 'x passes the platform tier and is allowed');
    const kDeny = knp('x', 'deny', {}, { policyTypes: ['Ingress'] });
    assert.deepEqual(run([inPlatform], [kDeny]), ['xa>ya', 'xb>ya'], 'then the default tier decides');
    const allowX: CalicoPolicy = {
      ...cnp('x', 'security.allow-x', undefined, 'all()', {
        types: ['Ingress'],
        ingress: [{ action: 'Allow', source: { namespaceSelector: "ns == 'x'" } }],
      }),
    };
    const inSecurity: CalicoPolicy = { ...allowX, spec: { ...allowX.spec, tier: 'security' } };
    assert.deepEqual(
      run([inPlatform, inSecurity], [kDeny]),
      ['xa>xb', 'xa>ya', 'xb>xa', 'xb>ya'],
      'security (50) runs before platform (100) and ends in Deny',
    );
  });

  it('[tier-eval] a Calico Allow at order 10 is final: the Kubernetes policies after it in the tier are not consulted', () => {
    const allow = cnp('x', 'allow', 10, 'all()', { types: ['Ingress'], ingress: [{ action: 'Allow' }] });
    assert.deepEqual(calico([allow], [knp('x', 'deny', {}, { policyTypes: ['Ingress'] })]), ALL);
  });

  it('a NetworkPolicy applies in its namespace, its rule selectors too; a GlobalNetworkPolicy everywhere', () => {
    const denyA = cnp('x', 'deny-a', 10, "pod == 'a'", { types: ['Ingress'], ingress: [{ action: 'Deny' }] });
    assert.deepEqual(calico([denyA]), ['xa>xb', 'xa>ya', 'xb>ya', 'ya>xb']);
    const g = gnp('deny-a', 10, "pod == 'a'", { types: ['Ingress'], ingress: [{ action: 'Deny' }] });
    assert.deepEqual(calico([g]), ['xa>xb', 'ya>xb']);
    const fromA = cnp('x', 'from-a', 10, "pod == 'b'", {
      types: ['Ingress'],
      ingress: [{ action: 'Allow', source: { selector: "pod == 'a'" } }],
    });
    assert.deepEqual(calico([fromA]), ['xa>xb', 'xa>ya', 'xb>xa', 'xb>ya', 'ya>xa']);
    const gFromA = gnp('from-a', 10, "pod == 'b'", {
      types: ['Ingress'],
      ingress: [{ action: 'Allow', source: { selector: "pod == 'a'" } }],
    });
    assert.deepEqual(calico([gFromA]), ALL);
    const gInY = gnp('in-y', 10, 'all()', { namespaceSelector: "ns == 'y'", types: ['Ingress'], ingress: [] });
    assert.deepEqual(calico([gInY]), ['xa>xb', 'xb>xa', 'ya>xa', 'ya>xb']);
  });

  it('selectors see projectcalico.org/namespace, as Calico sets it on every workload endpoint', () => {
    const g = gnp('deny-y', 10, "projectcalico.org/namespace == 'y'", { types: ['Ingress'], ingress: [{ action: 'Deny' }] });
    assert.deepEqual(calico([g]), ['xa>xb', 'xb>xa', 'ya>xa', 'ya>xb']);
  });

  it('egress: Deny to a port, Allow the rest; nets and notNets', () => {
    const p = cnp('x', 'e', 10, "pod == 'a'", {
      types: ['Egress'],
      egress: [
        { action: 'Deny', protocol: 'TCP', destination: { ports: [81] } },
        { action: 'Allow', destination: { notNets: ['10.0.0.2/32'] } },
      ],
    });
    assert.deepEqual(calico([p], [], TCP80), ['xa>ya', 'xb>xa', 'xb>ya', 'ya>xa', 'ya>xb']);
    assert.deepEqual(calico([p], [], TCP81), ['xb>xa', 'xb>ya', 'ya>xa', 'ya>xb']);
    const named = cnp('x', 'n', 10, "pod == 'a'", {
      types: ['Egress'],
      egress: [{ action: 'Allow', protocol: 'UDP', destination: { ports: ['serve-80-udp'] } }],
    });
    assert.deepEqual(calico([named], [], UDP80), ALL);
    assert.deepEqual(calico([named], [], TCP80), ['xb>xa', 'xb>ya', 'ya>xa', 'ya>xb']);
    const anyProto = cnp('x', 'n', 10, "pod == 'a'", {
      types: ['Egress'],
      egress: [{ action: 'Allow', destination: { ports: ['serve-80-udp', 'serve-81-tcp'] } }],
    });
    assert.deepEqual(calico([anyProto], [], UDP80), ALL, 'a named port without protocol matches under its own protocol');
    assert.deepEqual(calico([anyProto], [], TCP81), ALL);
    assert.deepEqual(calico([anyProto], [], TCP80), ['xb>xa', 'xb>ya', 'ya>xa', 'ya>xb']);
    const range = cnp('x', 'r', 10, "pod == 'a'", {
      types: ['Egress'],
      egress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: ['81:90'] } }],
    });
    assert.deepEqual(calico([range], [], TCP81), ALL);
  });

  it('types defaults from the rules present', () => {
    assert.deepEqual(calicoPolicyTypes(cnp('x', 'a', 1, 'all()', {})), ['Ingress']);
    assert.deepEqual(calicoPolicyTypes(cnp('x', 'a', 1, 'all()', { egress: [{ action: 'Allow' }] })), ['Egress']);
    assert.deepEqual(calicoPolicyTypes(cnp('x', 'a', 1, 'all()', { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] })), [
      'Ingress',
      'Egress',
    ]);
  });

  it('the selector language', () => {
    const l = { pod: 'a', tier: 'web' };
    const m = (s: string) => parseCalicoSelector(s)(l);
    assert.equal(m('all()'), true);
    assert.equal(m(''), true);
    assert.equal(m('pod == \'a\' && tier == "web"'), true);
    assert.equal(m("pod == 'b' || !has(tier)"), false);
    assert.equal(m("role != 'db'"), true, '!= matches a missing key');
    assert.equal(m("pod in {'a', 'c'} && tier not in {'db'}"), true);
    assert.equal(m("!(pod in {'a'})"), false);
    assert.equal(m('has(tier) && (pod == "x" || pod == "a")'), true);
    assert.throws(() => parseCalicoSelector("pod = 'a'"), /selector/);
    assert.throws(() => parseCalicoSelector("pod == 'a' &&"), /selector/);
  });
});

describe('policy truth tables', () => {
  it('the comparison marks exactly the cells that differ, and lists them', () => {
    const a = new TruthTable(['x/a', 'x/b'], [TCP80]);
    const b = new TruthTable(['x/a', 'x/b'], [TCP80]);
    for (const f of a.pods)
      for (const t of a.pods) {
        a.set(f, t, TCP80, true);
        b.set(f, t, TCP80, !(f === 'x/a' && t === 'x/b'));
      }
    const d = a.differences(b);
    assert.deepEqual(
      d.map((x) => `${x.from}>${x.to}`),
      ['x/a>x/b'],
    );
    const text = formatComparison(a, b, 'case');
    assert.match(text, /x\/a -> x\/b tcp\/80: the reference says allowed, measured blocked/);
    assert.match(text, /x\/a +\. +\. +x\/a +\. +X +x\/a +\. +\*/);
    const missing = new TruthTable(['x/a', 'x/b'], [TCP80]);
    assert.equal(a.differences(missing).length, 4, 'a cell not measured is a difference');
  });
});
