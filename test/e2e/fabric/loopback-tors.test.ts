// Nodes behind two FRR top-of-rack routers peered on the routers' loopbacks, as Calico's L3
// fabric docs draw it: each node reaches each loopback by a link route, the nodes are in two
// racks (two subnets), the node-to-node mesh is off. The routers' next hops (their loopbacks) are
// off every node's subnet: the agents resolve them through the link routes and install the other
// rack's block as one route over both routers (ECMP); pods ping across. A route under a next hop
// changes: re-resolved. A next hop nothing reaches: a failure with its reason in /status. One
// router's path goes: the route is replaced by its other path, never deleted in between, and a
// ping flood across loses nothing. The same over IPv6: the routers' IPv6 loopbacks reached by
// link routes (the routers answer neighbour solicitations for them), a prefix both originate
// installed over both resolved loopbacks and pinged, and an IPv6 next hop nothing reaches
// reported as a failure.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { API_VERSION } from '../../../lib/resources/index.js';
import { callCni } from '../../support/cni-call.js';
import { Frr } from '../../support/frr.js';
import type { Netns } from '../../support/netns.js';
import { AgentCluster, type AgentProcess, agentStatus, ipPool } from '../../support/node-agents.js';
import { waitFor } from '../../support/wait.js';

const TORS = [
  { name: 'tor1', asn: 65001, loopback: '10.98.255.1', rackA: '10.98.0.1', rackB: '10.98.2.1', loopback6: 'fd98:ff::1' },
  { name: 'tor2', asn: 65002, loopback: '10.98.255.2', rackA: '10.98.0.2', rackB: '10.98.2.2', loopback6: 'fd98:ff::2' },
] as const;
const NODES = [
  { name: 'n1', ip: '10.98.0.11', len: 24, gateway: '10.98.0.1', ip6: 'fd98::11' },
  { name: 'n2', ip: '10.98.2.12', len: 24, gateway: '10.98.2.1', ip6: 'fd98:2::12' },
] as const;
/** Originated by both routers over IPv6 (next hop: each one's IPv6 loopback); `anycast` is on both routers' lo. */
const V6 = { prefix: 'fd25:1::/64', anycast: 'fd25:1::1' };
/** An IPv6 next hop in a range the operator blackholed on n1. */
const UNREACHABLE6 = { prefix: 'fd25:77::/64', nextHop: 'fd77::1', blackhole: 'fd77::/32' };
/** A second link from n1 to tor1, for a route under the next hop to move to. */
const ALT = { n1: '10.98.1.11', tor1: '10.98.1.1' };
/** A next hop in a range the operator blackholed on n1: nothing may be sent through it. */
const UNREACHABLE = { prefix: '10.250.0.0/24', nextHop: '10.77.0.1', blackhole: '10.77.0.0/16' };

interface KernelRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  nexthops?: { gateway?: string; dev: string }[];
}

