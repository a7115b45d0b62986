// Faults in one run, on a real cluster: three `podroute node run` agents in network namespaces
// on one L2 segment, CNI pods, a Redis with an append-only file as the datastore, and an FRR
// top-of-rack peering with every node. During its life the top-of-rack is SIGKILLed and comes
// back, an agent is SIGKILLed and restarted while a quarter of the packets on its link are
// dropped (nftables `numgen random`: this kernel has no netem), and Redis is SIGKILLed and
// restarted; the cluster changes between the faults. After each, every node's kernel must hold
// exactly the routes the datastore implies, computed here from the IPAM blocks, the nodes'
// addresses and the workload endpoints, without the agent's code.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { callControl } from '../../../lib/bgpd/control.js';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { callCni, podEnv } from '../../support/cni-call.js';
import type { RouterConfig } from '../../support/bgp-config.js';
import { Frr } from '../../support/frr.js';
import type { Netns, Segment } from '../../support/netns.js';
import { AgentCluster, agentStatus, podNetconf, type AgentProcess } from '../../support/node-agents.js';
import type { RedisServer } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { API_VERSION } from '../../../lib/resources/index.js';
import { cidrAddress } from '../../../ip/index.js';

const SUBNET = '10.94.0';
const TOR_IP = `${SUBNET}.254`;
const POOL = '10.91.0.0/16';
const NODES = ['n1', 'n2', 'n3'];
/** Percent of the packets dropped, each way, on the restarted agent's link. */
const LOSS = 25;

type Agent = AgentProcess;
interface Pod {
  name: string;
  node: string;
  ns: Netns;
  containerId: string;
}

