// `podroute policy explain|verdict` with Kubernetes admin policies in the datastore: the verdict
// names the ANP rule or the BANP rule that decided, and the tiers it went through.
import assert from 'node:assert/strict';
import { runPolicyCommand } from '../../../lib/cli/policy.js';
import { type BackendDatastore, memoryDatastore } from '../../../lib/datastore/index.js';
import { API_VERSION, validateResource } from '../../../lib/resources/index.js';

async function run(ds: BackendDatastore, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runPolicyCommand(argv, { stdout: (s) => (out += s), stderr: (s) => (err += s) }, ds);
  return { code, out, err };
}

const wep = (ns: string, pod: string, ip: string) => ({
  apiVersion: API_VERSION,
  kind: 'WorkloadEndpoint',
  metadata: { name: `n1-k8s-${pod}-eth0`, namespace: ns, labels: { pod } },
  spec: { node: 'n1', pod, interfaceName: `cali${ns}${pod.padEnd(10, '0')}`, ipNetworks: [`${ip}/32`] },
});
const API = 'policy.networking.k8s.io/v1alpha1';

describe('podroute policy (CLI) with AdminNetworkPolicy and BaselineAdminNetworkPolicy', () => {
  let ds: BackendDatastore;
  before(async () => {
    ds = memoryDatastore();
    const docs = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'y' } },
      wep('x', 'a', '10.65.0.2'),
      wep('y', 'a', '10.65.1.2'),
      {
        apiVersion: API,
        kind: 'AdminNetworkPolicy',
        metadata: { name: 'guard-x' },
        spec: {
          priority: 7,
          subject: { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'x' } } },
          ingress: [
            { name: 'no-81', action: 'Deny', from: [{ namespaces: {} }], ports: [{ portNumber: { port: 81 } }] },
            { name: 'rest', action: 'Pass', from: [{ namespaces: {} }] },
          ],
        },
      },
      {
        apiVersion: API,
        kind: 'BaselineAdminNetworkPolicy',
        metadata: { name: 'default' },
        spec: {
          subject: { namespaces: {} },
          ingress: [{ action: 'Deny', from: [{ namespaces: {} }], ports: [{ portNumber: { port: 82 } }] }],
        },
      },
    ];
    for (const d of docs) await ds.apply(validateResource(d));
  });
  after(() => ds.close());

  it('verdict names the ANP rule that denied, and the BANP rule when the ANP passed', async () => {
    const denied = await run(ds, 'verdict', 'y/a', 'x/a', 'tcp', '81');
    assert.equal(denied.code, 0, denied.err);
    assert.match(denied.out, /: denied\n/);
    assert.match(denied.out, /by kanp\.adminnetworkpolicy\.guard-x spec\.ingress\[0\]\.from\[0\] \(Deny, tier adminnetworkpolicy\)/);
    const baseline = await run(ds, 'verdict', 'y/a', 'x/a', 'tcp', '82');
    assert.match(
      baseline.out,
      /by kbanp\.baselineadminnetworkpolicy\.default spec\.ingress\[0\]\.from\[0\] \(Deny, tier baselineadminnetworkpolicy\)/,
    );
    const allowed = await run(ds, 'verdict', 'y/a', 'x/a', 'tcp', '80');
    assert.match(allowed.out, /: allowed\n/);
    assert.match(allowed.out, /every tier passed it on and the namespace's profile allows it/);
  });

  it('explain lists the admin tier before the baseline tier, with the rules in words', async () => {
    const r = await run(ds, 'explain', 'x/a');
    assert.equal(r.code, 0, r.err);
    const admin = r.out.indexOf('tier adminnetworkpolicy');
    const baseline = r.out.indexOf('tier baselineadminnetworkpolicy');
    assert.ok(admin > 0 && baseline > admin, `the admin tier comes first:\n${r.out}`);
    assert.match(r.out, /spec\.ingress\[0\]\.from\[0\]: Deny TCP port 81 from every pod in every namespace/);
  });
});
