// Network policy, resource to kernel: podroute (calculation graph → nftables compiler →
// PolicyProgrammer → one `nft -f` transaction) against the Calico/kube-router shape (ipset +
// iptables-restore, nft backend) in the same run, on the same cluster: Kubernetes
// NetworkPolicies over pods in namespaces (bench/policy-workload.ts says the shapes), seen from
// one node that holds a share of the pods (the rest are remote: set members only).
//
//   npx tsx bench/policy.ts [--policies 1000] [--endpoints 10000] [--local 150] [--namespaces 100]
//                           [--reps 100] [--rounds 3] [--seed 1] [--deadline 1200]      (root)
//                           [--dataplane netlink|nft] [--samples FILE] [--warmup 1000] [--no-idle-scavenge]
//
// --warmup: repetitions of every change made on both sides before the measured ones, as a
// node's agent that has run a while has made them: V8 optimizes a function once it has run
// enough of its own bytecode, so one called once a change, doing little itself, waits 4,000-5,000
// changes; until then a fresh agent's changes keep starting compilations (1-20 ms each) on V8's
// background threads, and on two cores those threads take the core the next change waits for.
// podroute's first --reps of them are reported as the cold figures.
//
// --samples: every change's wall and CPU time, its steps' (calculation, compile, plan, kernel)
// and its operations (podroute's, by kind) written to FILE as JSON,
// so that runs can be pooled: one run's p99 is one run's few slowest changes.
//
// --dataplane: podroute's nftables dataplane, nf_tables over netlink from the process (default;
// a transaction holding a statement the netlink encoder lacks goes through nft -f whole) or every
// transaction through nft -f.
//
// Each side programs its own network namespace, made here and deleted on the way out. First the
// initial load (median of --rounds, each in fresh namespaces), then --reps repetitions of each
// change, timed to "enforced in the kernel" (nft, ipset and iptables-restore have exited): a
// pod added and deleted (remote, then local), one policy's rule edited, a pod relabelled
// (remote, then local). The reference runs in a process of its own (bench/policy-reference.ts),
// as Calico's felix does: its own calculation graph, sent the same resources, gives it the same
// PolicyInput (their sizes are compared on every change), and it times only its render (the
// difference and the restore text) and its restores, so the calculation graph's time is
// podroute's only. This process holds podroute alone and starts no child during the changes
// (but nft, podroute's own, with --dataplane nft), as podroute's agent: the reference's
// children started from it made each step of podroute's next change 2–5× slower in CPU time
// (every fork write-protects this process's whole heap and its TLB is refilled), which no node
// running podroute pays. Each side's change follows the other's, so about 50 ms of the
// reference's work lies between two of podroute's changes (changes on a node arrive apart too:
// its caches are not those of changes made back to back, which bench/policy-steps.ts times);
// when the side going first alternated by repetition, one change in every other repetition came
// right after podroute's last, caches warm. At the end the kernels are read back: nft's table must equal
// the desired one, ipset's elements the expected.
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { type PolicyInput, policyTier } from '../felix/index.js';
import { kubernetesPolicyId, type PolicyCalculator } from '../lib/policy/index.js';
import { type KubernetesNetworkPolicy, resourceKey, type WorkloadEndpoint } from '../lib/resources/index.js';
import { numberArg } from './args.js';
import { GcLog, gcSummary, tailReport } from './policy-attribution.js';
import { Namespaces, versionOf } from './policy-exec.js';
import type { ReferenceChange } from './policy-iptables.js';
import { installedCounts, PodrouteSide, type PodrouteSample, tableCounts } from './policy-podroute.js';
import { type InputShape, type KernelCounts, ReferenceProcess, type ResourceChange } from './policy-reference.js';
import { count, median, ms, p99Note, percentile, ratio, table } from './policy-stats.js';
import { LOCAL_NODE, POLICY_SHAPES, PolicyWorkload } from './policy-workload.js';