describe('faults: a peer, an agent and the datastore killed, packets dropped; every kernel ends as the datastore says', function () {
  this.timeout(240_000);
  const cluster = new AgentCluster('ft');
  const lab = cluster.lab;
  let redis: RedisServer;
  let ds: BackendDatastore;
  let sock: string;
  let segment: Segment;
  let torNs: Netns;
  let tor: Frr;
  const agents = cluster.agents;
  const pods: Pod[] = [];
  const torConfig: RouterConfig = {
    routerId: TOR_IP,
    asn: 65001,
    peers: NODES.map((_, i) => ({ address: `${SUBNET}.${i + 1}`, remoteAs: 64512 })),
  };

  const netconf = (node: string) => podNetconf(node, sock);
  const status = agentStatus;

  async function startAgent(name: string, ns?: Netns): Promise<Agent> {
    const index = NODES.indexOf(name) + 1;
    const ip = `${SUBNET}.${index}`;
    if (!ns) {
      ns = await lab.namespace(name);
      await segment.attach(ns, { ifname: 'eth0', v4: `${ip}/24` });
      await ns.ip('route', 'add', 'default', 'via', TOR_IP, 'dev', 'eth0');
    }
    return cluster.startAgent(ns, { name, ip: `${ip}/24`, flags: ['--policy', 'off'] });
  }

  async function addPod(node: string, name: string): Promise<Pod> {
    const ns = await lab.namespace(name);
    const containerId = `ctr-${name}-${process.pid}`;
    const r = await callCni(agents.get(node)!.ns, 'ADD', { ...podEnv({ containerId, ns, name }), CNI_PATH: '/opt/cni/bin' }, netconf(node));
    assert.equal(r.code, 0, `CNI ADD ${name}: ${r.stdout}`);
    const pod = { name, node, ns, containerId };
    pods.push(pod);
    return pod;
  }

  async function delPod(pod: Pod): Promise<void> {
    const r = await callCni(agents.get(pod.node)!.ns, 'DEL', podEnv(pod), netconf(pod.node));
    assert.equal(r.code, 0, `CNI DEL ${pod.name}: ${r.stdout}`);
    pods.splice(pods.indexOf(pod), 1);
  }

  /** Addresses held without a pod: `n` of them on `node`, so that it owns many blocks (a table worth transferring). */
  async function holdAddresses(node: string, n: number, tag: string): Promise<void> {
    const ipam = new Ipam(ds);
    for (let i = 0; i < n; i++) await ipam.autoAssign({ handle: `fault-${tag}-${i}`, node });
  }

  /**
   * What each node's kernel must hold, from the datastore alone: a blackhole for each block the
   * node has the affinity of, each other node's blocks via that node's address on the shared
   * segment, and a /32 to each local workload's interface (ip route prints a /32 bare).
   */
  async function expectedRoutes(): Promise<Map<string, string[]>> {
    const [blocks, weps, nodes] = await Promise.all([ds.list('IPAMBlock'), ds.list('WorkloadEndpoint'), ds.list('Node')]);
    const address = new Map(nodes.items.map((n) => [n.metadata.name, n.spec.bgp?.ipv4Address && cidrAddress(n.spec.bgp.ipv4Address)]));
    const owner = new Map<string, string>();
    for (const b of blocks.items) {
      const node = b.spec.affinity?.startsWith('host:') ? b.spec.affinity.slice(5) : undefined;
      // Borrowed addresses and orphaned blocks would need /32s elsewhere; this cluster makes none.
      assert.ok(node, `block ${b.spec.cidr} holds addresses but no node has its affinity`);
      owner.set(b.spec.cidr, node);
    }
    const out = new Map<string, string[]>();
    for (const self of NODES) {
      const lines: string[] = [];
      for (const [cidr, node] of owner) {
        if (node === self) lines.push(`blackhole ${cidr}`);
        else lines.push(`${cidr} via ${address.get(node)} dev eth0`);
      }
      for (const w of weps.items.filter((x) => x.spec.node === self))
        for (const net of w.spec.ipNetworks) lines.push(`${net.replace(/\/32$/, '')} dev ${w.spec.interfaceName} scope link`);
      out.set(self, lines.sort());
    }
    return out;
  }

  /** For a failure's message: each agent's sessions and the last events of its log. */
  async function diagnose(): Promise<string> {
    const out: string[] = [];
    for (const a of agents.values()) {
      const peers = await sessions(a.name).catch((e: Error) => [e.message]);
      const events = readFileSync(a.proc.logFile, 'utf8')
        .split('\n')
        .filter((l) => l && !l.includes('"event":"programmed"'))
        .slice(-8);
      out.push(`${a.name}: ${peers.join(', ')}\n  ${events.join('\n  ')}`);
    }
    return out.join('\n');
  }

  /** podroute's routes (protocol 81) in a node's kernel, one `ip route` line each. */
  async function kernelRoutes(a: Agent): Promise<string[]> {
    return (await a.ns.ip('-4', 'route', 'show', 'proto', '81'))
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .sort();
  }

  /** Every node's kernel equals the datastore's implication (within a bound), checked together. */
  async function converged(what: string, timeoutMs = 30_000): Promise<void> {
    const expected = await expectedRoutes();
    await waitFor(async () => Promise.all(NODES.map(async (n) => ({ n, got: await kernelRoutes(agents.get(n)!) }))), {
      what: `${what}: every kernel as the datastore says`,
      until: (all) => all.every(({ n, got }) => JSON.stringify(got) === JSON.stringify(expected.get(n))),
      timeoutMs,
      intervalMs: 300,
    }).catch(async (e: Error) => {
      throw new Error(`${e.message.slice(0, 2000)}\nexpected: ${JSON.stringify(Object.fromEntries(expected))}\n${await diagnose()}`);
    });
  }

  async function sessions(name: string): Promise<string[]> {
    return (await status(agents.get(name)!)).peers.map((p) => `${p.address} ${p.state}`).sort();
  }

  async function waitSessions(): Promise<void> {
    for (const n of NODES) {
      const want = [...NODES.filter((m) => m !== n).map((m) => `${agents.get(m)!.ip} Established`), `${TOR_IP} Established`].sort();
      await waitFor(() => sessions(n), {
        what: `${n}: sessions up`,
        until: (s) => s.join() === want.join(),
        timeoutMs: 40_000,
        intervalMs: 250,
      }).catch(async (e: Error) => {
        throw new Error(`${e.message}\n${await diagnose()}`);
      });
    }
  }

  /** The top-of-rack holds a route to every block of the cluster, and nothing else. */
  async function torHasEveryBlock(): Promise<void> {
    const blocks = (await ds.list('IPAMBlock')).items.map((b) => b.spec.cidr).sort();
    await waitFor(async () => [...new Set((await tor.routes('ipv4')).map((r) => r.prefix))].sort(), {
      what: 'the top-of-rack has every block',
      until: (p) => p.join() === blocks.join(),
      timeoutMs: 30_000,
      intervalMs: 300,
    });
  }

  before(async function () {
    if (process.getuid?.() !== 0) this.skip(); // namespaces, kernel routes
    // fsync on every write (persist): a SIGKILL loses nothing acknowledged.
    await cluster.open({ persist: true });
    ({ redis, sock, ds } = cluster);
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'faults' },
      // Blocks of 8 addresses: a node holding a few hundred owns dozens of blocks.
      spec: { cidr: POOL, blockSize: 29, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    await ds.create({ apiVersion: API_VERSION, kind: 'BGPPeer', metadata: { name: 'tor' }, spec: { peerIP: TOR_IP, asNumber: 65001 } });
    segment = await lab.segment();
    torNs = await lab.namespace('tor');
    await segment.attach(torNs, { ifname: 'eth0', v4: `${TOR_IP}/24` });
    tor = await Frr.start(torNs, torConfig, { zebra: false });
  });
  after(() => cluster.close());

  it('a cluster with a table worth transferring converges', async () => {
    await Promise.all(NODES.map((n) => startAgent(n)));
    await waitSessions();
    for (const n of NODES) await addPod(n, `${n}-a`);
    await addPod('n1', 'n1-b');
    await holdAddresses('n3', 240, 'start');
    assert.ok((await new Ipam(ds).blocksForNode('n3')).length >= 30, 'n3 holds fewer than 30 blocks after taking 240 addresses');
    await converged('at start');
    await torHasEveryBlock();
  });

  it('the top-of-rack SIGKILLed and restarted: the kernels never move, and it relearns every block', async () => {
    const before = await expectedRoutes();
    tor.bgpd.signal('SIGKILL');
    await tor.bgpd.exited;
    for (const n of NODES)
      await waitFor(() => sessions(n), {
        what: `${n} sees the top-of-rack down`,
        until: (s) => !s.includes(`${TOR_IP} Established`),
        timeoutMs: 15_000,
      });
    for (const n of NODES) {
      const got = await kernelRoutes(agents.get(n)!);
      if (JSON.stringify(got) !== JSON.stringify(before.get(n)))
        assert.fail(`${n} while the top-of-rack is down: ${got.length} routes, not ${before.get(n)?.length}\n${await diagnose()}`);
    }
    tor = await Frr.start(torNs, torConfig, { zebra: false });
    await waitSessions();
    await torHasEveryBlock();
    await converged('after the top-of-rack came back', 5_000);
  });

  it("one agent's session cut under it (ss -K on its TCP socket): it comes back, and the kernels end as before", async () => {
    const [n1, n3] = [agents.get('n1')!, agents.get('n3')!];
    const downs = () =>
      readFileSync(n1.proc.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"peer-down"') && l.includes(`"${n3.ip}"`)).length;
    const before = downs();
    await n1.ns.run(['ss', '-K', '-tn', 'dst', n3.ip]);
    await waitFor(downs, { what: `n1 saw its session with n3 cut`, until: (d) => d > before, timeoutMs: 15_000 });
    await waitSessions();
    await converged('after the session was cut');
  });

  it(`an agent SIGKILLed, the cluster changed, and restarted with ${LOSS}% of its link's packets dropped`, async () => {
    const n2 = agents.get('n2')!;
    n2.proc.signal('SIGKILL');
    await n2.proc.exited;
    // While it is away: a new pod on n1, and n3 claims more blocks; n2 must learn both.
    await addPod('n1', 'n1-c');
    await holdAddresses('n3', 80, 'while-n2-down');
    const drop = `${LOSS}`;
    await n2.ns.run(['nft', '-f', '-'], {
      input: `table inet fault_drop {
  counter dropped { }
  chain in { type filter hook input priority -300; iifname "eth0" numgen random mod 100 < ${drop} counter name dropped drop; }
  chain out { type filter hook output priority -300; oifname "eth0" numgen random mod 100 < ${drop} counter name dropped drop; }
}
`,
    });
    try {
      await startAgent('n2', n2.ns);
      await waitSessions();
      await converged('n2 restarted over a lossy link', 60_000);
      const counter = await n2.ns.run(['nft', '-j', 'list', 'counter', 'inet', 'fault_drop', 'dropped']);
      const packets = (JSON.parse(counter) as { nftables: { counter?: { packets: number } }[] }).nftables.find((x) => x.counter)?.counter
        ?.packets;
      assert.ok(packets !== undefined && packets > 0, `no packet was dropped: ${counter}`);
      console.log(`      ${packets} packets dropped on n2's link while it restarted and took the table`);
    } finally {
      await n2.ns.run(['nft', 'delete', 'table', 'inet', 'fault_drop']);
    }
    assert.equal((await status(agents.get('n2')!)).restarting, true, 'the restart was not a graceful one');
  });

  it('the datastore SIGKILLed and restarted from its append-only file: the kernels hold, and changes after it arrive', async () => {
    const before = await expectedRoutes();
    await redis.kill();
    // Agents keep forwarding on what they have while the store is gone.
    await new Promise((r) => setTimeout(r, 3000));
    for (const n of NODES) {
      assert.ok(agents.get(n)!.proc.running, `${n} exited without its datastore: ${agents.get(n)!.proc.tail()}`);
      const got = await kernelRoutes(agents.get(n)!);
      if (JSON.stringify(got) !== JSON.stringify(before.get(n)))
        assert.fail(`${n} while the datastore is down: ${got.length} routes, not ${before.get(n)?.length}\n${await diagnose()}`);
    }
    await redis.restart();
    // Nothing acknowledged was lost: the expectation read back is the one from before the kill.
    assert.deepEqual(await waitFor(() => expectedRoutes(), { what: 'the datastore answering', timeoutMs: 15_000 }), before);
    // The watches came back: a pod goes from n1 and one arrives on n3.
    await delPod(pods.find((p) => p.name === 'n1-b')!);
    await addPod('n3', 'n3-b');
    await converged('after the datastore came back');
    await torHasEveryBlock();
  });

  it('at the end: every session up, no stale path, every kernel exactly as the datastore says', async () => {
    await waitSessions();
    for (const n of NODES) {
      const routes = await callControl<{ prefix: string; stale: boolean }[]>(agents.get(n)!.control, 'GET', '/bgp/routes');
      assert.deepEqual(
        routes.filter((r) => r.stale).map((r) => r.prefix),
        [],
        `${n}: stale paths`,
      );
    }
    await converged('at the end', 5_000);
  });
});
