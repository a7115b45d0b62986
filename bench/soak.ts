// Memory of long-lived node agents under steady pod churn: does an agent's RSS or V8 heap keep
// growing while pods come and go, or does it level off?
//
//   npx tsx bench/soak.ts [--minutes 60] [--interval 10] [--nodes 3] [--pods 8] [--period 2]
//                         [--block-size 32] [--run dist|source] [--no-build] [--csv FILE]
//                         [--snapshot-at M,M,...] [--snapshot-dir DIR]
//   (root: network namespaces)
//
// Three `podroute node run` agents in namespaces on one L2 segment, a real Redis, full mesh, and
// BIRD 2 peering with every agent as a global BGPPeer, so it learns every pod block the agents
// do. On every node a container runtime's steady churn: --pods pod slots, each slot in turn
// deleted and added again as a new pod (new container ID, new pod name) through the C shim and
// the node's agent CNI socket, one DEL+ADD per node every --period seconds. With /32 blocks
// (the default) every pod is a new block claim and a new BGP route, so each cycle runs the
// whole path: CNI, IPAM, store watch, BGP, felix into the kernel.
//
// Every --interval seconds: each agent's VmRSS from /proc, its heap (used, total, external)
// from bench/soak-heap.mjs preloaded into it, and the references' VmRSS: BIRD doing the same
// BGP job, an idle Node process (`node -e` holding a timer), Redis. The report gives, for each,
// the least-squares slope in MB per hour over the second half of the run (start-up growth,
// code loaded and caches filled, does not count) and over the whole run, with the first and
// last figures. --csv keeps every sample.
//
// Finding what grows: --snapshot-at 5,15 has each agent write a V8 heap snapshot (node's
// --heapsnapshot-signal) at those minutes into --snapshot-dir; `npx tsx bench/soak-heapdiff.ts
// A.heapsnapshot B.heapsnapshot` lists what was made between the two and is still alive, by
// kind, and who holds it. Writing a snapshot leaves the agent's RSS about 150 MB higher: read
// slopes from a run without snapshots.
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, cpus, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentStatus } from '../lib/agent/index.js';
import { callControl } from '../lib/bgpd/control.js';
import { API_VERSION } from '../lib/resources/index.js';
import { Bird } from '../test/support/bird.js';
import { callCni } from '../test/support/cni-call.js';
import { clusterRedis, nodeRunArgv } from '../test/support/node-agents.js';
import { Lab, type Netns } from '../test/support/netns.js';
import { ManagedProcess } from '../test/support/process.js';
import { waitFor } from '../test/support/wait.js';

const ROOT = join(fileURLToPath(import.meta.url), '../..');
const SHIM = join(ROOT, 'cni/shim/podroute-cni');
const ASN = 64512;
const BIRD_IP = '10.95.0.200';

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  if (i < 0) return undefined;
  const v = process.argv[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`${name}: needs a value`);
  return v;
}
function number(name: string, d: number, min: number): number {
  const v = flag(name);
  if (v === undefined) return d;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name}: a number of at least ${min}, not ${JSON.stringify(v)}`);
  return n;
}
const MINUTES = number('--minutes', 60, 1);
const INTERVAL_S = number('--interval', 10, 1);
const NODES = number('--nodes', 3, 2);
if (!Number.isInteger(NODES) || NODES > 100) throw new Error(`--nodes: a whole number from 2 to 100, not ${NODES}`);
const PODS = number('--pods', 8, 1);
if (!Number.isInteger(PODS)) throw new Error(`--pods: a whole number, not ${PODS}`);
const PERIOD_S = number('--period', 2, 0.1);
const BLOCK_SIZE = number('--block-size', 32, 20);
const RUN = flag('--run') ?? 'dist';
if (RUN !== 'dist' && RUN !== 'source') throw new Error(`--run: dist or source, not ${JSON.stringify(RUN)}`);
const CSV = flag('--csv');
const SNAPSHOT_AT = (flag('--snapshot-at') ?? '')
  .split(',')
  .filter(Boolean)
  .map((m) => {
    const n = Number(m);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--snapshot-at: minutes after the churn starts, not ${JSON.stringify(m)}`);
    return n;
  });

const MB = 1024 * 1024;

