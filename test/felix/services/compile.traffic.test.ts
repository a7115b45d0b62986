// Services through felix's table with real packets: one node (a network namespace) with three
// endpoint pods and a client pod wired as Calico wires them, a namespace outside the cluster, and
// a hand-made ServiceInput compiled and applied by the policy programmer with real nft, beside a
// policy table for the same pods. Each endpoint answers with its name and the address it saw.
// Root only.
import assert from 'node:assert/strict';
import { compilePolicy as compileNftables } from '../../../felix/policy/compile.js';
import type { ServiceInput, ServicePort } from '../../../felix/services/input.js';
import { Lab } from '../../support/netns.js';
import { NODE, OUTSIDE, type PodSpec, type Result, SERVER_PORT, ServiceNode, tally } from './felix-lab.js';

const PODS: PodSpec[] = [
  { name: 'a', v4: '10.67.0.2', v6: 'fd00:67::2' },
  { name: 'b', v4: '10.67.0.3', v6: 'fd00:67::3' },
  { name: 'c', v4: '10.67.0.4', v6: 'fd00:67::4' },
  { name: 'cl', v4: '10.67.0.5', v6: 'fd00:67::5' },
];
const ENDPOINTS = PODS.filter((p) => p.name !== 'cl');
const addressOf = (name: string) => PODS.find((p) => p.name === name)!;

const WEB = { v4: '10.96.7.10', v6: 'fd00:96:7::10' };
const DNS = '10.96.7.11';
const STICKY = '10.96.7.12';
const HAIRPIN = '10.96.7.13';
const EMPTY = '10.96.7.14';
const EMPTY_UDP = '10.96.7.15';
const LOCAL = '10.96.7.16';
const NODE_PORT = 30080;
const LOCAL_NODE_PORT = 30081;
const EMPTY_NODE_PORT = 30082;

function port(over: Partial<ServicePort> & Pick<ServicePort, 'id' | 'clusterIPs'>): ServicePort {
  return { protocol: 'tcp', port: 80, externalIPs: [], loadBalancerIPs: [], endpoints: [], ...over };
}
const eps = (names: readonly string[], families: readonly (4 | 6)[] = [4], local: readonly string[] = []) =>
  names.flatMap((n) =>
    families.map((f) => ({ address: f === 4 ? addressOf(n).v4 : addressOf(n).v6, port: SERVER_PORT, local: local.includes(n) })),
  );

function input(web: readonly string[] = ['a', 'b', 'c'], sticky: readonly string[] = ['a', 'b', 'c']): ServiceInput {
  return {
    nodeAddresses: [],
    clusterCidrs: ['10.67.0.0/16', 'fd00:67::/64'],
    services: [
      port({ id: 'default/web/http/tcp', clusterIPs: [WEB.v4, WEB.v6], nodePort: NODE_PORT, endpoints: eps(web, [4, 6]) }),
      port({ id: 'default/dns/dns/udp', protocol: 'udp', port: 53, clusterIPs: [DNS], endpoints: eps(['a', 'b', 'c']) }),
      port({ id: 'default/sticky/http/tcp', clusterIPs: [STICKY], endpoints: eps(sticky), affinityTimeoutSeconds: 60 }),
      port({ id: 'default/hairpin/http/tcp', clusterIPs: [HAIRPIN], endpoints: eps(['a']) }),
      port({ id: 'default/empty/http/tcp', clusterIPs: [EMPTY], nodePort: EMPTY_NODE_PORT }),
      port({ id: 'default/empty/dns/udp', protocol: 'udp', port: 53, clusterIPs: [EMPTY_UDP] }),
      port({
        id: 'default/local/http/tcp',
        clusterIPs: [LOCAL],
        nodePort: LOCAL_NODE_PORT,
        externalLocal: true,
        endpoints: eps(['a', 'b', 'c'], [4], ['a']),
      }),
    ],
  };
}

const POOLS = [
  { cidr: '10.67.0.0/16', natOutgoing: true },
  { cidr: 'fd00:67::/64', natOutgoing: true },
];

function describeResults(results: readonly Result[]): string {
  return JSON.stringify(Object.fromEntries(tally(results)));
}

