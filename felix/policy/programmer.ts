// The policy half of felix: holds the desired nftables table and keeps the kernel's equal to it.
// An update applies the difference from what it believes the kernel holds (a pod add is one set
// element update); a resync reads the kernel and repairs whatever differs (a rule or an element
// deleted behind its back). Applies run one at a time, each one nft transaction, so a failure
// leaves the previous rules in force; it is reported and tried again, from a fresh read of the
// kernel, on the next update, resync or retry.

import { EventEmitter } from 'node:events';
import type {
  NftApplyResult,
  InstalledChain,
  InstalledMap,
  InstalledSet,
  InstalledTable,
  NftDataplane,
  NftOp,
  NftOpKind,
  RuleCounter,
} from './dataplane.js';
import { partChange, type TableDelta, tableChange } from './derivation.js';
import type { NftChain, NftTable } from './nft-model.js';
import { type PendingChanges, planChanges, planTable, sameBase, sameKind, sameMapKind } from './plan.js';
import { recordPlannedTable } from './planned-table.js';
import { mergeTable, type NftTablePart } from './table-parts.js';
import { commentIds, desiredChainState, desiredMapState, desiredSetState, tableState } from './table-state.js';

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

/**
 * The desired table's keyed state, the programmer's own maps, which a change that says what it
 * changed (derivation.ts) updates in place: with each chain as given (its rules' text, for the
 * plan) and who declared each name ('' the table update() gave, else the part's key).
 */
interface WantState extends InstalledTable {
  readonly sets: Map<string, InstalledSet>;
  readonly maps: Map<string, InstalledMap>;
  readonly chains: Map<string, InstalledChain>;
  readonly chainDefs: Map<string, NftChain>;
  /** Sets and maps share one namespace; chains have their own. */
  readonly owners: Map<string, string>;
  readonly chainOwners: Map<string, string>;
}

const BASE = '';

// Module functions, not closures made per change: a change is a few names, and what it
// allocates beside them is what its young-generation collections copy.
const mine = (had: string | undefined, owner: string): boolean => had === undefined || had === owner;

/** Whether every name `names` removes is `owner`'s and held. */
function ownedAll(
  names: readonly string[] | undefined,
  owner: string,
  owners: ReadonlyMap<string, string>,
  held: ReadonlyMap<string, unknown>,
): boolean {
  if (names) for (const n of names) if (owners.get(n) !== owner || !held.has(n)) return false;
  return true;
}

/** Records what the kernel held of `name` before the first change since the last plan. */
function keep<T>(record: Map<string, T | undefined> | undefined, name: string, before: T | undefined): void {
  if (record && !record.has(name)) record.set(name, before);
}

function ownState(base: NftTable, parts: ReadonlyMap<string, NftTablePart>, t: InstalledTable): WantState {
  const owners = new Map<string, string>();
  const chainOwners = new Map<string, string>();
  const chainDefs = new Map<string, NftChain>();
  const own = (key: string, p: NftTablePart | NftTable) => {
    for (const x of p.sets) owners.set(x.name, key);
    for (const x of p.maps ?? []) owners.set(x.name, key);
    for (const c of p.chains) {
      chainOwners.set(c.name, key);
      chainDefs.set(c.name, c);
    }
  };
  own(BASE, base);
  for (const [key, p] of parts) own(key, p);
  return { sets: new Map(t.sets), maps: new Map(t.maps), chains: new Map(t.chains), chainDefs, owners, chainOwners };
}

