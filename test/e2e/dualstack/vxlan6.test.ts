// VXLAN over IPv6 for real: two dual-stack subnets joined by a router namespace that forwards
// both families and speaks no BGP, so it knows nothing of the pods. n1 and n3 share a subnet,
// n2 is behind the router. With CrossSubnet pools of both families, each agent takes an IPv6
// VTEP from its own IPv6 block, felix sends the other subnet's IPv6 blocks over
// vxlan-v6.calico to that node's IPv6 VTEP (the outer packet between node IPv6 addresses,
// which the router does know), and the same-subnet pair routes directly on eth0.
import assert from 'node:assert/strict';
import { cidrContains, parseAddress, parseCidr } from '../../../ip/index.js';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { VXLAN_ADDRESS_V6_ANNOTATION, VXLAN_MAC_V6_ANNOTATION, API_VERSION } from '../../../lib/resources/index.js';
import type { Segment } from '../../support/netns.js';
import { AgentCluster, type AgentProcess, agentStatus, ipPool } from '../../support/node-agents.js';
import { waitFor } from '../../support/wait.js';
import { ourRoutes, pingFailures } from './cluster.js';
import { type DualStackPod, handMadePod } from '../../support/pod.js';

interface Node {
  name: string;
  subnet: 1 | 2;
  ip: string;
  ip6: string;
  agent?: AgentProcess;
}

