// `podroute policy explain|verdict` with staged policies in the datastore: the verdict is the
// enforced one, and beside it what the staged policies would do; explain shows the staged policy
// in its tier and the enforced one it would replace.
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
  spec: { node: 'n1', pod, interfaceName: `cali${pod.padEnd(11, '0')}`, ipNetworks: [`${ip}/32`] },
});

describe('podroute policy (CLI) with staged policies', () => {
  let ds: BackendDatastore;
  before(async () => {
    ds = memoryDatastore();
    for (const doc of [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } },
      wep('x', 'a', '10.65.0.2'),
      wep('x', 'b', '10.65.0.3'),
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'web', namespace: 'x' },
        spec: { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{}] },
      },
      {
        apiVersion: API_VERSION,
        kind: 'StagedKubernetesNetworkPolicy',
        metadata: { name: 'web', namespace: 'x' },
        spec: { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ ports: [{ port: 80 }] }] },
      },
    ])
      await ds.apply(validateResource(doc));
  });
  after(() => ds.close());

  it('verdict gives the enforced verdict, then what the staged policies would do, naming the staged rule', async () => {
    const r = await run(ds, 'verdict', 'x/b', 'x/a', 'tcp', '81');
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /TCP 81: allowed\n/);
    assert.match(r.out, /ingress of x\/a: allowed by knp\.default\.x\.web spec\.ingress\[0\]/);
    assert.match(r.out, /as if the staged policies were enforced: denied, a change\n/);
    assert.match(r.out, / {4}ingress of x\/a: denied, no policy of tier default decided/);
    const same = await run(ds, 'verdict', 'x/b', 'x/a', 'tcp', '80');
    assert.match(
      same.out,
      /as if the staged policies were enforced: allowed, the same\n[\s\S]*by staged:knp\.default\.x\.web spec\.ingress\[0\]/,
    );
  });

  it('explain lists the staged policy in its tier and marks the enforced one it replaces', async () => {
    const r = await run(ds, 'explain', 'x/a');
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /knp\.default\.x\.web \(Kubernetes NetworkPolicy x\/web, order 1000\): a staged policy sets or deletes it/);
    assert.match(
      r.out,
      /staged:knp\.default\.x\.web \(staged Kubernetes NetworkPolicy x\/web, order 1000\): staged, counts what it would match/,
    );
  });
});
