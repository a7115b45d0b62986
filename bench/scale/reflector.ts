// One route reflector process against a simulated cluster: N clients (127.1.x.y, one lean BGP
// session each, from the tester process) × 4 /26 blocks, every client dialling the reflector
// and announcing its blocks as soon as it is Established. Done when every client holds the
// other clients' 4(N-1) routes: every `--sample-every`-th client keeps each prefix (exact);
// the others count announcements (a repeat would count twice, a reflector sends none here).
// podroute, BIRD and FRR (bgpd -Z) in the same run, one after the other.
//
//   node --import tsx bench/scale/reflector.ts [--clients 1400] [--daemons podroute,bird,frr]
//        [--sample-every 50] [--concurrency 100] [--timeout 300] [--json file] [--profile dir]
import { mkdirSync, writeFileSync } from 'node:fs';
import { ASN, HOLD_TIME, REFLECTORS, RR_ADDRESS, startReflector, type ReflectorKind } from './daemons.js';
import { Tester, blocksOf, load, loopback, mb, now, profileWritten, quiet, sample, type ProcSample } from './harness.js';
import { freePort } from '../../bgp/session/free-port.js';

function arg(name: string, d: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : d;
}
const CLIENTS = Number(arg('clients', '1400'));
const DAEMONS = arg('daemons', REFLECTORS.join(',')).split(',') as ReflectorKind[];
const SAMPLE_EVERY = Number(arg('sample-every', '50'));
const CONCURRENCY = Number(arg('concurrency', '100'));
const TIMEOUT_S = Number(arg('timeout', '300'));
const JSON_OUT = arg('json', '');
const PROFILE = arg('profile', '');
// The profiler writes into the directory; it does not make it.
if (PROFILE) mkdirSync(PROFILE, { recursive: true });
for (const d of DAEMONS) if (!REFLECTORS.includes(d)) throw new Error(`--daemons: ${d} is not one of ${REFLECTORS.join(', ')}`);
if (!(CLIENTS >= 2 && CLIENTS <= 65000)) throw new Error(`--clients: ${CLIENTS} is not in 2..65000`);

export interface ReflectorResult {
  kind: ReflectorKind;
  version: string;
  clients: number;
  loadBefore: string;
  loadAfter: string;
  establishedS?: number;
  sampledConvergedS?: number;
  convergedS?: number;
  cpuAtEstablished?: number;
  cpuAtConverged?: number;
  cpuTotal: number;
  rssBefore: number;
  rssAfter: number;
  rssPeak: number;
  testerCpu: number;
  drops: number;
  /** Clients Established, and holding every route, when the run ended (all of them unless it failed). */
  establishedAtEnd: number;
  completeAtEnd: number;
  failed?: string;
  errors: Record<string, number>;
}

async function runOne(kind: ReflectorKind): Promise<ReflectorResult> {
  const port = await freePort();
  const tester = new Tester();
  const rr = await startReflector(kind, port, PROFILE);
  const pids = [rr.pid];
  await new Promise((r) => setTimeout(r, 1000));
  const before = sample(pids);
  const loadBefore = load();
  const testerBefore = sample([tester.pid]);
  const peers = Array.from({ length: CLIENTS }, (_, i) => ({ address: loopback(1, i), prefixes: blocksOf(i) }));
  const t0 = now();
  await tester.call({
    type: 'start',
    mode: 'dial',
    peers,
    target: { host: RR_ADDRESS, port },
    port,
    asn: ASN,
    holdTime: HOLD_TIME,
    sampleEvery: SAMPLE_EVERY,
    expected: 4 * (CLIENTS - 1),
    concurrency: CONCURRENCY,
  });
  let peak = before.peak;
  let atEstablished: ProcSample | undefined;
  let atConverged: ProcSample | undefined;
  let failed: string | undefined;
  const deadline = Date.now() + TIMEOUT_S * 1000;
  let lastLog = 0;
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    const s = sample(pids);
    peak = Math.max(peak, s.peak);
    const p = tester.progress;
    if (p?.allEstablishedAt !== undefined && !atEstablished) atEstablished = s;
    if (p?.convergedAt !== undefined) {
      atConverged = s;
      break;
    }
    if (s.rss === 0) {
      failed = 'reflector exited';
      break;
    }
    if (Date.now() > deadline) {
      failed = `not converged in ${TIMEOUT_S} s`;
      break;
    }
    if (Date.now() - lastLog > 10_000) {
      lastLog = Date.now();
      process.stderr.write(
        `  ${kind} ${((now() - t0) / 1000).toFixed(0)} s: established ${p?.established ?? 0}/${CLIENTS}, complete ${p?.complete ?? 0}, sampled ${p?.sampledComplete ?? 0}/${p?.sampled ?? 0}, cpu ${(s.cpu - before.cpu).toFixed(1)} s, rss ${mb(s.rss).toFixed(0)} MB, load ${load()}\n`,
      );
    }
  }
  const p = tester.progress!;
  // The reflector dies by SIGTERM without an exit handler: the profiler writes what it has on SIGHUP.
  if (PROFILE && kind === 'podroute') {
    process.kill(rr.pid, 'SIGHUP');
    await profileWritten(PROFILE, rr.pid, 30_000);
  }
  const after = await quiet(pids, 30_000);
  peak = Math.max(peak, after.peak);
  const testerAfter = sample([tester.pid]);
  await tester.stop();
  await rr.stop();
  const secs = (t?: number) => (t === undefined ? undefined : (t - t0) / 1000);
  return {
    kind,
    version: rr.version,
    clients: CLIENTS,
    loadBefore,
    loadAfter: load(),
    establishedS: secs(p.allEstablishedAt),
    sampledConvergedS: secs(p.sampledConvergedAt),
    convergedS: secs(p.convergedAt),
    cpuAtEstablished: atEstablished && atEstablished.cpu - before.cpu,
    cpuAtConverged: atConverged && atConverged.cpu - before.cpu,
    cpuTotal: after.cpu - before.cpu,
    rssBefore: before.rss,
    rssAfter: after.rss,
    rssPeak: peak,
    testerCpu: testerAfter.cpu - testerBefore.cpu,
    drops: p.drops,
    establishedAtEnd: p.established,
    completeAtEnd: p.complete,
    errors: p.errors,
    ...(failed && { failed }),
  };
}

