// CNI ADD on one node → the pod's route in the kernel of every other node.
//
//   npx tsx bench/agent-latency.ts [--pods 100] [--nodes 3] [--run dist|source] [--cni shim|node|both] [--no-build]
//   (root: network namespaces)
//
// --cni shim (the default once cni/shim/podroute-cni is built) runs the C shim, which hands the
// call to node 1's agent over its CNI socket; --cni node runs the Node plugin, a process per
// call; --cni both alternates the two pod by pod, so both are measured under the same load.
// --gap MS (default 0: back to back): each ADD starts at least this long after the previous
// pod's route arrived. A session holds UPDATEs prompted by new changes for 0.2 ms per session
// of its speaker after its last batch (at most 200 ms, pacingMs in bgp/speaker.ts): nothing for
// these agents' two peers, but a gap shows one pod's path alone on a speaker with many.
// --run dist (the default) builds dist/ first and runs the bins as an installed package does:
// podroute-cni is then dist/cni.js, one bundled file. --run source runs the TypeScript through
// tsx, as a checkout does, for comparison (every CNI call then starts tsx).
// Three `podroute node run` agents in namespaces on one L2 segment, a real Redis, pods made
// one after another by running podroute-cni on node 1 as a container runtime does. The pool
// has /32 blocks, so every pod is a new block and a new BGP route (with /26 blocks only the
// first pod of each block would need one). Arrival is seen by `ip monitor route` in each
// other node, timestamped as the line arrives.
// The block claim is also timestamped through a datastore watch in this process, which splits
// the total into the CNI process's own time and agent → BGP → felix propagation.
// Reference, measured in the same run: `ip route add` straight into a node's kernel, seen by
// the same monitor (the floor of what the observation itself costs).
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cidrAddress } from '../ip/index.js';
import type { AgentStatus } from '../lib/agent/index.js';
import { callControl } from '../lib/bgpd/control.js';
import { API_VERSION } from '../lib/resources/index.js';
import { redisDatastore } from '../lib/datastore/index.js';
import { callCni } from '../test/support/cni-call.js';
import { Lab, type Netns } from '../test/support/netns.js';
import { nodeRunArgv } from '../test/support/node-agents.js';
import { startRedis } from '../test/support/redis.js';
import { waitFor } from '../test/support/wait.js';
import { numberArg } from './args.js';

const ROOT = join(fileURLToPath(import.meta.url), '../..');
const arg = (name: string, d: number): number => numberArg(name, d);
const PODS = arg('--pods', 100);
const GAP_MS = arg('--gap', 0);
const NODES = Math.max(2, arg('--nodes', 3));
const RUN = process.argv.includes('--run') ? process.argv[process.argv.indexOf('--run') + 1] : 'dist';
if (RUN !== 'dist' && RUN !== 'source') throw new Error(`--run: dist or source, not ${JSON.stringify(RUN)}`);
const SHIM = join(ROOT, 'cni/shim/podroute-cni');
const CNI_ARG = process.argv.includes('--cni') ? process.argv[process.argv.indexOf('--cni') + 1] : undefined;
if (CNI_ARG !== undefined && CNI_ARG !== 'shim' && CNI_ARG !== 'node' && CNI_ARG !== 'both')
  throw new Error(`--cni: shim, node or both, not ${JSON.stringify(CNI_ARG)}`);
type Mode = 'shim' | 'node';

