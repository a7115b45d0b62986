// Cluster IPs and NodePorts for Services that name none: from the BGPConfiguration's
// serviceClusterIPs (10.96.0.0/12 without one), the same choice on every node, a clash between
// two allocations settled by key order, an address written by hand never moved; and three
// service controllers on one store allocating a new Service once.
import assert from 'node:assert/strict';
import { cidrContains, parseAddress, parseCidr } from '../../../ip/index.js';
import { type BackendDatastore, memoryDatastore } from '../../../lib/datastore/index.js';
import { type BGPConfiguration, type Service, validateResource } from '../../../lib/resources/index.js';
import { ALLOCATED_CLUSTER_IPS, ALLOCATED_NODE_PORTS, allocate, serviceRanges } from '../../../lib/services/allocate.js';
import { ServiceController } from '../../../lib/services/controller.js';

const svc = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>): Service =>
  validateResource({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'shop', annotations }, spec }) as Service;
const config = (cidrs: string[]): BGPConfiguration =>
  validateResource({
    apiVersion: 'projectcalico.org/v3',
    kind: 'BGPConfiguration',
    metadata: { name: 'default' },
    spec: { serviceClusterIPs: cidrs.map((cidr) => ({ cidr })) },
  }) as BGPConfiguration;
const inside = (cidr: string, ip: string) => cidrContains(parseCidr(cidr), parseAddress(ip));