describe('nodes behind FRR ToRs peered on loopbacks: next hops resolved, ECMP over both ToRs', function () {
  this.timeout(240_000);
  const cluster = new AgentCluster('lbt');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  const ns: Record<string, Netns> = {};
  const frr: Record<string, Frr> = {};
  const agents: Record<string, AgentProcess> = {};
  const pods: Record<string, { ns: Netns; ip: string }> = {};
  let blocks: Record<string, string>;

  async function routeOf(node: string, dst: string): Promise<KernelRoute | undefined> {
    const family = dst.includes(':') ? '-6' : '-4';
    const all = JSON.parse(await ns[node]!.ip('-j', family, 'route', 'show', 'proto', '81')) as KernelRoute[];
    return all.find((r) => r.dst === dst);
  }

  /** `via gw dev d` of a route, one per path, sorted. */
  function paths(r: KernelRoute | undefined): string[] {
    if (!r) return [];
    const hops = r.nexthops ?? [{ gateway: r.gateway, dev: r.dev! }];
    return hops.map((h) => `via ${h.gateway} dev ${h.dev}`).sort();
  }

  async function ping(from: string, to: string): Promise<boolean> {
    try {
      await pods[from]!.ns.run(['ping', '-c', '1', '-W', '1', pods[to]!.ip]);
      return true;
    } catch {
      return false;
    }
  }

  before(async () => {
    await cluster.open();
    ds = cluster.ds;
    await ds.create(ipPool('pods', '10.99.0.0/16'));
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'BGPConfiguration',
      metadata: { name: 'default' },
      spec: { nodeToNodeMeshEnabled: false },
    });
    for (const t of TORS)
      for (const [name, peerIP] of [
        [t.name, t.loopback],
        [`${t.name}-v6`, t.loopback6],
      ])
        await ds.create({
          apiVersion: API_VERSION,
          kind: 'BGPPeer',
          metadata: { name },
          spec: { peerIP, asNumber: t.asn },
        });

    const [rackA, rackB, alt] = [await lab.segment(), await lab.segment(), await lab.segment()];
    for (const t of TORS) {
      const tns = (ns[t.name] = await lab.namespace(t.name));
      const ifA = await rackA.attach(tns, { v4: `${t.rackA}/24`, v6: `fd98::${t.name.slice(-1)}/64` });
      const ifB = await rackB.attach(tns, { v4: `${t.rackB}/24`, v6: `fd98:2::${t.name.slice(-1)}/64` });
      await tns.ip('addr', 'add', `${t.loopback}/32`, 'dev', 'lo');
      await tns.ip('-6', 'addr', 'add', `${t.loopback6}/128`, 'dev', 'lo');
      await tns.ip('-6', 'addr', 'add', `${V6.anycast}/128`, 'dev', 'lo');
      await tns.run(['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
      // IPv4 answers ARP for a loopback address on any interface; IPv6 answers a solicitation
      // only for an address of the interface it came in on, unless a router told to proxy it.
      await tns.run(['sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1', 'net.ipv6.conf.all.proxy_ndp=1']);
      for (const dev of [ifA, ifB]) await tns.ip('-6', 'neigh', 'add', 'proxy', t.loopback6, 'dev', dev);
    }
    await alt.attach(ns.tor1!, { v4: `${ALT.tor1}/24` });
    for (const [n, seg] of [
      [NODES[0], rackA],
      [NODES[1], rackB],
    ] as const) {
      const nns = (ns[n.name] = await lab.namespace(n.name));
      await seg.attach(nns, { ifname: 'eth0', v4: `${n.ip}/${n.len}`, v6: `${n.ip6}/64` });
      // The routers' loopbacks by link routes: each answers ARP (and, proxied, NDP) for its loopback on the rack's segment.
      for (const t of TORS) {
        await nns.ip('route', 'add', `${t.loopback}/32`, 'dev', 'eth0', 'scope', 'link');
        await nns.ip('-6', 'route', 'add', `${t.loopback6}/128`, 'dev', 'eth0');
      }
      // A default route, as every node has (the pods' gateway 169.254.1.1 is answered by proxy ARP only through one).
      await nns.ip('route', 'add', 'default', 'via', n.gateway, 'dev', 'eth0');
    }
    await alt.attach(ns.n1!, { ifname: 'eth1', v4: `${ALT.n1}/24` });

    for (const t of TORS) {
      frr[t.name] = await Frr.start(ns[t.name]!, {
        routerId: t.loopback,
        asn: t.asn,
        peers: [
          ...NODES.map((n) => ({ address: n.ip, remoteAs: 64512, localAddress: t.loopback, multihop: true })),
          ...NODES.map((n) => ({
            address: n.ip6,
            remoteAs: 64512,
            localAddress: t.loopback6,
            multihop: true,
            families: ['ipv6' as const],
          })),
        ],
        networks: [V6.prefix],
      });
      // Every node is AS 64512: without as-override a node drops the other nodes' blocks as a loop.
      await frr[t.name]!.configureBgp('address-family ipv4 unicast', ...NODES.map((n) => `neighbor ${n.ip} as-override`));
    }
    for (const n of NODES)
      agents[n.name] = cluster.spawnAgent(ns[n.name]!, {
        name: n.name,
        ip: `${n.ip}/${n.len}`,
        ip6: `${n.ip6}/64`,
        flags: ['--policy', 'off'],
      });
    for (const n of NODES) {
      await waitFor(() => agentStatus(agents[n.name]!).catch(() => undefined), {
        what: `${n.name} ready with both ToR sessions of each family Established`,
        until: (s) => s?.ready === true && s.peers.filter((p) => p.state === 'Established').length === 4,
        timeoutMs: 90_000,
        intervalMs: 250,
      });
    }
    for (const n of NODES) {
      const pod = await lab.namespace(`${n.name}-pod`);
      const r = await callCni(
        ns[n.name]!,
        'ADD',
        {
          CNI_CONTAINERID: `ctr-${n.name}-${process.pid}`,
          CNI_NETNS: `/var/run/netns/${pod.name}`,
          CNI_IFNAME: 'eth0',
          CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${n.name}-pod`,
          CNI_PATH: '/opt/cni/bin',
        },
        JSON.stringify({
          cniVersion: '1.0.0',
          name: 'k8s-pod-network',
          type: 'podroute-cni',
          nodename: n.name,
          datastore: { type: 'redis', url: cluster.sock },
        }),
      );
      assert.equal(r.code, 0, `CNI ADD on ${n.name}: ${r.stdout}`);
      const ip = (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
      pods[n.name] = { ns: pod, ip };
    }
    const ipam = new Ipam(ds);
    blocks = Object.fromEntries(await Promise.all(NODES.map(async (n) => [n.name, (await ipam.blocksForNode(n.name))[0]!.cidr])));
  });

  after(() => cluster.close());

  it("each node installs the other rack's block over both ToRs' loopbacks (resolved, ECMP), and pods ping across", async () => {
    for (const [node, other] of [
      ['n1', 'n2'],
      ['n2', 'n1'],
    ] as const) {
      await waitFor(() => routeOf(node, blocks[other]!), {
        what: `${node}: ${blocks[other]} over both ToRs`,
        until: (r) => JSON.stringify(paths(r)) === JSON.stringify(['via 10.98.255.1 dev eth0', 'via 10.98.255.2 dev eth0']),
        timeoutMs: 30_000,
      });
      const s = await agentStatus(agents[node]!);
      assert.equal(s.routes.failures, 0, `${node}: ${JSON.stringify(s.routes)}`);
    }
    await waitFor(() => ping('n1', 'n2'), { what: 'n1 pod -> n2 pod', until: (ok) => ok, timeoutMs: 20_000 });
    assert.ok(await ping('n2', 'n1'), 'n2 pod -> n1 pod');
  });

  it('the route under a next hop moves (tor1 by the second link): re-resolved, and pods still ping', async () => {
    await ns.n1!.ip('route', 'replace', '10.98.255.1/32', 'via', ALT.tor1, 'dev', 'eth1');
    await waitFor(() => routeOf('n1', blocks.n2!), {
      what: `n1: ${blocks.n2} via tor1 over eth1`,
      until: (r) => JSON.stringify(paths(r)) === JSON.stringify([`via ${ALT.tor1} dev eth1`, 'via 10.98.255.2 dev eth0']),
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    await waitFor(() => ping('n1', 'n2'), { what: 'n1 pod -> n2 pod after the move', until: (ok) => ok, timeoutMs: 10_000 });
    await ns.n1!.ip('route', 'replace', '10.98.255.1/32', 'dev', 'eth0', 'scope', 'link');
    await waitFor(() => routeOf('n1', blocks.n2!), {
      what: `n1: ${blocks.n2} back over eth0`,
      until: (r) => JSON.stringify(paths(r)) === JSON.stringify(['via 10.98.255.1 dev eth0', 'via 10.98.255.2 dev eth0']),
      timeoutMs: 10_000,
      intervalMs: 100,
    });
  });

  it('a learned next hop nothing reaches: not programmed, and a failure with its reason in /status', async () => {
    await ns.n1!.ip('route', 'add', 'blackhole', UNREACHABLE.blackhole);
    await frr.tor1!.vtysh(
      'configure terminal',
      `ip prefix-list UNREACHABLE seq 5 permit ${UNREACHABLE.prefix}`,
      'route-map TO-NODES permit 10',
      'match ip address prefix-list UNREACHABLE',
      `set ip next-hop ${UNREACHABLE.nextHop}`,
      'route-map TO-NODES permit 20',
    );
    await frr.tor1!.configureBgp(
      'address-family ipv4 unicast',
      `network ${UNREACHABLE.prefix}`,
      `neighbor ${NODES[0].ip} route-map TO-NODES out`,
    );
    const s = await waitFor(() => agentStatus(agents.n1!), {
      what: `n1: ${UNREACHABLE.prefix} reported as not programmed`,
      until: (x) => (x.routes.notProgrammed ?? []).some((r) => r.dst === UNREACHABLE.prefix),
      timeoutMs: 20_000,
    });
    const why = s.routes.notProgrammed!.find((r) => r.dst === UNREACHABLE.prefix)!.reason;
    assert.match(why, /next hop 10\.77\.0\.1 resolves to blackhole 10\.77\.0\.0\/16/);
    assert.equal(s.routes.failures, 1, JSON.stringify(s.routes));
    assert.equal(await routeOf('n1', UNREACHABLE.prefix), undefined, 'nothing programmed for it');
  });

  it("one ToR's path goes: the route is replaced by its other path, never deleted, and pings go on", async () => {
    const prefix = blocks.n2!;
    // The kernel's own account of every change to the route while it happens.
    const monitor = spawn('ip', ['-n', ns.n1!.name, 'monitor', 'route'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let events = '';
    monitor.stdout.on('data', (b: Buffer) => (events += b.toString()));
    const flood = spawn('ip', ['netns', 'exec', pods.n1!.ns.name, 'ping', '-i', '0.01', '-c', '600', '-W', '1', pods.n2!.ip], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let pingOut = '';
    flood.stdout.on('data', (b: Buffer) => (pingOut += b.toString()));
    try {
      await new Promise((r) => setTimeout(r, 1_000));
      // tor2 stops sending n1 the path (it still forwards: the way back through it stays up).
      await frr.tor2!.vtysh(
        'configure terminal',
        `ip prefix-list N2-BLOCK seq 5 permit ${prefix}`,
        'route-map NOT-N2-BLOCK deny 10',
        'match ip address prefix-list N2-BLOCK',
        'route-map NOT-N2-BLOCK permit 20',
      );
      await frr.tor2!.configureBgp('address-family ipv4 unicast', `neighbor ${NODES[0].ip} route-map NOT-N2-BLOCK out`);
      await frr.tor2!.vtysh(`clear bgp ipv4 unicast ${NODES[0].ip} soft out`);
      await waitFor(() => routeOf('n1', prefix), {
        what: `n1: ${prefix} over tor1 alone`,
        until: (r) => JSON.stringify(paths(r)) === JSON.stringify(['via 10.98.255.1 dev eth0']),
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      await new Promise<void>((resolve) => flood.once('exit', () => resolve()));
    } finally {
      monitor.kill();
      flood.kill();
    }
    const lines = events.split('\n').filter((l) => l.includes(prefix));
    assert.ok(lines.length > 0, `ip monitor saw no change to ${prefix}`);
    assert.ok(!lines.some((l) => l.startsWith('Deleted')), `${prefix} was deleted on the way:\n${lines.join('\n')}`);
    const m = /(\d+) packets transmitted, (\d+) received/.exec(pingOut);
    assert.ok(m, `ping summary: ${pingOut.slice(-300)}`);
    assert.equal(m[2], m[1], `packets lost while tor2's path went: ${m[0]}`);

    await frr.tor2!.configureBgp('address-family ipv4 unicast', `no neighbor ${NODES[0].ip} route-map NOT-N2-BLOCK out`);
    await frr.tor2!.vtysh(`clear bgp ipv4 unicast ${NODES[0].ip} soft out`);
    await waitFor(() => routeOf('n1', prefix), {
      what: `n1: ${prefix} over both ToRs again`,
      until: (r) => paths(r).length === 2,
      timeoutMs: 30_000,
    });
  });

  it('IPv6: a prefix both ToRs originate is installed over both IPv6 loopbacks (resolved through link routes) and answers', async () => {
    await waitFor(() => routeOf('n1', V6.prefix), {
      what: `n1: ${V6.prefix} over both ToRs' IPv6 loopbacks`,
      until: (r) => JSON.stringify(paths(r)) === JSON.stringify(TORS.map((t) => `via ${t.loopback6} dev eth0`)),
      timeoutMs: 30_000,
    });
    const s = await agentStatus(agents.n1!);
    assert.ok(!(s.routes.notProgrammed ?? []).some((r) => r.dst === V6.prefix), `${V6.prefix} programmed: ${JSON.stringify(s.routes)}`);
    // Real packets through the resolved gateways: the ToRs answer for their loopbacks by proxy NDP.
    await waitFor(
      () =>
        ns
          .n1!.run(['ping', '-6', '-c', '1', '-W', '1', '-I', NODES[0].ip6, V6.anycast])
          .then(() => true)
          .catch(() => false),
      { what: `n1 -> ${V6.anycast}`, until: (ok) => ok, timeoutMs: 10_000 },
    );
  });

  it('IPv6: a learned next hop nothing reaches is not programmed, and counts as a failure with its reason', async () => {
    const before = (await agentStatus(agents.n1!)).routes.failures;
    await ns.n1!.ip('-6', 'route', 'add', 'blackhole', UNREACHABLE6.blackhole);
    await frr.tor1!.vtysh(
      'configure terminal',
      `ipv6 prefix-list UNREACHABLE6 seq 5 permit ${UNREACHABLE6.prefix}`,
      'route-map TO-NODES6 permit 10',
      'match ipv6 address prefix-list UNREACHABLE6',
      `set ipv6 next-hop global ${UNREACHABLE6.nextHop}`,
      'route-map TO-NODES6 permit 20',
    );
    await frr.tor1!.configureBgp(
      'address-family ipv6 unicast',
      `network ${UNREACHABLE6.prefix}`,
      `neighbor ${NODES[0].ip6} route-map TO-NODES6 out`,
    );
    const s = await waitFor(() => agentStatus(agents.n1!), {
      what: `n1: ${UNREACHABLE6.prefix} reported as not programmed`,
      until: (x) => (x.routes.notProgrammed ?? []).some((r) => r.dst === UNREACHABLE6.prefix),
      timeoutMs: 20_000,
    });
    const why = s.routes.notProgrammed!.find((r) => r.dst === UNREACHABLE6.prefix)!.reason;
    assert.match(why, /next hop fd77::1 resolves to blackhole fd77::\/32/);
    assert.equal(s.routes.failures, before + 1, JSON.stringify(s.routes));
    assert.equal(await routeOf('n1', UNREACHABLE6.prefix), undefined, 'nothing programmed for it');
  });
});
