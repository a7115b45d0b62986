// Why a change was slow: each sample of the policy benchmarks told apart by what its time went
// to, so that a tail is named before it is cut. Per change: the main thread's own CPU and its
// wait for a core (the kernel's schedstat for the thread, in nanoseconds), the CPU of the
// process's other threads (V8's GC helpers: concurrent marking and sweeping), V8's pauses on the
// main thread inside the change (perf_hooks' gc entries, by kind), and the kernel step's excess
// over its median (the netlink commit).
import { openSync, readSync } from 'node:fs';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import type { PodrouteSample } from './policy-podroute.js';
import { median, ms, table } from './policy-stats.js';

/**
 * The kernel's schedstat of the thread that first asked (the main thread: the bench asks from
 * no other), opened once and read again from its start into one buffer, the digits parsed in
 * place: a probe around every step of a change must not allocate what it then counts as the
 * change's (readFileSync and a split made about 0.5 KiB a read) nor open a file each time.
 */
let schedstat: number | null | undefined;
const schedstatText = Buffer.alloc(96);

/** How many times each probe ran, so that what they allocate can be taken out of a change's count (bench/policy-steps.ts). */
export const probeCalls = { threadTimes: 0, cpuNow: 0 };

/** The calling thread's time on a core and waiting in the run queue, from the kernel's schedstat (ms). */
export function threadTimes(): { cpu: number; wait: number } {
  probeCalls.threadTimes++;
  if (schedstat === undefined) {
    try {
      schedstat = openSync('/proc/thread-self/schedstat', 'r');
    } catch {
      schedstat = null;
    }
  }
  if (schedstat === null) return { cpu: Number.NaN, wait: Number.NaN };
  const n = readSync(schedstat, schedstatText, 0, schedstatText.length, 0);
  let i = 0;
  let run = 0;
  let wait = 0;
  for (; i < n && schedstatText[i] !== 0x20; i++) run = run * 10 + schedstatText[i]! - 0x30;
  for (i++; i < n && schedstatText[i] !== 0x20; i++) wait = wait * 10 + schedstatText[i]! - 0x30;
  return { cpu: run / 1e6, wait: wait / 1e6 };
}

/** One of V8's pauses as perf_hooks reports it. */
interface GcPause {
  readonly start: number;
  readonly end: number;
  readonly kind: GcKind;
}

export type GcKind = 'scavenge' | 'mark-compact' | 'incremental' | 'weak callbacks';

function kindOf(k: number | undefined): GcKind {
  if (k === constants.NODE_PERFORMANCE_GC_MAJOR) return 'mark-compact';
  if (k === constants.NODE_PERFORMANCE_GC_INCREMENTAL) return 'incremental';
  if (k === constants.NODE_PERFORMANCE_GC_WEAKCB) return 'weak callbacks';
  return 'scavenge';
}

/**
 * V8's pauses on the main thread for as long as it is open, on performance.now()'s clock. The
 * entries arrive after the pause, asynchronously; read them once the changes are done.
 */
export class GcLog {
  private readonly pauses: GcPause[] = [];
  private readonly observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = kindOf((e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind);
      this.pauses.push({ start: e.startTime, end: e.startTime + e.duration, kind });
    }
  });

  constructor() {
    this.observer.observe({ entryTypes: ['gc'] });
  }

  /** Milliseconds of each kind of pause inside the windows (each [from, to] on performance.now()). */
  within(windows: readonly (readonly [number, number])[]): Map<GcKind, number> {
    const out = new Map<GcKind, number>();
    for (const p of this.pauses) {
      for (const [from, to] of windows) {
        const overlap = Math.min(p.end, to) - Math.max(p.start, from);
        if (overlap > 0) out.set(p.kind, (out.get(p.kind) ?? 0) + overlap);
      }
    }
    return out;
  }

  /** How many pauses of each kind, and their total milliseconds, since the log opened (and before `until`). */
  totals(until = Number.POSITIVE_INFINITY): Map<GcKind, { count: number; ms: number }> {
    const out = new Map<GcKind, { count: number; ms: number }>();
    for (const p of this.pauses) {
      if (p.start >= until) continue;
      const t = out.get(p.kind) ?? { count: 0, ms: 0 };
      out.set(p.kind, { count: t.count + 1, ms: t.ms + p.end - p.start });
    }
    return out;
  }

  close(): void {
    this.observer.disconnect();
  }
}

/** What the attribution reads of one change (PodrouteSample's fields). */
export interface Attributed {
  readonly totalMs: number;
  readonly cpuMs: number;
  readonly nftMs: number;
  /** The main thread: time on a core, waiting for one, and the wall time they were read over; the same in the kernel step alone. */
  readonly threadCpuMs: number;
  readonly threadWaitMs: number;
  readonly threadWallMs: number;
  readonly kernelThreadCpuMs: number;
  readonly kernelThreadWaitMs: number;
  readonly kernelThreadWallMs: number;
  /** The change's spans on performance.now() (the calculation and the rest may lie apart). */
  readonly windows: readonly (readonly [number, number])[];
}

export const CAUSES = ['run queue', 'kernel asleep', 'kernel CPU', 'GC pause', 'own code'] as const;
export type Cause = (typeof CAUSES)[number];

/** The kernel step's wall time in which the main thread neither ran nor waited for a core: it slept in the kernel. */
const kernelAsleep = (s: Attributed): number => s.kernelThreadWallMs - s.kernelThreadCpuMs - s.kernelThreadWaitMs;

