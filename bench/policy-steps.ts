// podroute's side of the policy benchmark alone, step by step: the same cluster and changes as
// bench/policy.ts, without the reference, each change split into the calculation graph, the
// compile, the programmer's plan and the kernel step, in wall time and in the process's CPU time
// (on a loaded machine the wall time carries the wait for a core; the CPU time does not), and
// the kernel step's CPU split into the process's own (building the batch, reading the answers)
// and the kernel's (the commit runs in the send). With --profile, V8's sampling profiler runs
// through the changes and each kind's samples are summed by function: where its time goes.
// Every run ends with the tail told apart (policy-attribution.ts): each change slower than 3×
// its kind's median, its excess split into the main thread's wait for a core, its sleep and its
// CPU in the kernel step, V8's pauses and its own code; V8's pauses over the changes; and the
// heap held after a full collection before and after them (what the changes keep). With
// --allocations, V8's sampling heap profiler runs through the changes: the bytes a change
// allocates, by function (a builtin named with its caller); with --retained, only those still
// reachable at the end.
//
//   npx tsx bench/policy-steps.ts [--reps 40] [--kinds 'pod add, local;policy rule edited']
//                                 [--warmup 1000] [--no-idle-scavenge] [--profile | --allocations | --retained] [--top 25] [--wait 0] [--gap 0]
//                                 [--policies 1000]
//                                 [--endpoints 10000] [--local 150] [--namespaces 100] [--seed 1]  (root)
//
// --warmup: repetitions of every change made before the measured ones, as a node's agent that
// has run a while has made them: V8 has compiled what the changes run. V8 optimizes a function
// once it has run enough of its own bytecode, so one called once a change, doing little itself,
// waits 4,000-5,000 changes; until then a fresh agent's changes keep starting compilations (1-20
// ms each) on V8's background threads, and on two cores those threads take the core the next
// change waits for. The first --reps of them are reported as the cold figures.
// --kinds: only these changes (and the one that undoes each: a pod added is deleted again) are
// made. --wait: seconds to wait after the initial load, its pid printed, for `perf record -p`
// to be attached to the changes alone (the kernel's part of them: `perf report --comm node`).
// --gap: milliseconds of idle before each change. Changes made back to back find the caches
// and TLB holding the last change's data; on a node, and in bench/policy.ts (the reference's
// turn, about 50 ms, between two of podroute's changes), they arrive apart, and a remote pod
// add measured 1.3–1.7× slower with a 45 ms gap (a local one within the noise) on the 2-core
// VM of BENCHMARKS.md.
import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { hostname } from 'node:os';
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type PolicyInput, policyTier } from '../felix/index.js';
import { kubernetesPolicyId, type PolicyCalculator } from '../lib/policy/index.js';
import { type KubernetesNetworkPolicy, resourceKey } from '../lib/resources/index.js';
import { numberArg } from './args.js';
import { GcLog, gcSummary, probeCalls, tailReport, threadTimes } from './policy-attribution.js';
import { Namespaces } from './policy-exec.js';
import { cpuNow, PodrouteSide, type PodrouteSample } from './policy-podroute.js';
import { count, median, ms, p99Note, percentile, table } from './policy-stats.js';
import { LOCAL_NODE, PolicyWorkload } from './policy-workload.js';

