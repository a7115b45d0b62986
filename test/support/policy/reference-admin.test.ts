// The reference evaluator's admin policies checked on a small cluster whose answers were worked
// out by hand, after the network-policy-api conformance suite's integration scenario (an ANP
// that denies, then passes, a house of pods; a NetworkPolicy that admits it; a BANP that denies
// it): if the oracle is wrong, the matrix proves nothing.
import assert from 'node:assert/strict';
import { type Model, type ModelPod, type NetworkPolicy, type Probe, SERVED_PORTS } from './model.js';
import type { AdminNetworkPolicy, BaselineAdminNetworkPolicy } from './reference-admin.js';
import { calicoAllows, type ClusterPolicies } from './reference-calico.js';

const TCP80: Probe = { protocol: 'TCP', port: 80 };
const TCP81: Probe = { protocol: 'TCP', port: 81 };
const UDP80: Probe = { protocol: 'UDP', port: 80 };

const pod = (namespace: string, name: string, ip: string): ModelPod => ({
  namespace,
  name,
  labels: { pod: name },
  ip,
  ports: SERVED_PORTS,
});
const G = pod('gryffindor', 'harry', '10.0.0.1');
const S = pod('slytherin', 'draco', '10.0.1.1');
const R = pod('ravenclaw', 'luna', '10.0.2.1');
const MODEL: Model = {
  namespaces: ['gryffindor', 'slytherin', 'ravenclaw'].map((n) => ({ name: n, labels: { house: n } })),
  pods: [G, S, R],
};
const house = (h: string) => ({ matchLabels: { house: h } });

const anp = (action: 'Allow' | 'Deny' | 'Pass', priority = 10, name = 'guard'): AdminNetworkPolicy => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha1',
  kind: 'AdminNetworkPolicy',
  metadata: { name },
  spec: {
    priority,
    subject: { namespaces: house('gryffindor') },
    ingress: [{ action, from: [{ namespaces: house('slytherin') }] }],
    egress: [{ action, to: [{ namespaces: house('slytherin') }] }],
  },
});
const BANP: BaselineAdminNetworkPolicy = {
  apiVersion: 'policy.networking.k8s.io/v1alpha1',
  kind: 'BaselineAdminNetworkPolicy',
  metadata: { name: 'default' },
  spec: {
    subject: { namespaces: house('gryffindor') },
    ingress: [{ action: 'Deny', from: [{ namespaces: house('slytherin') }] }],
    egress: [{ action: 'Deny', to: [{ namespaces: house('slytherin') }] }],
  },
};
const NP: NetworkPolicy = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'admit-slytherin', namespace: 'gryffindor' },
  spec: {
    podSelector: {},
    policyTypes: ['Ingress', 'Egress'],
    ingress: [{ from: [{ namespaceSelector: house('slytherin') }] }],
    egress: [{ to: [{ namespaceSelector: house('slytherin') }] }],
  },
};
const allows = (p: Partial<ClusterPolicies>, from: ModelPod, to: ModelPod, probe = TCP80) =>
  calicoAllows(MODEL, { calico: [], kubernetes: [], ...p }, from, to, probe);

describe('reference evaluator: AdminNetworkPolicy and BaselineAdminNetworkPolicy', () => {
  it('an ANP Deny wins over a NetworkPolicy that admits, both ways', () => {
    const p = { admin: [anp('Deny')], kubernetes: [NP], baseline: BANP };
    assert.equal(allows(p, S, G), false, 'ingress into gryffindor from slytherin is denied by the ANP');
    assert.equal(allows(p, G, S), false, 'egress from gryffindor to slytherin is denied by the ANP');
    assert.equal(allows(p, R, G), false, 'ravenclaw is not in the ANP, and the NetworkPolicy admits only slytherin');
  });

  it('Pass hands over to the NetworkPolicy, which admits', () => {
    const p = { admin: [anp('Pass')], kubernetes: [NP], baseline: BANP };
    for (const probe of [TCP80, TCP81, UDP80]) {
      assert.equal(allows(p, S, G, probe), true, `ingress ${probe.protocol}/${probe.port}`);
      assert.equal(allows(p, G, S, probe), true, `egress ${probe.protocol}/${probe.port}`);
    }
  });

  it('Pass with no NetworkPolicy goes to the BANP, which denies', () => {
    const p = { admin: [anp('Pass')], baseline: BANP };
    assert.equal(allows(p, S, G), false);
    assert.equal(allows(p, G, S), false);
    assert.equal(allows(p, R, G), true, 'ravenclaw matches no rule: every tier passes, the profile allows');
  });

  it('the lower priority wins; with equal priorities the name orders them', () => {
    assert.equal(allows({ admin: [anp('Allow', 40, 'b'), anp('Deny', 50, 'a')] }, S, G), true);
    assert.equal(allows({ admin: [anp('Allow', 60, 'b'), anp('Deny', 50, 'a')] }, S, G), false);
    assert.equal(allows({ admin: [anp('Allow', 50, 'b'), anp('Deny', 50, 'a')] }, S, G), false, 'kanp.adminnetworkpolicy.a first');
  });

  it('an ANP Allow beats a NetworkPolicy that isolates', () => {
    const isolate: NetworkPolicy = { ...NP, spec: { podSelector: {}, policyTypes: ['Ingress'] } };
    assert.equal(allows({ admin: [anp('Allow')], kubernetes: [isolate] }, S, G), true);
    assert.equal(allows({ admin: [anp('Allow')], kubernetes: [isolate] }, R, G), false);
  });

  it('named ports and port ranges look at the destination pod and the probe', () => {
    const ports = (p: NonNullable<AdminNetworkPolicy['spec']['ingress']>[number]['ports']): AdminNetworkPolicy => ({
      ...anp('Deny'),
      spec: {
        priority: 1,
        subject: { namespaces: {} },
        ingress: [{ action: 'Deny', from: [{ namespaces: {} }], ...(p ? { ports: p } : {}) }],
      },
    });
    const named = ports([{ namedPort: 'serve-81-tcp' }]);
    assert.deepEqual(
      [TCP80, TCP81, UDP80].map((probe) => allows({ admin: [named] }, S, G, probe)),
      [true, false, true],
    );
    const range = ports([{ portRange: { protocol: 'UDP', start: 79, end: 80 } }]);
    assert.deepEqual(
      [TCP80, TCP81, UDP80].map((probe) => allows({ admin: [range] }, S, G, probe)),
      [true, true, false],
    );
  });
});
