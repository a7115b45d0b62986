// Service and EndpointSlice as resources: Kubernetes manifests validated by the API server's
// rules (each refusal names the field), defaults filled, and `podroute apply -f / get / delete`
// on every datastore backend giving back the Kubernetes shape (a Service's status and an
// EndpointSlice's top-level fields, though the store keeps them under spec).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { parseResources, type Resource, toManifest, validateResource, ValidationError } from '../../../lib/resources/index.js';
import { BACKENDS, type StoreUnderTest } from '../../support/datastore-backends.js';

const SERVICE = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'shop', labels: { app: 'web' } },
  spec: {
    type: 'LoadBalancer',
    selector: { app: 'web' },
    clusterIP: '10.96.0.10',
    ports: [
      { name: 'http', port: 80, targetPort: 'http', nodePort: 30080 },
      { name: 'dns', protocol: 'UDP', port: 53, targetPort: 5353 },
    ],
    externalIPs: ['192.0.2.10'],
    sessionAffinity: 'ClientIP',
    externalTrafficPolicy: 'Local',
  },
  status: { loadBalancer: { ingress: [{ ip: '198.51.100.7' }] } },
};

const SLICE = {
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'web-abc', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4',
  endpoints: [
    {
      addresses: ['10.244.1.5'],
      conditions: { ready: true },
      nodeName: 'n1',
      targetRef: { kind: 'Pod', namespace: 'shop', name: 'web-0' },
    },
    { addresses: ['10.244.2.5'], conditions: { ready: false, serving: true, terminating: true }, nodeName: 'n2' },
  ],
  ports: [{ name: 'http', port: 8080 }],
};

const clone = <T>(v: T): T => structuredClone(v);

function refused(doc: unknown, field: string, reason: RegExp): void {
  assert.throws(
    () => validateResource(doc),
    (e: unknown) => {
      assert.ok(e instanceof ValidationError, String(e));
      assert.equal(e.field, field, e.message);
      assert.match(e.reason, reason);
      return true;
    },
  );
}

