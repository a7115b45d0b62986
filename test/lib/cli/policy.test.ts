// `podroute policy explain|verdict` against a datastore holding a small cluster: what a user
// reads, and the usage errors.
import assert from 'node:assert/strict';
import { runPolicyCommand } from '../../../lib/cli/policy.js';
import { memoryDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { API_VERSION } from '../../../lib/resources/index.js';

async function run(ds: BackendDatastore, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runPolicyCommand(argv, { stdout: (s) => (out += s), stderr: (s) => (err += s) }, ds);
  return { code, out, err };
}

const wep = (ns: string, pod: string, ip: string, labels: Record<string, string>) => ({
  apiVersion: API_VERSION,
  kind: 'WorkloadEndpoint' as const,
  metadata: { name: `n1-k8s-${pod}-eth0`, namespace: ns, labels },
  spec: { node: 'n1', pod, interfaceName: `cali${pod.padEnd(11, '0')}`, ipNetworks: [`${ip}/32`] },
});

describe('podroute policy (CLI)', () => {
  let ds: BackendDatastore;
  before(async () => {
    ds = memoryDatastore();
    await ds.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' }, spec: {} } as never);
    await ds.apply(wep('x', 'a', '10.65.0.2', { pod: 'a' }));
    await ds.apply(wep('x', 'b', '10.65.0.3', { pod: 'b' }));
    await ds.apply({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'only-b', namespace: 'x' },
      spec: {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }], ports: [{ port: 80 }] }],
      },
    } as never);
  });
  after(() => ds.close());

  it('explain names the pod, says it is isolated for ingress and which policy allows what', async () => {
    const r = await run(ds, 'explain', 'x/a');
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^pod x\/a on node n1, addresses 10\.65\.0\.2/);
    assert.match(r.out, /knp\.default\.x\.only-b/);
    assert.ok(r.out.endsWith('\n'), `output does not end with a newline: ${JSON.stringify(r.out.slice(-40))}`);
  });

  it('verdict: b may reach a on TCP 80, not on 81, and the deciding rule is named', async () => {
    const ok = await run(ds, 'verdict', 'x/b', 'x/a', 'tcp', '80');
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /: allowed\n/);
    assert.match(ok.out, /knp\.default\.x\.only-b/);
    const no = await run(ds, 'verdict', 'x/b', 'x/a', 'tcp', '81');
    assert.match(no.out, /: denied\n/);
    assert.match(no.out, /no policy of tier default decided and the tier's default action is Deny/);
  });

  it('usage errors exit 2 and say what is wrong', async () => {
    assert.equal((await run(ds, 'explain', 'a')).code, 2);
    const bad = await run(ds, 'verdict', 'x/b', 'x/a', 'tcp', '70000');
    assert.equal(bad.code, 2);
    assert.match(bad.err, /port: "70000" is not a port number/);
    assert.equal((await run(ds, 'frobnicate')).code, 2);
    assert.equal((await run(ds, '--help')).code, 0);
  });
});
