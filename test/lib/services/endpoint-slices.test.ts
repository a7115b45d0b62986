// EndpointSlices kept in line with the pods: what desiredSlices() computes (selection by label
// in the Service's namespace, named target ports resolved per pod, one slice per family and
// port list, a placeholder when no pod is selected), and the controller on a real Redis with
// three writers at once, as three node agents run it: they converge on exactly the wanted
// slices, each slice is created once (the others' creates lose the compare-and-set), a pod
// deleted or relabelled leaves its slice, and slices written by hand are left alone.
import assert from 'node:assert/strict';
import { type BackendDatastore, memoryDatastore, redisDatastore } from '../../../lib/datastore/index.js';
import {
  type EndpointSlice,
  MANAGED_BY_LABEL,
  resourceKey,
  SERVICE_NAME_LABEL,
  type Service,
  validateResource,
  type WorkloadEndpoint,
} from '../../../lib/resources/index.js';
import { desiredSlices, SLICE_CONTROLLER } from '../../../lib/services/endpoint-slices.js';
import { ServiceController } from '../../../lib/services/controller.js';
import { type RedisServer, startRedis } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';

function service(name: string, spec: Record<string, unknown>, namespace = 'shop'): Service {
  return validateResource({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec }) as Service;
}

function pod(
  name: string,
  node: string,
  nets: string[],
  labels: Record<string, string>,
  ports?: { name: string; port: number; protocol?: string }[],
  namespace = 'shop',
): WorkloadEndpoint {
  return validateResource({
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: { name: `${node}-k8s-${name}-eth0`, namespace, labels: { ...labels, 'projectcalico.org/namespace': namespace } },
    spec: { node, pod: name, interfaceName: `cali${name}`.slice(0, 15), ipNetworks: nets, ports },
  }) as WorkloadEndpoint;
}

const WEB = {
  selector: { app: 'web' },
  ports: [
    { name: 'http', port: 80, targetPort: 'http' },
    { name: 'metrics', port: 9090 },
  ],
};

describe('services: desiredSlices', () => {
  it('selects by every selector pair in the namespace, resolves named ports per pod, splits by family and port list', () => {
    const pods = [
      pod('a', 'n1', ['10.244.1.2/32', 'fd00:1::2/128'], { app: 'web' }, [{ name: 'http', port: 8080 }]),
      pod('b', 'n2', ['10.244.2.2/32'], { app: 'web', tier: 'x' }, [{ name: 'http', port: 8080 }]),
      pod('c', 'n3', ['10.244.3.2/32'], { app: 'web' }, [{ name: 'http', port: 8081 }]),
      pod('d', 'n3', ['10.244.3.3/32'], { app: 'web' }),
      pod('e', 'n1', ['10.244.1.9/32'], { app: 'db' }, [{ name: 'http', port: 8080 }]),
      pod('f', 'n1', ['10.244.1.10/32'], { app: 'web' }, [{ name: 'http', port: 8080 }], 'other'),
    ];
    const dual = service('web', { ...WEB, ipFamilyPolicy: 'PreferDualStack', ipFamilies: ['IPv4', 'IPv6'] });
    const slices = desiredSlices(dual, pods)!;
    const view = slices.map((s) => ({
      type: s.spec.addressType,
      ports: (s.spec.ports ?? []).map((p) => `${p.name}:${p.port}`).join(','),
      eps: s.spec.endpoints.map((e) => `${e.targetRef?.name}@${e.nodeName}=${e.addresses.join()}`).join(' '),
    }));
    assert.deepEqual(
      view.sort((x, y) => (x.eps < y.eps ? -1 : 1)),
      [
        { type: 'IPv4', ports: 'http:8080,metrics:9090', eps: 'a@n1=10.244.1.2 b@n2=10.244.2.2' },
        { type: 'IPv6', ports: 'http:8080,metrics:9090', eps: 'a@n1=fd00:1::2' },
        { type: 'IPv4', ports: 'http:8081,metrics:9090', eps: 'c@n3=10.244.3.2' },
        // d has no port named http: it serves metrics only.
        { type: 'IPv4', ports: 'metrics:9090', eps: 'd@n3=10.244.3.3' },
      ],
    );
    for (const s of slices) {
      assert.deepEqual(s.metadata.labels, { [SERVICE_NAME_LABEL]: 'web', [MANAGED_BY_LABEL]: SLICE_CONTROLLER });
      assert.equal(s.metadata.namespace, 'shop');
      assert.deepEqual(s.spec.endpoints[0]!.conditions, { ready: true, serving: true, terminating: false });
      // What the controller writes passes validation unchanged.
      assert.deepEqual(validateResource(s), s);
    }
    // The same input in another order gives the same objects: every node writes the same thing.
    assert.deepEqual(desiredSlices(dual, [...pods].reverse()), slices);
    // A single-stack IPv4 service leaves the IPv6 addresses out.
    const v4 = desiredSlices(service('web', { ...WEB, clusterIP: '10.96.0.5' }), pods)!;
    assert.deepEqual(
      v4.map((s) => s.spec.addressType),
      ['IPv4', 'IPv4', 'IPv4'],
    );
  });

  it('at most 100 endpoints a slice', () => {
    const many = Array.from({ length: 250 }, (_, i) =>
      pod(`p${i}`, 'n1', [`10.244.${i >> 8}.${i & 255}/32`], { app: 'web' }, [{ name: 'http', port: 8080 }]),
    );
    const slices = desiredSlices(service('web', { ...WEB, clusterIP: '10.96.0.5' }), many)!;
    assert.deepEqual(
      slices.map((s) => s.spec.endpoints.length),
      [100, 100, 50],
    );
    assert.equal(new Set(slices.map((s) => s.metadata.name)).size, 3);
    assert.equal(new Set(slices.flatMap((s) => s.spec.endpoints.map((e) => e.addresses[0]))).size, 250);
  });

  it('a placeholder when nothing is selected; nothing at all for a service without selector', () => {
    const none = desiredSlices(service('web', { ...WEB, clusterIP: '10.96.0.5' }), [pod('e', 'n1', ['10.244.1.9/32'], { app: 'db' })])!;
    assert.equal(none.length, 1);
    assert.deepEqual(none[0]!.spec, { addressType: 'IPv4', endpoints: [] });
    assert.equal(desiredSlices(service('manual', { ports: [{ port: 80 }] }), [pod('e', 'n1', ['10.244.1.9/32'], {})]), undefined);
  });
});

