// The policy half of felix: holds the desired nftables table and keeps the kernel's equal to it.
// An update applies the difference from what it believes the kernel holds (a pod add is one set
// element update); a resync reads the kernel and repairs whatever differs (a rule or an element
// deleted behind its back). Applies run one at a time, each one nft transaction, so a failure
// leaves the previous rules in force; it is reported and tried again, from a fresh read of the
// kernel, on the next update, resync or retry.

import { EventEmitter } from 'node:events';
import type {
  InstalledChain,
  InstalledMap,
  InstalledSet,
  InstalledTable,
  NftDataplane,
  NftOp,
  NftOpKind,
  RuleCounter,
} from './dataplane.js';
import { onlySetMembers, tableChange } from './derivation.js';
import type { NftSet, NftTable } from './nft-model.js';
import { planSetChanges, planTable, sameKind } from './plan.js';
import { mergeTable, type NftTablePart } from './table-parts.js';
import { commentIds, desiredSetState, tableState } from './table-state.js';

export interface PolicyProgrammerOptions {
  /** Full resync period once started; 0 turns the timer off. Default 90 s, as felix's routes. */
  readonly resyncIntervalMs?: number;
  /** First retry after a failed apply, once started; doubles up to 30 s. 0: retry only on the next update or resync. Default 1 s. */
  readonly retryDelayMs?: number;
}

export interface PolicyApplyReport {
  /** resync: planned against the kernel as read; incremental: against what the last apply left. */
  readonly kind: 'resync' | 'incremental';
  readonly ok: boolean;
  /** Operations in the transaction; 0 when the kernel already matched. */
  readonly ops: number;
  readonly opCounts: Readonly<Partial<Record<NftOpKind, number>>>;
  readonly elementsAdded: number;
  readonly elementsDeleted: number;
  /** The transaction as planned. */
  readonly transaction: readonly NftOp[];
  /** The `nft -f` text as the dataplane wrote it. */
  readonly script: string;
  readonly durationMs: number;
  /** Why it failed; the kernel kept the rules it had. */
  readonly error?: string;
}

export interface PolicyProgrammerEvents {
  report: [PolicyApplyReport];
}

/** The desired table's keyed state: its maps are the programmer's own, and a change of set members only is made in them. */
interface WantState {
  readonly sets: Map<string, InstalledSet>;
  readonly maps: ReadonlyMap<string, InstalledMap>;
  readonly chains: ReadonlyMap<string, InstalledChain>;
}

function ownState(t: InstalledTable): WantState {
  return { sets: new Map(t.sets), maps: t.maps, chains: t.chains };
}

export class PolicyProgrammer extends EventEmitter<PolicyProgrammerEvents> {
  /** The union of `base` and `parts`, made when asked for after a change of set members only. */
  private want?: NftTable;
  private wantState: WantState;
  /** The table update() gave, and the parts updatePart() gave: `want` is their union. */
  private base: NftTable;
  // Replaced, never changed in place: a part refused by mergeTable or tableState leaves it as it was.
  private parts: ReadonlyMap<string, NftTablePart> = new Map();
  private ids?: Map<string, string>;
  /**
   * The kernel's table as the last successful apply left it, when a whole table was given
   * since; undefined: read it first, unless `changedSets` says what it is.
   */
  private believed?: InstalledTable;
  /**
   * Since the last transaction was planned, when every change since was of set members only
   * (tables the compiler marked so, derivation.ts): the sets changed, each with the state the
   * kernel then held (once the transaction is applied). The next transaction is then theirs
   * alone, planned from the difference each set records. Undefined: plan the whole table.
   */
  private changedSets?: Map<string, InstalledSet | undefined>;
  private needResync = true;
  private chain: Promise<unknown> = Promise.resolve();
  private queued?: Promise<PolicyApplyReport>;
  private running = false;
  private resyncTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private retryDelay: number;
  private last?: PolicyApplyReport;

  constructor(
    readonly dataplane: NftDataplane,
    private readonly opts: PolicyProgrammerOptions = {},
  ) {
    super();
    this.want = this.base = { family: dataplane.family, name: dataplane.table, sets: [], chains: [] };
    this.wantState = ownState(tableState(this.want));
    this.retryDelay = opts.retryDelayMs ?? 1000;
  }

  get desired(): NftTable {
    this.want ??= mergeTable(this.base, this.parts);
    return this.want;
  }