const arg = (name: string, d: number): number => numberArg(name, d);
const POLICIES = arg('--policies', 1000);
const ENDPOINTS = arg('--endpoints', 10_000);
const LOCAL = arg('--local', 150);
const NAMESPACES = arg('--namespaces', 100);
const REPS = Math.max(1, arg('--reps', 100));
const WARMUP = Math.max(0, arg('--warmup', 1000));
const IDLE_SCAVENGE = !process.argv.includes('--no-idle-scavenge');
const ROUNDS = Math.max(1, arg('--rounds', 3));
const SEED = arg('--seed', 1);
const DEADLINE = performance.now() + arg('--deadline', 1200) * 1000;
const DATAPLANE = ((): 'netlink' | 'nft' => {
  const i = process.argv.indexOf('--dataplane');
  const v = i < 0 ? 'netlink' : process.argv[i + 1];
  if (v !== 'netlink' && v !== 'nft') throw new Error(`--dataplane takes netlink or nft, not ${JSON.stringify(v)}`);
  return v;
})();

const SAMPLES = ((): string | undefined => {
  const i = process.argv.indexOf('--samples');
  return i < 0 ? undefined : process.argv[i + 1];
})();

const loadavg = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

function checkDeadline(): void {
  if (performance.now() > DEADLINE) throw new Error('--deadline passed; stopping (namespaces are deleted)');
}

interface Pair {
  readonly ours: PodrouteSample;
  readonly ref: ReferenceChange;
}

const refMs = (r: ReferenceChange): number => r.renderMs + r.ipsetMs + r.iptablesMs;
const refKernelMs = (r: ReferenceChange): number => r.ipsetMs + r.iptablesMs;
/** podroute's time from the same starting point as the reference's: compile, plan, nft. */
const fromInput = (s: PodrouteSample): number => s.totalMs - s.calcMs;

const applyTo = (c: PolicyCalculator, change: ResourceChange): void => {
  for (const r of change.put ?? []) c.put(r);
  for (const [kind, key] of change.delete ?? []) c.delete(kind, key);
};
const sameShape = (i: PolicyInput, s: InputShape): boolean =>
  i.sets.length === s.sets &&
  i.namedPortSets.length === s.namedPortSets &&
  i.policies.length === s.policies &&
  i.endpoints.length === s.endpoints;

/** Each of podroute's changes follows one of the reference's (the header says why). */
const REFERENCE_FIRST = true;

/**
 * One change on both sides, each from its own graph's PolicyInput (the same resources, so the
 * same input: its sizes are compared); `refFirst` says which side goes first.
 */
async function both(ours: PodrouteSide, ref: ReferenceProcess, change: ResourceChange, refFirst: boolean): Promise<Pair> {
  checkDeadline();
  const calc = ours.calculate((c) => applyTo(c, change));
  let r: Awaited<ReturnType<ReferenceProcess['apply']>>;
  let o: PodrouteSample;
  if (refFirst) {
    r = await ref.apply(change);
    o = await ours.apply(calc);
  } else {
    o = await ours.apply(calc);
    r = await ref.apply(change);
  }
  if (!sameShape(calc.input, r.input))
    throw new Error(`the reference's PolicyInput (${JSON.stringify(r.input)}) differs from podroute's: the two graphs disagree`);
  return { ours: o, ref: r.change };
}

/** The policies that apply to one of this node's endpoints in the input. */
const inUseBy = (input: PolicyInput): Set<string> =>
  new Set(input.endpoints.flatMap((e) => [...e.ingress, ...e.egress].flatMap((t) => policyTier(t).policies)));
