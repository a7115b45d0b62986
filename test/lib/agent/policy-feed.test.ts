// The policy feed: resources from a real watch of the in-memory datastore go through the
// calculation graph and the compiler into the nftables table, held here by MemoryNftDataplane
// (the kernel's own rules and transactions; the kernel path is covered by test/felix/policy and
// test/e2e/policy). What matters here is the wiring: what reaches the table, and that a pod coming
// or going on another node is a set element update only.
import assert from 'node:assert/strict';
import { MemoryNftDataplane, PolicyProgrammer, type PolicyApplyReport } from '../../../felix/index.js';
import { PolicyFeed } from '../../../lib/agent/policy-feed.js';
import { memoryDatastore, type BackendDatastore, type Watcher } from '../../../lib/datastore/index.js';
import { waitFor } from '../../support/wait.js';
import { API_VERSION } from '../../../lib/resources/index.js';

const wep = (ns: string, pod: string, node: string, ip: string, labels: Record<string, string>) => ({
  apiVersion: API_VERSION,
  kind: 'WorkloadEndpoint' as const,
  metadata: { name: `${node}-k8s-${pod}-eth0`, namespace: ns, labels },
  spec: { node, pod, interfaceName: `cali${pod.padEnd(11, '0')}`, ipNetworks: [`${ip}/32`] },
});

const denyAllButApp = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'web', namespace: 'x' },
  spec: { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }] },
};

describe('agent policy feed', () => {
  let ds: BackendDatastore;
  let watcher: Watcher;
  let dataplane: MemoryNftDataplane;
  let programmer: PolicyProgrammer;
  let feed: PolicyFeed;
  let reports: PolicyApplyReport[];
  let logged: string[];

  beforeEach(async () => {
    ds = memoryDatastore();
    dataplane = new MemoryNftDataplane();
    programmer = new PolicyProgrammer(dataplane, { resyncIntervalMs: 0, retryDelayMs: 0 });
    reports = [];
    logged = [];
    programmer.on('report', (r) => reports.push(r));
    feed = new PolicyFeed({ nodeName: 'n1', programmer, log: (e) => logged.push(e) });
    watcher = ds.watch({ kinds: PolicyFeed.kinds });
    watcher.on('event', (e) => {
      if (e.type === 'synced') feed.start();
      else feed.apply(e);
    });
  });
  afterEach(async () => {
    feed.stop();
    await watcher.close();
    await ds.close();
  });

  const table = () => dataplane.read();
  const settle = async () => {
    const want = await ds.revision();
    await waitFor(() => watcher.revision, { what: `watch at revision ${want}`, until: (r) => r >= want, intervalMs: 5 });
    await new Promise((r) => setImmediate(r));
    await feed.settled();
  };

  it('a policy selecting a local pod gets its chains; the pod on another node joins a set by element operations only', async () => {
    await ds.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x', labels: { ns: 'x' } }, spec: {} } as never);
    await ds.apply(wep('x', 'a', 'n1', '10.65.0.2', { pod: 'a' }));
    await ds.apply(denyAllButApp as never);
    await settle();
    const t = await table();
    assert.ok(t, 'the table exists');
    const chains = [...t.chains.keys()];
    assert.ok(
      chains.some((c) => c.includes('knp.default.x.web')),
      `a chain for the policy: ${chains.join(' ')}`,
    );
    assert.ok(
      chains.some((c) => c.startsWith('to-')),
      `an ingress chain for the local pod: ${chains.join(' ')}`,
    );
    const membersBefore = [...t.sets.values()].flatMap((s) => [...s.elements]);
    assert.ok(!membersBefore.includes('10.65.1.9'), 'no client yet');

    reports.length = 0;
    await ds.apply(wep('x', 'client', 'n2', '10.65.1.9', { app: 'client' }));
    await settle();
    const after = await table();
    assert.ok(
      [...after!.sets.values()].some((s) => s.elements.has('10.65.1.9')),
      'the remote client is a member of the selector set',
    );
    const applied = reports.filter((r) => r.ops > 0);
    assert.ok(applied.length >= 1, 'something was applied');
    for (const r of applied)
      assert.deepEqual(
        Object.keys(r.opCounts).filter((k) => !k.includes('element')),
        [],
        `a remote pod changes set elements only: ${r.script}`,
      );
  });

  it('deleting the policy removes its chains and leaves the pod unisolated', async () => {
    await ds.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' }, spec: {} } as never);
    await ds.apply(wep('x', 'a', 'n1', '10.65.0.2', { pod: 'a' }));
    await ds.apply(denyAllButApp as never);
    await settle();
    assert.ok(
      [...(await table())!.chains.keys()].some((c) => c.includes('knp.default.x.web')),
      'the chain is there first',
    );
    await ds.delete('KubernetesNetworkPolicy' as never, 'x/web');
    await settle();
    const chains = [...(await table())!.chains.keys()];
    assert.ok(!chains.some((c) => c.includes('knp.default.x.web')), `no chain of the deleted policy: ${chains.join(' ')}`);
  });
});