describe('felix services: real packets through the services part of inet podroute', function () {
  this.timeout(180_000);
  const lab = new Lab({ tag: 'svf' });
  let node: ServiceNode;

  before(async () => {
    node = await ServiceNode.create(lab, PODS);
    // The policy table for the same pods (no policy, natOutgoing pools): services share its table.
    const policy = await node.programmer.update(
      compileNftables({
        sets: [],
        namedPortSets: [],
        policies: [],
        pools: POOLS,
        endpoints: PODS.map((p) => ({ iface: `cali${p.name}`, addresses: [p.v4, p.v6], ingress: [], egress: [] })),
      }),
    );
    assert.ok(policy.ok, policy.error);
    await node.program(input());
  });
  after(async () => {
    node?.programmer.stop();
    await lab.destroy();
  });

  it('spreads 300 TCP connections to a cluster IP over all three endpoints, each between 20% and 47%', async () => {
    const results = await node.probe('cl', { host: WEB.v4, port: 80, count: 300, parallel: 20 });
    const t = tally(results);
    assert.equal(results.filter((r) => r.ok).length, 300, describeResults(results));
    for (const e of ENDPOINTS) {
      const share = (t.get(e.name) ?? 0) / 300;
      assert.ok(share >= 0.2 && share <= 0.47, `${e.name} took ${(share * 100).toFixed(1)}%: ${describeResults(results)}`);
    }
    // Pod to pod through a service keeps the client's address.
    assert.ok(
      results.every((r) => r.seen === addressOf('cl').v4),
      `want every connection seen from ${addressOf('cl').v4}: ${describeResults(results)}`,
    );
  });

  it('an endpoint replaced by another is map elements alone, and new connections go to the new one', async () => {
    await node.program(input(['a', 'b']));
    const report = await node.program(input(['a', 'c']));
    const kinds = Object.keys(report.opCounts);
    assert.ok(kinds.length > 0 && kinds.every((k) => k.endsWith(' element')), `not elements alone:\n${report.script}`);
    const results = await node.probe('cl', { host: WEB.v4, port: 80, count: 60, parallel: 10 });
    const t = tally(results);
    assert.equal(results.filter((r) => r.ok).length, 60, describeResults(results));
    assert.equal(t.get('b'), undefined, `b still reached: ${describeResults(results)}`);
    assert.ok((t.get('a') ?? 0) > 0 && (t.get('c') ?? 0) > 0, `a and c both reached: ${describeResults(results)}`);
    await node.program(input());
  });

  it('balances UDP: every datagram answered, every endpoint reached', async () => {
    const results = await node.probe('cl', { host: DNS, port: 53, protocol: 'udp', count: 60, parallel: 10 });
    const t = tally(results);
    assert.equal(results.filter((r) => r.ok).length, 60, describeResults(results));
    for (const e of ENDPOINTS) assert.ok((t.get(e.name) ?? 0) > 0, `${e.name} never reached: ${describeResults(results)}`);
  });

  it('IPv6: the IPv6 cluster IP goes to the IPv6 endpoints, all three', async () => {
    const results = await node.probe('cl', { host: WEB.v6, port: 80, count: 60, parallel: 10 });
    const t = tally(results);
    assert.equal(results.filter((r) => r.ok).length, 60, describeResults(results));
    for (const e of ENDPOINTS) assert.ok((t.get(e.name) ?? 0) > 0, `${e.name} never reached: ${describeResults(results)}`);
    assert.ok(
      results.every((r) => r.seen === addressOf('cl').v6),
      describeResults(results),
    );
  });

  it("the node's own connections reach a cluster IP (nat output)", async () => {
    for (const host of [WEB.v4, WEB.v6]) {
      const results = await node.probe('node', { host, port: 80, count: 10, parallel: 5 });
      assert.equal(results.filter((r) => r.ok).length, 10, `${host}: ${describeResults(results)}`);
    }
  });

  it('an endpoint removed gets no new connection, while a connection it holds keeps working', async () => {
    const long = await node.longConnection('cl', WEB.v4, 80);
    const gone = long.endpoint;
    const report = await node.program(input(['a', 'b', 'c'].filter((n) => n !== gone)));
    // One endpoint out is a small transaction: per family, the endpoint elements of the cluster IP
    // and the NodePort (a delete and an add each) and the two chains whose rules hold the number
    // of endpoints (a flush and their two rules each); nothing else.
    assert.ok(report.ops > 0 && report.ops <= 20, `${report.ops} operations:\n${report.script}`);
    const results = await node.probe('cl', { host: WEB.v4, port: 80, count: 60, parallel: 10 });
    const t = tally(results);
    assert.equal(results.filter((r) => r.ok).length, 60, describeResults(results));
    assert.equal(t.get(gone), undefined, `${gone} still reached: ${describeResults(results)}`);
    await long.flows(5);
    await long.stop();
    await node.program(input());
  });

  it('session affinity pins a client to one endpoint, and a resync leaves the affinity sets to the packet path', async () => {
    const results = await node.probe('cl', { host: STICKY, port: 80, count: 30, parallel: 1 });
    const t = tally(results);
    assert.equal(results.filter((r) => r.ok).length, 30, describeResults(results));
    assert.equal(t.size, 1, `not pinned: ${describeResults(results)}`);
    const repair = await node.programmer.resync();
    assert.ok(repair.ok && repair.ops === 0, `resync changed ${repair.ops} things:\n${repair.script}`);
    const again = await node.probe('cl', { host: STICKY, port: 80, count: 10, parallel: 1 });
    assert.deepEqual([...tally(again).keys()], [...t.keys()]);
    // The pinned endpoint goes (its chain, its affinity set and the verdict map naming it, in one
    // transaction): the client is pinned anew to one of the others.
    const pinned = [...t.keys()][0]!;
    const report = await node.program(
      input(
        undefined,
        ['a', 'b', 'c'].filter((n) => n !== pinned),
      ),
    );
    assert.equal(report.opCounts['delete set'], 1, report.script);
    const moved = tally(await node.probe('cl', { host: STICKY, port: 80, count: 20, parallel: 1 }));
    assert.equal(moved.size, 1, JSON.stringify(Object.fromEntries(moved)));
    assert.notEqual([...moved.keys()][0], pinned);
    assert.ok(!([...moved.keys()][0] ?? '!').startsWith('!'), JSON.stringify(Object.fromEntries(moved)));
    await node.program(input());
  });

  it('NodePort from outside the cluster, both families, masqueraded (Cluster policy)', async () => {
    for (const host of [NODE.v4, NODE.v6]) {
      const results = await node.probe('outside', { host, port: NODE_PORT, count: 30, parallel: 10 });
      const t = tally(results);
      assert.equal(results.filter((r) => r.ok).length, 30, `${host}: ${describeResults(results)}`);
      assert.ok(t.size >= 2, `${host}: one endpoint only: ${describeResults(results)}`);
      const outside = host === NODE.v4 ? OUTSIDE.v4 : OUTSIDE.v6;
      assert.ok(
        results.every((r) => r.seen !== outside),
        `${host}: the client's address reached a pod: ${JSON.stringify(results.slice(0, 3))}`,
      );
    }
  });

  it("externalTrafficPolicy Local: outside clients reach this node's endpoint only, with their own address", async () => {
    const results = await node.probe('outside', { host: NODE.v4, port: LOCAL_NODE_PORT, count: 20, parallel: 5 });
    assert.deepEqual(Object.fromEntries(tally(results)), { a: 20 });
    assert.ok(
      results.every((r) => r.seen === OUTSIDE.v4),
      JSON.stringify(results.slice(0, 3)),
    );
    // Inside the cluster the same service balances over every endpoint.
    const inside = await node.probe('cl', { host: LOCAL, port: 80, count: 60, parallel: 10 });
    assert.deepEqual([...tally(inside).keys()].sort(), ['a', 'b', 'c'], describeResults(inside));
  });

  it('hairpin: a pod reaching its own service lands on itself, masqueraded', async () => {
    const [r] = await node.probe('a', { host: HAIRPIN, port: 80 });
    assert.ok(r?.ok, JSON.stringify(r));
    assert.equal(r.name, 'a');
    assert.notEqual(r.seen, addressOf('a').v4, 'the reply would not have come back through the node');
  });

  it('no endpoints: new connections are refused at once, from a pod, the node and outside, TCP and UDP', async () => {
    const cases: [string, string, number, 'tcp' | 'udp'][] = [
      ['cl', EMPTY, 80, 'tcp'],
      ['node', EMPTY, 80, 'tcp'],
      ['outside', NODE.v4, EMPTY_NODE_PORT, 'tcp'],
      ['cl', EMPTY_UDP, 53, 'udp'],
    ];
    for (const [from, host, p, protocol] of cases) {
      const [r] = await node.probe(from, { host, port: p, protocol, timeoutMs: 3000 });
      assert.equal(r?.error, 'ECONNREFUSED', `${from} -> ${host}:${p}/${protocol}: ${JSON.stringify(r)}`);
      assert.ok(r.ms < 1000, `${from} -> ${host}:${p}: refused after ${r.ms} ms`);
    }
    const counters = await node.programmer.counters();
    assert.ok((counters.get('services/reject')?.packets ?? 0) >= cases.length, JSON.stringify([...counters]));
  });

  it('a resync repairs a frontend deleted behind its back', async () => {
    await node.nft('delete', 'element', 'inet', 'podroute', 'svc-ips-v4', `{ ${WEB.v4} . tcp . 80 }`);
    const [broken] = await node.probe('cl', { host: WEB.v4, port: 80, timeoutMs: 1000 });
    assert.equal(broken?.ok, false, 'the service still answered without its map element');
    const repair = await node.programmer.resync();
    assert.ok(repair.ok, repair.error);
    assert.equal(repair.opCounts['add map element'], 1, repair.script);
    assert.equal(repair.ops, 1, repair.script);
    const [fixed] = await node.probe('cl', { host: WEB.v4, port: 80 });
    assert.ok(fixed?.ok, JSON.stringify(fixed));
  });
});