describe('services: Service and EndpointSlice validation', () => {
  it('fills the defaults the API server fills and keeps the rest as written', () => {
    const r = validateResource(SERVICE);
    assert.equal(r.kind, 'Service');
    assert.equal(r.apiVersion, 'v1');
    if (r.kind !== 'Service') return;
    assert.deepEqual(r.spec.clusterIPs, ['10.96.0.10']);
    assert.deepEqual(r.spec.ipFamilies, ['IPv4']);
    assert.deepEqual(r.spec.ports, [
      { name: 'http', protocol: 'TCP', port: 80, targetPort: 'http', nodePort: 30080 },
      { name: 'dns', protocol: 'UDP', port: 53, targetPort: 5353 },
    ]);
    assert.deepEqual(r.spec.sessionAffinityConfig, { clientIP: { timeoutSeconds: 10800 } });
    assert.equal(r.spec.internalTrafficPolicy, 'Cluster');
    assert.deepEqual(r.spec.status, { loadBalancer: { ingress: [{ ip: '198.51.100.7' }] } });
    const plain = validateResource({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'a' }, spec: { ports: [{ port: 80 }] } });
    assert.equal(plain.metadata.namespace, 'default');
    assert.deepEqual(plain.spec, {
      type: 'ClusterIP',
      ports: [{ protocol: 'TCP', port: 80, targetPort: 80 }],
      sessionAffinity: 'None',
      internalTrafficPolicy: 'Cluster',
    });
  });

  it('prints back the Kubernetes shape, and what it prints validates to the same resource', () => {
    for (const doc of [SERVICE, SLICE]) {
      const r = validateResource(doc);
      const m = toManifest(r);
      assert.equal(m.kind, doc.kind);
      assert.equal(m.apiVersion, doc.apiVersion);
      assert.deepEqual(validateResource(m), r);
      // The stored form (everything under spec) is accepted too: a resource a program got back applies again.
      assert.deepEqual(validateResource(r), r);
    }
    const m = toManifest(validateResource(SERVICE));
    assert.deepEqual(m.status, SERVICE.status);
    assert.equal((m.spec as Record<string, unknown>).status, undefined);
    const s = toManifest(validateResource(SLICE));
    assert.equal(s.spec, undefined);
    assert.equal(s.addressType, 'IPv4');
    assert.deepEqual(s.ports, [{ name: 'http', protocol: 'TCP', port: 8080 }]);
  });

  it('refuses an address no node is reached by (unspecified, loopback, link-local, multicast, broadcast) in every address field', () => {
    const doc = (spec: Record<string, unknown>, status?: unknown) => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'x', namespace: 'shop' },
      spec: { ports: [{ port: 80 }], ...spec },
      ...(status ? { status } : {}),
    });
    refused(doc({ clusterIP: '127.0.0.1' }), 'spec.clusterIP', /127\.0\.0\.1 is a loopback address/);
    refused(doc({ clusterIP: '0.0.0.0' }), 'spec.clusterIP', /the unspecified address/);
    refused(
      doc({ clusterIPs: ['10.96.0.9', 'ff02::1'], ipFamilyPolicy: 'RequireDualStack' }),
      'spec.clusterIPs[1]',
      /ff02::1 is a multicast address/,
    );
    refused(doc({ externalIPs: ['192.0.2.1', '169.254.169.254'] }), 'spec.externalIPs[1]', /a link-local address/);
    refused(doc({ externalIPs: ['::1'] }), 'spec.externalIPs[0]', /a loopback address/);
    refused(doc({ type: 'LoadBalancer', loadBalancerIP: '255.255.255.255' }), 'spec.loadBalancerIP', /the broadcast address/);
    refused(
      doc({ type: 'LoadBalancer' }, { loadBalancer: { ingress: [{ ip: '224.0.0.5' }] } }),
      'status.loadBalancer.ingress[0].ip',
      /a multicast address/,
    );
    refused(doc({ externalIPs: ['fe80::1'] }), 'spec.externalIPs[0]', /a link-local address/);
    // Next to them, ordinary addresses pass (whether a range holds them is the store's check).
    validateResource(doc({ clusterIP: '10.96.0.9', externalIPs: ['192.0.2.1', '2001:db8::1'] }));
  });

  it('refuses bad Services, naming the field', () => {
    const svc = (f: (s: typeof SERVICE.spec & Record<string, unknown>) => void, top: Record<string, unknown> = {}) => {
      const d = clone(SERVICE) as typeof SERVICE & Record<string, unknown>;
      f(d.spec as typeof SERVICE.spec & Record<string, unknown>);
      return { ...d, ...top };
    };
    refused(
      svc((s) => (s.ports[0]!.port = 0)),
      'spec.ports[0].port',
      /1 to 65535/,
    );
    refused(
      svc((s) => (s.ports[0]!.port = 70000)),
      'spec.ports[0].port',
      /1 to 65535/,
    );
    refused(
      svc((s) => (s.ports[0]!.nodePort = 8080)),
      'spec.ports[0].nodePort',
      /30000 to 32767/,
    );
    refused(
      svc((s) => (s.ports[0]!.nodePort = 32768)),
      'spec.ports[0].nodePort',
      /30000 to 32767/,
    );
    refused(
      svc((s) => ((s.ports[1] as Record<string, unknown>).protocol = 'ICMP')),
      'spec.ports[1].protocol',
      /TCP, UDP, SCTP/,
    );
    refused(
      svc((s) => delete (s.ports[1] as Record<string, unknown>).name),
      'spec.ports[1].name',
      /more than one port/,
    );
    refused(
      svc((s) => (s.ports[1]!.name = 'http')),
      'spec.ports[1].name',
      /named twice/,
    );
    refused(
      svc((s) => (s.ports[0]!.targetPort = 'Bad_Name')),
      'spec.ports[0].targetPort',
      /not a port name/,
    );
    refused(
      svc((s) => (s.ports[1]!.targetPort = 65536)),
      'spec.ports[1].targetPort',
      /1 to 65535/,
    );
    refused(
      svc((s) => ((s.ports[0] as Record<string, unknown>).appProtocol = 'http')),
      'spec.ports[0].appProtocol',
      /not supported/,
    );
    refused(
      svc((s) => ((s.ports[0] as Record<string, unknown>).prot = 'TCP')),
      'spec.ports[0].prot',
      /unknown field; did you mean port/,
    );
    refused(
      svc((s) => (s.clusterIP = '10.96.0.300')),
      'spec.clusterIP',
      /not an IP address/,
    );
    refused(
      svc((s) => (s.clusterIP = 'None')),
      'spec.clusterIP',
      /may not be None when type is LoadBalancer/,
    );
    refused(
      svc((s) => Object.assign(s, { clusterIPs: ['10.96.0.11'] })),
      'spec.clusterIPs',
      /must start with clusterIP 10\.96\.0\.10/,
    );
    refused(
      svc((s) => Object.assign(s, { clusterIPs: ['10.96.0.10', 'fd00::10'] })),
      'spec.clusterIPs',
      /PreferDualStack/,
    );
    refused(
      svc((s) => (s.externalIPs = ['nope'])),
      'spec.externalIPs[0]',
      /not an IP address/,
    );
    refused(
      svc((s) => (s.sessionAffinity = 'Cookie')),
      'spec.sessionAffinity',
      /None, ClientIP/,
    );
    for (const t of [0, 86401])
      refused(
        svc((s) => Object.assign(s, { sessionAffinityConfig: { clientIP: { timeoutSeconds: t } } })),
        'spec.sessionAffinityConfig.clientIP.timeoutSeconds',
        /1 to 86400/,
      );
    refused(
      svc((s) => Object.assign(s, { sessionAffinity: 'None', sessionAffinityConfig: { clientIP: { timeoutSeconds: 5 } } })),
      'spec.sessionAffinityConfig',
      /only be set when sessionAffinity is ClientIP/,
    );
    refused(
      svc((s) => (s.externalTrafficPolicy = 'Nearest')),
      'spec.externalTrafficPolicy',
      /Cluster, Local/,
    );
    refused(
      svc((s) => Object.assign(s, { loadBalancerSourceRanges: [] })),
      'spec.loadBalancerSourceRanges',
      /not supported/,
    );
    refused(
      svc((s) => Object.assign(s, { selectr: {} })),
      'spec.selectr',
      /did you mean selector/,
    );
    refused(
      svc((s) => (s.selector = { app: 'we b' })),
      'spec.selector.app',
      /not a label value/,
    );
    refused(
      svc(() => {}, { status: { loadBalancer: { ingress: [{ ip: 'x' }] } } }),
      'status.loadBalancer.ingress[0].ip',
      /not an IP/,
    );
    refused(
      svc(() => {}, { extra: 1 }),
      'extra',
      /unknown field/,
    );
    refused(
      svc(() => {}, { metadata: { name: '9web' } }),
      'metadata.name',
      /starting with a letter/,
    );
    refused(
      svc(() => {}, { metadata: { name: 'w'.repeat(64) } }),
      'metadata.name',
      /at most 63/,
    );
    refused(
      svc(() => {}, { apiVersion: 'projectcalico.org/v3' }),
      'apiVersion',
      /must be v1/,
    );
    const clusterIPOnly = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'c' }, spec: { ports: [{ port: 80, nodePort: 30001 }] } };
    refused(clusterIPOnly, 'spec.ports[0].nodePort', /not be set when type is ClusterIP/);
    refused(
      { ...clusterIPOnly, spec: { externalTrafficPolicy: 'Local', ports: [{ port: 80 }] } },
      'spec.externalTrafficPolicy',
      /NodePort/,
    );
    refused({ ...clusterIPOnly, spec: { type: 'ExternalName', externalName: 'x.example' } }, 'spec.externalName', /not supported/);
    refused({ ...clusterIPOnly, spec: {} }, 'spec.ports', /at least one port/);
  });

  it('refuses bad EndpointSlices, naming the field', () => {
    const sl = (f: (s: typeof SLICE & Record<string, unknown>) => void) => {
      const d = clone(SLICE) as typeof SLICE & Record<string, unknown>;
      f(d);
      return d;
    };
    refused(
      sl((s) => (s.addressType = 'FQDN')),
      'addressType',
      /FQDN is not supported/,
    );
    refused(
      sl((s) => delete (s as Record<string, unknown>).addressType),
      'addressType',
      /is required/,
    );
    refused(
      sl((s) => (s.endpoints[0]!.addresses = ['fd00::1'])),
      'endpoints[0].addresses[0]',
      /not an IPv4 address/,
    );
    refused(
      sl((s) => (s.endpoints[0]!.addresses = ['10.0.0.256'])),
      'endpoints[0].addresses[0]',
      /not an IP address/,
    );
    refused(
      sl((s) => (s.endpoints[0]!.addresses = [])),
      'endpoints[0].addresses',
      /at least one/,
    );
    refused(
      sl((s) => ((s.endpoints[0]!.conditions as Record<string, unknown>).ready = 'yes')),
      'endpoints[0].conditions.ready',
      /true or false/,
    );
    refused(
      sl((s) => Object.assign(s.endpoints[0]!, { zone: 'a' })),
      'endpoints[0].zone',
      /not supported/,
    );
    refused(
      sl((s) => (s.ports[0]!.port = 0)),
      'ports[0].port',
      /1 to 65535/,
    );
    refused(
      sl((s) => s.ports.push({ name: 'http', port: 1 })),
      'ports[1].name',
      /named twice/,
    );
    refused(
      sl((s) => Object.assign(s, { spec: {} })),
      'addressType',
      /not under spec as well/,
    );
    refused(
      sl((s) => Object.assign(s, { endpoint: [] })),
      'endpoint',
      /did you mean endpoints/,
    );
  });
});

