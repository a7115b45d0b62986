// An IPv6-only cluster for real: three `podroute node run --ip none --ip6 …` agents in network
// namespaces whose links carry no IPv4 address at all, one IPv6 pool and no IPv4 one, a real
// Redis over a Unix socket. The router ID comes from --router-id or a hash of the node name
// (Calico's CALICO_ROUTER_ID), the mesh runs over IPv6 only, felix programs IPv6 routes only,
// and pods made as the CNI plugin makes them ping each other over IPv6.
import assert from 'node:assert/strict';
import { hashRouterId } from '../../../lib/agent/index.js';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import type { Segment } from '../../support/netns.js';
import { AgentCluster, agentStatus, ipPool } from '../../support/node-agents.js';
import { waitFor } from '../../support/wait.js';
import { type Agent6, ourRoutes, pingFailures } from './cluster.js';
import { type HandMadePod, handMadePod } from '../../support/pod.js';

describe('dual stack: an IPv6-only cluster (no IPv4 pool, no IPv4 address on any link)', function () {
  this.timeout(240_000);
  const cluster = new AgentCluster('v6o');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let segment: Segment;
  const agents = cluster.agents as Map<string, Agent6>;
  const pods: HandMadePod[] = [];

  async function startAgent(name: string, index: number, routerId?: string): Promise<void> {
    const ip6 = `fd00:96::${index}`;
    const ns = await lab.namespace(name);
    await segment.attach(ns, { ifname: 'eth0', v6: `${ip6}/64` });
    await cluster.startAgent(ns, { name, ip: 'none', ip6: `${ip6}/64`, ...(routerId ? { routerId } : {}), flags: ['--policy', 'off'] });
  }

  /** A pod as the CNI plugin makes it in an IPv6-only cluster: one IPv6 address, a veth, its WorkloadEndpoint. */
  async function addPod(node: string, name: string): Promise<HandMadePod> {
    const pod = await handMadePod({ lab, ds, host: agents.get(node)!.ns, node, name, v4: false });
    pods.push(pod);
    return pod;
  }

  const routes = (a: Agent6, family: '-4' | '-6') => ourRoutes(a.ns, family);

  async function v6BlocksOf(node: string): Promise<string[]> {
    return (await new Ipam(ds).blocksForNode(node)).map((b) => b.cidr);
  }

  before(async () => {
    await cluster.open();
    ds = cluster.ds;
    await ds.create(ipPool('pods-v6', 'fd00:97::/48', { blockSize: 122 }));
    segment = await lab.segment();
    await Promise.all([startAgent('n1', 1, '10.255.0.1'), startAgent('n2', 2), startAgent('n3', 3)]);
  });
  after(() => cluster.close());

  it('registers each Node with its IPv6 address and no IPv4 one; router IDs from --router-id or the node name', async () => {
    for (const a of agents.values()) {
      const n = await ds.get('Node', a.name);
      assert.equal(n?.spec.bgp?.ipv4Address, undefined);
      assert.equal(n?.spec.bgp?.ipv6Address, `${a.ip6}/64`);
      const s = await agentStatus(a);
      assert.equal(s.routerId, a.name === 'n1' ? '10.255.0.1' : hashRouterId(a.name));
    }
    assert.notEqual(hashRouterId('n2'), hashRouterId('n3'));
    assert.equal((await ds.list('IPPool')).items.length, 1, 'no IPv4 pool was made');
  });

  it('the mesh runs one IPv6 session to every other node, all Established, none over IPv4', async () => {
    const all = [...agents.values()];
    const got = await waitFor(() => Promise.all(all.map(agentStatus)), {
      what: 'IPv6-only mesh',
      until: (ss) => ss.every((s) => s.peers.length === 2 && s.peers.every((p) => p.state === 'Established')),
      timeoutMs: 40_000,
      intervalMs: 250,
    });
    for (const [i, s] of got.entries()) {
      const others = all.filter((a) => a !== all[i]);
      assert.deepEqual(s.peers.map((p) => p.address).sort(), others.map((a) => a.ip6).sort());
    }
  });

  it('pods get IPv6 addresses, routes are IPv6 only, and pods on different nodes ping each other', async () => {
    await addPod('n1', 'p1');
    await addPod('n2', 'p2');
    await addPod('n3', 'p3');
    for (const a of agents.values()) {
      const own = (await v6BlocksOf(a.name))[0]!;
      assert.match(own, /^fd00:97:.*\/122$/);
      const others = [...agents.values()].filter((o) => o !== a);
      const remote = await Promise.all(others.map(async (o) => [(await v6BlocksOf(o.name))[0]!, o.ip6] as const));
      const pod = pods.find((p) => p.node === a.name)!;
      await waitFor(() => routes(a, '-6'), {
        what: `${a.name} IPv6 kernel routes`,
        until: (r) =>
          r.some((x) => x.startsWith(`blackhole ${own} `)) &&
          r.some((x) => x.startsWith(`${pod.ip6} dev ${pod.iface} `)) &&
          remote.every(([b, via]) => r.some((x) => x.startsWith(`${b} via ${via} dev eth0 `))),
        timeoutMs: 30_000,
      });
      assert.deepEqual(await routes(a, '-4'), [], `${a.name} has no IPv4 route of ours`);
    }
    assert.deepEqual(await pingFailures(pods), []);
  });

  it('a deleted pod’s /128 goes, and its emptied block goes on every node', async () => {
    const [gone, stays] = [await addPod('n2', 'p4'), pods.find((p) => p.node === 'n2')!];
    const n2 = agents.get('n2')!;
    await waitFor(() => routes(n2, '-6'), {
      what: `n2 routes ${gone.ip6} to its veth`,
      until: (r) => r.some((x) => x.startsWith(`${gone.ip6} dev ${gone.iface} `)),
      timeoutMs: 30_000,
    });
    await ds.delete('WorkloadEndpoint', `default/n2-k8s-${gone.name}-eth0`);
    await new Ipam(ds).releaseByHandle(`h-${gone.name}`);
    const r = await waitFor(() => routes(n2, '-6'), {
      what: `n2: no route left for ${gone.ip6}`,
      until: (r) => !r.some((x) => x.startsWith(`${gone.ip6} `)),
      timeoutMs: 30_000,
    });
    assert.ok(
      r.some((x) => x.startsWith(`${stays.ip6} dev ${stays.iface} `)),
      'the other pod on n2 keeps its route',
    );
    // The last pod of n3 goes: its block leaves every node's table.
    const p3 = pods.find((p) => p.node === 'n3')!;
    const [b3] = await v6BlocksOf('n3');
    await ds.delete('WorkloadEndpoint', `default/n3-k8s-${p3.name}-eth0`);
    await new Ipam(ds).releaseByHandle(`h-${p3.name}`);
    for (const a of agents.values())
      await waitFor(() => routes(a, '-6'), {
        what: `${a.name}: no IPv6 route left for ${b3} or ${p3.ip6}`,
        until: (r) => !r.some((x) => x.startsWith(`${b3} `) || x.startsWith(`blackhole ${b3} `) || x.startsWith(`${p3.ip6} `)),
        timeoutMs: 30_000,
      });
  });
});
