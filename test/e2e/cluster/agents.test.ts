// The cluster for real: `podroute node run` agents in network namespaces on one L2 segment
// (no encapsulation), a real Redis (over a Unix socket, reachable from every namespace), pods
// made by running the podroute-cni binary as a container runtime would, routes in the kernel.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { callControl } from '../../../lib/bgpd/control.js';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { pidAlive, type Netns, type Segment } from '../../support/netns.js';
import { AgentCluster, agentStatus, PODROUTE, podNetconf, type AgentProcess, ipPool } from '../../support/node-agents.js';
import { waitFor } from '../../support/wait.js';
import { callCni, podEnv } from '../../support/cni-call.js';
import { API_VERSION } from '../../../lib/resources/index.js';
import { cidrAddress } from '../../../ip/index.js';

type Agent = AgentProcess;
interface Pod {
  name: string;
  node: string;
  ns: Netns;
  ip: string;
  containerId: string;
}

describe('node agents in namespaces: mesh, CNI pods, live joins, graceful restart', function () {
  this.timeout(240_000);
  const cluster = new AgentCluster('ag');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let sock: string;
  let segment: Segment;
  const agents = cluster.agents;
  const pods: Pod[] = [];

  const netconf = (node: string) => podNetconf(node, sock);

  async function startAgent(name: string, index: number, ns?: Netns): Promise<Agent> {
    const ip = `10.97.0.${index}`;
    if (!ns) {
      ns = await lab.namespace(name);
      await segment.attach(ns, { ifname: 'eth0', v4: `${ip}/24` });
      // Hosts have a default route; proxy-ARP answers for 169.254.1.1 only when the host can
      // route to it through another interface (the same holds for Calico).
      await ns.ip('route', 'add', 'default', 'via', '10.97.0.254', 'dev', 'eth0');
    }
    return cluster.startAgent(ns, { name, ip: `${ip}/24`, flags: ['--health-port', '9099'] });
  }

  const status = agentStatus;

  async function waitMesh(names: string[]): Promise<void> {
    await waitFor(
      async () => Promise.all(names.map(async (n) => (await status(agents.get(n)!)).peers.filter((p) => p.state === 'Established').length)),
      {
        what: `mesh of ${names.join(',')}`,
        until: (counts) => counts.every((c) => c === names.length - 1),
        timeoutMs: 30_000,
        intervalMs: 200,
      },
    );
  }

  async function addPod(node: string, name: string): Promise<Pod> {
    const ns = await lab.namespace(name);
    const containerId = `ctr-${name}-${process.pid}`;
    const r = await callCni(agents.get(node)!.ns, 'ADD', { ...podEnv({ containerId, ns, name }), CNI_PATH: '/opt/cni/bin' }, netconf(node));
    assert.equal(r.code, 0, `CNI ADD ${name}: ${r.stdout}`);
    const ip = cidrAddress((r.json as { ips: { address: string }[] }).ips[0]!.address);
    const pod = { name, node, ns, ip, containerId };
    pods.push(pod);
    return pod;
  }

  async function delPod(pod: Pod): Promise<void> {
    const r = await callCni(agents.get(pod.node)!.ns, 'DEL', podEnv(pod), netconf(pod.node));
    assert.equal(r.code, 0, `CNI DEL ${pod.name}: ${r.stdout}`);
    pods.splice(pods.indexOf(pod), 1);
  }

  /** `ip route` lines of podroute's protocol (81) in a node's kernel. */
  async function kernelRoutes(a: Agent): Promise<string[]> {
    return (await a.ns.ip('-4', 'route', 'show', 'proto', '81'))
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
  }

  async function blockOf(node: string): Promise<string[]> {
    return (await new Ipam(ds).blocksForNode(node)).map((b) => b.cidr);
  }

  async function pingAll(): Promise<string[]> {
    const failures: string[] = [];
    await Promise.all(
      pods.map(async (from) => {
        for (const to of pods) {
          if (to === from) continue;
          // Up to three echoes, the first answer ends it: one echo lost on a loaded machine is
          // not a missing route or rule, three in a row are.
          let answered = false;
          for (let i = 0; i < 3 && !answered; i++) answered = (await from.ns.exec(['ping', '-c', '1', '-W', '2', to.ip])).code === 0;
          if (!answered) failures.push(`${from.name}(${from.node}) -> ${to.name}(${to.node}) ${to.ip}`);
        }
      }),
    );
    return failures;
  }

  before(async () => {
    await cluster.open();
    ({ sock, ds } = cluster);
    await ds.create(ipPool('pods', '10.98.0.0/16'));
    segment = await lab.segment();
  });
  after(() => cluster.close());

  it('three agents mesh; CNI pods on each reach every other pod', async () => {
    await Promise.all([startAgent('n1', 1), startAgent('n2', 2), startAgent('n3', 3)]);
    await waitMesh(['n1', 'n2', 'n3']);
    for (const n of ['n1', 'n2']) {
      await addPod(n, `${n}-a`);
      await addPod(n, `${n}-b`);
    }
    await addPod('n3', 'n3-a');
    const [b1, b2, b3] = [(await blockOf('n1'))[0]!, (await blockOf('n2'))[0]!, (await blockOf('n3'))[0]!];
    // Every node: a blackhole for its block, one route per remote block via its node, its pods' /32s.
    await waitFor(() => kernelRoutes(agents.get('n1')!), {
      what: 'n1 kernel routes',
      until: (r) =>
        r.includes(`blackhole ${b1}`) &&
        r.includes(`${b2} via 10.97.0.2 dev eth0`) &&
        r.includes(`${b3} via 10.97.0.3 dev eth0`) &&
        r.filter((x) => x.includes(' dev cali')).length === 2,
      timeoutMs: 20_000,
    });
    await waitFor(() => kernelRoutes(agents.get('n3')!), {
      what: 'n3 kernel routes',
      until: (r) => r.includes(`${b1} via 10.97.0.1 dev eth0`) && r.includes(`${b2} via 10.97.0.2 dev eth0`),
      timeoutMs: 20_000,
    });
    // One route per block: no remote pod's /32.
    const n3 = await kernelRoutes(agents.get('n3')!);
    assert.ok(!n3.some((r) => pods.some((p) => p.node !== 'n3' && r.startsWith(`${p.ip} `))), n3.join('\n'));
    assert.deepEqual(await pingAll(), []);
  });

  it('podroute node status shows the mesh as calicoctl does', async () => {
    const r = await agents.get('n1')!.ns.run(['node', PODROUTE, 'node', 'status', '--control', agents.get('n1')!.control]);
    assert.match(r, /podroute process is running/);
    assert.match(r, /\| 10\.97\.0\.2 +\| node-to-node mesh \| up +\| \d\d:\d\d:\d\d \| Established \|/);
    assert.match(r, /\| 10\.97\.0\.3 +\| node-to-node mesh \| up /);
    assert.match(r, /No IPv6 peers found/);
    const metrics = await agents
      .get('n1')!
      .ns.run(['curl', '-s', 'http://127.0.0.1:9099/metrics'])
      .catch(() => '');
    if (metrics) {
      assert.match(metrics, /podroute_bgp_peers\{state="Established"\} 2/);
      assert.match(metrics, /podroute_routes_programmed \d+/);
    }
  });

  it('deleting the last pod of a block removes its routes on every node', async () => {
    const pod = pods.find((p) => p.node === 'n3')!;
    const [b3] = await blockOf('n3');
    await delPod(pod);
    for (const n of ['n1', 'n2', 'n3']) {
      await waitFor(() => kernelRoutes(agents.get(n)!), {
        what: `${n}: no route left for ${b3} or ${pod.ip}`,
        until: (r) => !r.some((x) => x.startsWith(`${b3} `) || x.startsWith(`blackhole ${b3}`) || x.startsWith(`${pod.ip} `)),
        timeoutMs: 20_000,
      });
    }
    assert.deepEqual(await pingAll(), []);
  });

  it('a new node joins and every old node peers with it without restarting', async () => {
    const pids = ['n1', 'n2', 'n3'].map((n) => agents.get(n)!.proc.pid);
    await startAgent('n4', 4);
    await waitMesh(['n1', 'n2', 'n3', 'n4']);
    assert.ok(pids.every(pidAlive), `old agents gone (pids ${pids.filter((p) => !pidAlive(p)).join(', ')}): want them to keep running`);
    assert.deepEqual(
      ['n1', 'n2', 'n3'].map((n) => agents.get(n)!.proc.pid),
      pids,
    );
    await addPod('n4', 'n4-a');
    const [b4] = await blockOf('n4');
    await waitFor(() => kernelRoutes(agents.get('n1')!), {
      what: 'n1 routes n4 block',
      until: (r) => r.includes(`${b4} via 10.97.0.4 dev eth0`),
      timeoutMs: 20_000,
    });
    assert.deepEqual(await pingAll(), []);
  });

  it('SIGKILL and restart of an agent: traffic to its pods never stops, and nothing is duplicated after', async () => {
    const n2 = agents.get('n2')!;
    const src = pods.find((p) => p.node === 'n1')!;
    const dst = pods.find((p) => p.node === 'n2')!;
    const before = new Map<string, string[]>();
    for (const n of ['n1', 'n2', 'n3', 'n4']) before.set(n, (await kernelRoutes(agents.get(n)!)).sort());
    // 0.1 s pings across the kill and the restart.
    const ping = src.ns.exec(['ping', '-i', '0.1', '-W', '1', '-w', '12', dst.ip], { timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 1000));
    process.kill(n2.proc.pid, 'SIGKILL');
    await n2.proc.exited;
    // The peers keep n2's routes as stale; its kernel keeps its own routes.
    await waitFor(async () => (await status(agents.get('n1')!)).peers.find((p) => p.address === n2.ip)?.state, {
      what: 'n1 sees n2 down',
      until: (s) => s !== 'Established',
      timeoutMs: 10_000,
    });
    assert.deepEqual((await kernelRoutes(agents.get('n1')!)).sort(), before.get('n1'));
    assert.deepEqual((await kernelRoutes(n2)).sort(), before.get('n2'));
    const restarted = await startAgent('n2', 2, n2.ns);
    assert.equal((await status(restarted)).restarting, true);
    await waitMesh(['n1', 'n2', 'n3', 'n4']);
    const result = await ping;
    const m = /(\d+) packets transmitted, (\d+) received/.exec(result.stdout);
    assert.ok(m, result.stdout + result.stderr);
    const [sent, received] = [Number(m[1]), Number(m[2])];
    assert.ok(sent >= 50, `sent ${sent}`);
    console.log(`      ${received}/${sent} pings answered across the SIGKILL and restart`);
    assert.equal(received, sent, `lost ${sent - received} of ${sent} pings across the restart`);
    // Converged with nothing duplicated or changed: same kernel routes, one route per prefix,
    // and the restarted felix neither deleted nor re-created anything.
    await new Promise((r) => setTimeout(r, 1000));
    for (const n of ['n1', 'n2', 'n3', 'n4']) {
      const now = (await kernelRoutes(agents.get(n)!)).sort();
      assert.deepEqual(now, before.get(n), `${n} routes after the restart`);
      const dsts = now.map((l) => l.replace(/^blackhole /, '').split(' ')[0]);
      assert.equal(new Set(dsts).size, dsts.length, `${n}: a destination twice`);
    }
    const n1routes = await callControl<{ prefix: string; from: string; stale: boolean }[]>(agents.get('n1')!.control, 'GET', '/bgp/routes');
    assert.ok(
      n1routes.every((r) => !r.stale),
      'no stale paths left at n1',
    );
    const log = readFileSync(restarted.proc.logFile, 'utf8');
    const started = log
      .split('\n')
      .filter((l) => l.includes('"felix-started"'))
      .map((l) => JSON.parse(l) as { deleted: number });
    assert.equal(started.length, 1);
    assert.equal(started[0]!.deleted, 0, 'the restarted felix deleted routes');
    assert.deepEqual(await pingAll(), []);
  });

  it('live switch to a route reflector with the mesh off: clients peer only with it, pods still reach each other', async () => {
    const n1 = (await ds.get('Node', 'n1'))!;
    await ds.apply({
      ...n1,
      metadata: { ...n1.metadata, resourceVersion: undefined },
      spec: { ...n1.spec, bgp: { ...n1.spec.bgp, routeReflectorClusterID: '1.0.0.1' } },
    });
    await ds.apply({
      apiVersion: API_VERSION,
      kind: 'BGPConfiguration',
      metadata: { name: 'default' },
      spec: { nodeToNodeMeshEnabled: false },
    });
    for (const n of ['n2', 'n3', 'n4']) {
      await waitFor(async () => (await status(agents.get(n)!)).peers.map((p) => `${p.address} ${p.type} ${p.state}`), {
        what: `${n} peers only with the reflector`,
        until: (p) => p.join() === '10.97.0.1 rr Established',
        timeoutMs: 30_000,
        intervalMs: 200,
      });
    }
    await waitFor(
      async () => (await status(agents.get('n1')!)).peers.filter((p) => p.type === 'rr-client' && p.state === 'Established').length,
      {
        what: 'reflector has 3 clients',
        until: (c) => c === 3,
        timeoutMs: 30_000,
        intervalMs: 200,
      },
    );
    const [b2] = await blockOf('n2');
    const [b4] = await blockOf('n4');
    // A client's route to another client's block points at that client, not at the reflector.
    await waitFor(() => kernelRoutes(agents.get('n4')!), {
      what: 'n4 routes n2 block via n2',
      until: (r) => r.includes(`${b2} via 10.97.0.2 dev eth0`),
      timeoutMs: 20_000,
    });
    await waitFor(() => kernelRoutes(agents.get('n2')!), {
      what: 'n2 routes n4 block via n4',
      until: (r) => r.includes(`${b4} via 10.97.0.4 dev eth0`),
      timeoutMs: 20_000,
    });
    assert.deepEqual(await pingAll(), []);
  });
});
