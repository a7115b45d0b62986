// The speaker benchmark: every selected scenario against every selected daemon, one after the
// other in one run, then a table per scenario with ratios of podroute against each reference.
//
//   node --import tsx bench/speaker/run.ts [--scenario 1x100k,10x10k] [--daemons podroute,bird]
//        [--json out.json] [--timeout-scale 2] [--force] [--repeat 3] [--profile dir] [--alloc-profile dir]
//        [--poll-ms 200] [--bgpd-node-options '--single-threaded-gc']
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cpus, loadavg, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { benchOne, type PhaseFigures } from './bench.js';
import { DAEMONS, podrouteNodeOptions, type DaemonKind } from './daemons.js';
import { SCENARIOS, scenarioByName } from './scenarios.js';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: SCENARIOS.map((s) => s.name).join(',') },
    daemons: { type: 'string', default: DAEMONS.join(',') },
    json: { type: 'string' },
    'timeout-scale': { type: 'string', default: '1' },
    force: { type: 'boolean', default: false },
    /** Runs of each scenario and daemon; the table shows the run with the median monitor time. */
    repeat: { type: 'string', default: '1' },
    /** How often the daemon's own counters are read (0: never; the "daemon has all" column stays empty). */
    'poll-ms': { type: 'string', default: '200' },
    /** Extra Node flags for podroute bgpd, space-separated, on its command line (so V8 flags NODE_OPTIONS refuses work too). */
    'bgpd-node-options': { type: 'string', default: '' },
    /** Directory for podroute bgpd's CPU profiles (written when it stops). */
    profile: { type: 'string' },
    /** Directory for podroute bgpd's allocation profiles, collected objects included (written when it stops). */
    'alloc-profile': { type: 'string' },
  },
});

const scenarios = values.scenario!.split(',').map(scenarioByName);
const daemons = values.daemons!.split(',').map((d) => {
  if (!(DAEMONS as readonly string[]).includes(d))
    throw new Error(`--daemons: unknown daemon ${JSON.stringify(d)}: one of ${DAEMONS.join(', ')}`);
  return d as DaemonKind;
});
podrouteNodeOptions.push(...values['bgpd-node-options']!.split(' ').filter(Boolean));
if (values.profile) {
  mkdirSync(resolve(values.profile), { recursive: true });
  process.env.PODROUTE_CPU_PROFILE_DIR = resolve(values.profile);
  podrouteNodeOptions.push(`--import=${fileURLToPath(new URL('./cpu-profile.mjs', import.meta.url))}`, '--heapsnapshot-signal=SIGUSR2');
}
if (values['alloc-profile']) {
  mkdirSync(resolve(values['alloc-profile']), { recursive: true });
  process.env.PODROUTE_ALLOC_PROFILE_DIR = resolve(values['alloc-profile']);
  podrouteNodeOptions.push(`--import=${fileURLToPath(new URL('./alloc-profile.mjs', import.meta.url))}`);
}

const repeat = Math.max(1, Number(values.repeat));

/** The run whose measured phases took the median monitor time (whole runs, so a row stays one run's figures). */
function medianRun(runs: PhaseFigures[][]): PhaseFigures[] {
  if (runs.length === 0) return [];
  const total = (r: PhaseFigures[]) => r.filter((f) => f.measured).reduce((t, f) => t + f.monitorSec, 0);
  const sorted = [...runs].sort((a, b) => total(a) - total(b));
  return sorted[(sorted.length - 1) >> 1]!;
}

const started = new Date();
const load0 = loadavg();
const all: PhaseFigures[] = [];
for (const s of scenarios) {
  console.error(`scenario ${s.name}: ${s.describe}`);
  for (const d of daemons) {
    if (s.skip?.[d] && !values.force) {
      console.error(`  ${d}: skipped: ${s.skip[d]} (--force runs it)`);
      continue;
    }
    const runs: PhaseFigures[][] = [];
    for (let r = 0; r < repeat; r++) {
      try {
        runs.push(
          await benchOne(s, d, {
            timeoutScale: Number(values['timeout-scale']),
            profile: values.profile !== undefined,
            pollMs: Number(values['poll-ms']),
            log: (l) => console.error(l),
          }),
        );
      } catch (e) {
        console.error(`  ${d}: FAILED: ${(e as Error).message}`);
      }
      if (runs.at(-1)?.some((f) => f.timedOut)) break; // once too slow, always too slow
    }
    all.push(...medianRun(runs));
  }
}

const fmt = (x: number | undefined, digits = 2) => (x === undefined ? '—' : x.toFixed(digits));
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || b === 0 ? '—' : `${(a / b).toFixed(2)}×`;

// Memory per route: only where both grew by a few MB at least (else it is noise).
const growthRatio = (a: PhaseFigures | undefined, b: PhaseFigures) => {
  const ga = a && a.rssMb - a.rssBeforeMb;
  const gb = b.rssMb - b.rssBeforeMb;
  return ga === undefined || ga < 4 || gb < 4 ? '—' : ratio(ga, gb);
};
const lines: string[] = [];
lines.push(
  `${started.toISOString()} · ${cpus().length} × ${cpus()[0]?.model ?? '?'} · ${(totalmem() / 2 ** 30).toFixed(1)} GB · load ${load0.map((x) => x.toFixed(2)).join(' ')} at start, ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} at end`,
);
const versions = new Map(all.map((f) => [f.daemon, f.version]));
lines.push(`versions: ${[...versions.values()].join('; ')}`, '');
lines.push(
  '| scenario | daemon | daemon has all (s) | monitor has all (s) | CPU (s) | main thread CPU (s) | RSS after (MB) | RSS growth (MB) | peak RSS (MB) | podroute ÷ this: time | ÷ CPU | ÷ RSS growth | ÷ peak RSS | load (1 min) |',
);
lines.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const s of scenarios) {
  const rows = all.filter((f) => f.scenario === s.name && f.measured);
  for (const f of rows) {
    const ours = rows.find((r) => r.daemon === 'podroute' && r.phase === f.phase);
    const monitor = f.complete
      ? fmt(f.monitorSec)
      : `${fmt(f.monitorSec)} (${f.monitorHeld.toLocaleString('en')}/${f.expected.toLocaleString('en')}${f.timedOut ? ', timed out' : ''})`;
    const name = rows.some((r) => r.phase !== f.phase) ? `${s.name} ${f.phase}` : s.name;
    lines.push(
      `| ${name} | ${f.daemon} | ${fmt(f.receiveSec)} | ${monitor} | ${fmt(f.cpuSec, 3)} | ${fmt(f.mainThreadCpuSec, 3)} | ${fmt(f.rssMb, 0)} | ${fmt(f.rssMb - f.rssBeforeMb, 0)} | ${fmt(f.peakRssMb, 0)} | ${f.daemon === 'podroute' ? '' : ratio(ours?.monitorSec, f.complete ? f.monitorSec : undefined)} | ${f.daemon === 'podroute' ? '' : ratio(ours?.cpuSec, f.cpuSec)} | ${f.daemon === 'podroute' ? '' : growthRatio(ours, f)} | ${f.daemon === 'podroute' ? '' : ratio(ours?.peakRssMb, f.peakRssMb)} | ${fmt(f.load[0])} |`,
    );
  }
}
console.log(lines.join('\n'));
if (values.json) writeFileSync(values.json, JSON.stringify({ started, load: load0, figures: all }, null, 2));