function controllerSuite(open: () => Promise<{ writers: BackendDatastore[]; close(): Promise<void> }>): void {
  let stores: { writers: BackendDatastore[]; close(): Promise<void> };
  let controllers: ServiceController[] = [];
  let ds: BackendDatastore;
  const slices = async (): Promise<EndpointSlice[]> => (await ds.list('EndpointSlice')).items;
  const wanted = async (): Promise<EndpointSlice[]> => {
    const svcs = (await ds.list('Service')).items;
    const weps = (await ds.list('WorkloadEndpoint')).items;
    return svcs.flatMap((s) => desiredSlices(s, weps) ?? []);
  };
  const strip = (s: EndpointSlice): unknown => ({ ...s, metadata: { ...s.metadata, resourceVersion: undefined } });
  /** The managed slices equal the wanted ones exactly, once every controller is idle. */
  const converged = async (): Promise<void> => {
    await waitFor(
      async () => {
        await Promise.all(controllers.map((c) => c.settled()));
        const have = (await slices()).filter((s) => s.metadata.labels?.[MANAGED_BY_LABEL] === SLICE_CONTROLLER).map(strip);
        return (
          JSON.stringify(have) === JSON.stringify((await wanted()).sort((a, b) => (resourceKey(a) < resourceKey(b) ? -1 : 1)).map(strip))
        );
      },
      { what: 'the slices to match the pods', intervalMs: 25 },
    );
  };

  before(async () => {
    stores = await open();
    ds = stores.writers[0]!;
  });
  after(async () => {
    await Promise.all(controllers.map((c) => c.stop()));
    await stores?.close();
  });

  it('three writers at once: the wanted slices, each created once', async () => {
    for (const w of [
      pod('a', 'n1', ['10.244.1.2/32'], { app: 'web' }, [{ name: 'http', port: 8080 }]),
      pod('b', 'n2', ['10.244.2.2/32'], { app: 'web' }, [{ name: 'http', port: 8080 }]),
    ])
      await ds.create(w);
    await ds.create(service('web', WEB));
    // A slice written by hand for a selector-less service: never touched.
    await ds.create(service('manual', { ports: [{ port: 80 }] }));
    const manual = await ds.create(
      validateResource({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'manual-1', namespace: 'shop', labels: { [SERVICE_NAME_LABEL]: 'manual' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['192.0.2.1'] }],
      }),
    );
    controllers = stores.writers.map((w) => new ServiceController(w));
    await Promise.all(controllers.map((c) => c.start()));
    await converged();
    const created = controllers.reduce((n, c) => n + c.stats.created, 0);
    assert.equal(created, 1, `one slice, created once: ${JSON.stringify(controllers.map((c) => c.stats))}`);
    const [s] = (await slices()).filter((x) => x.metadata.labels?.[SERVICE_NAME_LABEL] === 'web');
    assert.deepEqual(
      s!.spec.endpoints.map((e) => e.addresses[0]),
      ['10.244.1.2', '10.244.2.2'],
    );
    assert.equal((await ds.get('EndpointSlice', 'shop/manual-1'))?.metadata.resourceVersion, manual.metadata.resourceVersion);
  });

  it('a new pod joins, a deleted pod and a relabelled one leave; the wanted slices and no more', async () => {
    const before = await ds.revision();
    await ds.create(pod('c', 'n3', ['10.244.3.2/32'], { app: 'web' }, [{ name: 'http', port: 8081 }]));
    await converged();
    assert.equal((await slices()).filter((x) => x.metadata.labels?.[SERVICE_NAME_LABEL] === 'web').length, 2);
    await ds.delete('WorkloadEndpoint', 'shop/n1-k8s-a-eth0');
    const b = await ds.get('WorkloadEndpoint', 'shop/n2-k8s-b-eth0');
    await ds.update({ ...b!, metadata: { ...b!.metadata, labels: { app: 'other' } } });
    await converged();
    const web = (await slices()).filter((x) => x.metadata.labels?.[SERVICE_NAME_LABEL] === 'web');
    assert.deepEqual(
      web.map((x) => x.spec.endpoints.map((e) => e.addresses[0]).join()),
      ['10.244.3.2'],
    );
    // Nothing kept writing once in line: the store's revision is still once the controllers are idle.
    const rev = await ds.revision();
    await new Promise((r) => setTimeout(r, 300));
    await Promise.all(controllers.map((c) => c.settled()));
    assert.equal(await ds.revision(), rev);
    assert.ok(rev > before, `revision ${rev} is not after ${before}`);
  });

  it('a deleted service takes its slices with it; a slice changed by hand is put back', async () => {
    const [s] = (await slices()).filter((x) => x.metadata.labels?.[SERVICE_NAME_LABEL] === 'web');
    await ds.update({ ...s!, spec: { ...s!.spec, endpoints: [] } });
    await converged();
    assert.equal((await ds.get('EndpointSlice', resourceKey(s!)))?.spec.endpoints.length, 1);
    await ds.delete('Service', 'shop/web');
    await converged();
    assert.deepEqual((await slices()).map(resourceKey), ['shop/manual-1']);
  });
}

