// The event loop during a stale-conntrack cleanup (NetlinkConntrackCleaner): a namespace whose
// table holds --entries UDP entries (made over ctnetlink), then --reps cleanups of one port's two
// stale entries (the dump narrowed by the kernel, which still walks its whole hash) and --reps of
// five ports (one dump of the family, every UDP entry read). For each: the cleanup's time and the
// event loop's longest block while it ran (a 1 ms timer's longest gap, and
// monitorEventLoopDelay's maximum). Root only; the namespace is deleted on the way out.
//
//   npx tsx bench/conntrack-cleanup.ts [--entries 100000] [--reps 20] [--felix <checkout>]
//
// --felix: the checkout whose felix/services/conntrack-netlink.ts runs the cleanups (another
// worktree, to compare); the table is made with this one's test support either way.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import type { ConntrackFilter } from '../felix/services/conntrack.js';
import { ConntrackLab } from '../test/support/conntrack-lab.js';

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const ENTRIES = Number(arg('entries', '100000'));
const REPS = Number(arg('reps', '20'));
const FELIX = resolve(arg('felix', resolve(import.meta.dirname, '..')));

const { NetlinkConntrackCleaner } = (await import(
  `${FELIX}/felix/services/conntrack-netlink.ts`
)) as typeof import('../felix/services/conntrack-netlink.js');

const stale = (port: number): ConntrackFilter => ({
  family: 4,
  protocol: 'udp',
  origDst: '10.96.0.10',
  origDstPort: port,
  replySrc: '10.1.0.2',
});
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const max = (xs: number[]) => Math.max(...xs);

/** Starts a 1 ms timer; the returned function stops it and says its longest gap. */
function loopGaps(): () => number {
  let last = performance.now();
  let gap = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
  }, 1);
  return () => {
    clearInterval(timer);
    return Math.max(gap, performance.now() - last);
  };
}

const lab = ConntrackLab.create('bctl', []);
try {
  await lab.insert(ENTRIES, { dst: '10.96.1.1', port: 5000, endpoint: '10.1.0.9', endpointPort: 5000 }, 600);
  const errors: string[] = [];
  const cleaner = new NetlinkConntrackCleaner({ netns: lab.name, onError: (e: string) => errors.push(e) });
  for (const [what, ports] of [
    ['one port', [0]],
    ['five ports (one dump of the family)', [0, 1, 2, 3, 4]],
  ] as const) {
    const took: number[] = [];
    const gaps: number[] = [];
    const delays: number[] = [];
    const idle: number[] = [];
    for (let r = 0; r < REPS; r++) {
      const base = 100 + r * 5;
      await lab.insert(2, { dst: '10.96.0.10', port: base, endpoint: '10.1.0.2', endpointPort: 5353 }, 600);
      const h = monitorEventLoopDelay({ resolution: 1 });
      const watch = loopGaps();
      h.enable();
      const t0 = performance.now();
      const deleted = await cleaner.clear(ports.map((p) => stale(base + p)));
      const ms = performance.now() - t0;
      h.disable();
      gaps.push(watch());
      if (deleted !== 2) throw new Error(`${what}: ${deleted} deleted, not 2 (${errors.join('; ')})`);
      took.push(ms);
      delays.push(h.max / 1e6);
      // The machine's own noise: the same timer as long again, nothing else running.
      const still = loopGaps();
      await new Promise((r) => setTimeout(r, ms));
      idle.push(still());
    }
    const f = (x: number) => x.toFixed(1);
    console.log(
      `${what}, ${ENTRIES} entries: cleanup median ${f(median(took))} ms; loop's longest block median ${f(median(gaps))} ms, max ${f(max(gaps))} ms (delay histogram max: median ${f(median(delays))} ms; idle as long: median ${f(median(idle))} ms); load ${loadavg()[0]!.toFixed(2)}`,
    );
  }
} finally {
  lab.destroy();
}
