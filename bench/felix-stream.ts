// A node receiving a large cluster's routes: 1,400 nodes × 4 blocks = 5,600 learned /26s,
// arriving as BGP does, in bursts of best-path changes. Side by side in one run:
//   - felix fed deltas (changeRemoteRoutes: what the agent does now), and
//   - felix given the whole learned table on every burst (update({ remoteRoutes }): what the
//     agent did before; the reference for the incremental path),
// both on the in-memory dataplane (CPU only), then the delta path into a real kernel (a
// network namespace) against `ip -batch` installing the same 5,600 routes.
//   npx tsx bench/felix-stream.ts [nodes=1400] [blocksPerNode=4] [burst=25]   (kernel part as root)
import { execFileSync } from 'node:child_process';
import { unlinkSync, writeFileSync } from 'node:fs';
import {
  computeDesiredState,
  Felix,
  LinuxDataplane,
  MemoryDataplane,
  PODROUTE_PROTOCOL,
  type FelixInput,
  type RemoteRoute,
} from '../felix/index.js';

const NODES = Number(process.argv[2] ?? 1400);
const BLOCKS = Number(process.argv[3] ?? 4);
const BURST = Number(process.argv[4] ?? 25);
const sh = (cmd: string) => execFileSync('sh', ['-c', cmd], { encoding: 'utf8', maxBuffer: 1 << 28 });

/** Node i at 10.0.x.y/16 owns blocks 10.64.0.0/10 + (i*BLOCKS + b) * 64. */
function clusterRoutes(): RemoteRoute[] {
  const out: RemoteRoute[] = [];
  for (let i = 0; i < NODES; i++) {
    const nodeIp = `10.0.${(i + 2) >> 8}.${(i + 2) & 255}`;
    for (let b = 0; b < BLOCKS; b++) {
      const n = i * BLOCKS + b;
      out.push({ prefix: `10.${64 + (n >> 10)}.${(n >> 2) & 255}.${(n & 3) * 64}/26`, nextHops: [nodeIp] });
    }
  }
  return out;
}

const base: FelixInput = {
  node: { addressV4: '10.0.0.1/16', uplink: 'eth0' },
  workloads: [],
  ownBlocks: ['10.127.255.192/26'],
  remoteRoutes: [],
  pools: [{ cidr: '10.64.0.0/10' }],
  remoteVteps: [],
};

function bursts(routes: RemoteRoute[]): RemoteRoute[][] {
  const out: RemoteRoute[][] = [];
  for (let i = 0; i < routes.length; i += BURST) out.push(routes.slice(i, i + BURST));
  return out;
}

/** CPU seconds (user + system) and wall seconds of f. */
async function measure(f: () => Promise<void>): Promise<{ cpu: number; wall: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await f();
  const c = process.cpuUsage(c0);
  return { cpu: (c.user + c.system) / 1e6, wall: (performance.now() - t0) / 1000 };
}

async function stream(felix: Felix, routes: RemoteRoute[], mode: 'deltas' | 'whole'): Promise<void> {
  const learned: RemoteRoute[] = [];
  for (const b of bursts(routes)) {
    if (mode === 'deltas') felix.changeRemoteRoutes(b);
    else {
      learned.push(...b);
      felix.update({ remoteRoutes: [...learned] });
    }
    // A burst is one bestPaths event; felix applies between events as the agent's loop lets it.
    await new Promise<void>((r) => setImmediate(r));
  }
  await felix.settled();
}

async function memoryRun(routes: RemoteRoute[], mode: 'deltas' | 'whole') {
  const dp = new MemoryDataplane({ links: ['eth0'] });
  const felix = new Felix(dp, { resyncIntervalMs: 0, sysctls: false });
  felix.update(base);
  await felix.start();
  const m = await measure(() => stream(felix, routes, mode));
  felix.stop();
  const held = [...dp.routes.values()].filter((r) => r.protocol === PODROUTE_PROTOCOL).length;
  if (held !== routes.length + 1) throw new Error(`${mode}: ${held} routes held, expected ${routes.length + 1}`);
  return m;
}

