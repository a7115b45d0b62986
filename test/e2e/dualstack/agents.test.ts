// A dual-stack cluster for real: three `podroute node run` agents in network namespaces on
// one L2 segment, each with an IPv4 and an IPv6 address, a real Redis over a Unix socket.
// The mesh runs one session per family (as Calico's BIRD and BIRD6); IPv6 blocks go over the
// IPv6 sessions with the node's IPv6 address as next hop; felix programs them in the kernel.
// Pods are made here as the CNI plugin makes them (IPAM of both families, a veth, a
// WorkloadEndpoint with both addresses), and ping each other over IPv6 across nodes.
import assert from 'node:assert/strict';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import type { RibRoute } from '../../support/bgp-config.js';
import { Frr } from '../../support/frr.js';
import type { Segment } from '../../support/netns.js';
import { AgentCluster, agentStatus, PODROUTE, ipPool } from '../../support/node-agents.js';
import { waitFor } from '../../support/wait.js';
import { type Agent6, ourRoutes, pingFailures } from './cluster.js';
import { type DualStackPod, handMadePod } from '../../support/pod.js';
import { API_VERSION } from '../../../lib/resources/index.js';

describe('dual stack: node agents with IPv6 sessions, blocks and routes (namespaces, real kernel)', function () {
  this.timeout(240_000);
  const cluster = new AgentCluster('ds');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let segment: Segment;
  const agents = cluster.agents as Map<string, Agent6>;
  const pods: DualStackPod[] = [];

  async function startAgent(name: string, index: number, withIp6 = true): Promise<Agent6> {
    const ip = `10.95.0.${index}`;
    const ip6 = `fd00:95::${index}`;
    const ns = await lab.namespace(name);
    await segment.attach(ns, { ifname: 'eth0', v4: `${ip}/24`, v6: `${ip6}/64` });
    const a = await cluster.startAgent(ns, { name, ip: `${ip}/24`, ...(withIp6 ? { ip6: `${ip6}/64` } : {}), flags: ['--policy', 'off'] });
    // A node started without --ip6 still has its IPv6 address on eth0, for a test to give it later.
    return Object.assign(a, { ip6 });
  }

  const status = agentStatus;

  /** A pod as the CNI plugin makes it: one address of each family, a veth, its WorkloadEndpoint. */
  async function addPod(node: string, name: string, pools6?: string[]): Promise<DualStackPod> {
    const pod = (await handMadePod({ lab, ds, host: agents.get(node)!.ns, node, name, pools6 })) as DualStackPod;
    pods.push(pod);
    return pod;
  }

  const routes6 = (a: Agent6) => ourRoutes(a.ns, '-6');

  async function v6BlocksOf(node: string): Promise<string[]> {
    return (await new Ipam(ds).blocksForNode(node)).map((b) => b.cidr).filter((c) => c.includes(':'));
  }

  before(async () => {
    await cluster.open();
    ds = cluster.ds;
    await ds.create(ipPool('pods-v4', '10.94.0.0/16'));
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'pods-v6' },
      spec: { cidr: 'fd00:94::/48', blockSize: 122, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    segment = await lab.segment();
    await Promise.all([startAgent('n1', 1), startAgent('n2', 2), startAgent('n3', 3)]);
  });
  after(() => cluster.close());

  it('registers each Node with its IPv6 address (spec.bgp.ipv6Address)', async () => {
    for (const a of agents.values()) {
      const n = await ds.get('Node', a.name);
      assert.equal(n?.spec.bgp?.ipv4Address, `${a.ip}/24`);
      assert.equal(n?.spec.bgp?.ipv6Address, `${a.ip6}/64`);
    }
  });

  it('the mesh runs an IPv4 and an IPv6 session to every other node, all Established', async () => {
    const all = [...agents.values()];
    const got = await waitFor(() => Promise.all(all.map(status)), {
      what: 'dual-stack mesh',
      until: (ss) => ss.every((s) => s.peers.length === 4 && s.peers.every((p) => p.state === 'Established')),
      timeoutMs: 40_000,
      intervalMs: 250,
    });
    for (const [i, s] of got.entries()) {
      const others = all.filter((a) => a !== all[i]);
      assert.deepEqual(s.peers.map((p) => p.address).sort(), [...others.map((a) => a.ip), ...others.map((a) => a.ip6)].sort());
      assert.ok(
        s.peers.every((p) => p.type === 'mesh'),
        `node ${i} has a peer that is not mesh: ${s.peers.map((p) => `${p.address} ${p.type}`).join(', ')}`,
      );
      assert.equal(s.addressV6, `${all[i]!.ip6}/64`);
    }
  });

  it('v6 pods: /128 dev cali on their node, blackholes for own v6 blocks, remote v6 blocks via the nodes’ IPv6 addresses', async () => {
    const p1 = await addPod('n1', 'p1');
    const p2 = await addPod('n2', 'p2');
    const p3 = await addPod('n3', 'p3');
    const [b1, b2, b3] = [(await v6BlocksOf('n1'))[0]!, (await v6BlocksOf('n2'))[0]!, (await v6BlocksOf('n3'))[0]!];
    assert.match(b1, /\/122$/);
    const expect: Record<string, { own: string; pod: DualStackPod; remote: [string, string][] }> = {
      n1: {
        own: b1,
        pod: p1,
        remote: [
          [b2, 'fd00:95::2'],
          [b3, 'fd00:95::3'],
        ],
      },
      n2: {
        own: b2,
        pod: p2,
        remote: [
          [b1, 'fd00:95::1'],
          [b3, 'fd00:95::3'],
        ],
      },
      n3: {
        own: b3,
        pod: p3,
        remote: [
          [b1, 'fd00:95::1'],
          [b2, 'fd00:95::2'],
        ],
      },
    };
    for (const [n, e] of Object.entries(expect)) {
      const r = await waitFor(() => routes6(agents.get(n)!), {
        what: `${n} IPv6 kernel routes`,
        until: (r) =>
          r.some((x) => x.startsWith(`blackhole ${e.own} `)) &&
          r.some((x) => x.startsWith(`${e.pod.ip6} dev ${e.pod.iface} `)) &&
          e.remote.every(([b, via]) => r.some((x) => x.startsWith(`${b} via ${via} dev eth0 `))),
        timeoutMs: 30_000,
      });
      // One route per remote block: no remote pod's /128.
      for (const p of pods.filter((p) => p.node !== n)) assert.ok(!r.some((x) => x.startsWith(`${p.ip6} `)), r.join('\n'));
    }
    // The IPv4 side is untouched: each node still has its own pod's /32 and the others' v4 blocks.
    const v4 = await agents.get('n1')!.ns.ip('-4', 'route', 'show', 'proto', '81');
    assert.match(v4, new RegExp(`^${p1.ip.replace(/\./g, '\\.')} dev ${p1.iface} `, 'm'));
    assert.match(v4, / via 10\.95\.0\.2 dev eth0 /);
  });

  it('pods on different nodes ping each other over IPv6', async () => {
    assert.deepEqual(await pingFailures(pods), []);
  });

  it('a /128 borrowed from another node’s v6 block: announced by the borrower, reached over IPv6 from everywhere', async () => {
    // One block only: the first pod takes it, the second node has to borrow from it.
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'small-v6' },
      spec: { cidr: 'fd00:93::/122', blockSize: 122, ipipMode: 'Never', vxlanMode: 'Never', nodeSelector: 'has(small)' },
    });
    const q1 = await addPod('n1', 'q1', ['small-v6']);
    const q2 = await addPod('n2', 'q2', ['small-v6']);
    assert.ok(q2.ip6.startsWith('fd00:93::'), q2.ip6);
    const expect: Record<string, (r: string[]) => boolean> = {
      n1: (r) =>
        r.some((x) => x.startsWith('blackhole fd00:93::/122 ')) && r.some((x) => x.startsWith(`${q2.ip6} via fd00:95::2 dev eth0 `)),
      n2: (r) =>
        r.some((x) => x.startsWith(`${q2.ip6} dev ${q2.iface} `)) && r.some((x) => x.startsWith('fd00:93::/122 via fd00:95::1 dev eth0 ')),
      n3: (r) =>
        r.some((x) => x.startsWith('fd00:93::/122 via fd00:95::1 dev eth0 ')) &&
        r.some((x) => x.startsWith(`${q2.ip6} via fd00:95::2 dev eth0 `)),
    };
    for (const [n, ok] of Object.entries(expect))
      await waitFor(() => routes6(agents.get(n)!), { what: `${n}: routes for the borrowed ${q2.ip6}`, until: ok, timeoutMs: 30_000 });
    const p3 = pods.find((p) => p.name === 'p3')!;
    for (const [from, to] of [
      [q2, q1],
      [q1, q2],
      [p3, q2],
    ] as const) {
      const r = await from.ns.exec(['ping', '-6', '-c', '1', '-W', '2', to.ip6]);
      assert.equal(r.code, 0, `${from.name} -> ${to.name} ${to.ip6}: ${r.stdout}${r.stderr}`);
    }
  });

  it('podroute node status lists the IPv6 sessions under IPv6 BGP status', async () => {
    const a = agents.get('n1')!;
    const out = await a.ns.run(['node', PODROUTE, 'node', 'status', '--control', a.control]);
    const v6 = out.slice(out.indexOf('IPv6 BGP status'));
    assert.match(v6, /\| fd00:95::2 +\| node-to-node mesh \| up +\| \d\d:\d\d:\d\d \| Established \|/);
    assert.match(v6, /\| fd00:95::3 +\| node-to-node mesh \| up /);
    assert.doesNotMatch(v6, /10\.95\.0\./);
  });

  it('deleting a pod removes its /128; when its block empties, the block goes on every node', async () => {
    const p3 = pods.find((p) => p.node === 'n3')!;
    const [b3] = await v6BlocksOf('n3');
    assert.ok(b3, 'n3 holds a v6 block');
    assert.ok(
      (await routes6(agents.get('n1')!)).some((x) => x.startsWith(`${b3} via fd00:95::3 `)),
      'n1 routes to the block first',
    );
    await ds.delete('WorkloadEndpoint', `default/n3-k8s-${p3.name}-eth0`);
    await new Ipam(ds).releaseByHandle(`h-${p3.name}`);
    for (const n of ['n1', 'n2', 'n3']) {
      await waitFor(() => routes6(agents.get(n)!), {
        what: `${n}: no IPv6 route left for ${b3} or ${p3.ip6}`,
        until: (r) => !r.some((x) => x.startsWith(`${b3} `) || x.startsWith(`blackhole ${b3} `) || x.startsWith(`${p3.ip6} `)),
        timeoutMs: 30_000,
      });
    }
  });
  it('a BGPPeer with an IPv6 peerIP (FRR): its IPv6 RIB holds exactly the v6 blocks and borrowed /128s, each via its node’s IPv6 address', async () => {
    const tor = await lab.namespace('tor');
    await segment.attach(tor, { ifname: 'eth0', v4: '10.95.0.254/24', v6: 'fd00:95::fe/64' });
    const frr = await Frr.start(tor, {
      routerId: '10.95.0.254',
      asn: 65100,
      peers: [...agents.values()].flatMap((a) => [
        { address: a.ip6, remoteAs: 64512, families: ['ipv6' as const] },
        { address: a.ip, remoteAs: 64512, families: ['ipv4' as const] },
      ]),
      networks: [],
    });
    for (const [name, peerIP] of [
      ['tor-v6', 'fd00:95::fe'],
      ['tor-v4', '10.95.0.254'],
    ])
      await ds.create({ apiVersion: API_VERSION, kind: 'BGPPeer', metadata: { name }, spec: { peerIP, asNumber: 65100 } });
    // What the cluster should announce over IPv6, from IPAM: each node's v6 blocks and borrowed /128s.
    const ipam = new Ipam(ds);
    const want: string[] = [];
    for (const a of agents.values()) {
      for (const b of await v6BlocksOf(a.name)) want.push(`${b} ${a.ip6}`);
      for (const x of await ipam.borrowedAddresses(a.name)) if (x.ip.includes(':')) want.push(`${x.ip}/128 ${a.ip6}`);
    }
    assert.ok(
      want.some((w) => w.startsWith('fd00:93::') && w.includes('/128')),
      `a borrowed /128 among ${want}`,
    );
    // Every node announces to FRR what it originates and what it learned from the mesh (next hop
    // self towards an eBGP peer, as Calico's BIRD): each prefix has a path from its own node.
    const wantPrefixes = [...new Set(want.map((w) => w.split(' ')[0]!))].sort();
    const fromOwner = (r: RibRoute[]) =>
      want.every((w) => {
        const [prefix, via] = w.split(' ');
        return r.some((x) => x.prefix === prefix && x.nextHops[0] === via);
      });
    // Every node's session must be up: the first one alone already announces every prefix.
    const paths = await waitFor(() => frr.routes('ipv6'), {
      what: 'FRR’s IPv6 RIB, a path from each prefix’s own node',
      until: (r) => JSON.stringify([...new Set(r.map((x) => x.prefix))].sort()) === JSON.stringify(wantPrefixes) && fromOwner(r),
      timeoutMs: 40_000,
    });
    const v6s = [...agents.values()].map((a) => a.ip6);
    for (const w of want) {
      const [prefix, via] = w.split(' ');
      assert.ok(
        paths.some((r) => r.prefix === prefix && r.nextHops[0] === via),
        `${prefix}: a path via ${via} in ${JSON.stringify(paths)}`,
      );
    }
    assert.ok(
      paths.every((r) => v6s.includes(r.nextHops[0]!)),
      JSON.stringify(paths),
    );
    // No IPv6 route went over the IPv4 sessions, nor IPv4 over IPv6 ones.
    const v4 = await frr.routes('ipv4');
    assert.ok(v4.length > 0 && v4.every((r) => !r.prefix.includes(':') && !r.nextHops[0]!.includes(':')), JSON.stringify(v4));
    const s = await status(agents.get('n1')!);
    assert.equal(s.peers.find((p) => p.address === 'fd00:95::fe')?.state, 'Established');
  });
  it('an IPv6 address set on a running node’s Node (bare, as Calico allows) brings up its IPv6 sessions live', async () => {
    const n4 = await startAgent('n4', 4, false);
    const mesh = async (a: Agent6) => (await status(a)).peers.filter((p) => p.type === 'mesh' && p.state === 'Established');
    const v4only = await waitFor(() => mesh(n4), { what: 'n4 in the IPv4 mesh', until: (p) => p.length === 3, timeoutMs: 30_000 });
    assert.ok(
      v4only.every((p) => !p.address.includes(':')),
      `n4 has an IPv6 mesh session before its Node has an IPv6 address: ${v4only.map((p) => p.address).join(', ')}`,
    );
    assert.equal((await status(n4)).addressV6, undefined);
    const node = (await ds.get('Node', 'n4'))!;
    await ds.apply({
      ...node,
      metadata: { ...node.metadata, resourceVersion: undefined },
      spec: { ...node.spec, bgp: { ...node.spec.bgp, ipv6Address: n4.ip6 } },
    });
    // The length comes from the interface holding the address (fd00:95::4/64 on eth0).
    await waitFor(() => status(n4), { what: 'n4 with its IPv6 address', until: (s) => s.addressV6 === `${n4.ip6}/64`, timeoutMs: 20_000 });
    const both = await waitFor(() => mesh(n4), { what: 'n4 in both meshes', until: (p) => p.length === 6, timeoutMs: 40_000 });
    assert.deepEqual(
      both
        .map((p) => p.address)
        .filter((a) => a.includes(':'))
        .sort(),
      ['fd00:95::1', 'fd00:95::2', 'fd00:95::3'],
    );
    await waitFor(() => mesh(agents.get('n1')!), {
      what: 'n1 with an IPv6 session to n4',
      until: (p) => p.some((x) => x.address === n4.ip6),
      timeoutMs: 30_000,
    });
    // And n4's kernel now holds the others' IPv6 blocks via their IPv6 addresses.
    const [b1] = await v6BlocksOf('n1');
    await waitFor(() => routes6(n4), {
      what: 'n4 routes to n1’s v6 block',
      until: (r) => r.some((x) => x.startsWith(`${b1} via fd00:95::1 dev eth0 `)),
    });
  });
});