const f = (x: number | undefined, d = 1) => (x === undefined ? '—' : x.toFixed(d));

function table(results: ReflectorResult[]): string {
  const rows = [
    '| reflector | all Established (s) | sampled converged (s) | all converged (s) | CPU to converged (s) | CPU total (s) | RSS before → after (MB) | RSS peak (MB) | growth per client (KiB) | load before / after | tester CPU (s) |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    rows.push(
      `| ${r.version}${r.failed ? ` (${r.failed}: ${r.establishedAtEnd} Established, ${r.completeAtEnd} complete)` : ''} | ${f(r.establishedS)} | ${f(r.sampledConvergedS)} | ${f(r.convergedS)} | ${f(r.cpuAtConverged)} | ${f(r.cpuTotal)} | ${f(mb(r.rssBefore), 0)} → ${f(mb(r.rssAfter), 0)} | ${f(mb(r.rssPeak), 0)} | ${f((r.rssPeak - r.rssBefore) / 1024 / r.clients, 0)} | ${r.loadBefore} / ${r.loadAfter} | ${f(r.testerCpu)} |`,
    );
  }
  const pod = results.find((r) => r.kind === 'podroute');
  for (const ref of results.filter((r) => r.kind !== 'podroute')) {
    if (!pod) break;
    const q = (a?: number, b?: number) => (a === undefined || b === undefined || b === 0 ? '—' : `${(a / b).toFixed(2)}×`);
    rows.push(
      `| podroute ÷ ${ref.kind} | ${q(pod.establishedS, ref.establishedS)} | ${q(pod.sampledConvergedS, ref.sampledConvergedS)} | ${q(pod.convergedS, ref.convergedS)} | ${q(pod.cpuAtConverged, ref.cpuAtConverged)} | ${q(pod.cpuTotal, ref.cpuTotal)} | ${q(pod.rssAfter, ref.rssAfter)} | ${q(pod.rssPeak, ref.rssPeak)} | ${q(pod.rssPeak - pod.rssBefore, ref.rssPeak - ref.rssBefore)} | | |`,
    );
  }
  return rows.join('\n');
}

const results: ReflectorResult[] = [];
console.log(`# reflector, ${CLIENTS} clients × 4 /26, ${new Date().toISOString()}, load ${load()}, sample every ${SAMPLE_EVERY}`);
for (const kind of DAEMONS) {
  process.stderr.write(`${kind}: ${CLIENTS} clients\n`);
  try {
    const r = await runOne(kind);
    results.push(r);
    process.stderr.write(`  ${JSON.stringify(r)}\n`);
  } catch (e) {
    process.stderr.write(`  ${kind} failed: ${(e as Error).stack}\n`);
  }
}
console.log(table(results));
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify(results, null, 2));
process.exit(0);
