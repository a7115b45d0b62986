// Services benchmark: --services service ports (default 10,000) × --endpoints endpoints (default
// 10), every tenth with a NodePort, programmed by felix as the agent does (programServices: its
// ServiceCompiler, the policy programmer's one `nft -f` transaction into `inet podroute`, then the
// stale-conntrack step over ctnetlink in the namespace) and, in the same run in a namespace
// and a process of its own (bench/services-reference.ts: its iptables-restore is not forked from
// felix's process), the same set written in kube-proxy's iptables shape and loaded with
// iptables-restore (bench/services-iptables.ts). Then --updates changes of one endpoint of one
// service on both sides (felix: recompile of the changed service and its difference; reference:
// kube-proxy's partial sync of that service's chains). Prints rule, chain and element counts, the
// times and their ratios. Root only; namespaces are its own and deleted on the way out.
//
//   npx tsx bench/services.ts [--services 10000] [--endpoints 10] [--updates 20] [--resyncs 10]
//                             [--deadline 1800] [--dataplane netlink|nft] [--samples FILE] [--warmup 1000]
//                             [--no-idle-scavenge]
//
// --warmup: felix's updates made before the measured ones, as an agent that has run a while has
// made them (V8 has compiled what an update runs); the first --updates of them are reported as
// the cold figures.
//
// --resyncs: resyncs that find nothing to repair, timed twice over: as they come (felix's own
// commit the last, so the netlink dataplane answers from its copy of the table, each read
// checking a tenth of the kernel's against it), and each after a commit by another writer (a
// table of its own added or deleted), which makes the netlink dataplane dump the kernel.
//
// --samples: every update's wall and CPU time (felix's) written to FILE as JSON, so that runs
// can be pooled: one run's p99 is one run's slowest update or two.
//
// --dataplane: felix's nftables dataplane, nf_tables over netlink from the process (default; a
// transaction with a statement it does not encode goes to nft -f whole) or nft -f for all.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import {
  type InstalledTable,
  type NftApplyResult,
  type NftDataplane,
  NetlinkConntrackCleaner,
  NetlinkNftDataplane,
  NftablesDataplane,
  type NftOp,
  PolicyProgrammer,
  programServices,
  recordServiceInputChange,
  type RuleCounterRow,
  type ServiceCompileChange,
  ServiceCompiler,
  ServiceConntrack,
  type ServiceInput,
  type ServicePort,
} from '../felix/index.js';
import { IdleScavenger } from '../lib/agent/idle-scavenge.js';
import { numberArg } from './args.js';
import { Namespaces, versionOf } from './policy-exec.js';
import { installedCounts, tableCounts } from './policy-podroute.js';
import { count, median, ms, p99Note, percentile, ratio, table } from './policy-stats.js';
import type { ReferenceApply } from './services-iptables.js';
import { KubeProxyProcess } from './services-reference.js';

const arg = (name: string, d: number): number => numberArg(name, d, { min: 1, integer: true });
const SERVICES = arg('--services', 10_000);
const ENDPOINTS = arg('--endpoints', 10);
const UPDATES = arg('--updates', 20);
const WARMUP = numberArg('--warmup', 1000, { min: 0, integer: true });
const IDLE_SCAVENGE = !process.argv.includes('--no-idle-scavenge');
const RESYNCS = arg('--resyncs', 10);
const DEADLINE = performance.now() + arg('--deadline', 1800) * 1000;
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
const CLUSTER_CIDR = '10.64.0.0/10';
if (SERVICES > 65_536) throw new Error('--services: at most 65,536 (cluster IPs come from 10.96.0.0/16)');

const loadavg = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const checkDeadline = () => {
  if (performance.now() > DEADLINE) throw new Error('--deadline passed; stopping (namespaces are deleted)');
};

/** Endpoint j of service i, or its `generation`-th replacement: distinct pod addresses in 10.64.0.0/10. */
function endpointAddress(i: number, j: number, generation: number): string {
  const n = (i * ENDPOINTS + j) * 4 + generation;
  return `10.${64 + ((n >> 16) & 63)}.${(n >> 8) & 255}.${n & 255}`;
}