const policyIdOf = (p: KubernetesNetworkPolicy): string => kubernetesPolicyId(p.metadata.namespace!, p.metadata.name);

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('bench/policy.ts needs root (network namespaces, nft, iptables)');
  for (const tool of ['nft', 'ipset', 'iptables-restore', 'iptables-save']) {
    if (versionOf(tool).endsWith('not found')) throw new Error(`${tool} is missing: apt-get install -y nftables iptables ipset`);
  }
  const started = new Date();
  const loadStart = loadavg();
  const shape = { policies: POLICIES, endpoints: ENDPOINTS, local: LOCAL, namespaces: NAMESPACES, seed: SEED };
  const workload = new PolicyWorkload(shape);
  const namespaces = new Namespaces('pbpol').deleteOnSignal();

  const loads: Pair[] = [];
  let ours!: PodrouteSide;
  let ref!: ReferenceProcess;
  const results = new Map<string, Pair[]>();
  /** podroute's wall times (ms) of a fresh agent's first --reps changes of each kind, made in the warm-up. */
  const cold = new Map<string, number[]>();
  let desiredAfterLoad!: ReturnType<typeof tableCounts>;
  let kernelAfterLoad!: ReturnType<typeof installedCounts>;
  let refAfterLoad!: KernelCounts;
  let resync!: Awaited<ReturnType<PodrouteSide['resync']>>;
  let refEnd!: KernelCounts;
  let gc: GcLog | undefined;
  let idleScavenges = 0;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      checkDeadline();
      if (ours) {
        ours.close();
        ref.close();
        namespaces.delete(ours.netns);
        namespaces.delete(ref.netns);
      }
      ours = new PodrouteSide(namespaces.add(`n${round}`), LOCAL_NODE, DATAPLANE, IDLE_SCAVENGE);
      ref = new ReferenceProcess(namespaces.add(`i${round}`), LOCAL_NODE);
      loads.push(await both(ours, ref, { put: workload.resources() }, round % 2 === 1));
      process.stderr.write(
        `load round ${round + 1}/${ROUNDS}: podroute ${ms(loads[round]!.ours.totalMs)} ms, reference ${ms(refMs(loads[round]!.ref))} ms\n`,
      );
    }
    desiredAfterLoad = tableCounts(ours.table!);
    kernelAfterLoad = installedCounts(await ours.read());
    refAfterLoad = (await ref.kernelCounts()).kernel;

    // Policies to edit: those selecting at least one of this node's pods (so their chains are
    // in use) with a numeric port, the TCP 8080 shape first.
    const input = ours.calculator.input();
    const inUse = inUseBy(input);
    const selecting = workload.policies.filter((p) => inUse.has(policyIdOf(p)));
    const numeric = selecting.filter((p) => workload.hasNumericPort(p));
    const first = numeric.filter((p) => p.metadata.name.startsWith('np-1-'));
    const editable = first.length ? first : numeric;
    if (!editable.length) throw new Error('no policy with a numeric port selects a local pod: raise --local or --policies');
    // Relabels move this node's pods in and out of policies' selections: the policy edited is the
    // next of those that select one of them now, or its edit would change nothing in the kernel.
    const selectingNow = (rep: number): number => {
      const now = inUseBy(ours.calculator.input());
      let i = rep % editable.length;
      for (let k = 0; k < editable.length && !now.has(policyIdOf(editable[i]!)); k++) i = (i + 1) % editable.length;
      return i;
    };
    const localPods = workload.pods.slice(0, LOCAL);
    const remoteIndex = (i: number) => LOCAL + ((i * 7919) % (workload.pods.length - LOCAL));
    const record = (name: string, p: Pair) => {
      const list = results.get(name) ?? [];
      list.push(p);
      results.set(name, list);
    };
    const wepKey = (w: WorkloadEndpoint) => resourceKey(w);

    const repetition = async (rep: number, record: (name: string, p: Pair) => void) => {
      const remote = workload.newPod(1 + (rep % Math.max(1, workload.nodes - 1)));
      record('pod add, remote', await both(ours, ref, { put: [remote] }, REFERENCE_FIRST));
      record('pod delete, remote', await both(ours, ref, { delete: [['WorkloadEndpoint', wepKey(remote)]] }, REFERENCE_FIRST));
      const local = workload.newPod(0);
      record('pod add, local', await both(ours, ref, { put: [local] }, REFERENCE_FIRST));
      record('pod delete, local', await both(ours, ref, { delete: [['WorkloadEndpoint', wepKey(local)]] }, REFERENCE_FIRST));
      const i = selectingNow(rep);
      const edited = workload.movePort(editable[i]!);
      editable[i] = edited;
      record('policy rule edited', await both(ours, ref, { put: [edited] }, REFERENCE_FIRST));
      const ri = remoteIndex(rep);
      const relabelled = workload.relabel(workload.pods[ri]!);
      workload.pods[ri] = relabelled;
      record('pod relabel, remote', await both(ours, ref, { put: [relabelled] }, REFERENCE_FIRST));
      const li = rep % localPods.length;
      const localRelabelled = workload.relabel(localPods[li]!);
      localPods[li] = localRelabelled;
      record('pod relabel, local', await both(ours, ref, { put: [localRelabelled] }, REFERENCE_FIRST));
    };
    // The warm-up: the same changes on both sides, as a node's agent that has run a while has
    // made them; the first --reps of podroute's are kept as a fresh agent's (cold) figures.
    const keepCold = (name: string, p: Pair) => {
      const list = cold.get(name) ?? [];
      if (list.length < REPS) list.push(p.ours.totalMs);
      cold.set(name, list);
    };
    for (let rep = 0; rep < WARMUP; rep++) {
      await repetition(rep, keepCold);
      if ((rep + 1) % 50 === 0) process.stderr.write(`warm-up: ${rep + 1}/${WARMUP} repetitions\n`);
    }
    gc = new GcLog();
    const idleBefore = ours.idleScavenges;
    for (let rep = 0; rep < REPS; rep++) {
      await repetition(WARMUP + rep, record);
      if ((rep + 1) % 10 === 0) process.stderr.write(`changes: ${rep + 1}/${REPS} repetitions\n`);
    }
    idleScavenges = ours.idleScavenges - idleBefore;
    resync = await ours.resync();
    if (!resync.report.ok || resync.report.ops !== 0)
      throw new Error(`the kernel's table differs from the desired one after the changes: ${resync.report.ops} operations to repair it`);
    const end = await ref.kernelCounts();
    refEnd = end.kernel;
    const expected = end.expected;
    if (refEnd.elements !== expected) throw new Error(`ipset holds ${refEnd.elements} elements, the reference expected ${expected}`);
  } finally {
    // perf_hooks hands GC entries over on a timer after the pause.
    await new Promise((resolve) => setTimeout(resolve, 100));
    gc?.close();
    ours?.close();
    ref?.close();
    namespaces.deleteAll();
  }

  report(started, loadStart, workload, loads, results, cold, {
    desired: desiredAfterLoad,
    kernel: kernelAfterLoad,
    refKernel: refAfterLoad,
    resyncMs: resync.ms,
    refEnd,
  });
  if (SAMPLES) {
    const byKind = Object.fromEntries(
      [...results].map(([name, ps]) => [
        name,
        {
          wallMs: ps.map((p) => p.ours.totalMs),
          cpuMs: ps.map((p) => p.ours.cpu.total),
          stepsMs: ps.map((p) => [p.ours.calcMs, p.ours.compileMs, p.ours.planMs, p.ours.nftMs]),
          ops: ps.map((p) => p.ours.report.ops),
          coldWallMs: cold.get(name) ?? [],
        },
      ]),
    );
    writeFileSync(SAMPLES, `${JSON.stringify({ load: [loadStart, loadavg()], node: process.execArgv, changes: byKind })}\n`);
  }
  if (gc) {
    const ours = new Map([...results].map(([name, ps]) => [name, ps.map((p) => p.ours)]));
    const changes = [...ours.values()].reduce((n, l) => n + l.length, 0);
    console.log(`\n${gcSummary(gc, changes, undefined, IDLE_SCAVENGE ? idleScavenges : undefined)}\n\n${tailReport(ours, gc)}`);
  }
}

