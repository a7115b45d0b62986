// What the node agent tells felix about Services, computed from Services and EndpointSlices as
// kube-proxy reads them: ports matched by name and protocol, ready endpoints (else serving and
// terminating ones), local ones marked, the frontends each type has, affinity and traffic
// policies carried over, headless services left out; and the compiled table felix makes of it.
import assert from 'node:assert/strict';
import { compileServices, ServiceCompiler, serviceInputChange } from '../../../felix/index.js';
import { type EndpointSlice, type Service, validateResource } from '../../../lib/resources/index.js';
import { ServiceInputBuilder, serviceInput } from '../../../lib/services/service-input.js';

const svc = (name: string, spec: Record<string, unknown>, status?: unknown): Service =>
  validateResource({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'shop' }, spec, status }) as Service;
const slice = (name: string, service: string, body: Record<string, unknown>, namespace = 'shop'): EndpointSlice =>
  validateResource({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace, labels: { 'kubernetes.io/service-name': service } },
    ...body,
  }) as EndpointSlice;

const WEB = svc('web', {
  type: 'NodePort',
  clusterIP: '10.96.0.10',
  selector: { app: 'web' },
  ports: [
    { name: 'http', port: 80, targetPort: 'http', nodePort: 30080 },
    { name: 'dns', protocol: 'UDP', port: 53 },
  ],
  sessionAffinity: 'ClientIP',
  sessionAffinityConfig: { clientIP: { timeoutSeconds: 30 } },
  externalTrafficPolicy: 'Local',
});
const WEB_SLICE = slice('web-1', 'web', {
  addressType: 'IPv4',
  ports: [
    { name: 'http', port: 8080 },
    { name: 'dns', protocol: 'UDP', port: 5353 },
  ],
  endpoints: [
    { addresses: ['10.244.1.2'], nodeName: 'n1' },
    { addresses: ['10.244.2.2'], nodeName: 'n2', conditions: { ready: true } },
    { addresses: ['10.244.3.2'], nodeName: 'n3', conditions: { ready: false, serving: true, terminating: true } },
    { addresses: ['10.244.4.2'], nodeName: 'n4', conditions: { ready: false } },
  ],
});
const BASE = { nodeName: 'n1', nodeAddresses: ['192.168.0.1'], clusterCidrs: ['10.244.0.0/16'] };

