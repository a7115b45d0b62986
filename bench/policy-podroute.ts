// podroute's side of the policy benchmark, as the agent chains it (lib/agent/policy-feed.ts):
// resources into the calculation graph, its PolicyInput compiled to the nftables table, the
// table handed to the PolicyProgrammer, which applies the difference with one `nft -f`
// transaction in a network namespace. A change is timed from the resource to the programmer's
// report (the transaction has returned from the kernel), split at each step; the dataplane is
// wrapped so the time spent in nft itself is known.
import {
  compileNftables,
  type InstalledTable,
  type NftApplyResult,
  type NftDataplane,
  type NftOp,
  type NftTable,
  NetlinkNftDataplane,
  NftablesDataplane,
  type PolicyApplyReport,
  type PolicyInput,
  PolicyProgrammer,
  type RuleCounterRow,
} from '../felix/index.js';
import { tableChange } from '../felix/policy/derivation.js';
import { IdleScavenger } from '../lib/agent/idle-scavenge.js';
import { PolicyCalculator } from '../lib/policy/index.js';
import { probeCalls, threadTimes } from './policy-attribution.js';

/** The process's CPU time so far (user and system, every thread), in milliseconds. */
export function cpuNow(): { user: number; system: number } {
  probeCalls.cpuNow++;
  const u = process.cpuUsage();
  return { user: u.user / 1000, system: u.system / 1000 };
}

/** The nft dataplane, with the wall and CPU time of every kernel call it made since the last reset. */
class TimedDataplane implements NftDataplane {
  readonly family = 'inet' as const;
  readonly table: string;
  readonly description: string;
  kernelMs = 0;
  /** CPU in the process's own code (building the batch, reading the answers) and in the kernel (the commit runs in the send). */
  kernelUserMs = 0;
  kernelSystemMs = 0;
  /** The main thread in the kernel step: on a core, and waiting for one (the rest of its wall time it slept). */
  kernelThreadCpuMs = 0;
  kernelThreadWaitMs = 0;
  /** The wall time over which those two were read (the kernel step and the reads themselves). */
  kernelThreadWallMs = 0;
  /**
   * The benchmark's own reads of the thread's times around the kernel step (a file read each):
   * they fall inside the change's plan step, so they are taken out of it, in wall and CPU time.
   */
  probeMs = 0;
  probeCpuMs = 0;

  constructor(readonly inner: NftDataplane) {
    this.table = inner.table;
    this.description = `${inner.description}, timed`;
  }

  private async timed<T>(f: () => Promise<T>): Promise<T> {
    const p0 = cpuNow();
    const o0 = performance.now();
    const h0 = threadTimes();
    const t0 = performance.now();
    const c0 = cpuNow();
    try {
      return await f();
    } finally {
      const kernelMs = performance.now() - t0;
      this.kernelMs += kernelMs;
      const c1 = cpuNow();
      const h1 = threadTimes();
      const o1 = performance.now();
      const p1 = cpuNow();
      this.kernelThreadWallMs += o1 - o0;
      this.probeMs += o1 - o0 - kernelMs;
      this.probeCpuMs += p1.user + p1.system - (p0.user + p0.system) - (c1.user + c1.system - (c0.user + c0.system));
      this.kernelUserMs += c1.user - c0.user;
      this.kernelSystemMs += c1.system - c0.system;
      this.kernelThreadCpuMs += h1.cpu - h0.cpu;
      this.kernelThreadWaitMs += h1.wait - h0.wait;
    }
  }

  read(): Promise<InstalledTable | undefined> {
    return this.timed(() => this.inner.read());
  }

  readCounters(): Promise<RuleCounterRow[]> {
    return this.timed(() => this.inner.readCounters());
  }

  apply(ops: readonly NftOp[]): Promise<NftApplyResult> {
    return this.timed(() => this.inner.apply(ops));
  }

  close(): void {
    this.inner.close();
  }
}