interface Counts {
  desired: ReturnType<typeof tableCounts>;
  kernel: ReturnType<typeof installedCounts>;
  refKernel: { rules: number; sets: number; elements: number };
  resyncMs: number;
  refEnd: { rules: number; sets: number; elements: number };
}

function report(
  started: Date,
  loadStart: string,
  w: PolicyWorkload,
  loads: Pair[],
  results: Map<string, Pair[]>,
  cold: ReadonlyMap<string, readonly number[]>,
  c: Counts,
): void {
  const input = loads[loads.length - 1]!.ours.input;
  const out: string[] = [];
  out.push(`bench/policy — ${started.toISOString()} on ${hostname()}, load average ${loadStart} at the start, ${loadavg()} at the end`);
  out.push(`node ${process.version}; ${versionOf('nft')}; ${versionOf('iptables-restore')}; ${versionOf('ipset')}`);
  out.push(
    `podroute's dataplane: ${DATAPLANE === 'nft' ? 'nft -f for every transaction' : 'nf_tables netlink (a transaction with a statement netlink does not encode: nft -f)'}`,
  );
  out.push(`command: npx tsx bench/policy.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
  out.push('');
  out.push(
    `Cluster: ${w.shape.namespaces} namespaces, ${w.shape.endpoints} pods on ${w.nodes} nodes (${w.shape.local} on this node), ` +
      `${w.shape.policies} Kubernetes NetworkPolicies in ${POLICY_SHAPES.length} shapes rotating per namespace:`,
  );
  for (const [i, s] of POLICY_SHAPES.entries()) out.push(`  ${i}. ${s}`);
  out.push(
    `PolicyInput: ${input.sets} address sets, ${input.namedPortSets} named-port sets, ${input.policies} policies, ${input.endpoints} local endpoints.`,
  );
  out.push('');
  out.push(
    table(
      ['after the initial load', 'sets (and maps)', 'elements', 'chains', 'rules'],
      [
        [
          'podroute, desired table (inet: IPv4 and IPv6)',
          count(c.desired.sets),
          count(c.desired.elements),
          count(c.desired.chains),
          count(c.desired.rules),
        ],
        [
          'podroute, read back from the kernel',
          count(c.kernel.sets),
          count(c.kernel.elements),
          count(c.kernel.chains),
          count(c.kernel.rules),
        ],
        [
          'reference, ipset save / iptables-save (IPv4)',
          count(c.refKernel.sets),
          count(c.refKernel.elements),
          '',
          count(c.refKernel.rules),
        ],
      ],
    ),
  );
  out.push('');
  const l = loads;
  out.push(`Initial load, median of ${l.length} rounds (ms):`);
  out.push(
    table(
      ['side', 'total', 'calculation', 'compile / render', 'plan', 'kernel', 'ratio', 'from the PolicyInput', 'kernel only'],
      [
        [
          'podroute (calc + compile + plan + nft -f)',
          ms(median(l.map((p) => p.ours.totalMs))),
          ms(median(l.map((p) => p.ours.calcMs))),
          ms(median(l.map((p) => p.ours.compileMs))),
          ms(median(l.map((p) => p.ours.planMs))),
          ms(median(l.map((p) => p.ours.nftMs))),
          ratio(median(l.map((p) => p.ours.totalMs)), median(l.map((p) => refMs(p.ref)))),
          ratio(median(l.map((p) => fromInput(p.ours))), median(l.map((p) => refMs(p.ref)))),
          ratio(median(l.map((p) => p.ours.nftMs)), median(l.map((p) => refKernelMs(p.ref)))),
        ],
        [
          'reference (render + ipset restore + iptables-restore)',
          ms(median(l.map((p) => refMs(p.ref)))),
          '',
          ms(median(l.map((p) => p.ref.renderMs))),
          '',
          ms(median(l.map((p) => refKernelMs(p.ref)))),
          '',
          '',
          '',
        ],
      ],
    ),
  );
  out.push('');
  const reps = results.values().next().value?.length ?? 0;
  out.push(
    `Changes, ${reps} repetitions each${WARMUP ? ` after ${WARMUP} to warm up` : ''}: podroute, resource → transaction applied (ms; the steps are their own medians; CPU: the process's, every thread, the kernel's commit included):`,
  );
  const rows: string[][] = [];
  for (const [name, ps] of results) {
    const o = ps.map((p) => p.ours);
    const kinds = new Map<string, number>();
    for (const s of o) for (const [k, n] of Object.entries(s.report.opCounts)) kinds.set(k, (kinds.get(k) ?? 0) + (n ?? 0));
    const opsText = [...kinds].map(([k, n]) => `${k} ${+(n / o.length).toFixed(1)}`).join(', ');
    const s0 = {
      calc: (s: PodrouteSample) => s.cpu.calc,
      compile: (s: PodrouteSample) => s.cpu.compile,
      plan: (s: PodrouteSample) => s.cpu.plan,
      kernel: (s: PodrouteSample) => s.cpu.kernel,
    };
    rows.push([
      name,
      ms(median(o.map((s) => s.totalMs))),
      ms(
        percentile(
          o.map((s) => s.totalMs),
          99,
        ),
      ),
      ms(median(o.map((s) => s.calcMs))),
      ms(median(o.map((s) => s.compileMs))),
      ms(median(o.map((s) => s.planMs))),
      ms(median(o.map((s) => s.nftMs))),
      ms(median(o.map((s) => s.cpu.total))),
      ms(
        percentile(
          o.map((s) => s.cpu.total),
          99,
        ),
      ),
      [s0.calc, s0.compile, s0.plan, s0.kernel].map((f) => ms(median(o.map(f)))).join(' / '),
      count(median(o.map((s) => s.report.ops))),
      count(median(o.map((s) => s.report.elementsAdded + s.report.elementsDeleted))),
      `${o.filter((s) => s.recorded).length}/${o.length}`,
      opsText,
    ]);
  }
  out.push(
    table(
      [
        'change',
        'p50',
        'p99',
        'calc',
        'compile',
        'plan',
        'nft',
        'CPU p50',
        'CPU p99',
        'CPU: calc / compile / plan / kernel',
        'nft ops',
        'elements',
        'as a TableChange',
        'ops per change (mean)',
      ],
      rows,
    ),
  );
  out.push(`${p99Note(reps)}.`);
  if (cold.size) {
    out.push('');
    out.push(`Cold: podroute's first ${REPS} repetitions of the warm-up, a fresh agent's (wall ms):`);
    const coldRows = [...cold].map(([name, walls]) => {
      const p50 = median(walls);
      const p99 = percentile(walls, 99);
      return [name, ms(p50), ms(p99), ms(p99 / p50)];
    });
    out.push(table(['change', 'p50', 'p99', 'p99 ÷ p50'], coldRows));
  }
  out.push('');
  out.push(
    'Reference (ipset + iptables-restore --noflush), the same changes from the same PolicyInput (ms), and podroute ÷ reference: ' +
      "podroute's whole time; its time from the PolicyInput (compile + plan + nft), the reference's starting point; nft alone ÷ ipset + iptables-restore:",
  );
  const refRows: string[][] = [];
  for (const [name, ps] of results) {
    const o = ps.map((p) => p.ours);
    const r = ps.map((p) => p.ref);
    refRows.push([
      name,
      ms(median(r.map(refMs))),
      ms(percentile(r.map(refMs), 99)),
      ms(median(r.map((x) => x.renderMs))),
      ms(median(r.map((x) => x.ipsetMs))),
      ms(median(r.map((x) => x.iptablesMs))),
      count(median(r.map((x) => x.elements))),
      count(median(r.map((x) => x.chains))),
      ratio(median(o.map((s) => s.totalMs)), median(r.map(refMs))),
      ratio(
        percentile(
          o.map((s) => s.totalMs),
          99,
        ),
        percentile(r.map(refMs), 99),
      ),
      ratio(median(o.map(fromInput)), median(r.map(refMs))),
      ratio(median(o.map((s) => s.nftMs)), median(r.map(refKernelMs))),
    ]);
  }
  out.push(
    table(
      [
        'change',
        'p50',
        'p99',
        'render',
        'ipset',
        'iptables-restore',
        'ipset lines',
        'chains rewritten',
        'ratio p50',
        'ratio p99',
        'from the PolicyInput, p50',
        'kernel only, p50',
      ],
      refRows,
    ),
  );
  out.push('');
  out.push(
    `End: podroute resync (${DATAPLANE === 'nft' ? 'nft -j list table' : "netlink: felix's copy of the table, no other writer having committed"}, diff) ${ms(c.resyncMs)} ms, 0 operations: the kernel holds the desired table. ` +
      `Reference kernel: ${count(c.refEnd.sets)} ipsets, ${count(c.refEnd.elements)} elements (as expected), ${count(c.refEnd.rules)} rules.`,
  );
  console.log(out.join('\n'));
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack : e);
  process.exit(1);
});