for (const backend of BACKENDS.filter((b) => !b.sameCodeAs)) {
  describe(`services: Service and EndpointSlice through podroute apply/get/delete (${backend.name})`, function () {
    this.timeout(90_000);
    const dir = mkdtempSync(join(tmpdir(), 'podroute-svc-cli-'));
    const file = join(dir, 'svc.yaml');
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s) };
    let store: StoreUnderTest;
    let ds: BackendDatastore;
    const cli = async (...argv: string[]): Promise<string> => {
      out.length = 0;
      err.length = 0;
      const code = await runDatastoreCommand(argv, io, ds);
      assert.equal(code, 0, `${argv.join(' ')}: ${err.join('')}`);
      return out.join('');
    };
    const strip = (r: Resource): unknown => {
      const { resourceVersion: _rv, ...metadata } = r.metadata;
      return { ...r, metadata };
    };

    before(async () => {
      store = await backend.start();
      ds = await store.open(`svc-${process.pid}`);
      // The ranges the service's external and load-balancer IPs must lie in.
      await ds.apply(
        validateResource({
          apiVersion: 'projectcalico.org/v3',
          kind: 'BGPConfiguration',
          metadata: { name: 'default' },
          spec: { serviceExternalIPs: [{ cidr: '192.0.2.0/24' }], serviceLoadBalancerIPs: [{ cidr: '198.51.100.0/24' }] },
        }),
      );
      writeFileSync(file, `${JSON.stringify(SERVICE)}\n---\n${JSON.stringify(SLICE)}\n`);
    });
    after(async () => {
      await ds?.close();
      await store?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('apply stores both; get -o yaml and -o json give the Kubernetes shape back', async () => {
      const applied = await cli('apply', '-f', file);
      assert.match(applied, /applied Service shop\/web/);
      assert.match(applied, /applied EndpointSlice shop\/web-abc/);
      const want = parseResources(`${JSON.stringify(SERVICE)}\n---\n${JSON.stringify(SLICE)}\n`);
      const back = parseResources(`${await cli('get', 'svc', '-o', 'yaml')}---\n${await cli('get', 'endpointslices', '-o', 'yaml')}`);
      assert.deepEqual(back.map(strip), want.map(strip));
      const svc = parse(await cli('get', 'service', 'web', '-n', 'shop', '-o', 'yaml')) as Record<string, unknown>;
      assert.equal(svc.apiVersion, 'v1');
      assert.deepEqual(svc.status, SERVICE.status);
      const slice = JSON.parse(await cli('get', 'endpointslice', 'shop/web-abc', '-o', 'json')) as Record<string, unknown>;
      assert.equal(slice.apiVersion, 'discovery.k8s.io/v1');
      assert.deepEqual(slice.endpoints, SLICE.endpoints);
      assert.equal(slice.spec, undefined);
    });

    it('get prints tables; delete removes each', async () => {
      assert.match(
        await cli('get', 'services'),
        /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORTS\nshop\/web\s+LoadBalancer\s+10\.96\.0\.10\s+192\.0\.2\.10,198\.51\.100\.7\s+80:30080\/TCP,53\/UDP\n$/,
      );
      assert.match(await cli('get', 'endpointslices'), /shop\/web-abc\s+IPv4\s+8080\s+10\.244\.1\.5,10\.244\.2\.5/);
      assert.match(await cli('delete', 'svc', 'web', '-n', 'shop'), /deleted Service shop\/web/);
      assert.match(await cli('delete', 'endpointslice', 'shop/web-abc'), /deleted EndpointSlice shop\/web-abc/);
      assert.deepEqual((await ds.list('Service')).items, []);
      assert.deepEqual((await ds.list('EndpointSlice')).items, []);
    });
  });
}