/**
 * What a change's wall time held beyond the median change of its kind, by cause (they sum to
 * the excess): the main thread waiting for a core; asleep in the kernel step (the commit
 * waiting on something); on a core in the kernel step; in V8's pauses; on a core in its own
 * code (the rest of its CPU). Beside them, not in the wall time, the other threads' CPU (V8's
 * GC helpers) beyond the median.
 */
export function excess(s: Attributed, typical: Attributed, gc: GcLog): Record<Cause, number> & { helpers: number } {
  const pauses = [...gc.within(s.windows).values()].reduce((a, b) => a + b, 0);
  const kernelCpu = s.kernelThreadCpuMs - typical.kernelThreadCpuMs;
  return {
    'run queue': s.threadWaitMs - typical.threadWaitMs,
    'kernel asleep': kernelAsleep(s) - kernelAsleep(typical),
    'kernel CPU': kernelCpu,
    'GC pause': pauses,
    // The rest, so that the causes sum to the excess (the main thread's CPU is known to a tick only).
    'own code':
      s.threadWallMs -
      typical.threadWallMs -
      (s.threadWaitMs - typical.threadWaitMs) -
      (kernelAsleep(s) - kernelAsleep(typical)) -
      kernelCpu -
      pauses,
    helpers: s.cpuMs - s.threadCpuMs - (typical.cpuMs - typical.threadCpuMs),
  };
}

function attributed(s: PodrouteSample): Attributed {
  return {
    totalMs: s.totalMs,
    cpuMs: s.cpu.total,
    nftMs: s.nftMs,
    threadCpuMs: s.threadCpuMs,
    threadWaitMs: s.threadWaitMs,
    threadWallMs: s.threadWallMs,
    kernelThreadCpuMs: s.kernelThreadCpuMs,
    kernelThreadWaitMs: s.kernelThreadWaitMs,
    kernelThreadWallMs: s.kernelThreadWallMs,
    windows: s.windows,
  };
}

const byTotal = (a: Attributed, b: Attributed) => a.totalMs - b.totalMs;

/** The median sample of a kind, field by field. */
function typicalOf(samples: readonly Attributed[]): Attributed {
  const m = (f: (s: Attributed) => number) => median(samples.map(f));
  return {
    totalMs: m((s) => s.totalMs),
    cpuMs: m((s) => s.cpuMs),
    nftMs: m((s) => s.nftMs),
    threadCpuMs: m((s) => s.threadCpuMs),
    threadWaitMs: m((s) => s.threadWaitMs),
    threadWallMs: m((s) => s.threadWallMs),
    kernelThreadCpuMs: m((s) => s.kernelThreadCpuMs),
    kernelThreadWaitMs: m((s) => s.kernelThreadWaitMs),
    kernelThreadWallMs: m((s) => s.kernelThreadWallMs),
    windows: [],
  };
}

/**
 * A table of the slowest changes of each kind (those over `factor` × the kind's median, at most
 * `top` of them), each with its excess split by cause and the cause that carried most of it;
 * then per kind, how many tail changes each cause led.
 */
export function tailReport(kinds: ReadonlyMap<string, readonly PodrouteSample[]>, gc: GcLog, factor = 3, top = 4): string {
  const rows: string[][] = [];
  const led: string[][] = [];
  for (const [kind, list] of kinds) {
    const samples = list.map(attributed);
    const typical = typicalOf(samples);
    const tail = samples
      .filter((s) => s.totalMs > factor * typical.totalMs)
      .sort(byTotal)
      .reverse();
    const counts = new Map<Cause, number>();
    for (const [i, s] of tail.entries()) {
      const e = excess(s, typical, gc);
      const lead = CAUSES.reduce((a, b) => (e[b] > e[a] ? b : a));
      counts.set(lead, (counts.get(lead) ?? 0) + 1);
      if (i >= top) continue;
      const pauses = [...gc.within(s.windows)].map(([k, t]) => `${k} ${ms(t)}`).join(', ');
      rows.push([kind, ms(s.totalMs), ms(s.cpuMs), ...CAUSES.map((c) => ms(e[c])), ms(e.helpers), pauses || '—', lead]);
    }
    led.push([kind, `${tail.length}/${samples.length}`, ...CAUSES.map((c) => String(counts.get(c) ?? 0))]);
  }
  const out: string[] = [];
  out.push(
    `The slowest changes (over ${factor}× their kind's median wall time): what each spent beyond the median change of its kind (ms) — ` +
      "the main thread waiting for a core, asleep in the kernel step, on a core in the kernel step, in V8's pauses, in its own code (these sum to the excess); " +
      "beside them the other threads' CPU (V8's GC helpers), which is not in the wall time:",
  );
  out.push(table(['change', 'wall', 'CPU', ...CAUSES, 'other threads', "V8's pauses in it", 'led by'], rows));
  out.push('');
  out.push(`Changes over ${factor}× the median, by the cause that carried most of the excess:`);
  out.push(table(['change', 'over', ...CAUSES], led));
  return out.join('\n');
}

/** The log's pauses since it opened, by kind: count, total, and the longest changes they hit. */
export function gcSummary(gc: GcLog, changes: number, until?: number, idleScavenges?: number): string {
  const parts = [...gc.totals(until)].map(([k, t]) => `${k} ${t.count} (${ms(t.ms)} ms in all, ${ms(t.ms / t.count)} ms each)`);
  const idle =
    idleScavenges === undefined ? '' : ` Of the scavenges, ${idleScavenges} ran in the quiet after a change (the agent's idle scavenge).`;
  return `V8's pauses over the ${changes} changes: ${parts.join('; ') || 'none'}.${idle}`;
}