describe('dual stack: VXLAN over IPv6 across a router for CrossSubnet pools (namespaces, real kernel)', function () {
  this.timeout(240_000);
  const cluster = new AgentCluster('vx6');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  const subnets = new Map<1 | 2, Segment>();
  const nodes: Node[] = [
    { name: 'n1', subnet: 1, ip: '10.97.1.1', ip6: 'fd00:97:1::1' },
    { name: 'n3', subnet: 1, ip: '10.97.1.3', ip6: 'fd00:97:1::3' },
    { name: 'n2', subnet: 2, ip: '10.97.2.2', ip6: 'fd00:97:2::2' },
  ];
  const node = (name: string) => nodes.find((n) => n.name === name)!;
  const pods: DualStackPod[] = [];

  async function startNode(n: Node): Promise<void> {
    const ns = await lab.namespace(n.name);
    await subnets.get(n.subnet)!.attach(ns, { ifname: 'eth0', v4: `${n.ip}/24`, v6: `${n.ip6}/64` });
    await ns.ip('route', 'add', 'default', 'via', `10.97.${n.subnet}.254`);
    await ns.ip('-6', 'route', 'add', 'default', 'via', `fd00:97:${n.subnet}::fe`);
    n.agent = await cluster.startAgent(ns, { name: n.name, ip: `${n.ip}/24`, ip6: `${n.ip6}/64`, flags: ['--policy', 'off'] });
  }

  /** A pod as the CNI plugin makes it: one address of each family, a veth, its WorkloadEndpoint. */
  async function addPod(nodeName: string, name: string): Promise<DualStackPod> {
    const pod = (await handMadePod({ lab, ds, host: node(nodeName).agent!.ns, node: nodeName, name })) as DualStackPod;
    pods.push(pod);
    return pod;
  }

  const routes6 = (n: Node) => ourRoutes(n.agent!.ns, '-6');

  /**
   * A node's IPv6 blocks: usually one, but the agent's VTEP address and the node's first pod,
   * allocated at the same moment by two processes, may each claim one (as Calico's IPAM may).
   */
  async function v6BlocksOf(name: string): Promise<string[]> {
    const blocks = (await new Ipam(ds).blocksForNode(name)).map((b) => b.cidr).filter((c) => c.includes(':'));
    assert.ok(blocks.length >= 1, `${name} has no IPv6 block`);
    return blocks;
  }

  async function vtep6(name: string): Promise<{ ip: string; mac: string }> {
    const a = (await ds.get('Node', name))?.metadata.annotations ?? {};
    return { ip: a[VXLAN_ADDRESS_V6_ANNOTATION]!, mac: a[VXLAN_MAC_V6_ANNOTATION]! };
  }

  before(async () => {
    await cluster.open();
    ds = cluster.ds;
    await ds.create(ipPool('vx-v4', '10.98.0.0/16', { vxlanMode: 'CrossSubnet' }));
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'vx-v6' },
      spec: { cidr: 'fd00:98::/48', blockSize: 122, ipipMode: 'Never', vxlanMode: 'CrossSubnet' },
    });
    const router = await lab.namespace('rt');
    for (const s of [1, 2] as const) {
      const seg = await lab.segment();
      subnets.set(s, seg);
      await seg.attach(router, { v4: `10.97.${s}.254/24`, v6: `fd00:97:${s}::fe/64` });
    }
    await router.run(['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    await router.run(['sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1']);
    await Promise.all(nodes.map(startNode));
  });
  after(() => cluster.close());

  it('the mesh reaches across the router: an IPv4 and an IPv6 session to each other node, all Established', async () => {
    await waitFor(() => Promise.all(nodes.map((n) => agentStatus(n.agent!))), {
      what: 'dual-stack mesh across the router',
      until: (ss) => ss.every((s) => s.peers.length === 4 && s.peers.every((p) => p.state === 'Established')),
      timeoutMs: 40_000,
      intervalMs: 250,
    });
  });

  it('each node gets an IPv6 VTEP from its own IPv6 block, its own MAC, on vxlan-v6.calico beside vxlan.calico', async () => {
    for (const n of nodes) {
      await addPod(n.name, `p${n.name.slice(1)}`);
    }
    for (const n of nodes) {
      const v = await waitFor(() => vtep6(n.name), { what: `${n.name}'s IPv6 VTEP`, until: (v) => !!v.ip, timeoutMs: 20_000 });
      const blocks = await v6BlocksOf(n.name);
      assert.ok(
        blocks.some((b) => cidrContains(parseCidr(b), parseAddress(v.ip))),
        `${v.ip} in ${blocks}`,
      );
      assert.match(v.mac, /^66(:[0-9a-f]{2}){5}$/);
      const link = await waitFor(() => n.agent!.ns.exec(['ip', '-d', '-6', 'addr', 'show', 'dev', 'vxlan-v6.calico']), {
        what: `${n.name} vxlan-v6.calico`,
        until: (r) => r.code === 0 && r.stdout.includes(`inet6 ${v.ip}/`),
        timeoutMs: 20_000,
      });
      assert.match(link.stdout, /vxlan id 6096 /);
      assert.match(link.stdout, new RegExp(`local ${n.ip6} `));
      assert.match(link.stdout, / mtu 1430 /);
      assert.ok(link.stdout.includes(`link/ether ${v.mac} `), link.stdout);
      assert.equal((await n.agent!.ns.exec(['ip', 'link', 'show', 'vxlan.calico'])).code, 0, 'the IPv4 device too');
    }
  });

  it('across the router: IPv6 blocks via the remote IPv6 VTEP on vxlan-v6.calico onlink, with its neighbour and FDB entry', async () => {
    for (const [from, to] of [
      ['n1', 'n2'],
      ['n3', 'n2'],
      ['n2', 'n1'],
      ['n2', 'n3'],
    ] as const) {
      const v = await vtep6(to);
      for (const block of await v6BlocksOf(to)) {
        const want = `${block} via ${v.ip} dev vxlan-v6.calico `;
        const r = await waitFor(() => routes6(node(from)), {
          what: `${from}: ${want}`,
          until: (r) => r.some((x) => x.startsWith(want)),
          timeoutMs: 30_000,
        });
        assert.match(r.find((x) => x.startsWith(want))!, / onlink/);
      }
      const ns = node(from).agent!.ns;
      const neigh = await ns.ip('-6', 'neigh', 'show', 'dev', 'vxlan-v6.calico');
      assert.match(neigh, new RegExp(`^${v.ip} lladdr ${v.mac} PERMANENT`, 'm'));
      const fdb = await ns.run(['bridge', 'fdb', 'show', 'dev', 'vxlan-v6.calico']);
      assert.match(fdb, new RegExp(`^${v.mac} dst ${node(to).ip6} `, 'm'));
    }
  });

  it('within a subnet: IPv6 blocks direct via the node on eth0, no tunnel', async () => {
    for (const [from, to] of [
      ['n1', 'n3'],
      ['n3', 'n1'],
    ] as const) {
      for (const block of await v6BlocksOf(to)) {
        const want = `${block} via ${node(to).ip6} dev eth0 `;
        const r = await waitFor(() => routes6(node(from)), {
          what: `${from}: ${want}`,
          until: (r) => r.some((x) => x.startsWith(want)),
          timeoutMs: 30_000,
        });
        assert.ok(!r.some((x) => x.startsWith(`${block} `) && x.includes('vxlan')), r.join('\n'));
      }
    }
  });

  it('pods ping each other over IPv6 (and IPv4) in and across subnets', async () => {
    assert.deepEqual(await pingFailures(pods, [6, 4]), []);
  });

  it('the cross-subnet IPv6 ping really went through vxlan-v6.calico: its counters moved', async () => {
    const ns = node('n2').agent!.ns;
    const packets = async () => {
      const s = JSON.parse(await ns.ip('-j', '-s', 'link', 'show', 'vxlan-v6.calico'))[0].stats64;
      return { tx: Number(s.tx.packets), rx: Number(s.rx.packets) };
    };
    const before = await packets();
    const p2 = pods.find((p) => p.node === 'n2')!;
    const p1 = pods.find((p) => p.node === 'n1')!;
    const r = await p2.ns.exec(['ping', '-6', '-c', '3', '-i', '0.2', '-W', '2', p1.ip6]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const after = await packets();
    assert.ok(after.tx - before.tx >= 3 && after.rx - before.rx >= 3, `tx ${before.tx}→${after.tx}, rx ${before.rx}→${after.rx}`);
  });

  it('vxlanMode Always on the IPv6 pool: the same-subnet pair goes over vxlan-v6.calico too, and still pings', async () => {
    const pool = (await ds.get('IPPool', 'vx-v6'))!;
    await ds.apply({ ...pool, metadata: { ...pool.metadata, resourceVersion: undefined }, spec: { ...pool.spec, vxlanMode: 'Always' } });
    const v = await vtep6('n3');
    for (const block of await v6BlocksOf('n3')) {
      const want = `${block} via ${v.ip} dev vxlan-v6.calico `;
      const r = await waitFor(() => routes6(node('n1')), {
        what: `n1: ${want}`,
        until: (r) => r.some((x) => x.startsWith(want)),
        timeoutMs: 30_000,
      });
      assert.ok(!r.some((x) => x.startsWith(`${block} via ${node('n3').ip6} dev eth0`)), r.join('\n'));
    }
    // The IPv4 pool stayed CrossSubnet: its same-subnet route is still direct.
    const v4 = await node('n1').agent!.ns.ip('-4', 'route', 'show', 'proto', '81');
    assert.match(v4, / via 10\.97\.1\.3 dev eth0 /);
    const p1 = pods.find((p) => p.node === 'n1')!;
    const p3 = pods.find((p) => p.node === 'n3')!;
    const ping = await p1.ns.exec(['ping', '-6', '-c', '1', '-W', '2', p3.ip6]);
    assert.equal(ping.code, 0, ping.stdout + ping.stderr);
  });
});
