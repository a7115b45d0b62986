// Which Services may hold the addresses and ports they name: cluster IPs inside the service
// range and held by no other Service, NodePorts held by no other Service for the same protocol,
// external and load-balancer IPs inside the configured ranges. `podroute apply` refuses what
// breaks them, naming the field, before writing anything; the agent's verdict on a store that
// already holds such Services (written by another tool) keeps the holder the allocator names.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import { type BackendDatastore, memoryDatastore } from '../../../lib/datastore/index.js';
import { type BGPConfiguration, type Service, validateResource, type ValidationError } from '../../../lib/resources/index.js';
import { admitServices, checkServiceWrites } from '../../../lib/services/admission.js';
import { ALLOCATED_CLUSTER_IPS } from '../../../lib/services/allocate.js';

const svc = (
  name: string,
  spec: Record<string, unknown>,
  extra: { annotations?: Record<string, string>; status?: unknown } = {},
): Service =>
  validateResource({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'shop', annotations: extra.annotations },
    spec: { ports: [{ port: 80 }], ...spec },
    ...(extra.status ? { status: extra.status } : {}),
  }) as Service;
const config = (spec: Record<string, unknown>): BGPConfiguration =>
  validateResource({
    apiVersion: 'projectcalico.org/v3',
    kind: 'BGPConfiguration',
    metadata: { name: 'default' },
    spec,
  }) as BGPConfiguration;
const RANGES = config({
  serviceClusterIPs: [{ cidr: '10.96.0.0/16' }, { cidr: 'fd00:96::/112' }],
  serviceExternalIPs: [{ cidr: '192.0.2.0/24' }],
  serviceLoadBalancerIPs: [{ cidr: '198.51.100.0/24' }],
});

/** The refusal, as "field: reason", or undefined. */
const said = (e: ValidationError | undefined) => (e ? `${e.field}: ${e.reason}` : undefined);

