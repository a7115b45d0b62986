// The node agent's service feed: Services, EndpointSlices and pools from a real watch of the
// in-memory datastore become felix's ServiceInput for this node and go into the table policy's
// programmer owns (MemoryNftDataplane holds it here; the kernel path is the end-to-end test's).
// What matters is the wiring: policy and services share one table, a new endpoint reaches the
// service's verdict map, a service without endpoints is rejected, and a deleted one leaves.
import assert from 'node:assert/strict';
import { MemoryNftDataplane, PolicyProgrammer, serviceInputChange } from '../../../felix/index.js';
import { PolicyFeed } from '../../../lib/agent/policy-feed.js';
import { ServiceFeed } from '../../../lib/agent/service-feed.js';
import { type BackendDatastore, memoryDatastore, type WatchEvent, type Watcher } from '../../../lib/datastore/index.js';
import { type EndpointSlice, type Resource, type Service, validateResource } from '../../../lib/resources/index.js';
import { serviceInput } from '../../../lib/services/service-input.js';
import { prng } from '../../support/prng.js';
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
  let fields: Record<string, unknown>[];

  beforeEach(async () => {
    ds = memoryDatastore();
    dataplane = new MemoryNftDataplane();
    const programmer = new PolicyProgrammer(dataplane, { resyncIntervalMs: 0, retryDelayMs: 0 });
    logged = [];
    fields = [];
    policy = new PolicyFeed({ nodeName: 'n1', programmer, log: (e) => logged.push(e) });
    services = new ServiceFeed({
      nodeName: 'n1',
      programmer,
      nodeAddresses: () => ['192.168.7.1/24', ''],
      log: (e, f) => {
        logged.push(e);
        fields.push({ event: e, ...f });
      },
    });
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

  it('a Service the store holds but the address rules refuse is not programmed, said once and counted; the others are', async () => {
    await ds.apply(validateResource(SERVICE));
    // Written straight into the store, as another tool would: no apply checked them.
    const bad = (name: string, clusterIP: string, annotations?: Record<string, string>) =>
      validateResource({ ...SERVICE, metadata: { name, namespace: 'shop', annotations }, spec: { ...SERVICE.spec, clusterIP } });
    await ds.apply(bad('google', '8.8.8.8'));
    // Marked as allocated: the address web wrote by hand stays web's (the controller would move this one).
    await ds.apply(bad('thief', '10.96.7.7', { 'podroute.io/allocated-cluster-ips': '10.96.7.7' }));
    await settle();
    assert.deepEqual(
      services.input?.services.map((p) => p.id),
      ['shop/web/http/tcp'],
    );
    const table = (await elements()).join('\n');
    assert.ok(table.includes('10.96.7.7'), `the good service is programmed: ${table}`);
    assert.ok(!table.includes('8.8.8.8'), `8.8.8.8 is nowhere in the table: ${table}`);
    const refusals = fields.filter((f) => f.event === 'service-refused');
    assert.deepEqual(
      refusals.map((f) => [f.service, f.field]),
      [
        ['shop/google', 'spec.clusterIP'],
        ['shop/thief', 'spec.clusterIP'],
      ],
    );
    assert.match(String(refusals[1]!.error), /10\.96\.7\.7 is already the cluster IP of Service shop\/web/);
    const status = services.status();
    assert.equal(status.programmed, 1);
    assert.equal(status.failures, 2);
    // A slice change recomputes felix's input, not the verdict: nothing is said again.
    await ds.apply(validateResource(slice(['10.244.1.2'])));
    await settle();
    assert.equal(fields.filter((f) => f.event === 'service-refused').length, 2, 'each refusal said once');
    // Given the range, and the clash gone, both come in.
    await ds.apply(
      validateResource({
        apiVersion: 'projectcalico.org/v3',
        kind: 'BGPConfiguration',
        metadata: { name: 'default' },
        spec: { serviceClusterIPs: [{ cidr: '10.96.0.0/12' }, { cidr: '8.8.8.0/24' }] },
      }),
    );
    await ds.delete('Service', 'shop/web');
    await settle();
    assert.deepEqual(
      services.input?.services.map((p) => p.id),
      ['shop/google/http/tcp', 'shop/thief/http/tcp'],
    );
    assert.equal(services.status().failures, 0);
    assert.deepEqual(
      fields.filter((f) => f.event === 'service-accepted').map((f) => f.service),
      ['shop/google', 'shop/thief'],
    );
  });

  it("endpoint changes cost the feed the changed Service's ports: the input equals one built from scratch after every slice event, and felix is told which ports it replaced", async () => {
    const next = prng(7);
    const pick = (n: number) => Math.floor(next() * n);
    const programmer = new PolicyProgrammer(new MemoryNftDataplane(), { resyncIntervalMs: 0, retryDelayMs: 0 });
    const feed = new ServiceFeed({ nodeName: 'n1', programmer, nodeAddresses: () => ['192.168.7.1/24'], log: () => {} });
    const event = (kind: 'Service' | 'EndpointSlice', key: string, resource?: object): WatchEvent =>
      resource
        ? { type: 'put', kind, key, revision: 1, synthetic: false, resource: validateResource(resource) }
        : { type: 'delete', kind, key, revision: 1, synthetic: false };
    const names = ['a', 'b', 'c', 'd'];
    const held = new Map<string, Resource>();
    const apply = (e: WatchEvent) => {
      feed.apply(e);
      if (e.type === 'put') held.set(`${e.kind} ${e.key}`, e.resource);
      else if (e.type === 'delete') held.delete(`${e.kind} ${e.key}`);
    };
    for (const [i, n] of names.entries())
      apply(
        event('Service', `shop/${n}`, {
          ...SERVICE,
          metadata: { name: n, namespace: 'shop' },
          spec: { ...SERVICE.spec, clusterIP: `10.96.7.${i + 1}` },
        }),
      );
    feed.start();
    let recorded = 0;
    for (let step = 0; step < 80; step++) {
      // A slice of a random Service: put (new or replaced), deleted, or moved to another Service.
      const name = `${names[pick(4)]}-${pick(2)}`;
      const owner = pick(10) === 0 ? names[pick(4)]! : name.split('-')[0]!;
      const body = { ...slice([`10.244.${pick(4)}.${pick(250) + 1}`, `10.244.9.${pick(250) + 1}`]) };
      const resource = { ...body, metadata: { name, namespace: 'shop', labels: { 'kubernetes.io/service-name': owner } } };
      const was = feed.input;
      apply(event('EndpointSlice', `shop/${name}`, pick(4) === 0 ? undefined : resource));
      await new Promise((resolve) => setImmediate(resolve));
      const kinds = (k: string) => [...held].filter(([key]) => key.startsWith(`${k} `)).map(([, r]) => r);
      const fresh = serviceInput({
        nodeName: 'n1',
        services: kinds('Service') as Service[],
        slices: kinds('EndpointSlice') as EndpointSlice[],
        nodeAddresses: ['192.168.7.1'],
        clusterCidrs: [],
      });
      assert.deepEqual(feed.input, fresh, `step ${step}: the feed's input is the one made from scratch`);
      const change = feed.input !== was && feed.input ? serviceInputChange(feed.input) : undefined;
      if (change) {
        recorded++;
        assert.equal(change.from, was, `step ${step}: recorded from the input before`);
      }
    }
    assert.ok(recorded > 20, `most changes replaced ports in place and said so (${recorded} of 80)`);
    await feed.settled();
  });
});
