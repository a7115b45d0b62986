// The node agent's service feed: Services, EndpointSlices and pools from a real watch of the
// in-memory datastore become felix's ServiceInput for this node and go into the table policy's
// programmer owns (MemoryNftDataplane holds it here; the kernel path is the end-to-end test's).
// What matters is the wiring: policy and services share one table, a new endpoint reaches the
// service's verdict map, a service without endpoints is rejected, and a deleted one leaves.
import assert from 'node:assert/strict';
import { MemoryNftDataplane, PolicyProgrammer } from '../../../felix/index.js';
import { PolicyFeed } from '../../../lib/agent/policy-feed.js';
import { ServiceFeed } from '../../../lib/agent/service-feed.js';
import { type BackendDatastore, memoryDatastore, type Watcher } from '../../../lib/datastore/index.js';
import { validateResource } from '../../../lib/resources/index.js';
import { waitFor } from '../../support/wait.js';

const SERVICE = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'shop' },
  spec: { clusterIP: '10.96.7.7', ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
};
const slice = (addresses: string[]) => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'web-1', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4',
  ports: [{ name: 'http', port: 8080 }],
  endpoints: addresses.map((a, i) => ({ addresses: [a], nodeName: i === 0 ? 'n1' : 'n2' })),
});

describe('services: the agent feed into the policy programmer', () => {
  let ds: BackendDatastore;
  let watcher: Watcher;
  let dataplane: MemoryNftDataplane;
  let policy: PolicyFeed;
  let services: ServiceFeed;
  let logged: string[];

  beforeEach(async () => {
    ds = memoryDatastore();
    dataplane = new MemoryNftDataplane();
    const programmer = new PolicyProgrammer(dataplane, { resyncIntervalMs: 0, retryDelayMs: 0 });
    logged = [];
    policy = new PolicyFeed({ nodeName: 'n1', programmer, log: (e) => logged.push(e) });
    services = new ServiceFeed({ nodeName: 'n1', programmer, nodeAddresses: () => ['192.168.7.1/24', ''], log: (e) => logged.push(e) });
    watcher = ds.watch({ kinds: [...new Set([...PolicyFeed.kinds, ...ServiceFeed.kinds])] });
    watcher.on('event', (e) => {
      if (e.type === 'synced') {
        policy.start();
        services.start();
      } else {
        policy.apply(e);
        services.apply(e);
      }
    });
  });
  afterEach(async () => {
    policy.stop();
    await watcher.close();
    await ds.close();
  });

  const settle = async () => {
    const want = await ds.revision();
    await waitFor(() => watcher.revision, { what: `watch at revision ${want}`, until: (r) => r >= want, intervalMs: 5 });
    await new Promise((r) => setImmediate(r));
    await policy.settled();
    await services.settled();
  };
  /** Every map element of the kernel's table, as "map key -> verdict". */
  const elements = async (): Promise<string[]> => {
    const t = await dataplane.read();
    return [...(t?.maps.values() ?? [])].flatMap((m) => [...m.elements].map(([k, v]) => `${m.name} ${k} -> ${v}`));
  };

  it('endpoints reach the table beside policy; none means reject; a deleted service leaves nothing', async () => {
    await ds.apply({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: { cidr: '10.244.0.0/16' },
    } as never);
    await ds.apply(validateResource(SERVICE));
    await settle();
    // No slice yet: the frontend is there, to reject.
    assert.deepEqual(services.input?.nodeAddresses, ['192.168.7.1']);
    assert.deepEqual(services.input?.clusterCidrs, ['10.244.0.0/16']);
    assert.deepEqual(services.input?.services[0]?.endpoints, []);
    const rejecting = await elements();
    assert.ok(
      rejecting.some((e) => e.includes('10.96.7.7') && e.includes('noep')),
      `the cluster IP in a no-endpoint map: ${rejecting.join('\n')}`,
    );
    await ds.apply(validateResource(slice(['10.244.1.2', '10.244.2.2'])));
    await settle();
    assert.deepEqual(services.input?.services[0]?.endpoints, [
      { address: '10.244.1.2', port: 8080, local: true },
      { address: '10.244.2.2', port: 8080, local: false },
    ]);
    const serving = await elements();
    assert.ok(
      serving.some((e) => e.includes('10.96.7.7') && !e.includes('noep')),
      `the cluster IP in the frontend map: ${serving.join('\n')}`,
    );
    assert.ok(!serving.some((e) => e.includes('noep')), 'and no longer rejected');
    const t = await dataplane.read();
    const chains = [...t!.chains.keys()];
    assert.ok(chains.includes('svc-nat-prerouting'), `the services' chains in the one table: ${chains.join(' ')}`);
    await ds.delete('Service', 'shop/web');
    await settle();
    assert.deepEqual(services.input?.services, []);
    assert.ok(!(await elements()).some((e) => e.includes('10.96.7.7')), 'the deleted service left the maps');
    assert.deepEqual(
      logged.filter((e) => e.startsWith('services-')),
      [],
    );
  });
});