describe('services: the ServiceInput for one node', () => {
  it('one entry per port and protocol, ready endpoints only, this node marked local, frontends and policies carried', () => {
    const input = serviceInput({ ...BASE, services: [WEB], slices: [WEB_SLICE] });
    assert.deepEqual(input.nodeAddresses, ['192.168.0.1']);
    assert.deepEqual(input.clusterCidrs, ['10.244.0.0/16']);
    assert.deepEqual(input.services, [
      {
        id: 'shop/web/dns/udp',
        protocol: 'udp',
        port: 53,
        clusterIPs: ['10.96.0.10'],
        externalIPs: [],
        loadBalancerIPs: [],
        // A port without a nodePort of its own has none, even in a NodePort service.
        endpoints: [
          { address: '10.244.1.2', port: 5353, local: true },
          { address: '10.244.2.2', port: 5353, local: false },
        ],
        affinityTimeoutSeconds: 30,
        externalLocal: true,
      },
      {
        id: 'shop/web/http/tcp',
        protocol: 'tcp',
        port: 80,
        clusterIPs: ['10.96.0.10'],
        externalIPs: [],
        loadBalancerIPs: [],
        endpoints: [
          { address: '10.244.1.2', port: 8080, local: true },
          { address: '10.244.2.2', port: 8080, local: false },
        ],
        nodePort: 30080,
        affinityTimeoutSeconds: 30,
        externalLocal: true,
      },
    ]);
  });

  it('no ready endpoint: the serving and terminating ones; none of those: empty, so felix rejects', () => {
    const draining = slice('web-1', 'web', {
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: [
        { addresses: ['10.244.3.2'], nodeName: 'n3', conditions: { ready: false, serving: true, terminating: true } },
        { addresses: ['10.244.4.2'], nodeName: 'n4', conditions: { ready: false, serving: false, terminating: true } },
      ],
    });
    const http = (s: EndpointSlice) =>
      serviceInput({ ...BASE, services: [WEB], slices: [s] }).services.find((p) => p.id.endsWith('/http/tcp'))!;
    assert.deepEqual(http(draining).endpoints, [{ address: '10.244.3.2', port: 8080, local: false }]);
    const gone = slice('web-1', 'web', {
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: [{ addresses: ['10.244.4.2'], conditions: { ready: false } }],
    });
    assert.deepEqual(http(gone).endpoints, []);
    // A slice of another namespace or another service, or a port of another name, gives nothing.
    const elsewhere = slice(
      'web-1',
      'web',
      { addressType: 'IPv4', ports: [{ name: 'http', port: 1 }], endpoints: [{ addresses: ['10.0.0.1'] }] },
      'other',
    );
    assert.deepEqual(http(elsewhere).endpoints, []);
    const otherName = slice('web-1', 'web', {
      addressType: 'IPv4',
      ports: [{ name: 'https', port: 1 }],
      endpoints: [{ addresses: ['10.0.0.1'] }],
    });
    assert.deepEqual(http(otherName).endpoints, []);
  });

  it('an endpoint in two slices counts once; unnamed ports match unnamed slice ports; both families', () => {
    const one = svc('one', {
      ipFamilyPolicy: 'PreferDualStack',
      clusterIPs: ['10.96.0.11', 'fd00:96::11'],
      ports: [{ port: 443, targetPort: 8443 }],
    });
    const v4 = slice('one-a', 'one', { addressType: 'IPv4', ports: [{ port: 8443 }], endpoints: [{ addresses: ['10.244.1.7'] }] });
    const v4again = slice('one-b', 'one', { addressType: 'IPv4', ports: [{ port: 8443 }], endpoints: [{ addresses: ['10.244.1.7'] }] });
    const v6 = slice('one-c', 'one', { addressType: 'IPv6', ports: [{ port: 8443 }], endpoints: [{ addresses: ['fd00:244::7'] }] });
    const [p] = serviceInput({ ...BASE, services: [one], slices: [v4, v4again, v6] }).services;
    assert.equal(p!.id, 'shop/one/443/tcp');
    assert.deepEqual(p!.clusterIPs, ['10.96.0.11', 'fd00:96::11']);
    assert.deepEqual(
      p!.endpoints.map((e) => e.address),
      ['10.244.1.7', 'fd00:244::7'],
    );
  });

  it('LoadBalancer ingress IPs and externalIPs are frontends; headless and unreachable services are left out', () => {
    const lb = svc(
      'lb',
      { type: 'LoadBalancer', clusterIP: '10.96.0.12', externalIPs: ['192.0.2.9'], ports: [{ port: 80, nodePort: 31000 }] },
      { loadBalancer: { ingress: [{ ip: '198.51.100.1' }, { hostname: 'lb.example' }] } },
    );
    const headless = svc('db', { clusterIP: 'None', selector: { app: 'db' }, ports: [{ port: 5432 }] });
    const pending = svc('pending', { selector: { app: 'x' }, ports: [{ port: 80 }] });
    const input = serviceInput({ ...BASE, services: [lb, headless, pending], slices: [] });
    assert.deepEqual(
      input.services.map((p) => [p.id, p.externalIPs, p.loadBalancerIPs, p.nodePort, p.endpoints.length]),
      [['shop/lb/80/tcp', ['192.0.2.9'], ['198.51.100.1'], 31000, 0]],
    );
  });

  it('the builder: unchanged ports keep their object, nothing changed gives the same input; felix compiles it', () => {
    const builder = new ServiceInputBuilder('n1');
    const src = { nodeAddresses: BASE.nodeAddresses, clusterCidrs: BASE.clusterCidrs };
    const a = builder.build({ ...src, services: [WEB], slices: [WEB_SLICE] });
    assert.deepEqual(a, serviceInput({ ...BASE, services: [WEB], slices: [WEB_SLICE] }));
    assert.equal(builder.build({ ...src, services: [WEB], slices: [WEB_SLICE] }), a, 'the same objects: the same input');
    const other = slice('web-1', 'web', {
      ...WEB_SLICE.spec,
      ports: [WEB_SLICE.spec.ports![0]!, { name: 'dns', protocol: 'UDP', port: 5354 }],
    });
    const b = builder.build({ ...src, services: [WEB], slices: [other] });
    assert.notEqual(b, a);
    assert.notEqual(a.services[0], b.services[0], 'dns changed');
    assert.equal(a.services[1], b.services[1], 'http did not');
    assert.deepEqual(b, serviceInput({ ...BASE, services: [WEB], slices: [other] }));
    // An equal copy of the slice (a resync) changes nothing either.
    assert.equal(builder.build({ ...src, services: [WEB], slices: [structuredClone(other)] }), b);
    assert.notEqual(builder.build({ ...src, nodeAddresses: ['192.168.0.2'], services: [WEB], slices: [other] }), b);
    const table = compileServices(b);
    assert.deepEqual(table.conflicts, []);
    assert.ok(table.chains.length > 0, 'no chains compiled');
  });

  it('the builder tells felix which ports it replaced in place, and only then; the compiler believes it for the input it compiled last', () => {
    const builder = new ServiceInputBuilder('n1');
    const compiler = new ServiceCompiler();
    const src = { nodeAddresses: BASE.nodeAddresses, clusterCidrs: BASE.clusterCidrs };
    const API = svc('api', { clusterIP: '10.96.0.11', selector: { app: 'api' }, ports: [{ name: 'http', port: 80 }] });
    const API_SLICE = slice('api-1', 'api', {
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: [{ addresses: ['10.244.1.9'], nodeName: 'n1' }],
    });
    const a = builder.build({ ...src, services: [WEB, API], slices: [WEB_SLICE, API_SLICE] });
    assert.equal(serviceInputChange(a), undefined, 'the first input: nothing to say');
    compiler.compile(a);
    // One endpoint of api moves: its one port is replaced where it was.
    const moved = slice('api-1', 'api', { ...API_SLICE.spec, endpoints: [{ addresses: ['10.244.1.10'], nodeName: 'n1' }] });
    const b = builder.build({ ...src, services: [WEB, API], slices: [WEB_SLICE, moved] });
    assert.deepEqual(b, serviceInput({ ...BASE, services: [WEB, API], slices: [WEB_SLICE, moved] }));
    const change = serviceInputChange(b);
    const at = b.services.findIndex((p) => p.id === 'shop/api/http/tcp');
    assert.equal(change?.from, a, 'recorded from the input before');
    assert.deepEqual(
      change?.ports.map((p) => [p.index, p.port]),
      [[at, b.services[at]]],
      'the one port replaced, at its index',
    );
    // The compiler, believing it, makes the table a whole compile of b makes.
    assert.deepEqual(compiler.compile(b), compileServices(b));
    assert.deepEqual([...(compiler.lastChange().ports?.keys() ?? [])], ['shop/api/http/tcp'], 'and knows the one port changed');
    // A Service that comes reorders the list: no record, the compiler compares every port.
    const DB = svc('db', { clusterIP: '10.96.0.12', selector: { app: 'db' }, ports: [{ name: 'pg', port: 5432 }] });
    const c = builder.build({ ...src, services: [WEB, API, DB], slices: [WEB_SLICE, moved] });
    assert.equal(serviceInputChange(c), undefined, 'a port came: nothing recorded');
    assert.deepEqual(compiler.compile(c), compileServices(c));
    // A record from an input the compiler did not compile last is not believed.
    const d = builder.build({ ...src, services: [WEB, API, DB], slices: [WEB_SLICE, API_SLICE] });
    assert.equal(serviceInputChange(d)?.from, c);
    const fresh = new ServiceCompiler();
    fresh.compile(a);
    assert.deepEqual(fresh.compile(d), compileServices(d), 'compiled from a, not c: every port compared');
  });
});