/** One change, resource to kernel, in milliseconds per step. */
export interface PodrouteSample {
  /** The calculation graph: the resource put or deleted, and its PolicyInput read. */
  readonly calcMs: number;
  /** compileNftables: the whole table from the input. */
  readonly compileMs: number;
  /** The programmer's own work: the table's canonical form, and its difference from the kernel's. */
  readonly planMs: number;
  /** nft: the transaction written and applied (and, on a first load, the table read). */
  readonly nftMs: number;
  readonly totalMs: number;
  /**
   * The process's CPU time (every thread) in each step, and in the kernel step the part spent in
   * the kernel (system time: the commit runs in the send). getrusage splits user from system by
   * sampling, so only the sums are exact; a median over many changes is what to read.
   */
  readonly cpu: {
    readonly calc: number;
    readonly compile: number;
    readonly plan: number;
    readonly kernel: number;
    readonly kernelSystem: number;
    readonly total: number;
  };
  /**
   * The main thread's time on a core and waiting for one (the kernel's schedstat), the whole
   * change, and the wall time they were read over (the change and the reads around it); the
   * same in the kernel step alone, where the rest of the wall time the thread slept in the
   * kernel. The kernel brings the time on a core up to date at its scheduler's events and ticks,
   * so one change's is known to a tick (4 ms at HZ 250); the wait is exact.
   */
  readonly threadCpuMs: number;
  readonly threadWaitMs: number;
  readonly threadWallMs: number;
  readonly kernelThreadCpuMs: number;
  readonly kernelThreadWaitMs: number;
  readonly kernelThreadWallMs: number;
  /** The change's spans on performance.now(): the calculation, and the rest (others' work may lie between). */
  readonly windows: readonly (readonly [number, number])[];
  /** The compiler recorded how the table came from the one before (a TableChange): what it changed, not the whole table, is there to plan. */
  readonly recorded: boolean;
  /**
   * The programmer's report and the input's sizes, not the objects: a benchmark that kept every
   * change's input and transaction would keep every version of the state alive, which the agent
   * does not, and time V8's collector on a heap the agent never has.
   */
  readonly report: ReportSummary;
  readonly input: InputSizes;
}

export type ReportSummary = Pick<PolicyApplyReport, 'ok' | 'ops' | 'opCounts' | 'elementsAdded' | 'elementsDeleted' | 'error'>;

export interface InputSizes {
  readonly sets: number;
  readonly namedPortSets: number;
  readonly policies: number;
  readonly endpoints: number;
}

export interface Calculated {
  readonly input: PolicyInput;
  readonly calcMs: number;
  readonly calcCpuMs: number;
  readonly calcThread: { readonly cpu: number; readonly wait: number; readonly wall: number };
  readonly calcWindow: readonly [number, number];
}

export interface TableCounts {
  /** Named sets and verdict maps. */
  readonly sets: number;
  /** Their elements. */
  readonly elements: number;
  readonly chains: number;
  readonly rules: number;
}

/**
 * Verdict maps, where the table has them (a table may leave them out): an array of maps with
 * element arrays (NftTable) or a Map of maps with element Maps (InstalledTable).
 */
function mapTotals(maps: unknown): { maps: number; elements: number } {
  if (!maps) return { maps: 0, elements: 0 };
  const list = maps instanceof Map ? [...maps.values()] : (maps as readonly unknown[]);
  let elements = 0;
  for (const m of list) {
    const e = (m as { readonly elements: { readonly length?: number; readonly size?: number } }).elements;
    elements += e.length ?? e.size ?? 0;
  }
  return { maps: list.length, elements };
}

export function tableCounts(t: NftTable): TableCounts {
  const m = mapTotals((t as { readonly maps?: unknown }).maps);
  return {
    sets: t.sets.length + m.maps,
    elements: t.sets.reduce((n, s) => n + s.elements.length, 0) + m.elements,
    chains: t.chains.length,
    rules: t.chains.reduce((n, c) => n + c.rules.length, 0),
  };
}

export function installedCounts(t: InstalledTable | undefined): TableCounts {
  if (!t) return { sets: 0, elements: 0, chains: 0, rules: 0 };
  const m = mapTotals((t as { readonly maps?: unknown }).maps);
  let elements = m.elements;
  let rules = 0;
  for (const s of t.sets.values()) elements += s.elements.size;
  for (const c of t.chains.values()) rules += c.rules.length;
  return { sets: t.sets.size + m.maps, elements, chains: t.chains.size, rules };
}

export class PodrouteSide {
  readonly calculator: PolicyCalculator;
  readonly programmer: PolicyProgrammer;
  private readonly dataplane: TimedDataplane;
  private readonly scavenger: IdleScavenger | undefined;
  table?: NftTable;

  constructor(
    readonly netns: string,
    nodeName: string,
    /** 'netlink': nf_tables written by the process over netlink, rules too; 'nft': every transaction through nft -f. */
    dataplane: 'netlink' | 'nft' = 'netlink',
    /** The agent's idle scavenge (lib/agent/idle-scavenge.ts); false: V8 collects when it must. */
    idleScavenge = true,
  ) {
    this.calculator = new PolicyCalculator(nodeName);
    this.dataplane = new TimedDataplane(dataplane === 'nft' ? new NftablesDataplane({ netns }) : new NetlinkNftDataplane({ netns }));
    // No timers: every apply in the benchmark is one the benchmark asked for.
    this.programmer = new PolicyProgrammer(this.dataplane, { resyncIntervalMs: 0, retryDelayMs: 0 });
    // V8's young-generation collection in the quiet after each transaction, as the agent runs it.
    if (idleScavenge) {
      const scavenger = new IdleScavenger({ busy: () => this.programmer.busy });
      this.programmer.on('report', () => scavenger.workDone());
      this.scavenger = scavenger;
    }
  }