const arg = (name: string, d: number): number => numberArg(name, d);
const REPS = Math.max(1, arg('--reps', 40));
const WARMUP = Math.max(0, arg('--warmup', 1000));
const IDLE_SCAVENGE = !process.argv.includes('--no-idle-scavenge');
const TOP = arg('--top', 25);
const PROFILE = process.argv.includes('--profile');
const ALLOCATIONS = process.argv.includes('--allocations') || process.argv.includes('--retained');
/** Only the allocations still reachable when the changes end: what the changes keep (and V8 promotes). */
const RETAINED = process.argv.includes('--retained');
const WAIT = arg('--wait', 0);
const GAP = arg('--gap', 0);
const KINDS = [
  'pod add, remote',
  'pod delete, remote',
  'pod add, local',
  'pod delete, local',
  'policy rule edited',
  'pod relabel, remote',
  'pod relabel, local',
] as const;
type Kind = (typeof KINDS)[number];
/** A change made only to undo another, so that the table does not grow. */
const UNDOES: Partial<Record<Kind, Kind>> = {
  'pod delete, remote': 'pod add, remote',
  'pod add, remote': 'pod delete, remote',
  'pod delete, local': 'pod add, local',
  'pod add, local': 'pod delete, local',
};
const SELECTED = ((): ReadonlySet<Kind> => {
  const i = process.argv.indexOf('--kinds');
  if (i < 0) return new Set(KINDS);
  const names = (process.argv[i + 1] ?? '').split(';').map((s) => s.trim());
  for (const n of names)
    if (!(KINDS as readonly string[]).includes(n)) throw new Error(`--kinds: ${JSON.stringify(n)} is none of ${KINDS.join('; ')}`);
  return new Set(names as Kind[]);
})();

/**
 * The heap in use after a full collection (made here: bench only), so what the changes left
 * reachable is told apart from the garbage old space holds until its next collection.
 */
function heldHeap(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return getHeapStatistics().used_heap_size;
}

/** p50, p99 and their ratio of each kind's wall times. */
const coldRows = (cold: ReadonlyMap<string, readonly number[]>): string[][] =>
  [...cold].map(([kind, walls]) => [kind, ms(median(walls)), ms(percentile(walls, 99)), ms(percentile(walls, 99) / median(walls))]);

/** A change's own allocation: the young generation's growth less what the bench's probes allocated in it. */
const allocatedBy = (g: { bytes: number; threadTimes: number; cpuNow: number }, p: ProbeBytes): number =>
  g.bytes - p.pair - g.threadTimes * p.threadTimes - g.cpuNow * p.cpuNow;

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const loadavg = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
/** Bytes in V8's young generation now: what a change allocated, when no scavenge ran in it. */
const youngBytes = (): number => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_used_size ?? 0;
/** What the bench's own probes allocate (bytes): the youngBytes pair around a change, and each call of the two probes inside it. */
interface ProbeBytes {
  readonly pair: number;
  readonly threadTimes: number;
  readonly cpuNow: number;
}

/**
 * ProbeBytes, measured with nothing else running between two youngBytes (a median over many
 * tries, those a scavenge emptied the young generation in left out). Measured after the
 * changes, so the probes are as warm (compiled) as they were late in them.
 */
function probeBytes(): ProbeBytes {
  const CALLS = 16;
  const grew = (f: () => void): number => {
    const out: number[] = [];
    for (let t = 0; t < 201; t++) {
      const y0 = youngBytes();
      f();
      const d = youngBytes() - y0;
      if (d >= 0) out.push(d);
    }
    return median(out);
  };
  const pair = grew(() => {});
  const each = (probe: () => unknown) =>
    Math.max(
      0,
      (grew(() => {
        for (let i = 0; i < CALLS; i++) probe();
      }) -
        pair) /
        CALLS,
    );
  return { pair, threadTimes: each(threadTimes), cpuNow: each(cpuNow) };
}

/** CLOCK_MONOTONIC in microseconds, the clock V8's profile samples are stamped with. */
const monoUs = (): number => Number(process.hrtime.bigint() / 1000n);