class RouteMonitor {
  readonly seen = new Map<string, number>();
  private readonly waiters = new Map<string, () => void>();
  private readonly proc: ChildProcess;
  private buf = '';
  constructor(ns: Netns) {
    this.proc = spawn('ip', ['-n', ns.name, '-4', 'monitor', 'route'], { stdio: ['ignore', 'pipe', 'ignore'] });
    this.proc.stdout!.on('data', (c: Buffer) => {
      const now = performance.now();
      this.buf += c.toString('utf8');
      const lines = this.buf.split('\n');
      this.buf = lines.pop()!;
      for (const l of lines) {
        if (l.startsWith('Deleted')) continue;
        const dst = l.split(' ')[0]!.replace(/\/32$/, '');
        if (!this.seen.has(dst)) this.seen.set(dst, now);
        this.waiters.get(dst)?.();
      }
    });
  }
  wait(dst: string, timeoutMs = 30_000): Promise<number> {
    const at = this.seen.get(dst);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`route ${dst} not seen in ${timeoutMs} ms`)), timeoutMs);
      this.waiters.set(dst, () => {
        clearTimeout(t);
        this.waiters.delete(dst);
        resolve(this.seen.get(dst)!);
      });
    });
  }
  stop(): void {
    this.proc.kill('SIGTERM');
  }
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}
const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms  p99 ${pct(xs, 99).toFixed(1)} ms  max ${Math.max(...xs).toFixed(1)} ms`;

async function main(): Promise<void> {
  if (RUN === 'dist') {
    // --no-build: measure dist/ as it stands (say, while the tree does not type-check).
    if (!process.argv.includes('--no-build')) execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: ['ignore', 2, 2] });
    process.env.PODROUTE_RUN = 'dist'; // inherited by the agents and every podroute-cni call
  }
  // The shim is built as npm's install step builds it, if there is a C compiler.
  if (!process.argv.includes('--no-build') && spawnSync(process.env.CC || 'cc', ['--version'], { stdio: 'ignore' }).status === 0)
    execFileSync('sh', [join(ROOT, 'cni/shim/build.sh')], { stdio: ['ignore', 2, 2] });
  const cniMode = CNI_ARG ?? (existsSync(SHIM) ? 'shim' : 'node');
  if (cniMode !== 'node' && !existsSync(SHIM)) throw new Error(`--cni ${cniMode}: ${SHIM} is not built (cni/shim/build.sh)`);
  const modes: Mode[] = cniMode === 'both' ? ['shim', 'node'] : [cniMode as Mode];
  const lab = new Lab({ tag: 'bag' });
  const redis = await startRedis({ args: ['--unixsocket', join(lab.dir, 'redis.sock'), '--unixsocketperm', '777'] });
  const sock = join(lab.dir, 'redis.sock');
  const monitors: RouteMonitor[] = [];
  try {
    const ds = await redisDatastore({ url: sock });
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'pods' },
      spec: { cidr: '10.96.0.0/16', blockSize: 32, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    await ds.apply({ apiVersion: API_VERSION, kind: 'IPAMConfiguration', metadata: { name: 'default' }, spec: { maxBlocksPerHost: 0 } });
    const seg = await lab.segment();
    const nodes: { name: string; ns: Netns; control: string }[] = [];
    for (let i = 1; i <= NODES; i++) {
      const ns = await lab.namespace(`n${i}`);
      await seg.attach(ns, { ifname: 'eth0', v4: `10.95.0.${i}/24` });
      await ns.ip('route', 'add', 'default', 'via', '10.95.0.254', 'dev', 'eth0');
      const control = join(lab.dir, `n${i}.sock`);
      ns.spawn(
        nodeRunArgv({ name: `n${i}`, ip: `10.95.0.${i}/24`, datastore: sock, control, cniSocket: join(lab.dir, `n${i}-cni.sock`) }),
        { name: 'agent', cwd: ROOT },
      );
      nodes.push({ name: `n${i}`, ns, control });
    }
    await waitFor(
      async () =>
        Promise.all(
          nodes.map((n) =>
            callControl<AgentStatus>(n.control, 'GET', '/status').then(
              (s) => s.peers.filter((p) => p.state === 'Established').length,
              () => 0,
            ),
          ),
        ),
      {
        what: 'full mesh',
        until: (c) => c.every((x) => x === NODES - 1),
        timeoutMs: 60_000,
        intervalMs: 200,
      },
    );
    for (const n of nodes.slice(1)) monitors.push(new RouteMonitor(n.ns));
    await new Promise((r) => setTimeout(r, 300));

    // Reference: a route written straight into the kernel, seen by the same monitor.
    const reference: number[] = [];
    for (let i = 0; i < 20; i++) {
      const dst = `10.94.0.${i}`;
      const t0 = performance.now();
      await nodes[1]!.ns.ip('route', 'add', `${dst}/32`, 'dev', 'eth0');
      reference.push((await monitors[0]!.wait(dst)) - t0);
    }

    // When each block claim reaches the store (seen through a watch, as the agents see it).
    const claimed = new Map<string, number>();
    const watch = ds.watch({ kinds: ['IPAMBlock'], fromRevision: await ds.revision() });
    watch.on('event', (e) => {
      if (e.type === 'put' && e.kind === 'IPAMBlock') {
        const ip = cidrAddress((e.resource.spec as { cidr: string }).cidr);
        if (!claimed.has(ip)) claimed.set(ip, performance.now());
      }
    });
    const samples = () => ({ total: [] as number[], cni: [] as number[], after: [] as number[], cniStart: [] as number[] });
    const by: Record<Mode, ReturnType<typeof samples>> = { shim: samples(), node: samples() };
    const nodeStart: number[] = [];
    // The shim calls node 1's agent; the Node plugin ignores the variable.
    const cniEnv = { PODROUTE_CNI_SOCKET: join(lab.dir, 'n1-cni.sock') };
    const program = (m: Mode) => (m === 'shim' ? [SHIM] : undefined);
    const conf = JSON.stringify({
      cniVersion: '1.0.0',
      name: 'k8s-pod-network',
      type: 'podroute-cni',
      nodename: 'n1',
      datastore: { type: 'redis', url: sock },
    });
    let lastArrival = -Infinity;
    for (let i = 0; i < PODS; i++) {
      const mode = modes[i % modes.length]!;
      const m = by[mode];
      const pod = await lab.namespace(`p${i}`);
      // Beside each ADD, under the same load (this machine is shared): starting Node itself, the
      // floor of any CNI call, and podroute-cni VERSION, the plugin's own start-up (no store, no kernel).
      let t0 = performance.now();
      await nodes[0]!.ns.exec(['node', '-e', '0']);
      const bare = performance.now() - t0;
      nodeStart.push(bare);
      const v = await callCni(nodes[0]!.ns, 'VERSION', cniEnv, '{"cniVersion":"1.0.0"}', program(mode));
      if (v.code !== 0) throw new Error(`CNI VERSION: ${v.stdout}`);
      m.cniStart.push(v.ms);
      const quiet = lastArrival + GAP_MS - performance.now();
      if (quiet > 0) await new Promise((resolve) => setTimeout(resolve, quiet));
      t0 = performance.now();
      const r = await callCni(
        nodes[0]!.ns,
        'ADD',
        { ...cniEnv, CNI_CONTAINERID: `bench${i}`, CNI_NETNS: `/var/run/netns/${pod.name}`, CNI_IFNAME: 'eth0' },
        conf,
        program(mode),
      );
      const t1 = performance.now();
      if (r.code !== 0) throw new Error(`CNI ADD ${i}: ${r.stdout}`);
      const ip = cidrAddress((r.json as { ips: { address: string }[] }).ips[0]!.address);
      const arrivals = await Promise.all(monitors.map((m) => m.wait(ip)));
      const last = Math.max(...arrivals);
      lastArrival = last;
      m.total.push(last - t0);
      m.cni.push(t1 - t0);
      m.after.push(last - (claimed.get(ip) ?? t1));
    }
    await watch.close();
    await ds.close();
    const node = process.versions.node;
    console.log(
      `agent latency: ${PODS} pods, ${NODES} nodes, node ${node}, bins run ${RUN}, CNI ${modes.join(' and ')}, gap ${GAP_MS} ms, ${new Date().toISOString()}`,
    );
    for (const mode of modes) {
      const m = by[mode];
      const what = mode === 'shim' ? 'the C shim → the agent' : 'the Node plugin';
      console.log(`  CNI through ${what} (${m.total.length} pods):`);
      console.log(`    CNI ADD start → route in every other kernel: ${fmt(m.total)}`);
      console.log(`    CNI ADD (process start to exit):              ${fmt(m.cni)}`);
      console.log(`    block claim seen in store → route in every other kernel: ${fmt(m.after)}`);
      console.log(`    CNI VERSION (start, answer):                  ${fmt(m.cniStart)}`);
    }
    const after = [...by.shim.after, ...by.node.after];
    console.log(`  reference, ip route add → seen by monitor:    ${fmt(reference)}`);
    console.log(`  reference, node -e 0 (process start to exit): ${fmt(nodeStart)}`);
    console.log(
      `  load average at the end: ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
    console.log(`  ratio (store → every kernel p50 / reference p50): ${(pct(after, 50) / pct(reference, 50)).toFixed(1)}x`);
  } finally {
    for (const m of monitors) m.stop();
    await lab.destroy();
    await redis.stop();
  }
}

await main();