  /** Scavenges run in the quiet between changes. */
  get idleScavenges(): number {
    return this.scavenger?.runs ?? 0;
  }

  /** The calculation graph's step of a change: the resources changed, the PolicyInput read. */
  calculate(mutate: (c: PolicyCalculator) => void): Calculated {
    const o0 = performance.now();
    const h0 = threadTimes();
    const c0 = cpuNow();
    const t0 = performance.now();
    mutate(this.calculator);
    const input = this.calculator.input();
    const t1 = performance.now();
    const c1 = cpuNow();
    const h1 = threadTimes();
    const o1 = performance.now();
    return {
      input,
      calcMs: t1 - t0,
      calcCpuMs: c1.user + c1.system - c0.user - c0.system,
      calcThread: { cpu: h1.cpu - h0.cpu, wait: h1.wait - h0.wait, wall: o1 - o0 },
      calcWindow: [o0, o1],
    };
  }

  /** The rest of a change, through to the kernel: compile, plan, one nft transaction. */
  async apply(calculated: Calculated): Promise<PodrouteSample> {
    const dp = this.dataplane;
    dp.kernelMs = dp.kernelUserMs = dp.kernelSystemMs = dp.kernelThreadCpuMs = dp.kernelThreadWaitMs = dp.kernelThreadWallMs = 0;
    dp.probeMs = dp.probeCpuMs = 0;
    const o1 = performance.now();
    const h1 = threadTimes();
    const c1 = cpuNow();
    const t1 = performance.now();
    const table = compileNftables(calculated.input);
    const t2 = performance.now();
    const c2 = cpuNow();
    const recorded = this.table !== undefined && tableChange(table)?.from === this.table;
    const report = await this.programmer.update(table);
    const t3 = performance.now();
    const c3 = cpuNow();
    const h3 = threadTimes();
    const o3 = performance.now();
    if (!report.ok) throw new Error(`nft refused the transaction: ${report.error}`);
    this.table = table;
    const nftMs = dp.kernelMs;
    const sum = (c: { user: number; system: number }) => c.user + c.system;
    const kernelCpu = dp.kernelUserMs + dp.kernelSystemMs;
    const compileCpu = sum(c2) - sum(c1);
    const planCpu = sum(c3) - sum(c2) - kernelCpu - dp.probeCpuMs;
    return {
      cpu: {
        calc: calculated.calcCpuMs,
        compile: compileCpu,
        plan: planCpu,
        kernel: kernelCpu,
        kernelSystem: dp.kernelSystemMs,
        total: calculated.calcCpuMs + compileCpu + planCpu + kernelCpu,
      },
      threadCpuMs: calculated.calcThread.cpu + h3.cpu - h1.cpu,
      threadWaitMs: calculated.calcThread.wait + h3.wait - h1.wait,
      threadWallMs: calculated.calcThread.wall + o3 - o1,
      kernelThreadCpuMs: dp.kernelThreadCpuMs,
      kernelThreadWaitMs: dp.kernelThreadWaitMs,
      kernelThreadWallMs: dp.kernelThreadWallMs,
      windows: [calculated.calcWindow, [o1, o3]],
      calcMs: calculated.calcMs,
      compileMs: t2 - t1,
      planMs: t3 - t2 - nftMs - dp.probeMs,
      nftMs,
      totalMs: calculated.calcMs + (t3 - t1) - dp.probeMs,
      recorded,
      report: {
        ok: report.ok,
        ops: report.ops,
        opCounts: report.opCounts,
        elementsAdded: report.elementsAdded,
        elementsDeleted: report.elementsDeleted,
        ...(report.error !== undefined ? { error: report.error } : {}),
      },
      input: {
        sets: calculated.input.sets.length,
        namedPortSets: calculated.input.namedPortSets.length,
        policies: calculated.input.policies.length,
        endpoints: calculated.input.endpoints.length,
      },
    };
  }

  /** The table as the kernel lists it now. */
  read(): Promise<InstalledTable | undefined> {
    return this.dataplane.inner.read();
  }

  /** A resync: the kernel's table read back and compared; ops 0 means it holds exactly the desired table. */
  async resync(): Promise<{ report: PolicyApplyReport; ms: number }> {
    const t0 = performance.now();
    const report = await this.programmer.resync();
    return { report, ms: performance.now() - t0 };
  }

  close(): void {
    this.scavenger?.close();
    this.programmer.stop();
    this.dataplane.close();
  }
}