describe('services: the EndpointSlice controller keeps nothing for what is gone', () => {
  it('a namespace whose Services, pods and slices are all deleted leaves no entry behind', () => {
    const c = new ServiceController(memoryDatastore());
    for (let i = 0; i < 50; i++) {
      const ns = `churn-${i}`;
      const svc = service('web', WEB, ns);
      const p = pod('a', 'n1', ['10.244.1.2/32'], { app: 'web' }, [], ns);
      const slice = desiredSlices(svc, [p])?.[0];
      assert.ok(slice, 'the service selects its pod');
      c.apply({ type: 'put', kind: 'Service', key: resourceKey(svc), revision: i, resource: svc, synthetic: false });
      c.apply({ type: 'put', kind: 'WorkloadEndpoint', key: resourceKey(p), revision: i, resource: p, synthetic: false });
      c.apply({ type: 'put', kind: 'EndpointSlice', key: resourceKey(slice), revision: i, resource: slice, synthetic: false });
      assert.deepEqual(c.tracked(), { namespaces: 1, services: 1, slicedServices: 1 }, `namespace ${ns} is tracked while it lives`);
      c.apply({ type: 'delete', kind: 'EndpointSlice', key: resourceKey(slice), revision: i, synthetic: false });
      c.apply({ type: 'delete', kind: 'WorkloadEndpoint', key: resourceKey(p), revision: i, synthetic: false });
      c.apply({ type: 'delete', kind: 'Service', key: resourceKey(svc), revision: i, synthetic: false });
    }
    assert.deepEqual(
      c.tracked(),
      { namespaces: 0, services: 0, slicedServices: 0 },
      'fifty namespaces came and went; nothing is kept for them',
    );
  });
});

describe('services: the EndpointSlice controller, three writers on one memory store', () => {
  controllerSuite(async () => {
    const one = memoryDatastore();
    return { writers: [one, one, one], close: () => one.close() };
  });
});

describe('services: the EndpointSlice controller, three writers on a real Redis', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  controllerSuite(async () => {
    redis = await startRedis();
    const writers = await Promise.all([0, 1, 2].map(() => redisDatastore({ url: redis.url })));
    return {
      writers,
      close: async () => {
        await Promise.all(writers.map((w) => w.close()));
        await redis.stop();
      },
    };
  });
});