  /** The last apply's report. */
  get lastReport(): PolicyApplyReport | undefined {
    return this.last;
  }

  /**
   * Sets the desired table and applies the difference. Throws NftTableError (naming the field)
   * for a table nft could not be given, and then nothing changes. Updates made while an apply
   * runs are applied together in the next one; the promise is that apply's report.
   */
  update(desired: NftTable): Promise<PolicyApplyReport> {
    if (desired.family !== this.dataplane.family || desired.name !== this.dataplane.table)
      throw new Error(
        `table ${desired.family} ${desired.name}: this programmer manages ${this.dataplane.family} ${this.dataplane.table} only`,
      );
    return this.set(desired, this.parts);
  }

  /**
   * Sets one part of the table (felix/services gives its part as 'services'; undefined takes it
   * out), kept across update()s, and applies the difference. Throws NftTableError, and then
   * nothing changes, when the part could not be given to nft or declares a name another has.
   */
  updatePart(key: string, part: NftTablePart | undefined): Promise<PolicyApplyReport> {
    const parts = new Map(this.parts);
    if (part) parts.set(key, part);
    else parts.delete(key);
    return this.set(this.base, parts);
  }

  private set(base: NftTable, parts: ReadonlyMap<string, NftTablePart>): Promise<PolicyApplyReport> {
    const change = parts === this.parts ? tableChange(base) : undefined;
    if (change?.from === this.base && onlySetMembers(change) && this.setMembers(base, change.sets)) return this.enqueue();
    const desired = mergeTable(base, parts);
    const state = ownState(tableState(desired));
    this.rememberKernel();
    this.base = base;
    this.parts = parts;
    this.want = desired;
    this.wantState = state;
    this.ids = undefined;
    return this.enqueue();
  }

  /**
   * A table in which these sets changed members and nothing else: their states replace the old
   * ones, which `changedSets` keeps for the plan. False, changing nothing, when a set would
   * come, go or change kind (the whole table is then taken).
   */
  private setMembers(base: NftTable, sets: readonly NftSet[]): boolean {
    const next: InstalledSet[] = [];
    for (const s of sets) {
      const now = this.wantState.sets.get(s.name);
      let state: InstalledSet;
      try {
        state = desiredSetState(s, `sets[${s.name}]`);
      } catch {
        return false; // refused: the whole table's reading says where
      }
      if (!now || !sameKind(now, state)) return false;
      next.push(state);
    }
    const changed = this.changedSets;
    for (const state of next) {
      if (changed && !changed.has(state.name)) changed.set(state.name, this.wantState.sets.get(state.name));
      this.wantState.sets.set(state.name, state);
    }
    this.base = base;
    this.want = this.parts.size ? undefined : base;
    return true;
  }

  /** Before a whole table replaces the state: what the kernel holds, kept for its plan. */
  private rememberKernel(): void {
    if (!this.changedSets) return;
    this.believed = this.kernelState(this.changedSets);
    this.changedSets = undefined;
  }

  /** What the kernel holds (once the last transaction applies): the state with the set changes since undone. */
  private kernelState(changed: ReadonlyMap<string, InstalledSet | undefined>): InstalledTable {
    const sets = new Map(this.wantState.sets);
    for (const [name, before] of changed) {
      if (before) sets.set(name, before);
      else sets.delete(name);
    }
    return { sets, maps: this.wantState.maps, chains: this.wantState.chains };
  }

  /** Reads the kernel's table and repairs every difference. */
  resync(): Promise<PolicyApplyReport> {
    this.needResync = true;
    return this.enqueue();
  }

  /** A resync now, then on the timer; failures are retried with backoff. */
  start(): Promise<PolicyApplyReport> {
    this.running = true;
    const every = this.opts.resyncIntervalMs ?? 90_000;
    if (every > 0 && !this.resyncTimer) {
      this.resyncTimer = setInterval(() => this.background(this.resync()), every);
      this.resyncTimer.unref();
    }
    return this.resync();
  }

  /** Stops the timers. The rules stay in the kernel, enforced, as felix leaves its routes. */
  stop(): void {
    this.running = false;
    clearInterval(this.resyncTimer);
    clearTimeout(this.retryTimer);
    this.resyncTimer = this.retryTimer = undefined;
  }

