// The matrix cases checked against the reference on a model of the lab, without the lab: each
// case must block something (a case the open matrix also satisfies proves nothing) and each of
// its steps must change the table, so a badly written case fails here and not only when
// enforcement is on.
import assert from 'node:assert/strict';
import { CALICO_CASES, KUBERNETES_CASES, TIER_CASES, type CasePolicies } from './cases.js';
import { ADMIN_CASES } from './cases-admin.js';
import { type Model, type ModelPod, type Probe, SERVED_PORTS } from '../../support/policy/model.js';
import { calicoTruthTable } from '../../support/policy/reference-calico.js';

const PROBES: readonly Probe[] = [
  { protocol: 'TCP', port: 80 },
  { protocol: 'TCP', port: 81 },
  { protocol: 'UDP', port: 80 },
];

function labModel(): Model {
  const pods: ModelPod[] = [];
  let i = 0;
  for (const ns of ['x', 'y', 'z'])
    for (const name of ['a', 'b', 'c'])
      pods.push({ namespace: ns, name, labels: { pod: name }, ip: `10.244.${i % 2}.${++i}`, ports: SERVED_PORTS });
  return { namespaces: ['x', 'y', 'z'].map((ns) => ({ name: ns, labels: { ns, 'kubernetes.io/metadata.name': ns } })), pods };
}

describe('policy matrix cases (against the reference, no lab)', () => {
  const none: CasePolicies = { kubernetes: [], calico: [] };
  it('there are at least 25 Kubernetes cases and the Calico ones', () => {
    assert.ok(KUBERNETES_CASES.length >= 25, `${KUBERNETES_CASES.length} Kubernetes cases`);
    assert.ok(CALICO_CASES.length >= 4, `${CALICO_CASES.length} Calico cases`);
    assert.ok(TIER_CASES.length >= 12, `${TIER_CASES.length} cases of tiers`);
    assert.ok(ADMIN_CASES.length >= 7, `${ADMIN_CASES.length} cases of admin network policies`);
    const names = [...KUBERNETES_CASES, ...CALICO_CASES, ...TIER_CASES, ...ADMIN_CASES].map((c) => c.name);
    assert.equal(new Set(names).size, names.length, 'case names are unique (they are test titles)');
  });

  for (const c of [...KUBERNETES_CASES, ...CALICO_CASES, ...TIER_CASES, ...ADMIN_CASES])
    it(`${c.name}: blocks something; every step changes the table`, () => {
      let m = labModel();
      const open = calicoTruthTable(m, none, PROBES);
      const policies = c.policies(m);
      let inForce = policies;
      let before = calicoTruthTable(m, policies, PROBES);
      assert.notEqual(before.differences(open).length, 0);
      for (const step of c.steps ?? []) {
        if ('deletePolicies' in step) inForce = none;
        else if ('relabelPod' in step) {
          const { namespace, name, labels } = step.relabelPod;
          m = { ...m, pods: m.pods.map((p) => (p.namespace === namespace && p.name === name ? { ...p, labels } : p)) };
        } else {
          const { name, labels } = step.relabelNamespace;
          m = {
            ...m,
            namespaces: m.namespaces.map((n) =>
              n.name === name ? { name, labels: { ...labels, 'kubernetes.io/metadata.name': name } } : n,
            ),
          };
        }
        const after = calicoTruthTable(m, inForce, PROBES);
        assert.notEqual(after.differences(before).length, 0, step.name);
        before = after;
      }
    });
});