export class PolicyProgrammer extends EventEmitter<PolicyProgrammerEvents> {
  /** The union of `base` and `parts`, made when asked for after a change taken as such. */
  private want?: NftTable;
  private wantState: WantState;
  /** The table update() gave, and the parts updatePart() gave: `want` is their union. */
  private base: NftTable;
  // Replaced, never changed in place: a part refused by mergeTable or tableState leaves it as it was.
  private parts: ReadonlyMap<string, NftTablePart> = new Map();
  private ids?: Map<string, string>;
  /**
   * The kernel's table as the last successful apply left it, when a whole table was given
   * since; undefined: read it first, unless `pending` says what it is.
   */
  private believed?: InstalledTable;
  /**
   * Since the last transaction was planned, when every change since said what it changed
   * (tables and parts their makers marked so, derivation.ts): the sets, maps and chains changed,
   * each with the state the kernel then held (once the transaction is applied; undefined: it
   * held none). The next transaction is then theirs alone. Undefined: plan the whole table.
   */
  private pending?: PendingChanges;
  /**
   * A read's set, map or chain (the key) known to equal the desired one it maps to: both are
   * values that never change (a dataplane's read is not changed after it is lent, and the
   * desired state replaces an object rather than change it), so a later read that lends the
   * same object for that name is not compared again, and a resync that finds nothing costs the
   * objects that changed since the last, not the elements of the table.
   */
  private same = new WeakMap<object, object>();
  private needResync = true;
  private chain: Promise<unknown> = Promise.resolve();
  private queued?: Promise<PolicyApplyReport>;
  private running = false;
  /** A transaction is being planned or applied (run() has begun and not reported). */
  private applying = false;
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
    this.wantState = ownState(this.base, this.parts, tableState(this.want));
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
    if (desired === this.base) return this.enqueue();
    const change = tableChange(desired);
    if (change && change.from === this.base && this.takeChange(BASE, change)) {
      this.base = desired;
      this.want = this.parts.size ? undefined : desired;
      return this.enqueue();
    }
    return this.set(desired, this.parts);
  }

  /**
   * Sets one part of the table (felix/services gives its part as 'services'; undefined takes it
   * out), kept across update()s, and applies the difference. Throws NftTableError, and then
   * nothing changes, when the part could not be given to nft or declares a name another has.
   */
  updatePart(key: string, part: NftTablePart | undefined): Promise<PolicyApplyReport> {
    if (key === BASE) throw new Error('a part needs a key');
    const had = this.parts.get(key);
    if (part === had) return this.enqueue();
    const parts = new Map(this.parts);
    if (part) parts.set(key, part);
    else parts.delete(key);
    const change = part && had && partChange(part);
    if (change && change.from === had && this.takeChange(key, change)) {
      this.parts = parts;
      this.want = undefined;
      return this.enqueue();
    }
    return this.set(this.base, parts);
  }

  private set(base: NftTable, parts: ReadonlyMap<string, NftTablePart>): Promise<PolicyApplyReport> {
    const desired = mergeTable(base, parts);
    const state = ownState(base, parts, tableState(desired));
    this.rememberKernel();
    this.base = base;
    this.parts = parts;
    this.want = desired;
    this.wantState = state;
    this.ids = undefined;
    return this.enqueue();
  }

  /**
   * A change of the table or of part `owner` that says what it changed: the states of what it
   * names replace the old ones (which `pending` keeps for the plan), and nothing else is read.
   * False, changing nothing, when it cannot be taken so (a set or map changing kind or coming
   * under a name another holds, a chain another declares, anything nft could not be given):
   * the whole table is then read, which says why.
   */
  private takeChange(owner: string, change: TableDelta): boolean {
    const want = this.wantState;
    const sets: InstalledSet[] = [];
    const maps: InstalledMap[] = [];
    const chains: [NftChain, InstalledChain][] = [];
    try {
      for (const s of change.sets) {
        const state = desiredSetState(s, `sets[${s.name}]`);
        const now = want.sets.get(s.name);
        if (now ? !sameKind(now, state) : want.owners.has(s.name)) return false;
        if (!mine(want.owners.get(s.name), owner)) return false;
        sets.push(state);
      }
      for (const m of change.maps ?? []) {
        const state = desiredMapState(m, `maps[${m.name}]`);
        const now = want.maps.get(m.name);
        if (now ? !sameMapKind(now, state) : want.owners.has(m.name)) return false;
        if (!mine(want.owners.get(m.name), owner)) return false;
        maps.push(state);
      }
      for (const c of change.chains ?? []) {
        if (!mine(want.chainOwners.get(c.name), owner)) return false;
        const state = desiredChainState(c, `chains[${c.name}]`);
        const now = want.chains.get(c.name);
        // A base chain's hook or priority changed: whatever jumps to it is the whole plan's to order.
        if (now && !sameBase(now.base, state.base)) return false;
        chains.push([c, state]);
      }
    } catch {
      return false; // refused: the whole table's reading says where
    }
    if (!ownedAll(change.removedSets, owner, want.owners, want.sets)) return false;
    if (!ownedAll(change.removedMaps, owner, want.owners, want.maps)) return false;
    if (!ownedAll(change.removedChains, owner, want.chainOwners, want.chains)) return false;

    const p = this.pending;
    for (const state of sets) {
      keep(p?.sets, state.name, want.sets.get(state.name));
      want.sets.set(state.name, state);
      want.owners.set(state.name, owner);
    }
    for (const state of maps) {
      keep(p?.maps, state.name, want.maps.get(state.name));
      want.maps.set(state.name, state);
      want.owners.set(state.name, owner);
    }
    for (const [def, state] of chains) {
      keep(p?.chains, def.name, want.chains.get(def.name));
      want.chains.set(def.name, state);
      want.chainDefs.set(def.name, def);
      want.chainOwners.set(def.name, owner);
    }
    for (const name of change.removedSets ?? []) {
      keep(p?.sets, name, want.sets.get(name));
      want.sets.delete(name);
      want.owners.delete(name);
    }
    for (const name of change.removedMaps ?? []) {
      keep(p?.maps, name, want.maps.get(name));
      want.maps.delete(name);
      want.owners.delete(name);
    }
    for (const name of change.removedChains ?? []) {
      keep(p?.chains, name, want.chains.get(name));
      want.chains.delete(name);
      want.chainDefs.delete(name);
      want.chainOwners.delete(name);
    }
    if (chains.length || change.removedChains?.length) this.ids = undefined;
    return true;
  }

  /** Before a whole table replaces the state: what the kernel holds, kept for its plan. */
  private rememberKernel(): void {
    if (!this.pending) return;
    this.believed = this.kernelState(this.pending);
    this.pending = undefined;
  }

  /** What the kernel holds (once the last transaction applies): the state with the changes since undone. */
  private kernelState(p: PendingChanges): InstalledTable {
    const undo = <T>(now: ReadonlyMap<string, T>, changed: ReadonlyMap<string, T | undefined>): Map<string, T> => {
      const out = new Map(now);
      for (const [name, before] of changed) {
        if (before) out.set(name, before);
        else out.delete(name);
      }
      return out;
    };
    return {
      sets: undo(this.wantState.sets, p.sets),
      maps: undo(this.wantState.maps, p.maps),
      chains: undo(this.wantState.chains, p.chains),
    };
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

  /** Whether a transaction is queued or being applied now. */
  get busy(): boolean {
    return this.queued !== undefined || this.applying;
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
    this.applying = true;
    try {
      return await this.runOnce();
    } finally {
      this.applying = false;
    }
  }

  private async runOnce(): Promise<PolicyApplyReport> {
    const t0 = performance.now();
    const resync = this.needResync || (!this.believed && !this.pending);
    this.needResync = false;
    let transaction: NftOp[] = [];
    let applied: NftApplyResult | undefined;
    let error: string | undefined;
    try {
      const current = resync ? await this.dataplane.read() : this.believed;
      transaction = this.plan(resync, current);
      if (transaction.length) {
        const r = await this.dataplane.apply(transaction);
        applied = r;
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
      this.pending = undefined;
      this.scheduleRetry();
    }
    const report = summarize(resync ? 'resync' : 'incremental', transaction, applied, performance.now() - t0, error);
    this.last = report;
    this.emit('report', report);
    return report;
  }

  /**
   * The transaction from what the kernel holds to the state now; from here on, changes are
   * counted from the state as planned. When every change since the last plan said what it
   * changed: their difference alone.
   */
  private plan(resync: boolean, current: InstalledTable | undefined): NftOp[] {
    const p = this.pending;
    let ops = !resync && p ? planChanges(p, this.wantState, this.wantState.chainDefs) : undefined;
    if (!ops) {
      if (!resync && p) current = this.kernelState(p);
      const read = resync ? current : undefined;
      if (read && this.allSame(read)) ops = [];
      else {
        // wantState is the desired table's state, kept as it changes: not made again here.
        ops = planTable(this.desired, read ? this.knownSame(read) : current, this.wantState);
        if (read) this.learnSame(read, ops);
        // From no table, the transaction makes the desired state: its names as they are now (the
        // maps change in place later; the objects in them are replaced, never changed).
        const w = this.wantState;
        if (!current) recordPlannedTable(ops, { sets: new Map(w.sets), maps: new Map(w.maps), chains: new Map(w.chains) });
      }
    }
    this.believed = undefined;
    this.pending = { sets: new Map(), maps: new Map(), chains: new Map() };
    return ops;
  }

  /** Whether every object of the read is known to equal the desired one, and the desired table has no other. */
  private allSame(read: InstalledTable): boolean {
    const want = this.wantState;
    const all = <T extends object>(have: ReadonlyMap<string, T>, wanted: ReadonlyMap<string, T>): boolean => {
      if (have.size !== wanted.size) return false;
      for (const [name, h] of have) {
        const w = wanted.get(name);
        if (w === undefined || (w !== h && this.same.get(h) !== w)) return false;
      }
      return true;
    };
    return all(read.sets, want.sets) && all(read.maps, want.maps) && all(read.chains, want.chains);
  }

  /** The read with each object known to equal the desired one replaced by it, which the plan then passes over. */
  private knownSame(read: InstalledTable): InstalledTable {
    const want = this.wantState;
    const swap = <T extends object>(have: ReadonlyMap<string, T>, wanted: ReadonlyMap<string, T>): Map<string, T> => {
      const out = new Map<string, T>();
      for (const [name, h] of have) {
        const w = this.same.get(h);
        out.set(name, w !== undefined && wanted.get(name) === w ? (w as T) : h);
      }
      return out;
    };
    return { sets: swap(read.sets, want.sets), maps: swap(read.maps, want.maps), chains: swap(read.chains, want.chains) };
  }

  /** After planning from `read`: every object no operation names is equal to the desired one. */
  private learnSame(read: InstalledTable, ops: readonly NftOp[]): void {
    const named = new Set<string>();
    const chains = new Set<string>();
    for (const op of ops) {
      if ('set' in op) named.add(op.set);
      else if ('map' in op) named.add(op.map);
      else if ('chain' in op) chains.add(op.chain);
    }
    const want = this.wantState;
    const learn = <T extends object>(have: ReadonlyMap<string, T>, wanted: ReadonlyMap<string, T>, names: ReadonlySet<string>) => {
      for (const [name, h] of have) {
        const w = wanted.get(name);
        if (w !== undefined && w !== h && !names.has(name) && this.same.get(h) !== w) this.same.set(h, w);
      }
    };
    learn(read.sets, want.sets, named);
    learn(read.maps, want.maps, named);
    learn(read.chains, want.chains, chains);
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
  applied: NftApplyResult | undefined,
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
    // Read through: the dataplane may write its script only when asked.
    get script() {
      return applied?.script ?? '';
    },
    durationMs,
    ...(error !== undefined ? { error } : {}),
  };
}