  /** Resolves when every update made so far has been applied (or has failed and been reported). */
  async settled(): Promise<void> {
    while (this.queued) await this.queued;
    await this.chain;
  }

  /**
   * Packets and bytes per rule id, read from the kernel now; an id that several rules carry
   * (one per family, one per chain) sums them. Only rules with a `counter` statement count.
   */
  async counters(): Promise<Map<string, RuleCounter>> {
    this.ids ??= commentIds(this.desired);
    const out = new Map<string, RuleCounter>();
    for (const row of await this.dataplane.readCounters()) {
      const id = this.ids.get(row.comment);
      if (id === undefined) continue;
      const had = out.get(id);
      out.set(id, had ? { packets: had.packets + row.packets, bytes: had.bytes + row.bytes } : { packets: row.packets, bytes: row.bytes });
    }
    return out;
  }

  private enqueue(): Promise<PolicyApplyReport> {
    if (this.queued) return this.queued;
    const run = this.chain.then(() => {
      this.queued = undefined;
      return this.run();
    });
    this.queued = run;
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async run(): Promise<PolicyApplyReport> {
    const t0 = performance.now();
    const resync = this.needResync || (!this.believed && !this.changedSets);
    this.needResync = false;
    let transaction: NftOp[] = [];
    let script = '';
    let error: string | undefined;
    try {
      const current = resync ? await this.dataplane.read() : this.believed;
      transaction = this.plan(resync, current);
      if (transaction.length) {
        const r = await this.dataplane.apply(transaction);
        script = r.script;
        if (!r.ok) error = r.error ?? 'refused';
      }
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    if (error === undefined) {
      // The kernel holds the state as it was planned: the state now, with the changes since undone.
      this.retryDelay = this.opts.retryDelayMs ?? 1000;
    } else {
      // Nothing of the transaction took effect, but our record may be why it failed (an
      // element already gone): the next attempt reads the kernel.
      this.needResync = true;
      this.believed = undefined;
      this.changedSets = undefined;
      this.scheduleRetry();
    }
    const report = summarize(resync ? 'resync' : 'incremental', transaction, script, performance.now() - t0, error);
    this.last = report;
    this.emit('report', report);
    return report;
  }

  /**
   * The transaction from what the kernel holds to the state now; from here on, changes are
   * counted from the state as planned. Only set members changed since the last plan: their
   * difference alone.
   */
  private plan(resync: boolean, current: InstalledTable | undefined): NftOp[] {
    const changed = this.changedSets;
    let ops = !resync && changed ? planSetChanges(changed, this.wantState.sets) : undefined;
    if (!ops) {
      if (!resync && changed) current = this.kernelState(changed);
      // wantState is the desired table's state, kept as it changes: not made again here.
      ops = planTable(this.desired, current, this.wantState);
    }
    this.believed = undefined;
    this.changedSets = new Map();
    return ops;
  }

  /**
   * A run the timers started has its outcome in its report; only a 'report' listener that
   * throws can make it reject, and that must not take the process down.
   */
  private background(p: Promise<unknown>): void {
    p.catch((e: unknown) => process.stderr.write(`policy programmer: ${e instanceof Error ? e.message : String(e)}\n`));
  }

  private scheduleRetry(): void {
    const delay = this.retryDelay;
    if (!this.running || this.retryTimer || delay <= 0) return;
    this.retryDelay = Math.min(delay * 2, 30_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.background(this.resync());
    }, delay);
    this.retryTimer.unref();
  }
}

function summarize(
  kind: PolicyApplyReport['kind'],
  tx: readonly NftOp[],
  script: string,
  durationMs: number,
  error?: string,
): PolicyApplyReport {
  const opCounts: Partial<Record<NftOpKind, number>> = {};
  let elementsAdded = 0;
  let elementsDeleted = 0;
  for (const op of tx) {
    opCounts[op.kind] = (opCounts[op.kind] ?? 0) + 1;
    if (op.kind === 'add element' || op.kind === 'add set') elementsAdded += op.elements.length;
    else if (op.kind === 'delete element') elementsDeleted += op.elements.length;
  }
  return {
    kind,
    ok: error === undefined,
    ops: tx.length,
    opCounts,
    elementsAdded,
    elementsDeleted,
    transaction: tx,
    script,
    durationMs,
    ...(error !== undefined ? { error } : {}),
  };
}
