// One real `podroute node run` (memory dataplane, Redis datastore) in a full node-to-node mesh
// with N simulated nodes. Each simulated node is a Node resource (127.2.x.y, our AS) and a lean
// BGP peer in the tester process listening on its address at the agent's BGP port: the agent
// dials every one of them, as it would a real node, and each announces 4 /26 blocks once
// Established. Then churn: 10% of the nodes vanish (sessions cut without a NOTIFICATION, their
// listeners closed) and come back, and 10% of the nodes announce a borrowed /32 each.
// The agent is read through its control socket (`GET /status`, as `podroute node status`).
//
//   node --import tsx bench/scale/mesh.ts [--nodes 100,500,1000,2000] [--timeout 120] [--json file] [--profile dir]
//        [--node-args '--single-threaded']   (Node flags on the agent's command line)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cidrAddress, formatIpv4Number, parseIpv4Number } from '../../ip/index.js';
import type { AgentStatus } from '../../lib/agent/index.js';
import { request } from 'node:http';
import { API_VERSION } from '../../lib/resources/index.js';
import { redisDatastore } from '../../lib/datastore/index.js';
import { startRedis } from '../../test/support/redis.js';
import { ROOT, Tester, blocksOf, load, loopback, mb, now, profileWritten, removeDir, sample, start, stop, tempDir } from './harness.js';
import { waitFor } from '../../test/support/wait.js';
import { freePort } from '../../bgp/session/free-port.js';

function arg(name: string, d: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : d;
}
const SIZES = arg('nodes', '100,500,1000,2000').split(',').map(Number);
const TIMEOUT_S = Number(arg('timeout', '120'));
const JSON_OUT = arg('json', '');
const PROFILE = arg('profile', '');
// The profiler writes into the directory; it does not make it.
if (PROFILE) mkdirSync(PROFILE, { recursive: true });
const NODE_ARGS = arg('node-args', '').split(' ').filter(Boolean);
for (const n of SIZES) if (!(n >= 1 && n <= 60000)) throw new Error(`--nodes: ${n} is not in 1..60000`);
const ASN = 64512;
const AGENT_IP = '127.0.0.1';

export interface MeshResult {
  nodes: number;
  /**
   * TCP connections from the agent's address still in TIME_WAIT when it starts (a previous run's):
   * each is a port its connects must bind around, which slowed 4,000 peers from 5 s to 17 s.
   */
  timeWaitAtStart: number;
  loadBefore: string;
  loadAfter: string;
  idleRss: number;
  /** From spawning the agent until its control socket answers (Node and module start-up). */
  controlS?: number;
  establishedS?: number;
  programmedS?: number;
  cpuAtProgrammed?: number;
  rssAtProgrammed?: number;
  peakAtProgrammed?: number;
  downS?: number;
  backS?: number;
  borrowS?: number;
  churnCpu?: number;
  rssEnd: number;
  peakEnd: number;
  slowestStatusS?: number;
  testerCpu: number;
  failed?: string;
}

interface Agent {
  pid: number;
  /** The end of its log (stderr). */
  tail(): string;
  status(): Promise<AgentStatus>;
  stop(): Promise<void>;
}

async function startAgent(dir: string, datastore: string, port: number): Promise<Agent> {
  const control = join(dir, 'agent.sock');
  const argv = [
    'node',
    ...NODE_ARGS,
    join(ROOT, 'bin/podroute.js'),
    'node',
    'run',
    ...['--name', 'n0', '--ip', `${AGENT_IP}/8`, '--uplink', 'lo', '--bgp-port', String(port)],
    ...['--dataplane', 'memory', '--policy', 'off', '--datastore', datastore, '--control', control],
    ...['--health-port', '0', '--default-pool', 'none'],
  ];
  // --profile: a .cpuprofile of the agent's run (bench/speaker/cpu-profile.mjs), asked for by SIGHUP at the end.
  const env = PROFILE
    ? { ...process.env, NODE_OPTIONS: `--import ${join(ROOT, 'bench/speaker/cpu-profile.mjs')}`, PODROUTE_CPU_PROFILE_DIR: PROFILE }
    : process.env;
  const p = start(argv, { env });
  const status = () => getStatus(control);
  await waitFor(
    async () => {
      if (p.exitCode !== null) throw new Error(`agent exited: ${p.tail()}`);
      return (await status()).node === 'n0';
    },
    { what: 'agent control socket', timeoutMs: 60_000, intervalMs: 50 },
  ).catch((e) => {
    throw new Error(`${(e as Error).message}\n${p.tail()}`);
  });
  return { pid: p.pid!, tail: p.tail, status, stop: () => stop(p) };
}

/** Slowest `GET /status` answer seen (a busy agent answers late; the CLI gives up after 10 s). */
let slowestStatusMs = 0;

