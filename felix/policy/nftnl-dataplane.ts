// The policy dataplane over nf_tables netlink, from this process: a transaction is one
// NFNL_MSG_BATCH_BEGIN … END, which the kernel commits whole or not at all, as `nft -f` does,
// without starting a process or reading the table first. The table is read back by netlink
// dumps parsed here. The batch carries the generation felix last saw (its own read or commit):
// a commit by anyone else in between makes the kernel refuse it (ERESTART), and it is sent
// again at the new generation; what another writer did to our table is the resync's to repair.
//
// Tables, chains, sets, maps, elements and rules are written as netlink attributes; a rule's
// nft text is compiled here (nftnl-rule.ts) with the anonymous sets it carries. Nothing runs
// nft: a statement the compiler does not know refuses the transaction, naming it. The nft text
// of a transaction is checked as `nft -f`'s would be, but written only when its script is read.
//
// A read can be answered without dumping the whole table: the dataplane keeps the table it last
// read with each of its own commits applied (table-copy.ts), or after a commit that made the
// table from none the desired state its planner recorded (planned-table.ts), and the generation
// its last commit produced. When the ruleset's generation is still that one, nobody (`nft` by hand included)
// committed since, and the copy is the kernel's table. Each such read still checks a slice of
// the kernel's table against the copy, about a `fullReadEvery`th of it (read-cycle.ts), so that
// within that many reads every set, map and chain has been read; a slice that differs drops
// the copy and the table is read whole at once.

import { NETLINK_NETFILTER, NFPROTO_INET } from '../netlink/nf-constants.js';
import { batchBegin, batchEnd, getGen, readGen } from '../netlink/nf-message.js';
import { NetlinkSocket } from '../netlink/socket.js';
import { MessageWriter } from '../netlink/writer.js';
import { ERESTART, errnoText } from '../errno.js';
import type { InstalledTable, NftApplyResult, NftDataplane, NftOp, RuleCounterRow } from './dataplane.js';
import { POLICY_TABLE } from './nft-model.js';
import { appliedResult, checkOp, opLine } from './nft-script.js';
import {
  type ElementMemo,
  generation,
  readCountersNetlink,
  readSetKinds,
  readSliceNetlink,
  readTableNetlink,
  type SliceRead,
  type TableSlice,
  WHOLE_TABLE_RULES,
} from './nftnl-read.js';
import { NftEncodeError } from './nftnl-types.js';
import { batchBytes, type SetKind, writeOps } from './nftnl-write.js';
import { plannedTable } from './planned-table.js';
import { readCycle } from './read-cycle.js';
import { TableCopy } from './table-copy.js';
import { checkName } from './table-state.js';

export interface NetlinkNftDataplaneOptions {
  /** A network namespace: its name under /var/run/netns, or a path to it. Default: the process's own. */
  readonly netns?: string;
  /** Default POLICY_TABLE (`podroute`). */
  readonly table?: string;
  /** NftablesDataplane's, accepted so that one set of options makes either dataplane; unused here. */
  readonly nft?: string;
  /** NftablesDataplane's, as `nft`; unused here. */
  readonly timeoutMs?: number;
  /**
   * Reads all of the kernel's table within this many reads, even when its generation says that
   * the table is the copy felix keeps: each read checks about this share of it against the copy
   * (1: every read dumps the whole table). Default 10: at the programmer's 90 s resync, every
   * object within 15 minutes.
   */
  readonly fullReadEvery?: number;
}

/** Times a batch is sent again after another writer's commit came first. */
const RESTARTS = 5;

/** The ruleset generation after `gen`'s commit: a u32 that skips 0. */
const nextGen = (gen: number) => (gen >= 0xffffffff ? 1 : gen + 1);

export class NetlinkNftDataplane implements NftDataplane {
  readonly family = 'inet' as const;
  readonly table: string;
  readonly description: string;
  private readonly netnsPath?: string;
  private sock?: NetlinkSocket;
  /** The named sets' and maps' kinds, from the last read and the transactions since. */
  private kinds = new Map<string, SetKind>();
  /** The generation after our last read or commit; 0: not known (the kernel then checks nothing). */
  private gen = 0;
  /** How many batches were sent again after another writer's commit (for tests and reports). */
  restarts = 0;
  /** The table as the kernel holds it at generation `gen`, when that is known; else undefined. */
  private copy?: TableCopy;
  private readonly fullReadEvery: number;
  /** The slices the next reads answered from the copy check, this cycle's rest. */
  private cycle: TableSlice[] = [];
  /** The last read's elements of each set and map: one dumped the same is not parsed again. */
  private memo?: ElementMemo;
  /** The rules the table held when last known (a read, or the copy when it was dropped): how to dump them. */
  private ruleCount = Number.POSITIVE_INFINITY;
  /** How many reads dumped the kernel, and how many the copy answered (for tests and reports). */
  readonly reads = { kernel: 0, copy: 0 };
  /** How many commits made the table from none and the copy became their planned table (for tests and reports). */
  adopted = 0;
  /** What the last read checked against the kernel when the copy answered it (for tests and reports). */
  lastSlice?: TableSlice;

