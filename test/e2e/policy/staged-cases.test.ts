// The staged matrix cases without the lab: against the reference, each case's staged policies
// must change the table "as if" enforced (a staged case that changes nothing previews nothing),
// and the calculation graph must agree cell by cell, both on the enforced verdict (the staged
// policies change nothing) and on the verdict it gives as if they were enforced.
import assert from 'node:assert/strict';
import { PolicyExplainer } from '../../../lib/policy/index.js';
import { type Resource, validateResource } from '../../../lib/resources/index.js';
import { type Model, type ModelPod, podKey, type Probe, SERVED_PORTS } from '../../support/policy/model.js';
import { calicoTruthTable } from '../../support/policy/reference-calico.js';
import { stagedTruthTable } from '../../support/policy/reference-staged.js';
import { formatComparison, TruthTable } from '../../support/policy/truth-table.js';
import { STAGED_CASES } from './staged-cases.js';

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

/** The model's namespaces and pods as the datastore holds them. */
function clusterResources(m: Model): Resource[] {
  return [
    ...m.namespaces.map((n) => validateResource({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: n.name, labels: n.labels } })),
    ...m.pods.map((p, i) =>
      validateResource({
        apiVersion: 'projectcalico.org/v3',
        kind: 'WorkloadEndpoint',
        metadata: {
          name: `n${i % 2}-k8s-${p.name}-eth0`,
          namespace: p.namespace,
          labels: { ...p.labels, 'projectcalico.org/namespace': p.namespace, 'projectcalico.org/orchestrator': 'k8s' },
        },
        spec: {
          node: `n${i % 2}`,
          pod: p.name,
          interfaceName: `cali${p.namespace}${p.name}0000000`.slice(0, 15),
          ipNetworks: [`${p.ip}/32`],
          ports: p.ports.map((c) => ({ name: c.name, protocol: c.protocol, port: c.containerPort })),
        },
      }),
    ),
  ];
}

describe('policy matrix: staged cases (against the reference and the calculation graph, no lab)', () => {
  const m = labModel();
  for (const c of STAGED_CASES)
    it(c.name, () => {
      const p = c.policies();
      const enforced = calicoTruthTable(m, p, PROBES);
      const asIf = stagedTruthTable(m, p, p.staged, PROBES);
      assert.notEqual(asIf.differences(enforced).length, 0, 'the staged policies must change something as if enforced');
      const docs = [...(p.tiers ?? []), ...p.calico, ...p.kubernetes, ...p.staged].map((d) => validateResource(d));
      const e = new PolicyExplainer([...clusterResources(m), ...docs]);
      const real = new TruthTable(enforced.pods, PROBES);
      const staged = new TruthTable(enforced.pods, PROBES);
      for (const probe of PROBES)
        for (const from of m.pods)
          for (const to of m.pods) {
            const v = e.verdict(podKey(from), podKey(to), probe.protocol === 'TCP' ? 'tcp' : 'udp', probe.port);
            real.set(podKey(from), podKey(to), probe, v.allowed);
            staged.set(podKey(from), podKey(to), probe, v.staged?.allowed ?? v.allowed);
            if (from !== to) assert.ok(v.staged, `${podKey(from)} -> ${podKey(to)}: a staged verdict is given while policies are staged`);
          }
      assert.equal(enforced.differences(real).length, 0, formatComparison(enforced, real, `${c.name}: enforced`));
      assert.equal(asIf.differences(staged).length, 0, formatComparison(asIf, staged, `${c.name}: as if staged`));
    });
});