describe('services: the addresses and ports a Service may hold', () => {
  it('a cluster IP outside the service range is refused, naming the field and the range', () => {
    const write = (s: Service, c?: BGPConfiguration) => said(checkServiceWrites([s], [], c));
    assert.match(
      write(svc('a', { clusterIP: '10.200.0.10' }), RANGES)!,
      /^spec\.clusterIP: 10\.200\.0\.10 is outside the service cluster IP range \(10\.96\.0\.0\/16/,
    );
    // Without a configuration the range is Kubernetes' default, and it says so.
    assert.match(
      write(svc('a', { clusterIP: '8.8.8.8' }))!,
      /^spec\.clusterIP: 8\.8\.8\.8 is outside .*10\.96\.0\.0\/12, Kubernetes' default/,
    );
    assert.equal(write(svc('a', { clusterIP: '10.96.40.10' })), undefined, 'inside the default range');
    assert.match(write(svc('a', { clusterIP: '10.96.0.0' }), RANGES)!, /network address of the service cluster IP range 10\.96\.0\.0\/16/);
    assert.match(write(svc('a', { clusterIP: '10.96.255.255' }), RANGES)!, /broadcast address/);
    const v6 = svc('a', { clusterIPs: ['10.96.0.9', 'fd00:97::9'], ipFamilyPolicy: 'RequireDualStack' });
    assert.match(write(v6, RANGES)!, /^spec\.clusterIPs\[1\]: fd00:97::9 is outside the service cluster IP range \(fd00:96::\/112/);
    assert.match(
      write(v6)!,
      /^spec\.clusterIPs\[1\]: fd00:97::9 is an IPv6 address and BGPConfiguration default names no IPv6 serviceClusterIPs/,
    );
    assert.equal(write(svc('h', { clusterIP: 'None' }), RANGES), undefined, 'a headless service holds no address');
  });

  it('a cluster IP or NodePort another Service holds is refused; the Service itself may be applied again', () => {
    const echo = svc('echo', { type: 'NodePort', clusterIP: '10.96.0.10', ports: [{ port: 80, nodePort: 30080 }] });
    const write = (s: Service, stored = [echo]) => said(checkServiceWrites([s], stored, RANGES));
    assert.equal(
      write(svc('other', { clusterIP: '10.96.0.10' })),
      'spec.clusterIP: 10.96.0.10 is already the cluster IP of Service shop/echo',
    );
    const v6 = svc('six', { clusterIPs: ['fd00:96::a'], ipFamilies: ['IPv6'] });
    assert.match(
      write(svc('again', { clusterIPs: ['FD00:96::A'], ipFamilies: ['IPv6'] }), [v6])!,
      /already the cluster IP of Service shop\/six/,
    );
    assert.equal(write(echo), undefined, 'the holder itself, applied again');
    const port = (protocol: string) =>
      svc('np', { type: 'NodePort', clusterIP: '10.96.0.11', ports: [{ port: 53, protocol, nodePort: 30080 }] });
    assert.equal(write(port('TCP')), 'spec.ports[0].nodePort: 30080/TCP is already a NodePort of Service shop/echo');
    assert.equal(write(port('UDP')), undefined, 'one NodePort number, another protocol');
    // Two of one file clash with each other, the store empty.
    assert.match(
      said(checkServiceWrites([echo, svc('other', { clusterIP: '10.96.0.10' })], [], RANGES))!,
      /already the cluster IP of Service shop\/echo/,
    );
  });

  it('external IPs only inside serviceExternalIPs, and refused by name while there are none; load-balancer IPs only inside serviceLoadBalancerIPs', () => {
    const write = (s: Service, c: BGPConfiguration | undefined = RANGES) => said(checkServiceWrites([s], [], c));
    const ext = (ip: string) => svc('e', { clusterIP: '10.96.0.12', externalIPs: ['192.0.2.5', ip] });
    assert.equal(write(ext('192.0.2.6')), undefined);
    assert.match(write(ext('8.8.8.8'))!, /^spec\.externalIPs\[1\]: 8\.8\.8\.8 is outside serviceExternalIPs \(192\.0\.2\.0\/24/);
    assert.match(
      write(ext('192.0.2.6'), config({}))!,
      /^spec\.externalIPs\[0\]: 192\.0\.2\.5 is refused: BGPConfiguration default names no serviceExternalIPs/,
    );
    const lb = (ip: string, ingress = '198.51.100.9') =>
      svc(
        'lb',
        { type: 'LoadBalancer', clusterIP: '10.96.0.13', loadBalancerIP: ip },
        { status: { loadBalancer: { ingress: [{ ip: ingress }] } } },
      );
    assert.equal(write(lb('198.51.100.8')), undefined);
    assert.match(write(lb('192.0.2.8'))!, /^spec\.loadBalancerIP: 192\.0\.2\.8 is outside serviceLoadBalancerIPs \(198\.51\.100\.0\/24/);
    assert.match(
      write(lb('198.51.100.8', '203.0.113.1'))!,
      /^status\.loadBalancer\.ingress\[0\]\.ip: 203\.0\.113\.1 is outside serviceLoadBalancerIPs/,
    );
    assert.match(write(lb('198.51.100.8'), config({}))!, /^spec\.loadBalancerIP: .* names no serviceLoadBalancerIPs/);
  });

  it('the agent’s verdict on what a store holds: out of range, garbage and the loser of a clash refused, the rest admitted', () => {
    const good = svc('good', { clusterIP: '10.96.0.20' });
    const far = svc('far', { clusterIP: '8.8.8.8' });
    // Written by hand by two tools: neither keeps it (a newcomer does not take an address by its name).
    const twinA = svc('twin-a', { clusterIP: '10.96.0.21' });
    const twinB = svc('twin-b', { clusterIP: '10.96.0.21' });
    // Allocated to two (two nodes with different views): the first by key keeps it, the controller moves the other.
    const mark = { annotations: { [ALLOCATED_CLUSTER_IPS]: '10.96.0.23' } };
    const [pairA, pairB] = [svc('pair-a', { clusterIP: '10.96.0.23' }, mark), svc('pair-b', { clusterIP: '10.96.0.23' }, mark)];
    // An allocated address never takes one from a hand-written one, whatever the keys.
    const allocated = svc('a-allocated', { clusterIP: '10.96.0.22' }, { annotations: { [ALLOCATED_CLUSTER_IPS]: '10.96.0.22' } });
    const byHand = svc('z-by-hand', { clusterIP: '10.96.0.22' });
    // What no validator saw: a loopback cluster IP written straight into the store.
    const raw = {
      ...good,
      metadata: { ...good.metadata, name: 'raw' },
      spec: { ...good.spec, clusterIP: '127.0.0.1', clusterIPs: ['127.0.0.1'] },
    };
    const { admitted, refused } = admitServices([twinB, far, good, pairB, twinA, allocated, byHand, raw, pairA], RANGES);
    assert.deepEqual(admitted.map((s) => s.metadata.name).sort(), ['good', 'pair-a', 'z-by-hand']);
    assert.deepEqual(Object.fromEntries([...refused].map(([k, e]) => [k, said(e)])), {
      'shop/far': 'spec.clusterIP: 8.8.8.8 is outside the service cluster IP range (10.96.0.0/16, BGPConfiguration default)',
      'shop/twin-a':
        'spec.clusterIP: 10.96.0.21 is written by hand by Service shop/twin-b as well: neither is programmed while both claim it',
      'shop/twin-b':
        'spec.clusterIP: 10.96.0.21 is written by hand by Service shop/twin-a as well: neither is programmed while both claim it',
      'shop/pair-b': 'spec.clusterIP: 10.96.0.23 is already the cluster IP of Service shop/pair-a',
      'shop/a-allocated': 'spec.clusterIP: 10.96.0.22 is already the cluster IP of Service shop/z-by-hand',
      'shop/raw': 'spec.clusterIPs[0]: 127.0.0.1 is a loopback address: a service address must be one that is routed to the nodes',
    });
    // NodePorts alike, per protocol.
    const np = (name: string, protocol: string) =>
      svc(name, { type: 'NodePort', clusterIP: `10.96.0.${name.length + 30}`, ports: [{ port: 80, protocol, nodePort: 30999 }] });
    const ports = admitServices([np('tcp-a', 'TCP'), np('tcp-bb', 'TCP'), np('udp-ccc', 'UDP')], RANGES);
    assert.deepEqual(
      ports.admitted.map((s) => s.metadata.name),
      ['udp-ccc'],
    );
    assert.equal(
      said(ports.refused.get('shop/tcp-a')),
      'spec.ports[0].nodePort: 30999/TCP is written by hand by Service shop/tcp-bb as well: neither is programmed while both claim it',
    );
    // A range narrowed under stored Services refuses them from then on.
    assert.deepEqual([...admitServices([good], config({ serviceClusterIPs: [{ cidr: '10.97.0.0/16' }] })).refused.keys()], ['shop/good']);
  });
});

describe('services: podroute apply refuses a Service whose addresses are not its to take', () => {
  let dir: string;
  let ds: BackendDatastore;
  const run = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runDatastoreCommand(argv, { stdout: (s) => out.push(s), stderr: (s) => err.push(s) }, ds);
    return { code, out: out.join(''), err: err.join('') };
  };
  const apply = (name: string, yaml: string) => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, yaml);
    return run('apply', '-f', file);
  };
  const service = (name: string, spec: string) =>
    `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}, namespace: shop}\nspec: ${spec}\n`;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-svc-admission-'));
    ds = memoryDatastore();
    await ds.apply(config({ serviceClusterIPs: [{ cidr: '10.96.0.0/16' }] }));
  });
  afterEach(async () => {
    await ds.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('out of the range, another’s cluster IP, 8.8.8.8: each refused with the field named, nothing of the file written', async () => {
    assert.equal((await apply('dns', service('dns', '{clusterIP: 10.96.0.10, ports: [{port: 53, protocol: UDP}]}'))).code, 0);
    const cases: [string, string, RegExp][] = [
      [
        'outside',
        '{clusterIP: 10.200.0.10, ports: [{port: 80}]}',
        /Service\/shop\/outside: spec\.clusterIP: 10\.200\.0\.10 is outside the service cluster IP range \(10\.96\.0\.0\/16/,
      ],
      [
        'thief',
        '{clusterIP: 10.96.0.10, ports: [{port: 53, protocol: UDP}]}',
        /Service\/shop\/thief: spec\.clusterIP: 10\.96\.0\.10 is already the cluster IP of Service shop\/dns/,
      ],
      [
        'google',
        '{clusterIP: 8.8.8.8, ports: [{port: 53, protocol: UDP}]}',
        /Service\/shop\/google: spec\.clusterIP: 8\.8\.8\.8 is outside/,
      ],
      [
        'ext',
        '{clusterIP: 10.96.0.11, externalIPs: [1.1.1.1], ports: [{port: 80}]}',
        /spec\.externalIPs\[0\]: 1\.1\.1\.1 is refused: BGPConfiguration default names no serviceExternalIPs/,
      ],
    ];
    for (const [name, spec, why] of cases) {
      // A good Service first in the file: the bad one refuses the whole file.
      const r = await apply(name, `${service(`${name}-ok`, '{ports: [{port: 80}]}')}---\n${service(name, spec)}`);
      assert.equal(r.code, 1, `${name}: ${r.out}${r.err}`);
      assert.match(r.err, /^podroute apply: /);
      assert.match(r.err, why);
      assert.equal(r.out, '', `${name}: nothing applied`);
    }
    assert.deepEqual(
      (await ds.list('Service')).items.map((s) => s.metadata.name),
      ['dns'],
    );
    // create checks alike; and the holder itself may be applied again.
    const created = await run('create', '-f', join(dir, 'thief.yaml'));
    assert.equal(created.code, 1, created.out);
    assert.match(created.err, /already the cluster IP of Service shop\/dns/);
    assert.equal((await apply('dns-again', service('dns', '{clusterIP: 10.96.0.10, ports: [{port: 53, protocol: UDP}]}'))).code, 0);
  });

  it('a NodePort another Service holds for the same protocol is refused; the ranges a file writes with its Services are the ones checked', async () => {
    assert.equal((await apply('a', service('a', '{type: NodePort, ports: [{port: 80, nodePort: 30080}]}'))).code, 0);
    const r = await apply('b', service('b', '{type: NodePort, ports: [{port: 80, nodePort: 30080}]}'));
    assert.equal(r.code, 1, r.out);
    assert.match(r.err, /Service\/shop\/b: spec\.ports\[0\]\.nodePort: 30080\/TCP is already a NodePort of Service shop\/a/);
    assert.equal((await apply('u', service('u', '{type: NodePort, ports: [{port: 80, protocol: UDP, nodePort: 30080}]}'))).code, 0);
    const withRange = `apiVersion: projectcalico.org/v3\nkind: BGPConfiguration\nmetadata: {name: default}\nspec: {serviceClusterIPs: [{cidr: 10.96.0.0/16}], serviceExternalIPs: [{cidr: 192.0.2.0/24}]}\n---\n${service('ext', '{externalIPs: [192.0.2.7], ports: [{port: 80}]}')}`;
    const ok = await apply('with-range', withRange);
    assert.equal(ok.code, 0, ok.err);
  });
});