function freshNs(tag: string): string {
  const ns = `fxstream${process.pid}${tag}`;
  sh(
    `ip netns add ${ns} && ip -n ${ns} link set lo up && ip -n ${ns} link add eth0 type veth peer name eth0p && ` +
      `ip -n ${ns} link set eth0 up && ip -n ${ns} link set eth0p up && ip -n ${ns} addr add 10.0.0.1/16 dev eth0`,
  );
  return ns;
}

async function kernelRuns(routes: RemoteRoute[]) {
  const ns1 = freshNs('i');
  const file = `/tmp/fxstream-${process.pid}.batch`;
  try {
    writeFileSync(file, routes.map((r) => `route add ${r.prefix} via ${r.nextHops[0]} dev eth0 proto ${PODROUTE_PROTOCOL}\n`).join(''));
    const t0 = performance.now();
    sh(`ip -n ${ns1} -batch ${file}`);
    const ipBatch = (performance.now() - t0) / 1000;
    sh(`ip netns del ${ns1}`);

    const ns2 = freshNs('f');
    try {
      const dp = new LinuxDataplane({ netns: `/var/run/netns/${ns2}` });
      const felix = new Felix(dp, { resyncIntervalMs: 0, sysctls: false });
      felix.update(base);
      await felix.start();
      const m = await measure(() => stream(felix, routes, 'deltas'));
      felix.stop();
      const held = Number(sh(`ip -n ${ns2} route show proto ${PODROUTE_PROTOCOL} | wc -l`).trim());
      if (held !== routes.length + 1) throw new Error(`kernel: ${held} routes, expected ${routes.length + 1}`);
      dp.close();
      return { ipBatch, felix: m };
    } finally {
      sh(`ip netns del ${ns2}`);
    }
  } finally {
    try {
      unlinkSync(file);
    } catch {}
    try {
      sh(`ip netns del ${ns1} 2>/dev/null || true`);
    } catch {}
  }
}

async function main(): Promise<void> {
  const routes = clusterRoutes();
  const load = sh('cat /proc/loadavg').split(' ').slice(0, 3).join(' ');
  console.log(
    `${NODES} nodes × ${BLOCKS} blocks = ${routes.length} routes in bursts of ${BURST} (${Math.ceil(routes.length / BURST)} events); load ${load}`,
  );
  const deltas = await memoryRun(routes, 'deltas');
  const whole = await memoryRun(routes, 'whole');
  // What the agent paid before felix took deltas: the whole desired state recomputed per burst.
  const recompute = await measure(async () => {
    const learned: RemoteRoute[] = [];
    for (const b of bursts(routes)) {
      learned.push(...b);
      computeDesiredState({ ...base, remoteRoutes: learned });
    }
  });
  const f = (x: number) => x.toFixed(3);
  console.log('| path (memory dataplane) | CPU s | wall s |');
  console.log('|---|---|---|');
  console.log(`| felix fed deltas | ${f(deltas.cpu)} | ${f(deltas.wall)} |`);
  console.log(`| felix given the whole learned table per burst | ${f(whole.cpu)} | ${f(whole.wall)} |`);
  console.log(`| computeDesiredState per burst (the agent before deltas; no writes) | ${f(recompute.cpu)} | ${f(recompute.wall)} |`);
  console.log(`| ratio deltas ÷ whole table | **${(deltas.cpu / whole.cpu).toFixed(3)}x** | |`);
  console.log(`| ratio deltas ÷ recompute per burst | **${(deltas.cpu / recompute.cpu).toFixed(3)}x** | |`);
  if (process.getuid?.() === 0) {
    const k = await kernelRuns(routes);
    console.log(`| felix deltas into a kernel | ${f(k.felix.cpu)} | ${f(k.felix.wall)} |`);
    console.log(`| ip -batch, the same routes at once | | ${f(k.ipBatch)} |`);
    console.log(`| ratio felix wall ÷ ip -batch | | **${(k.felix.wall / k.ipBatch).toFixed(2)}x** |`);
  } else console.log('(not root: the kernel comparison with ip -batch is skipped)');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