function servicePort(i: number, generations: ReadonlyMap<number, number> = new Map()): ServicePort {
  const g = generations.get(i) ?? 0;
  return {
    id: `ns${i % 100}/svc${i}/http/tcp`,
    protocol: 'tcp',
    port: 80,
    clusterIPs: [`10.96.${i >> 8}.${i & 255}`],
    ...(i % 10 === 0 ? { nodePort: 30000 + i / 10 } : {}),
    externalIPs: [],
    loadBalancerIPs: [],
    // Endpoint 0 is replaced on each update of the service (a pod rescheduled).
    endpoints: Array.from({ length: ENDPOINTS }, (_, j) => ({
      address: endpointAddress(i, j, j === 0 ? g : 0),
      port: 8080,
      local: j === 0,
    })),
  };
}

class TimedDataplane implements NftDataplane {
  readonly family = 'inet' as const;
  readonly table: string;
  readonly description: string;
  applyMs = 0;
  constructor(readonly inner: NftDataplane) {
    this.table = inner.table;
    this.description = inner.description;
  }
  read(): Promise<InstalledTable | undefined> {
    return this.inner.read();
  }
  readCounters(): Promise<RuleCounterRow[]> {
    return this.inner.readCounters();
  }
  async apply(ops: readonly NftOp[]): Promise<NftApplyResult> {
    const t0 = performance.now();
    try {
      return await this.inner.apply(ops);
    } finally {
      this.applyMs = performance.now() - t0;
    }
  }
  close(): void {}
}

/** The agent's conntrack step (plan the stale entries from the last input, delete them), timed. */
class TimedConntrack extends ServiceConntrack {
  ms = 0;
  override async applied(input: ServiceInput, change?: ServiceCompileChange): Promise<number> {
    const t0 = performance.now();
    try {
      return await super.applied(input, change);
    } finally {
      this.ms = performance.now() - t0;
    }
  }
}