/** VmRSS of a live process in bytes, or undefined once it is gone. */
function vmRss(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

interface HeapSample {
  heapUsed: number;
  heapTotal: number;
  external: number;
}
function heapOf(file: string): HeapSample | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as HeapSample;
  } catch {
    return undefined;
  }
}

/** Least-squares slope of y over t (t in seconds), in y per hour. */
function slopePerHour(points: readonly { t: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mt = points.reduce((s, p) => s + p.t, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.t - mt) * (p.y - my);
    den += (p.t - mt) ** 2;
  }
  return den === 0 ? Number.NaN : (num / den) * 3600;
}

interface Series {
  name: string;
  kind: 'agent' | 'reference';
  rss: { t: number; y: number }[];
  heap: { t: number; y: number }[];
  heapTotal: { t: number; y: number }[];
  external: { t: number; y: number }[];
}

interface Node {
  name: string;
  ns: Netns;
  control: string;
  cniSocket: string;
  heapFile: string;
  proc: ManagedProcess;
  pods: { ns: Netns; containerId: string | undefined }[];
}

async function main(): Promise<void> {
  if (RUN === 'dist') {
    if (!process.argv.includes('--no-build')) execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: ['ignore', 2, 2] });
    process.env.PODROUTE_RUN = 'dist';
  }
  if (!process.argv.includes('--no-build') && spawnSync(process.env.CC || 'cc', ['--version'], { stdio: 'ignore' }).status === 0)
    execFileSync('sh', [join(ROOT, 'cni/shim/build.sh')], { stdio: ['ignore', 2, 2] });
  if (!existsSync(SHIM)) throw new Error(`${SHIM} is not built (cni/shim/build.sh)`);
  const snapshotDir = SNAPSHOT_AT.length ? (flag('--snapshot-dir') ?? mkdtempSync(join(tmpdir(), 'podroute-soak-heap-'))) : undefined;
  if (snapshotDir) mkdirSync(snapshotDir, { recursive: true });

  const lab = new Lab({ tag: 'soak' });
  const { redis, sock, ds } = await clusterRedis(lab.dir);
  const series: Series[] = [];
  try {
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'pods' },
      spec: { cidr: '10.96.0.0/16', blockSize: BLOCK_SIZE, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    await ds.apply({ apiVersion: API_VERSION, kind: 'IPAMConfiguration', metadata: { name: 'default' }, spec: { maxBlocksPerHost: 0 } });
    await ds.create({ apiVersion: API_VERSION, kind: 'BGPPeer', metadata: { name: 'bird' }, spec: { peerIP: BIRD_IP, asNumber: ASN } });
    const seg = await lab.segment();
    const nodes: Node[] = [];
    for (let i = 1; i <= NODES; i++) {
      const name = `n${i}`;
      const ns = await lab.namespace(name);
      await seg.attach(ns, { ifname: 'eth0', v4: `10.95.0.${i}/24` });
      await ns.ip('route', 'add', 'default', 'via', '10.95.0.254', 'dev', 'eth0');
      const control = join(lab.dir, `${name}.sock`);
      const cniSocket = join(lab.dir, `${name}-cni.sock`);
      const heapFile = join(lab.dir, `${name}.heap.json`);
      const node = [
        'node',
        '--import',
        join(ROOT, 'bench/soak-heap.mjs'),
        ...(snapshotDir ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshotDir}`] : []),
      ];
      const proc = ns.spawn(nodeRunArgv({ node, name, ip: `10.95.0.${i}/24`, datastore: sock, control, cniSocket }), {
        name: 'agent',
        cwd: ROOT,
        env: { ...process.env, PODROUTE_SOAK_HEAP: heapFile },
      });
      const pods = [];
      for (let p = 0; p < PODS; p++) pods.push({ ns: await lab.namespace(`${name}p${p}`), containerId: undefined });
      nodes.push({ name, ns, control, cniSocket, heapFile, proc, pods });
    }
    const nsBird = await lab.namespace('bird');
    await seg.attach(nsBird, { ifname: 'eth0', v4: `${BIRD_IP}/24` });
    const bird = await Bird.start(
      nsBird,
      { routerId: BIRD_IP, asn: ASN, peers: nodes.map((_, i) => ({ address: `10.95.0.${i + 1}`, remoteAs: ASN })) },
      { kernel: false },
    );
    const idle = lab.track(
      new ManagedProcess(['node', '-e', 'setInterval(() => {}, 1000)'], {
        name: 'idle-node',
        logFile: join(lab.dir, 'idle-node.log'),
      }),
    );
    await waitFor(
      async () =>
        Promise.all(
          nodes.map((n) => {
            if (!n.proc.running) throw new Error(`agent ${n.name} exited: ${n.proc.tail()}`);
            return callControl<AgentStatus>(n.control, 'GET', '/status').then(
              (s) => s.peers.filter((p) => p.state === 'Established').length,
              () => 0,
            );
          }),
        ),
      { what: 'full mesh and BIRD', until: (c) => c.every((x) => x === NODES), timeoutMs: 90_000, intervalMs: 500 },
    );

    const conf = (node: string) =>
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'k8s-pod-network',
        type: 'podroute-cni',
        nodename: node,
        datastore: { type: 'redis', url: sock },
      });
    let adds = 0;
    let dels = 0;
    const failures: string[] = [];
    let serial = 0;
    const cni = async (n: Node, command: 'ADD' | 'DEL', slot: number, containerId: string): Promise<void> => {
      const pod = n.pods[slot]!;
      const r = await callCni(
        n.ns,
        command,
        {
          PODROUTE_CNI_SOCKET: n.cniSocket,
          CNI_CONTAINERID: containerId,
          CNI_NETNS: `/var/run/netns/${pod.ns.name}`,
          CNI_IFNAME: 'eth0',
          CNI_ARGS: `K8S_POD_NAMESPACE=soak;K8S_POD_NAME=${containerId}`,
        },
        conf(n.name),
        [SHIM],
      );
      if (r.code !== 0) {
        failures.push(`${n.name} ${command} ${containerId}: ${r.stdout.trim().slice(0, 200)}`);
        return;
      }
      if (command === 'ADD') adds++;
      else dels++;
    };

    const t0 = performance.now();
    const at = () => (performance.now() - t0) / 1000;
    const endAt = MINUTES * 60;
    const churn = async (n: Node): Promise<void> => {
      let slot = 0;
      while (at() < endAt) {
        const started = performance.now();
        const pod = n.pods[slot]!;
        if (pod.containerId) await cni(n, 'DEL', slot, pod.containerId);
        pod.containerId = `${n.name}-pod-${++serial}`;
        await cni(n, 'ADD', slot, pod.containerId);
        slot = (slot + 1) % n.pods.length;
        const rest = PERIOD_S * 1000 - (performance.now() - started);
        if (rest > 0) await new Promise((r) => setTimeout(r, rest));
      }
    };

    const refs: { name: string; pid: number }[] = [
      { name: 'BIRD 2 (same BGP peers)', pid: bird.process.pid },
      { name: 'idle node -e', pid: idle.pid },
      ...(redis.pid === undefined ? [] : [{ name: 'redis-server', pid: redis.pid }]),
    ];
    for (const n of nodes) series.push({ name: `agent ${n.name}`, kind: 'agent', rss: [], heap: [], heapTotal: [], external: [] });
    for (const r of refs) series.push({ name: r.name, kind: 'reference', rss: [], heap: [], heapTotal: [], external: [] });
    if (CSV)
      writeFileSync(
        CSV,
        `seconds,${series.map((s) => `${s.name} rss MB`).join(',')},${nodes.flatMap((n) => ['heap used', 'heap total', 'external'].map((w) => `agent ${n.name} ${w} MB`)).join(',')},adds,dels\n`,
      );
    const load0 = loadavg();
    console.log(
      `soak: ${MINUTES} min, ${NODES} agents (bins run ${RUN}), ${PODS} pod slots per node, a DEL+ADD per node every ${PERIOD_S} s, /${BLOCK_SIZE} blocks, sample every ${INTERVAL_S} s; ${new Date().toISOString()}`,
    );
    console.log(
      `  machine: ${cpus().length} cores, ${(totalmem() / 1024 ** 3).toFixed(1)} GB, Node ${process.versions.node}; load average at start ${load0.map((x) => x.toFixed(2)).join(' ')}`,
    );
    const sample = () => {
      const t = at();
      nodes.forEach((n, i) => {
        if (!n.proc.running) throw new Error(`agent ${n.name} exited: ${n.proc.tail()}`);
        const rss = vmRss(n.proc.pid);
        const heap = heapOf(n.heapFile);
        if (rss !== undefined) series[i]!.rss.push({ t, y: rss / MB });
        if (heap) {
          series[i]!.heap.push({ t, y: heap.heapUsed / MB });
          series[i]!.heapTotal.push({ t, y: heap.heapTotal / MB });
          series[i]!.external.push({ t, y: heap.external / MB });
        }
      });
      refs.forEach((r, i) => {
        const rss = vmRss(r.pid);
        if (rss !== undefined) series[nodes.length + i]!.rss.push({ t, y: rss / MB });
      });
      if (CSV) {
        const last = (xs: { y: number }[]) => (xs.length ? xs[xs.length - 1]!.y.toFixed(2) : '');
        appendFileSync(
          CSV,
          `${t.toFixed(0)},${series.map((s) => last(s.rss)).join(',')},${series
            .slice(0, nodes.length)
            .flatMap((s) => [last(s.heap), last(s.heapTotal), last(s.external)])
            .join(',')},${adds},${dels}\n`,
        );
      }
    };
    const snapshots = [...SNAPSHOT_AT].sort((a, b) => a - b);
    let lastPrint = 0;
    const sampler = (async () => {
      while (at() < endAt) {
        sample();
        while (snapshots.length && at() >= snapshots[0]! * 60) {
          const m = snapshots.shift()!;
          for (const n of nodes) n.proc.signal('SIGUSR2');
          console.log(`  heap snapshot of every agent at ${m} min into ${snapshotDir}`);
        }
        if (at() - lastPrint >= 60) {
          lastPrint = at();
          const rss = series
            .slice(0, nodes.length)
            .map((s) => `${s.name.slice(6)} ${s.rss.at(-1)?.y.toFixed(1)}/${s.heap.at(-1)?.y.toFixed(1)}`)
            .join('  ');
          console.log(`  ${(at() / 60).toFixed(0).padStart(3)} min  rss/heap MB ${rss}  adds ${adds}  load ${loadavg()[0]!.toFixed(2)}`);
        }
        await new Promise((r) => setTimeout(r, INTERVAL_S * 1000));
      }
      sample();
    })();
    await Promise.all([sampler, ...nodes.map(churn)]);
    const load1 = loadavg();

    const fmt = (x: number) => (Number.isNaN(x) ? '  n/a' : `${x >= 0 ? '+' : ''}${x.toFixed(2)}`.padStart(7));
    const half = endAt / 2;
    console.log(
      `  churn: ${adds} ADD and ${dels} DEL in ${(at() / 60).toFixed(1)} min (${((adds + dels) / at()).toFixed(1)} calls/s), ${failures.length} failed`,
    );
    for (const f of failures.slice(0, 5)) console.log(`    failed: ${f}`);
    console.log('  MB/hour, least squares: second half | whole run;  first → last MB');
    for (const s of series) {
      const line = (what: string, pts: { t: number; y: number }[]) =>
        `${fmt(slopePerHour(pts.filter((p) => p.t >= half)))} | ${fmt(slopePerHour(pts))}   ${pts[0]?.y.toFixed(1)} → ${pts.at(-1)?.y.toFixed(1)} ${what}`;
      console.log(`    ${s.name.padEnd(26)} RSS  ${line('', s.rss)}`);
      if (s.heap.length) {
        console.log(`    ${''.padEnd(26)} heap ${line('(V8 heap used)', s.heap)}`);
        console.log(`    ${''.padEnd(26)} heap ${line('(V8 heap total)', s.heapTotal)}`);
        console.log(`    ${''.padEnd(26)} ext  ${line('(external: buffers outside the heap)', s.external)}`);
      }
    }
    console.log(`  load average at the end: ${load1.map((x) => x.toFixed(2)).join(' ')}`);
    if (CSV) console.log(`  samples: ${CSV}`);
  } finally {
    await ds.close();
    await lab.destroy();
    await redis.stop();
  }
}

await main();