describe('services: cluster IP and NodePort allocation', () => {
  it('fills a missing cluster IP from the default range, or the configured one; the same on every call', () => {
    const a = svc('a', { ports: [{ port: 80 }] });
    const [got] = allocate([a], serviceRanges(undefined));
    assert.ok(got && inside('10.96.0.0/12', got.spec.clusterIP!), got?.spec.clusterIP);
    assert.deepEqual(got!.spec.clusterIPs, [got!.spec.clusterIP]);
    assert.deepEqual(got!.spec.ipFamilies, ['IPv4']);
    assert.equal(got!.metadata.annotations?.[ALLOCATED_CLUSTER_IPS], got!.spec.clusterIP);
    assert.deepEqual(validateResource(got), got, 'what is written validates as it is');
    assert.deepEqual(allocate([a], serviceRanges(undefined)), [got]);
    const [mine] = allocate([a], serviceRanges(config(['10.101.0.0/24', 'fd00:101::/112'])));
    assert.ok(inside('10.101.0.0/24', mine!.spec.clusterIP!), mine!.spec.clusterIP);
    const dual = svc('d', { ipFamilyPolicy: 'PreferDualStack', ports: [{ port: 80 }] });
    const [both] = allocate([dual], serviceRanges(config(['10.101.0.0/24', 'fd00:101::/112'])));
    assert.deepEqual(both!.spec.ipFamilies, ['IPv4', 'IPv6']);
    assert.ok(inside('fd00:101::/112', both!.spec.clusterIPs![1]!), both!.spec.clusterIPs![1]);
    assert.deepEqual(validateResource(both), both);
  });

  it('leaves alone what has its addresses, headless services, and never hands out one address twice', () => {
    const ranges = serviceRanges(config(['10.101.0.0/29']));
    const fixed = svc('fixed', { clusterIP: '10.101.0.3', ports: [{ port: 80 }] });
    const headless = svc('h', { clusterIP: 'None', ports: [{ port: 80 }] });
    const many = [1, 2, 3, 4, 5].map((i) => svc(`s${i}`, { ports: [{ port: 80 }] }));
    const out = allocate([fixed, headless, ...many], ranges);
    assert.deepEqual(out.map((s) => s.metadata.name).sort(), ['s1', 's2', 's3', 's4', 's5']);
    const ips = out.map((s) => s.spec.clusterIP!);
    // A /29 has six usable addresses: one written by hand, five allocated, all different.
    assert.equal(new Set([...ips, '10.101.0.3']).size, 6, ips.join());
    assert.ok(!ips.includes('10.101.0.0') && !ips.includes('10.101.0.7'), 'not the network or broadcast address');
    // A seventh finds nothing free: it is left without, not given a taken one.
    const full = allocate([fixed, headless, ...out, svc('s6', { ports: [{ port: 80 }] })], ranges);
    assert.deepEqual(full, []);
  });

  it('a clash between two allocations: the first key keeps the address, the other moves; a hand-written one never moves', () => {
    const ranges = serviceRanges(config(['10.101.0.0/24']));
    const ip = '10.101.0.50';
    const mark = { [ALLOCATED_CLUSTER_IPS]: ip };
    const a = svc('a', { clusterIP: ip, ports: [{ port: 80 }] }, mark);
    const b = svc('b', { clusterIP: ip, ports: [{ port: 80 }] }, mark);
    const [moved] = allocate([b, a], ranges);
    assert.equal(moved!.metadata.name, 'b');
    assert.notEqual(moved!.spec.clusterIP, ip);
    const byHand = svc('z', { clusterIP: ip, ports: [{ port: 80 }] });
    const out = allocate([a, byHand], ranges);
    assert.deepEqual(
      out.map((s) => s.metadata.name),
      ['a'],
      'the allocated one moves even though its key sorts first',
    );
  });

  it('NodePorts for NodePort and LoadBalancer ports without one, distinct per protocol', () => {
    const np = svc('np', {
      type: 'NodePort',
      clusterIP: '10.96.0.9',
      ports: [
        { name: 'a', port: 80 },
        { name: 'b', port: 81, nodePort: 30001 },
        { name: 'c', protocol: 'UDP', port: 80 },
      ],
    });
    const [got] = allocate([np], serviceRanges(undefined));
    const ports = got!.spec.ports!;
    assert.equal(ports[1]!.nodePort, 30001);
    for (const p of [ports[0]!, ports[2]!]) assert.ok(p.nodePort! >= 30000 && p.nodePort! <= 32767, String(p.nodePort));
    assert.notEqual(ports[0]!.nodePort, 30001);
    assert.deepEqual(validateResource(got), got);
    assert.deepEqual(allocate([svc('c', { ports: [{ port: 80 }], clusterIP: '10.96.0.8' })], serviceRanges(undefined)), []);
    // Two services given one NodePort by two agents at once: the first key keeps it.
    const mark = { [ALLOCATED_NODE_PORTS]: '80/TCP=30500' };
    const x = svc('x', { type: 'NodePort', clusterIP: '10.96.0.20', ports: [{ port: 80, nodePort: 30500 }] }, mark);
    const y = svc('y', { type: 'NodePort', clusterIP: '10.96.0.21', ports: [{ port: 80, nodePort: 30500 }] }, mark);
    const [moved] = allocate([y, x], serviceRanges(undefined));
    assert.equal(moved!.metadata.name, 'y');
    assert.notEqual(moved!.spec.ports![0]!.nodePort, 30500);
    assert.equal(moved!.metadata.annotations?.[ALLOCATED_NODE_PORTS], `80/TCP=${moved!.spec.ports![0]!.nodePort}`);
    // Written by hand, it stays; the allocated one moves.
    const hand = svc('z', { type: 'NodePort', clusterIP: '10.96.0.22', ports: [{ port: 80, nodePort: 30500 }] });
    assert.deepEqual(
      allocate([x, hand], serviceRanges(undefined)).map((s) => s.metadata.name),
      ['x'],
    );
  });
});

describe('services: three service controllers allocate a new Service once', () => {
  let ds: BackendDatastore;
  let controllers: ServiceController[];
  before(async () => {
    ds = memoryDatastore();
    await ds.create(config(['10.102.0.0/24']));
    controllers = [0, 1, 2].map(() => new ServiceController(ds));
    await Promise.all(controllers.map((c) => c.start()));
  });
  after(async () => {
    await Promise.all(controllers.map((c) => c.stop()));
    await ds.close();
  });

  it('one cluster IP from the configured range, one write', async () => {
    await ds.create(svc('web', { type: 'NodePort', ports: [{ port: 80 }] }));
    const end = Date.now() + 10_000;
    let got: Service | undefined;
    while (Date.now() < end) {
      await Promise.all(controllers.map((c) => c.settled()));
      got = await ds.get('Service', 'shop/web');
      if (got?.spec.clusterIP && got.spec.ports?.[0]?.nodePort) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(got?.spec.clusterIP && inside('10.102.0.0/24', got.spec.clusterIP), JSON.stringify(got?.spec));
    assert.ok(got.spec.ports?.[0]?.nodePort, 'a NodePort too');
    assert.equal(
      controllers.reduce((n, c) => n + c.stats.allocated, 0),
      1,
      JSON.stringify(controllers.map((c) => c.stats)),
    );
  });
});