  constructor(opts: NetlinkNftDataplaneOptions = {}) {
    this.table = opts.table ?? POLICY_TABLE;
    checkName(this.table, 'table');
    if (opts.netns !== undefined) this.netnsPath = opts.netns.includes('/') ? opts.netns : `/var/run/netns/${opts.netns}`;
    this.description = `nftables netlink dataplane (table inet ${this.table}${opts.netns ? `, netns ${opts.netns}` : ''})`;
    const every = opts.fullReadEvery ?? 10;
    if (!Number.isInteger(every) || every < 1) throw new Error(`fullReadEvery: ${every} is not a whole number of at least 1`);
    this.fullReadEvery = every;
  }

  private socket(): NetlinkSocket {
    this.sock ??= NetlinkSocket.open({ protocol: NETLINK_NETFILTER, ...(this.netnsPath ? { netns: this.netnsPath } : {}) });
    return this.sock;
  }

  async read(): Promise<InstalledTable | undefined> {
    const sock = this.socket();
    if (this.copy && this.gen && this.fullReadEvery > 1 && generation(sock) === this.gen && this.checked(sock, this.copy)) {
      this.reads.copy++;
      return this.copy.lend();
    }
    this.lastSlice = undefined;
    const rules = this.copy?.rules() ?? this.ruleCount;
    const r = readTableNetlink(sock, NFPROTO_INET, this.table, { memo: this.memo, wholeTableRules: rules <= WHOLE_TABLE_RULES });
    this.kinds = r.kinds;
    this.gen = r.gen;
    this.memo = r.memo;
    this.copy = new TableCopy(r.table);
    this.ruleCount = this.copy.rules();
    // A whole read is a cycle's worth: the next one starts afresh.
    this.cycle = [];
    this.reads.kernel++;
    return r.table;
  }

  /**
   * Reads the cycle's next slice of the kernel's table and compares it with the copy: true when
   * they agree and nobody committed meanwhile. A slice that cannot be read (the table gone) or
   * differs is the copy's fault or another writer's: the caller reads the whole table.
   */
  private checked(sock: NetlinkSocket, copy: TableCopy): boolean {
    if (!this.cycle.length) this.cycle = readCycle(copy.sizes(), this.fullReadEvery);
    const planned = this.cycle.shift()!;
    // What our own commits took out since the cycle was planned is not asked for.
    const t = copy.lend();
    const slice: TableSlice = {
      sets: planned.sets.filter((n) => t?.sets.has(n) || t?.maps.has(n)),
      chains: planned.chains.filter((n) => t?.chains.has(n)),
      heads: planned.heads,
    };
    let read: SliceRead;
    try {
      read = readSliceNetlink(sock, NFPROTO_INET, this.table, slice, this.memo);
    } catch {
      return false;
    }
    if (generation(sock) !== this.gen || copy.differs(slice, read) !== undefined) return false;
    if (read.memo.size) {
      // Kept for the sets and maps the kernel still holds (an anonymous one only as long as it is read again).
      const memo = new Map(read.memo);
      for (const [name, m] of this.memo ?? []) if (!memo.has(name) && read.setNames.has(name)) memo.set(name, m);
      this.memo = memo;
    }
    this.lastSlice = slice;
    return true;
  }

  async readCounters(): Promise<RuleCounterRow[]> {
    return readCountersNetlink(this.socket(), NFPROTO_INET, this.table);
  }

  async apply(ops: readonly NftOp[]): Promise<NftApplyResult> {
    const table = { family: this.family, name: this.table };
    try {
      for (const op of ops) checkOp(op);
    } catch (e) {
      return { ok: false, error: (e as Error).message, script: '' };
    }
    if (!ops.length) return appliedResult(table, ops);
    try {
      return appliedResult(table, ops, this.applyNetlink(ops));
    } catch (e) {
      // Whether the kernel took it is not known.
      this.drop();
      if (e instanceof NftEncodeError && e.op !== undefined) return appliedResult(table, ops, this.refusal(ops, e.op, e.message));
      return appliedResult(table, ops, (e as Error).message);
    }
  }

