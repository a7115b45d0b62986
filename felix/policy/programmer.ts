// The policy half of felix: holds the desired nftables table and keeps the kernel's equal to it.
// An update applies the difference from what it believes the kernel holds (a pod add is one set
// element update); a resync reads the kernel and repairs whatever differs (a rule or an element
// deleted behind its back). Applies run one at a time, each one nft transaction, so a failure
// leaves the previous rules in force; it is reported and tried again, from a fresh read of the
// kernel, on the next update, resync or retry.

import { EventEmitter } from 'node:events';
import type { InstalledTable, NftDataplane, NftOp, NftOpKind, RuleCounter } from './dataplane.js';
import type { NftTable } from './nft-model.js';
import { planTable } from './plan.js';
import { mergeTable, type NftTablePart } from './table-parts.js';
import { commentIds, tableState } from './table-state.js';

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

export class PolicyProgrammer extends EventEmitter<PolicyProgrammerEvents> {
  private want: NftTable;
  private wantState: InstalledTable;
  /** The table update() gave, and the parts updatePart() gave: `want` is their union. */
  private base: NftTable;
  // Replaced, never changed in place: a part refused by mergeTable or tableState leaves it as it was.
  private parts: ReadonlyMap<string, NftTablePart> = new Map();
  private ids?: Map<string, string>;
  /** The kernel's table as the last successful apply left it; undefined: read it first. */
  private believed?: InstalledTable;
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
    this.wantState = tableState(this.want);
    this.retryDelay = opts.retryDelayMs ?? 1000;
  }

  get desired(): NftTable {
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
    const desired = mergeTable(base, parts);
    const state = tableState(desired);
    this.base = base;
    this.parts = parts;
    this.want = desired;
    this.wantState = state;
    this.ids = undefined;
    return this.enqueue();
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
    this.ids ??= commentIds(this.want);
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
    const resync = this.needResync || !this.believed;
    this.needResync = false;
    const desired = this.want;
    const state = this.wantState;
    let transaction: NftOp[] = [];
    let script = '';
    let error: string | undefined;
    try {
      const current = resync ? await this.dataplane.read() : this.believed;
      transaction = planTable(desired, current, state);
      if (transaction.length) {
        const r = await this.dataplane.apply(transaction);
        script = r.script;
        if (!r.ok) error = r.error ?? 'refused';
      }
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    if (error === undefined) {
      this.believed = state;
      this.retryDelay = this.opts.retryDelayMs ?? 1000;
    } else {
      // Nothing of the transaction took effect, but our record may be why it failed (an
      // element already gone): the next attempt reads the kernel.
      this.needResync = true;
      this.believed = undefined;
      this.scheduleRetry();
    }
    const report = summarize(resync ? 'resync' : 'incremental', transaction, script, performance.now() - t0, error);
    this.last = report;
    this.emit('report', report);
    return report;
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