/** `GET /status` on the control socket, waiting as long as the agent takes (up to 2 minutes). */
function getStatus(socketPath: string): Promise<AgentStatus> {
  const t = now();
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method: 'GET', path: '/status', timeout: 120_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        slowestStatusMs = Math.max(slowestStatusMs, now() - t);
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as AgentStatus);
        } catch (e) {
          reject(e);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 120 s')));
    req.on('error', reject);
    req.end();
  });
}

interface Counts {
  established: number;
  learned: number;
  programmed: number;
  failures: number;
}
function counts(s: AgentStatus): Counts {
  return {
    established: s.peers.filter((p) => p.state === 'Established').length,
    learned: s.routes.learned,
    programmed: s.routes.programmed,
    failures: s.routes.failures,
  };
}

async function runOne(n: number): Promise<MeshResult> {
  const dir = tempDir('scale-mesh-');
  const sock = join(dir, 'redis.sock');
  const redis = await startRedis({ args: ['--unixsocket', sock, '--unixsocketperm', '700'] });
  const ds = await redisDatastore({ url: sock });
  const tester = new Tester();
  let agent: Agent | undefined;
  const loadBefore = load();
  try {
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'pods' },
      spec: { cidr: '10.64.0.0/10', blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    const port = await freePort();
    // Idle: the agent alone, for the RSS a peer's share is measured against.
    agent = await startAgent(dir, sock, port);
    await new Promise((r) => setTimeout(r, 3000));
    const idleRss = sample([agent.pid]).rss;
    await agent.stop();
    agent = undefined;

    const peers = Array.from({ length: n }, (_, i) => ({ address: loopback(2, i), prefixes: blocksOf(i) }));
    for (let i = 0; i < n; i += 100)
      await Promise.all(
        peers.slice(i, i + 100).map((p, k) =>
          ds.create({
            apiVersion: API_VERSION,
            kind: 'Node',
            metadata: { name: `sim-${i + k}` },
            spec: { bgp: { ipv4Address: `${p.address}/8`, asNumber: ASN } },
          }),
        ),
      );
    await tester.call({
      type: 'start',
      mode: 'listen',
      peers,
      target: { host: AGENT_IP, port },
      port,
      asn: ASN,
      holdTime: 240,
      sampleEvery: 0,
      expected: 0,
      concurrency: 0,
    });
    const testerBefore = sample([tester.pid]);
    const timeWaitAtStart = timeWaits(AGENT_IP);
    const t0 = now();
    agent = await startAgent(dir, sock, port);
    const a = agent;
    const secs = () => (now() - t0) / 1000;
    const controlS = secs();
    let peak = 0;
    let lastLog = 0;
    // Polls the agent until `done` holds; the agent's own answer time is part of the figure.
    const until = async (what: string, done: (c: Counts) => boolean, timeoutS = TIMEOUT_S): Promise<number | undefined> => {
      const from = now();
      const deadline = Date.now() + timeoutS * 1000;
      for (;;) {
        const s = sample([a.pid]);
        if (s.rss === 0) throw new Error(`agent exited: ${a.tail().slice(-1500)}`);
        peak = Math.max(peak, s.peak);
        let c: Counts | undefined;
        try {
          c = counts(await a.status());
        } catch {
          c = undefined;
        }
        if (c && done(c)) return (now() - from) / 1000;
        if (Date.now() > deadline) {
          process.stderr.write(`  ${n}: ${what}: timed out at ${JSON.stringify(c)}\n`);
          return undefined;
        }
        if (Date.now() - lastLog > 10_000) {
          lastLog = Date.now();
          process.stderr.write(
            `  ${n} ${secs().toFixed(0)} s ${what}: ${JSON.stringify(c)}, cpu ${s.cpu.toFixed(1)} s, rss ${mb(s.rss).toFixed(0)} MB, load ${load()}\n`,
          );
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    const base = 4 * n;
    slowestStatusMs = 0;
    const r: MeshResult = { nodes: n, timeWaitAtStart, loadBefore, loadAfter: '', idleRss, controlS, rssEnd: 0, peakEnd: 0, testerCpu: 0 };
    let established: number | undefined;
    const programmed = await until('all Established and programmed', (c) => {
      if (established === undefined && c.established === n) established = secs();
      return c.established === n && c.learned === base && c.programmed >= base && c.failures === 0;
    });
    // The tester's clock, not a status poll: a busy agent answers its control socket late.
    const testerEstablished = tester.progress?.allEstablishedAt;
    r.establishedS = testerEstablished === undefined ? established : (testerEstablished - t0) / 1000;
    if (programmed === undefined) {
      r.failed = `not all routes programmed within ${TIMEOUT_S} s`;
    } else {
      r.programmedS = secs();
      const s = sample([a.pid]);
      r.cpuAtProgrammed = s.cpu;
      r.rssAtProgrammed = s.rss;
      r.peakAtProgrammed = Math.max(peak, s.peak);
      // Churn: every 10th node goes away, then comes back.
      const churned = peers.map((_, i) => i).filter((i) => i % 10 === 0);
      const cpu0 = s.cpu;
      await tester.call({ type: 'drop', indices: churned });
      r.downS = await until('churned nodes withdrawn', (c) => c.learned === base - 4 * churned.length);
      await tester.call({ type: 'restore', indices: churned });
      r.backS = await until('churned nodes back', (c) => c.established === n && c.learned === base && c.programmed >= base);
      // Pods borrow /32s: every 10th node (another tenth) announces an address of the next node's first block.
      const borrowers = peers.map((_, i) => i).filter((i) => i % 10 === 5 && i + 1 < n);
      const t1 = now();
      for (const i of borrowers) {
        const blockNet = parseIpv4Number(cidrAddress(blocksOf(i + 1)[0]!));
        await tester.call({ type: 'announce', index: i, prefixes: [`${formatIpv4Number(blockNet + 63)}/32`] });
      }
      const b = await until(
        'borrowed /32s programmed',
        (c) => c.learned === base + borrowers.length && c.programmed >= base + borrowers.length,
      );
      r.borrowS = b === undefined ? undefined : (now() - t1) / 1000;
      r.churnCpu = sample([a.pid]).cpu - cpu0;
    }
    r.slowestStatusS = slowestStatusMs / 1000;
    const end = sample([a.pid]);
    r.rssEnd = end.rss;
    r.peakEnd = Math.max(peak, end.peak);
    r.testerCpu = sample([tester.pid]).cpu - testerBefore.cpu;
    r.loadAfter = load();
    // The agent's own stop may not end in an exit the profiler sees: it writes what it has on SIGHUP.
    if (PROFILE) {
      process.kill(a.pid, 'SIGHUP');
      await profileWritten(PROFILE, a.pid, 30_000);
    }
    return r;
  } finally {
    await agent?.stop();
    await tester.stop();
    await ds.close();
    await redis.stop();
    removeDir(dir);
  }
}

/** Sockets in TIME_WAIT whose local address is `ipv4` (/proc/net/tcp: little-endian hex, state 06). */
function timeWaits(ipv4: string): number {
  const le = Buffer.alloc(4);
  le.writeUInt32LE(parseIpv4Number(ipv4));
  const hex = le.toString('hex').toUpperCase();
  let n = 0;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const [, local, , state] = line.trim().split(/\s+/);
    if (state === '06' && local?.startsWith(`${hex}:`)) n++;
  }
  return n;
}

const f = (x: number | undefined, d = 1) => (x === undefined ? '—' : x.toFixed(d));

function table(results: MeshResult[]): string {
  const rows = [
    '| simulated nodes | TIME_WAIT on its address at start | control socket up (s) | all Established (s) | all 4N routes programmed (s) | agent CPU to there (s) | RSS idle → programmed (MB) | RSS peak (MB) | growth per peer (KiB) | churn: 10% down withdrawn / back / borrowed /32s programmed (s) | churn CPU (s) | slowest status answer (s) | load before / after | tester CPU (s) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    rows.push(
      `| ${r.nodes}${r.failed ? ` (${r.failed})` : ''} | ${r.timeWaitAtStart} | ${f(r.controlS)} | ${f(r.establishedS)} | ${f(r.programmedS)} | ${f(r.cpuAtProgrammed)} | ${f(mb(r.idleRss), 0)} → ${r.rssAtProgrammed === undefined ? '—' : f(mb(r.rssAtProgrammed), 0)} | ${f(mb(r.peakEnd), 0)} | ${r.rssAtProgrammed === undefined ? '—' : f((r.rssAtProgrammed - r.idleRss) / 1024 / r.nodes, 0)} | ${f(r.downS)} / ${f(r.backS)} / ${f(r.borrowS)} | ${f(r.churnCpu)} | ${f(r.slowestStatusS)} | ${r.loadBefore} / ${r.loadAfter} | ${f(r.testerCpu)} |`,
    );
  }
  return rows.join('\n');
}

const results: MeshResult[] = [];
console.log(
  `# mesh, podroute node run (memory dataplane, Redis) + N simulated nodes × 4 /26, ${new Date().toISOString()}, load ${load()}, Node ${process.versions.node}`,
);
for (const n of SIZES) {
  process.stderr.write(`mesh: ${n} simulated nodes\n`);
  try {
    const r = await runOne(n);
    results.push(r);
    process.stderr.write(`  ${JSON.stringify(r)}\n`);
  } catch (e) {
    process.stderr.write(`  ${n} failed: ${(e as Error).stack}\n`);
    results.push({
      nodes: n,
      timeWaitAtStart: timeWaits(AGENT_IP),
      loadBefore: '',
      loadAfter: load(),
      idleRss: 0,
      rssEnd: 0,
      peakEnd: 0,
      testerCpu: 0,
      failed: (e as Error).message.split('\n')[0],
    });
  }
}
console.log(table(results));
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify(results, null, 2));
process.exit(0);