  /** `line N (the operation's nft line): why`, the form nft -f reports a refused line in. */
  private refusal(ops: readonly NftOp[], op: number, why: string): string {
    const line = opLine({ family: this.family, name: this.table }, ops[op]);
    return `line ${op + 1} (${line.length > 160 ? `${line.slice(0, 157)}...` : line}): ${why}`;
  }

  /** Commits `ops`: undefined when the kernel took them, else why not. */
  private applyNetlink(ops: readonly NftOp[]): string | undefined {
    const sock = this.socket();
    this.resolveKinds(ops);
    for (let attempt = 0; ; attempt++) {
      const sent = this.gen;
      const batch = sock.writer(batchBytes(ops));
      batchBegin(batch, sent);
      const opOf = writeOps(batch, NFPROTO_INET, this.table, ops, (s) => this.kinds.get(s));
      batchEnd(batch);
      // Numbered after the batch, so its answer is told apart from the batch's.
      const barrier = new MessageWriter(batch.seqAfter, 64);
      getGen(barrier);
      let after: number | undefined;
      const refused = sock.transact(batch, barrier, (_t, buf, start, end) => {
        after = readGen(buf, start, end) ?? after;
      });
      const begin = refused.get(0);
      if (begin?.errno === ERESTART && attempt < RESTARTS) {
        // Someone else committed: what they did is not in the copy.
        this.drop();
        this.restarts++;
        this.gen = generation(sock);
        continue;
      }
      if (after !== undefined) this.gen = after;
      if (!refused.size) {
        this.learn(ops);
        this.follow(ops, sent, after);
        return undefined;
      }
      this.drop();
      const lines: string[] = [];
      for (const [index, r] of [...refused].sort((a, b) => a[0] - b[0])) {
        const op = index >= 1 && index <= opOf.length ? opOf[index - 1] : undefined;
        const text = errnoText(r.errno, r.message);
        lines.push(op === undefined ? `batch: ${text}` : this.refusal(ops, op, text));
      }
      return lines.join('\n');
    }
  }

  /** Element operations need their set's kind: one dump of the set heads when an operation names one not known. */
  private resolveKinds(ops: readonly NftOp[]): void {
    const declared = new Set<string>();
    for (const op of ops) {
      if (op.kind === 'add set') declared.add(op.set);
      else if (op.kind === 'add map') declared.add(op.map);
      const name =
        op.kind === 'add element' || op.kind === 'delete element'
          ? op.set
          : op.kind === 'add map element' || op.kind === 'delete map element'
            ? op.map
            : undefined;
      if (name !== undefined && !declared.has(name) && !this.kinds.has(name)) {
        this.kinds = readSetKinds(this.socket(), NFPROTO_INET, this.table);
        return;
      }
    }
  }

  /**
   * Keeps the copy true after our commit. The batch carried generation `sent`, so nobody
   * committed before it; the generation read right after it must be the very next one (or
   * `sent`, for a batch the kernel found nothing to change in), else someone else committed
   * in between and the copy is dropped.
   */
  private follow(ops: readonly NftOp[], sent: number, after: number | undefined): void {
    if (!this.copy) return;
    if (!sent || after === undefined || (after !== sent && after !== nextGen(sent))) return this.drop();
    // The kernel held no table at `sent` and committed the batch alone: the table is what its planner made.
    const planned = after === nextGen(sent) && !this.copy.exists() ? plannedTable(ops) : undefined;
    const made = planned && TableCopy.planned(planned, ops);
    if (made) {
      this.copy = made;
      this.adopted++;
    } else if (!this.copy.apply(ops)) this.drop();
  }

  /** Forgets the copy: the next read dumps the kernel. */
  private drop(): void {
    if (this.copy) this.ruleCount = this.copy.rules();
    this.copy = undefined;
  }

  /** What a committed transaction did to the sets' kinds. */
  private learn(ops: readonly NftOp[]): void {
    for (const op of ops) {
      if (op.kind === 'add set') this.kinds.set(op.set, { type: op.type, interval: op.interval, map: false });
      else if (op.kind === 'add map')
        this.kinds.set(op.map, { type: op.type, interval: false, map: true, ...(op.data !== undefined ? { data: op.data } : {}) });
      else if (op.kind === 'delete set') this.kinds.delete(op.set);
      else if (op.kind === 'delete map') this.kinds.delete(op.map);
    }
  }

  close(): void {
    this.sock?.close();
    this.sock = undefined;
    this.copy = undefined;
  }
}