interface ProfileNode {
  readonly id: number;
  readonly children?: readonly number[];
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

interface AllocationNode {
  readonly callFrame: ProfileNode['callFrame'];
  readonly selfSize: number;
  readonly children: readonly AllocationNode[];
}
interface AllocationProfile {
  readonly head: AllocationNode;
}

/** Bytes allocated per function (name and place), by itself and with what it called, largest first. */
function allocationsByFunction(p: AllocationProfile): { self: [string, number][]; total: [string, number][] } {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const walk = (n: AllocationNode, stack: readonly string[]): number => {
    const name = frameName(n.callFrame);
    // A builtin (slice, Set, Map) is named with the function of ours that called it.
    const own = n.callFrame.url ? name : `${name} ← ${[...stack].reverse().find((f) => f.includes(':')) ?? '?'}`;
    self.set(own, (self.get(own) ?? 0) + n.selfSize);
    let sum = n.selfSize;
    for (const c of n.children) sum += walk(c, [...stack, name]);
    if (!stack.includes(name)) total.set(name, (total.get(name) ?? 0) + sum);
    return sum;
  };
  walk(p.head, []);
  const byBytes = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  return { self: byBytes(self), total: byBytes(total) };
}

function frameName(f: ProfileNode['callFrame']): string {
  const file = f.url.replace(/^.*\/(felix|lib|bench|ip|node_modules)\//, '$1/').replace(/^node:/, '');
  return `${f.functionName || '(anonymous)'} ${file ? `${file}:${f.lineNumber + 1}` : ''}`.trim();
}

/** Self and total time per function (name and place) of the samples inside the windows, largest first. */
function selfTimes(p: Profile, windows: readonly [number, number][]): { self: [string, number][]; total: [string, number][] } {
  const frame = new Map<number, string>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  for (const n of p.nodes) {
    const f = n.callFrame;
    const file = f.url.replace(/^.*\/(felix|lib|bench|ip|node_modules)\//, '$1/').replace(/^node:/, '');
    frame.set(n.id, `${f.functionName || '(anonymous)'} ${file ? `${file}:${f.lineNumber + 1}` : ''}`.trim());
  }
  const sorted = [...windows].sort((a, b) => a[0] - b[0]);
  const out = new Map<string, number>();
  const total = new Map<string, number>();
  let t = p.startTime;
  let w = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    while (w < sorted.length && sorted[w]![1] < t) w++;
    if (w >= sorted.length) break;
    if (t < sorted[w]![0]) continue;
    const name = frame.get(p.samples[i]!) ?? '?';
    out.set(name, (out.get(name) ?? 0) + dt / 1000);
    const seen = new Set<string>();
    for (let id: number | undefined = p.samples[i]; id !== undefined; id = parent.get(id)) {
      const f = frame.get(id) ?? '?';
      if (seen.has(f)) continue;
      seen.add(f);
      total.set(f, (total.get(f) ?? 0) + dt / 1000);
    }
  }
  const byTime = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  return { self: byTime(out), total: byTime(total) };
}

/** The policies that apply to one of this node's endpoints in the input. */
const inUseBy = (input: PolicyInput): Set<string> =>
  new Set(input.endpoints.flatMap((e) => [...e.ingress, ...e.egress].flatMap((t) => policyTier(t).policies)));
const policyIdOf = (p: KubernetesNetworkPolicy): string => kubernetesPolicyId(p.metadata.namespace!, p.metadata.name);

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('bench/policy-steps.ts needs root (a network namespace)');
  const shape = {
    policies: arg('--policies', 1000),
    endpoints: arg('--endpoints', 10_000),
    local: arg('--local', 150),
    namespaces: arg('--namespaces', 100),
    seed: arg('--seed', 1),
  };
  const started = new Date();
  const loadStart = loadavg();
  const workload = new PolicyWorkload(shape);
  const namespaces = new Namespaces('pbstep').deleteOnSignal();
  const results = new Map<Kind, PodrouteSample[]>();
  /** The wall times (ms) of a fresh agent's first --reps changes of each kind, made in the warm-up. */
  const cold = new Map<Kind, number[]>();
  let warming = false;
  /**
   * Per kind, the young generation's growth over each change and the probes that ran in it
   * (changes in which a scavenge ran are left out); what the probes allocate is taken out once
   * measured, after the changes.
   */
  const grown = new Map<Kind, { bytes: number; threadTimes: number; cpuNow: number }[]>();
  let probes: ProbeBytes | undefined;
  const windows = new Map<Kind, [number, number][]>();
  let profile: Profile | undefined;
  const session = PROFILE || ALLOCATIONS ? new Session() : undefined;
  let allocationProfile: AllocationProfile | undefined;
  let loadMs = 0;
  let gc: GcLog | undefined;
  let changes = 0;
  let idleScavenges = 0;
  let warmed = 0;
  let heldBefore = 0;
  let heldAfter = 0;
  let changesEnd: number | undefined;
  const ours = new PodrouteSide(namespaces.add('s'), LOCAL_NODE, 'netlink', IDLE_SCAVENGE);
  try {
    const t0 = performance.now();
    const load = await ours.apply(
      ours.calculate((c) => {
        for (const r of workload.resources()) c.put(r);
      }),
    );
    loadMs = performance.now() - t0;
    if (!load.report.ok) throw new Error(`the initial load failed: ${load.report.error}`);

    const input = ours.calculator.input();
    const inUse = inUseBy(input);
    const editable = workload.policies.filter(
      (p) => inUse.has(policyIdOf(p)) && workload.hasNumericPort(p) && p.metadata.name.startsWith('np-1-'),
    );
    if (!editable.length) throw new Error('no policy of the TCP 8080 shape selects a local pod');
    // Relabels move this node's pods in and out of policies' selections: the policy edited is the
    // next of those that select one of them now, or its edit would change nothing in the kernel.
    const selectingNow = (rep: number): number => {
      const now = inUseBy(ours.calculator.input());
      let i = rep % editable.length;
      for (let k = 0; k < editable.length && !now.has(policyIdOf(editable[i]!)); k++) i = (i + 1) % editable.length;
      return i;
    };
    const localPods = workload.pods.slice(0, shape.local);
    const remoteIndex = (i: number) => shape.local + ((i * 7919) % (workload.pods.length - shape.local));

    const change = async (kind: Kind, mutate: (c: PolicyCalculator) => void) => {
      const undone = UNDOES[kind];
      if (!SELECTED.has(kind) && !(undone && SELECTED.has(undone))) return;
      if (GAP > 0) await new Promise((resolve) => setTimeout(resolve, GAP));
      const tt0 = probeCalls.threadTimes;
      const cpu0 = probeCalls.cpuNow;
      const y0 = youngBytes();
      const from = monoUs();
      const s = await ours.apply(ours.calculate(mutate));
      const to = monoUs();
      if (warming) warmed++;
      else changes++;
      const grew = youngBytes() - y0;
      if (!SELECTED.has(kind)) return;
      if (warming) {
        const c = cold.get(kind) ?? [];
        if (c.length < REPS) c.push(s.totalMs);
        cold.set(kind, c);
        return;
      }
      if (grew > 0) {
        const g = grown.get(kind) ?? [];
        g.push({ bytes: grew, threadTimes: probeCalls.threadTimes - tt0, cpuNow: probeCalls.cpuNow - cpu0 });
        grown.set(kind, g);
      }
      const list = results.get(kind) ?? [];
      list.push(s);
      results.set(kind, list);
      const w = windows.get(kind) ?? [];
      w.push([from, to]);
      windows.set(kind, w);
    };
    const repetition = async (rep: number) => {
      const remote = workload.newPod(1 + (rep % Math.max(1, workload.nodes - 1)));
      await change('pod add, remote', (c) => c.put(remote));
      await change('pod delete, remote', (c) => c.delete('WorkloadEndpoint', resourceKey(remote)));
      const local = workload.newPod(0);
      await change('pod add, local', (c) => c.put(local));
      await change('pod delete, local', (c) => c.delete('WorkloadEndpoint', resourceKey(local)));
      const i = selectingNow(rep);
      const edited = workload.movePort(editable[i]!);
      editable[i] = edited;
      await change('policy rule edited', (c) => c.put(edited));
      const ri = remoteIndex(rep);
      const relabelled = workload.relabel(workload.pods[ri]!);
      workload.pods[ri] = relabelled;
      await change('pod relabel, remote', (c) => c.put(relabelled));
      const li = rep % localPods.length;
      const localRelabelled = workload.relabel(localPods[li]!);
      localPods[li] = localRelabelled;
      await change('pod relabel, local', (c) => c.put(localRelabelled));
    };
    // The warm-up: the same changes, not profiled or told apart; a fresh agent's figures (the
    // first --reps of them) are kept as the cold ones.
    // Measured before the warm-up: the full collection it makes discards some of V8's compiled
    // code, whose recompiling would then fall in the measured changes.
    heldBefore = heldHeap();
    warming = WARMUP > 0;
    for (let rep = 0; rep < WARMUP; rep++) await repetition(rep);
    warming = false;
    if (WAIT > 0) {
      process.stderr.write(`loaded and warmed; pid ${process.pid}; changes start in ${WAIT} s\n`);
      await new Promise((resolve) => setTimeout(resolve, WAIT * 1000));
    }
    gc = new GcLog();
    if (session) session.connect();
    if (session && PROFILE) {
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 100 });
      await session.post('Profiler.start');
    }
    if (session && ALLOCATIONS) {
      // Every allocation, those the next scavenge frees too: what a change allocates, by function.
      await session.post('HeapProfiler.enable');
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 1024,
        includeObjectsCollectedByMajorGC: !RETAINED,
        includeObjectsCollectedByMinorGC: !RETAINED,
      });
    }
    const idleBefore = ours.idleScavenges;
    for (let rep = 0; rep < REPS; rep++) await repetition(WARMUP + rep);
    idleScavenges = ours.idleScavenges - idleBefore;
    if (session && PROFILE) profile = ((await session.post('Profiler.stop')) as { profile: Profile }).profile;
    if (session && ALLOCATIONS)
      allocationProfile = ((await session.post('HeapProfiler.stopSampling')) as { profile: AllocationProfile }).profile;
    changesEnd = performance.now();
    probes = probeBytes();
    heldAfter = heldHeap();
    const resync = await ours.resync();
    if (!resync.report.ok || resync.report.ops !== 0)
      throw new Error(`the kernel's table differs from the desired one after the changes: ${resync.report.ops} operations to repair it`);
  } finally {
    // perf_hooks hands GC entries over on a timer after the pause.
    await new Promise((resolve) => setTimeout(resolve, 100));
    gc?.close();
    session?.disconnect();
    ours.close();
    namespaces.deleteAll();
  }

  const out: string[] = [];
  out.push(
    `bench/policy-steps — ${started.toISOString()} on ${hostname()}, load average ${loadStart} at the start, ${loadavg()} at the end`,
  );
  out.push(`command: npx tsx bench/policy-steps.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
  out.push(
    `initial load ${ms(loadMs)} ms; ${WARMUP ? `${WARMUP} repetitions of each change to warm up, then ` : ''}${REPS} repetitions of each change${GAP > 0 ? `, ${GAP} ms apart` : ''}${PROFILE ? ', under the sampling profiler (100 µs)' : ''}`,
  );
  out.push('');
  out.push('Wall time (ms): p50 and p99 of the whole change, and each step’s own median:');
  const rows: string[][] = [];
  const cpuRows: string[][] = [];
  for (const kind of KINDS) {
    const o = results.get(kind);
    if (!o) continue;
    const p = (f: (s: PodrouteSample) => number, q = 50) => ms(percentile(o.map(f), q));
    rows.push([
      kind,
      p((s) => s.totalMs),
      p((s) => s.totalMs, 99),
      ms(
        percentile(
          o.map((s) => s.totalMs),
          99,
        ) / median(o.map((s) => s.totalMs)),
      ),
      p((s) => s.calcMs),
      p((s) => s.compileMs),
      p((s) => s.planMs),
      p((s) => s.nftMs),
      String(median(o.map((s) => s.report.ops))),
      ms(median((grown.get(kind) ?? []).map((g) => allocatedBy(g, probes!))) / 1024),
    ]);
    cpuRows.push([
      kind,
      p((s) => s.cpu.total),
      p((s) => s.cpu.total, 99),
      p((s) => s.cpu.calc),
      p((s) => s.cpu.compile),
      p((s) => s.cpu.plan),
      p((s) => s.cpu.kernel),
      // getrusage splits user from system by sampling ticks: only a mean over many changes means anything.
      ms(mean(o.map((s) => s.cpu.kernel - s.cpu.kernelSystem))),
      ms(mean(o.map((s) => s.cpu.kernelSystem))),
    ]);
  }
  out.push(table(['change', 'p50', 'p99', 'p99 ÷ p50', 'calc', 'compile', 'plan', 'kernel', 'ops', 'allocated (KiB)'], rows));
  out.push(`${p99Note(REPS)}.`);
  if (cold.size) {
    out.push('');
    out.push(`Cold: the first ${REPS} repetitions of the warm-up, a fresh agent's (wall ms):`);
    out.push(table(['change', 'p50', 'p99', 'p99 ÷ p50'], coldRows(cold)));
  }
  if (probes)
    out.push(
      `allocated: the young generation's growth over a change less the bench's probes in it, measured alone: ${probes.pair} bytes the pair of reads around it, ` +
        `${ms(probes.threadTimes)} a read of the thread's times, ${ms(probes.cpuNow)} a read of the process's CPU.`,
    );
  out.push('');
  out.push(
    'CPU time of the process (ms, every thread): the same split, and the kernel step’s mean as the process’s own (user) and the kernel’s (system):',
  );
  out.push(table(['change', 'p50', 'p99', 'calc', 'compile', 'plan', 'kernel', 'of it, mean: user', 'system'], cpuRows));
  if (gc) {
    out.push('');
    out.push(gcSummary(gc, changes, changesEnd, IDLE_SCAVENGE ? idleScavenges : undefined));
    out.push(
      `Heap held after a full collection: ${ms(heldBefore / 2 ** 20)} MiB before the changes, ${ms(heldAfter / 2 ** 20)} MiB after them ` +
        `(${ms((heldAfter - heldBefore) / 1024 / Math.max(1, changes + warmed))} KiB per change kept, over the ${count(changes + warmed)} changes of the warm-up and the measure; the benchmark's own samples included).`,
    );
    out.push('');
    out.push(tailReport(results, gc));
  }
  if (allocationProfile) {
    const { self, total } = allocationsByFunction(allocationProfile);
    const all = self.reduce((n, [, b]) => n + b, 0);
    out.push('');
    out.push(
      `${RETAINED ? 'Allocations still reachable at the end' : 'Allocations'} over the changes made (${[...SELECTED].join('; ')} and what undoes them; the whole run from the first change): ${ms(all / 1024 / Math.max(1, changes))} KiB per change, sampled; by function, KiB per change:`,
    );
    for (const [name, b] of self.slice(0, TOP)) out.push(`  ${ms(b / 1024 / changes).padStart(6)}  ${name}`);
    out.push('The same, the function and what it called:');
    for (const [name, b] of total.slice(0, TOP)) out.push(`  ${ms(b / 1024 / changes).padStart(6)}  ${name}`);
  }
  if (profile) {
    for (const kind of KINDS) {
      const w = windows.get(kind);
      if (!w) continue;
      const { self, total } = selfTimes(profile, w);
      const sum = self.reduce((n, [, t]) => n + t, 0);
      out.push('');
      out.push(`${kind}: ${ms(sum / w.length)} ms sampled per change; self time per change by function:`);
      for (const [name, t] of self.slice(0, TOP)) out.push(`  ${ms(t / w.length).padStart(6)}  ${name}`);
      out.push(`${kind}: total time (the function and what it called) per change:`);
      for (const [name, t] of total.slice(0, TOP)) out.push(`  ${ms(t / w.length).padStart(6)}  ${name}`);
    }
  }
  console.log(out.join('\n'));
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack : e);
  process.exit(1);
});