interface Ours {
  /** From the call to the report, conntrack step included. */
  totalMs: number;
  /** programServices' synchronous part: compile, merge with the policy table, table state. */
  compileMs: number;
  /** Plan and nft, as the programmer's report measures it. */
  applyMs: number;
  nftMs: number;
  conntrackMs: number;
  /** The process's CPU time (user and system: the kernel's commit runs in the sending process) over the same span. */
  cpuMs: number;
  ops: number;
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('bench/services.ts needs root (network namespaces, nft, iptables)');
  for (const tool of ['nft', 'iptables-restore', 'iptables-save']) {
    if (versionOf(tool).endsWith('not found')) throw new Error(`${tool} is missing: apt-get install -y nftables iptables`);
  }
  const started = new Date();
  const loadStart = loadavg();
  const namespaces = new Namespaces('pbsvc').deleteOnSignal();
  const out: string[] = [];
  let reference: KubeProxyProcess | undefined;
  let scavenger: IdleScavenger | undefined;
  try {
    const netns = namespaces.add('n');
    const dataplane = new TimedDataplane(
      DATAPLANE === 'nft' ? new NftablesDataplane({ netns, timeoutMs: 600_000 }) : new NetlinkNftDataplane({ netns, timeoutMs: 600_000 }),
    );
    const compiler = new ServiceCompiler();
    const conntrack = new TimedConntrack(new NetlinkConntrackCleaner({ netns }));
    const programmer = new PolicyProgrammer(dataplane, { resyncIntervalMs: 0, retryDelayMs: 0 });
    // V8's young-generation collection in the quiet after each transaction, as the agent runs it.
    if (IDLE_SCAVENGE) {
      const s = new IdleScavenger({ busy: () => programmer.busy });
      programmer.on('report', () => s.workDone());
      scavenger = s;
    }
    const ref = new KubeProxyProcess(namespaces.add('i'), CLUSTER_CIDR);
    reference = ref;

    const ports = Array.from({ length: SERVICES }, (_, i) => servicePort(i));
    // The input as the agent's builder hands it over: a list of its own per change, with a record
    // of the port it replaced (lib/services/service-input.ts), so felix compares no other port.
    let current: ServiceInput = { services: [...ports], nodeAddresses: [], clusterCidrs: [CLUSTER_CIDR] };
    const input = (): ServiceInput => current;
    const replace = (index: number, port: ServicePort): void => {
      const services = [...current.services];
      services[index] = port;
      const next = { ...current, services };
      recordServiceInputChange(next, { from: current, ports: [{ index, port }] });
      current = next;
    };
    const apply = async (): Promise<Ours> => {
      conntrack.ms = 0;
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const { applied } = programServices(programmer, input(), compiler, conntrack);
      const compileMs = performance.now() - t0;
      const r = await applied;
      const totalMs = performance.now() - t0;
      const cpu = process.cpuUsage(c0);
      if (!r.ok) throw new Error(`felix apply failed: ${r.error}`);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      return { totalMs, compileMs, applyMs: r.durationMs, nftMs: dataplane.applyMs, conntrackMs: conntrack.ms, cpuMs, ops: r.ops };
    };

    // The initial load, the reference first (its namespace is as empty as ours).
    const refLoad = await ref.load(input());
    checkDeadline();
    const load = await apply();
    checkDeadline();
    const desired = tableCounts(programmer.desired);
    // Another writer's commit (a table of its own added, then deleted), which a netlink resync
    // must read the kernel after.
    let others = 0;
    const otherWriter = () => {
      const r = spawnSync('ip', ['netns', 'exec', netns, 'nft', others++ % 2 ? 'delete' : 'add', 'table', 'inet', 'someone-else'], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      if (r.status !== 0) throw new Error(`nft in ${netns}: ${r.stderr}`);
    };
    // The first resync after the load reads the kernel with no earlier read of its sets to compare with.
    otherWriter();
    const resync = await programmer.resync();
    if (!resync.ok || resync.ops !== 0) throw new Error(`resync after the load changed ${resync.ops} things: ${resync.error ?? ''}`);
    const kernel = installedCounts(await dataplane.read());
    // Resyncs that find nothing, timed (wall and this process's CPU): as they come, then each
    // after another writer's commit in the namespace.
    const resyncs = async (before?: () => void): Promise<{ wall: number[]; cpu: number[] }> => {
      const wall: number[] = [];
      const cpu: number[] = [];
      for (let k = 0; k < RESYNCS; k++) {
        checkDeadline();
        before?.();
        const c0 = process.cpuUsage();
        const r = await programmer.resync();
        const c = process.cpuUsage(c0);
        if (!r.ok || r.ops !== 0) throw new Error(`a resync of the loaded table changed ${r.ops} things: ${r.error ?? ''}`);
        wall.push(r.durationMs);
        cpu.push((c.user + c.system) / 1000);
      }
      return { wall, cpu };
    };
    const quiet = await resyncs();
    const foreign = await resyncs(otherWriter);
    const refKernel = await ref.kernelCounts();
    const mapElements = programmer.desired.maps?.reduce((n, m) => n + m.elements.length, 0) ?? 0;

    // One endpoint of one service replaced, --updates times, each side's update after the other's:
    // felix's follows a restore of the reference's (about 0.25 s of another process's work), as an
    // update on a node follows other work. When the side going first alternated, every other
    // update of felix's came right after its own last, caches warm (0.7 ms against 2-3): two
    // populations, the median between them.
    const generations = new Map<number, number>();
    const serviceOf = (k: number): number => (k * 7919 + 13) % SERVICES;
    const change = (k: number): ServicePort => {
      const i = serviceOf(k);
      generations.set(i, ((generations.get(i) ?? 0) % 3) + 1);
      ports[i] = servicePort(i, generations);
      replace(i, ports[i]!);
      return ports[i]!;
    };
    const update = async (k: number): Promise<[Ours, ReferenceApply]> => {
      checkDeadline();
      const port = change(k);
      const r = await ref.update([port]);
      return [await apply(), r];
    };
    // The warm-up: felix's updates as an agent that has run a while has made them, its first
    // --updates kept as a fresh agent's (cold) figures; the reference is then given the ports
    // they changed in one update (its restore, a process of its own, has nothing to warm).
    const cold: number[] = [];
    const warmed = new Map<number, ServicePort>();
    for (let k = 0; k < WARMUP; k++) {
      checkDeadline();
      const port = change(k);
      warmed.set(serviceOf(k), port);
      const o = await apply();
      if (cold.length < UPDATES) cold.push(o.totalMs);
    }
    if (warmed.size) await ref.update([...warmed.values()]);
    const ours: Ours[] = [];
    const refs: ReferenceApply[] = [];
    for (let k = 0; k < UPDATES; k++) {
      const [o, r] = await update(WARMUP + k);
      ours.push(o);
      refs.push(r);
    }
    const refAfter = await ref.kernelCounts();
    const final = await programmer.resync();
    if (!final.ok || final.ops !== 0) throw new Error(`resync after the updates changed ${final.ops} things`);

    if (SAMPLES)
      writeFileSync(
        SAMPLES,
        `${JSON.stringify({ load: [loadStart, loadavg()], node: process.execArgv, updates: { wallMs: ours.map((o) => o.totalMs), cpuMs: ours.map((o) => o.cpuMs), coldWallMs: cold } })}\n`,
      );
    const oursTotal = (o: Ours) => o.totalMs;
    const refTotal = (r: ReferenceApply) => r.renderMs + r.restoreMs;
    out.push(`bench/services — ${started.toISOString()} on ${hostname()}, load average ${loadStart} at the start, ${loadavg()} at the end`);
    out.push(`node ${process.version}; ${versionOf('nft')}; ${versionOf('iptables-restore')}`);
    out.push(`felix's dataplane: ${dataplane.description}`);
    out.push(`command: npx tsx bench/services.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
    out.push('');
    out.push(
      `${count(SERVICES)} TCP service ports × ${ENDPOINTS} endpoints (IPv4), ${count(Math.ceil(SERVICES / 10))} with a NodePort; ` +
        `an update replaces one endpoint of one service (${UPDATES} updates${WARMUP ? `, after ${WARMUP} to warm up` : ''}).`,
    );
    out.push('');
    out.push(
      table(
        ['after the load', 'chains', 'rules', 'map elements', 'sets', 'script lines'],
        [
          [
            'felix, desired (inet podroute, services part)',
            count(desired.chains),
            count(desired.rules),
            count(mapElements),
            count(desired.sets - (programmer.desired.maps?.length ?? 0)),
            count(load.ops),
          ],
          ['felix, read back from the kernel', count(kernel.chains), count(kernel.rules), '', '', ''],
          [
            'kube-proxy iptables shape, iptables-save -t nat',
            count(refKernel.chains),
            count(refKernel.rules),
            '',
            '',
            count(refLoad.lines),
          ],
        ],
      ),
    );
    out.push('');
    out.push('Initial load (ms):');
    out.push(
      table(
        ['side', 'total', 'compile / render', 'plan + nft / restore', 'of which the kernel tool', 'conntrack step', 'ratio to reference'],
        [
          [
            'felix (programServices: compile, programmer, conntrack)',
            ms(oursTotal(load)),
            ms(load.compileMs),
            ms(load.applyMs),
            ms(load.nftMs),
            ms(load.conntrackMs),
            ratio(oursTotal(load), refTotal(refLoad)),
          ],
          [
            'kube-proxy iptables shape (iptables-restore)',
            ms(refTotal(refLoad)),
            ms(refLoad.renderMs),
            ms(refLoad.restoreMs),
            ms(refLoad.restoreMs),
            '',
            '1.0×',
          ],
        ],
      ),
    );
    out.push(`felix's initial load took ${ms(load.cpuMs)} ms of the process's CPU (user and system).`);
    out.push('');
    out.push(`Resyncs of the loaded table that find nothing to repair, ${RESYNCS} of each (ms; CPU: this process's, kernel included):`);
    const resyncRow = (name: string, r: { wall: number[]; cpu: number[] }) => [
      name,
      ms(median(r.wall)),
      ms(percentile(r.wall, 95)),
      ms(percentile(r.wall, 99)),
      ms(Math.max(...r.wall)),
      ms(median(r.cpu)),
      ms(Math.max(...r.cpu)),
    ];
    out.push(
      table(
        ['resync', 'median', 'p95', 'p99', 'max', 'CPU median', 'CPU max'],
        [
          resyncRow(
            DATAPLANE === 'nft'
              ? 'as they come (nft -j list, compare)'
              : "as they come (felix's copy while the generation is its own, a tenth of the kernel's checked each)",
            quiet,
          ),
          resyncRow(
            DATAPLANE === 'nft' ? 'after another writer commits' : 'after another writer commits (netlink dumps, compare)',
            foreign,
          ),
        ],
      ),
    );
    out.push(
      `The first resync after the load${DATAPLANE === 'nft' ? '' : ', the kernel dumped with no earlier read to compare the dumps with'}: ${ms(resync.durationMs)} ms.`,
    );
    out.push('');
    out.push(`One endpoint of one service replaced, ${UPDATES} times (ms):`);
    const row = (name: string, v: number[], r: number[]) => [
      name,
      ms(median(v)),
      ms(percentile(v, 95)),
      ms(percentile(v, 99)),
      ms(Math.max(...v)),
      ratio(median(v), median(r)),
    ];
    out.push(
      table(
        ['', 'median', 'p95', 'p99', 'max', 'ratio (median)'],
        [
          row('felix, total', ours.map(oursTotal), refs.map(refTotal)),
          row(
            'felix, compile',
            ours.map((o) => o.compileMs),
            refs.map((r) => r.renderMs),
          ),
          row(
            'felix, plan + nft',
            ours.map((o) => o.applyMs),
            refs.map((r) => r.restoreMs),
          ),
          row(
            DATAPLANE === 'nft' ? 'felix, nft -f alone' : 'felix, the netlink transaction alone',
            ours.map((o) => o.nftMs),
            refs.map((r) => r.restoreMs),
          ),
          row(
            "felix, the process's CPU (user + system)",
            ours.map((o) => o.cpuMs),
            refs.map(refTotal),
          ),
          row(
            'felix, conntrack step',
            ours.map((o) => o.conntrackMs),
            refs.map((r) => r.restoreMs),
          ),
          row('reference, total', refs.map(refTotal), refs.map(refTotal)),
          row(
            'reference, iptables-restore --noflush',
            refs.map((r) => r.restoreMs),
            refs.map((r) => r.restoreMs),
          ),
        ],
      ),
    );
    out.push(`${p99Note(UPDATES)}.`);
    if (cold.length) {
      const p50 = median(cold);
      const p99 = percentile(cold, 99);
      out.push(
        `Cold, felix's first ${cold.length} updates of the warm-up (a fresh agent's): p50 ${ms(p50)} ms, p99 ${ms(p99)} ms (${ms(p99 / p50)}×).`,
      );
    }
    if (scavenger)
      out.push(
        `The agent's idle scavenge ran ${scavenger.runs} times in the quiet after felix's transactions (the load, the resyncs, the warm-up and the updates).`,
      );
    out.push(
      `felix's transaction per update: median ${median(ours.map((o) => o.ops))} operations; the reference's input: median ${median(refs.map((r) => r.lines))} lines. ` +
        `Rules after the updates: reference ${count(refAfter.rules)}; a resync of felix's found nothing to repair.`,
    );
    out.push('');
    out.push(
      'Per packet: felix finds a service with one verdict-map lookup (hash on address . protocol . port) whatever the number of services; ' +
        `the iptables shape walks KUBE-SERVICES, ${count(SERVICES)} rules, in order for the first packet of each connection.`,
    );
    console.log(out.join('\n'));
  } finally {
    scavenger?.close();
    reference?.close();
    namespaces.deleteAll();
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
