// The Adj-RIB-Out of one peer and its outbound queue. The queue holds prefixes, not
// messages: the peer reads the family's change journal from its own cursor, and what to send
// is computed when the session pulls, from the Loc-RIB as it is then. A slow peer therefore
// gets the latest state of a prefix once, never every intermediate one, and its backlog is
// bounded by the table size.
//
// What was sent is kept (per prefix: the id of the shared exported attribute set, in an array
// indexed by the family's shared prefix numbers, or the sets per ADD-PATH id), so a change
// that alters nothing sends nothing, and a prefix that stops being exported is withdrawn only
// if the peer had it.
//
// Peers of an update group that are in sync share all this through a subgroup (subgroup.ts):
// the family readers, the record and the packed UPDATEs are the subgroup's, and the peer only
// keeps its place in the subgroup's queue.
import { RouteRefreshSubtype, Safi, afiOf, type AddressFamily } from '../codec/index.js';
import type { RibPeer } from './peer.js';
import { prefixKey, type PrefixKey } from './prefix.js';
import type { Journal, JournalReader } from './journal.js';
import { Bucket, emitAnnounce, emitWithdraw, wireLength } from './out-messages.js';
import type { PrefixSlots } from './slots.js';
import { type Subgroup, sync } from './subgroup.js';
import { localPathId, type NumberedTable, type Path } from './table.js';
import type { OutAttrSet, UpdateGroup } from './update-group.js';
import { encodeMessage, endOfRib, maxMessageLength } from './wire.js';

/** The sets sent for one prefix with ADD-PATH: parallel arrays of our path ids and their attributes. */
class SentPaths {
  constructor(
    readonly ids: number[],
    readonly sets: OutAttrSet[],
  ) {}
}

/** What the RIB hands an Adj-RIB-Out per family: the table, its change journal and prefix numbers. */
export interface FamilySources {
  table: NumberedTable;
  journal: Journal;
  slots: PrefixSlots;
}

/** Who reads a family's journal: an Adj-RIB-Out, or a subgroup of them in sync. */
export interface JournalOwner {
  readonly group: UpdateGroup;
  /** A change in the journal concerns it while it was idle. */
  wake(): void;
}

/** One family of an Adj-RIB-Out (or of a subgroup): a reader of the family's journal. */
export interface FamilyOut extends JournalReader {
  out: JournalOwner;
  family: AddressFamily;
  v6: boolean;
  addPath: boolean;
  table: NumberedTable;
  journal: Journal;
  slots: PrefixSlots;
  /**
   * Per prefix number: the id (in the update group) of the set the peer has; 0 for none. Two
   * octets each until the group numbers a set past 65,535.
   */
  sent: Uint16Array | Uint32Array;
  sentCount: number;
  /** ADD-PATH: the sets sent per prefix. */
  paths: Map<PrefixKey, SentPaths>;
}

interface DumpTask {
  kind: 'dump';
  fam: FamilyOut;
  /** Prefix numbers of the table. */
  numbers: Iterator<number>;
  /** Send even what the peer already has (route refresh). */
  force: boolean;
  done: boolean;
}

type Task = DumpTask | { kind: 'message'; buffer: Buffer };

export interface AdjRibOutStats {
  messages: number;
  announced: number;
  withdrawn: number;
  /** Prefixes not sent because their attributes alone exceed the message size limit. */
  tooLarge: number;
}

export class AdjRibOut {
  readonly maxMessageLength: number;
  /**
   * Called once when the queue goes from empty to having work. The session should then
   * pull (soon, not inside the call: it runs in the middle of a RIB change) until pull()
   * returns nothing or its socket is full.
   */
  onReady: (() => void) | undefined;
  readonly stats: AdjRibOutStats = { messages: 0, announced: 0, withdrawn: 0, tooLarge: 0 };
  /** Its families: its own, or its subgroup's while it is in one. */
  fams: FamilyOut[] = [];
  readonly allowOwn: boolean;
  /**
   * What peers must share to be in one subgroup (families, message size, own routes);
   * undefined for a peer with ADD-PATH, which never joins one.
   */
  readonly shape: string | undefined;
  /** The subgroup it is in sync with, if any. */
  subgroup: Subgroup | undefined = undefined;
  /** In a subgroup: the number of the next message of the subgroup's queue it reads. */
  pos = 0;
  /** In a subgroup, per family: the prefixes whose best path it sent us (so it has nothing for them). */
  own: Set<number>[] = [];
  /** Not before this time (ms) does it try again to join a subgroup that refused it. */
  syncAfter = 0;
  closed = false;
  private byFamily: Partial<Record<AddressFamily, FamilyOut>> = {};
  private readonly tasks: Task[] = [];
  /** Messages a subgroup it left had queued for it: they go before anything else. */
  private readonly owed: Buffer[] = [];
  private signalled = false;
  private readonly addPathMax: number;

  constructor(
    readonly peer: RibPeer,
    readonly group: UpdateGroup,
    sources: Partial<Record<AddressFamily, FamilySources>>,
  ) {
    const o = peer.sendOptions;
    this.maxMessageLength = maxMessageLength(o);
    this.allowOwn = peer.config.allowOwnRoutes === true;
    this.addPathMax = peer.config.addPathSendMax ?? Infinity;
    for (const family of peer.families) {
      const src = sources[family];
      if (!src) continue;
      const table = src.table;
      const fam: FamilyOut = {
        out: this,
        family,
        v6: family === 'ipv6-unicast',
        addPath: o.addPath?.[family] === true,
        table,
        journal: src.journal,
        slots: src.slots,
        cursor: 0,
        pending: 0,
        idle: false,
        place: -1,
        sent: new Uint16Array(0),
        sentCount: 0,
        paths: new Map(),
      };
      src.journal.add(fam);
      this.fams.push(fam);
      this.byFamily[family] = fam;
      // The initial table, then End-of-RIB (RFC 4724 §2), per family.
      this.tasks.push({ kind: 'dump', fam, numbers: table.numbers(), force: false, done: false });
      this.tasks.push({ kind: 'message', buffer: encodeMessage(endOfRib(family), o) });
    }
    this.shape = this.fams.some((f) => f.addPath)
      ? undefined
      : `${this.fams.map((f) => f.family).join(',')}|${this.maxMessageLength}|${this.allowOwn}`;
  }

  get families(): AddressFamily[] {
    return this.fams.map((f) => f.family);
  }

  /** Whether only ADD-PATH peers need to hear about a change of a non-best path. */
  addPath(family: AddressFamily): boolean {
    return this.byFamily[family]?.addPath === true;
  }

  /** The RIB calls this when a change in the journal concerns this peer while it was idle. */
  wake(): void {
    this.kick();
  }

  /** Whether anything waits to be pulled. */
  get hasWork(): boolean {
    const sg = this.subgroup;
    if (sg !== undefined && this.pos < sg.end) return true;
    if (this.tasks.length > 0 || this.owed.length > 0) return true;
    // Holes and entries of no concern (a path behind the best, without ADD-PATH) are not work.
    for (const f of this.fams) if (f.pending > 0) return true;
    return false;
  }

  /** Prefixes marked dirty and not yet pulled. */
  get pendingCount(): number {
    let n = 0;
    for (const f of this.fams) n += f.pending;
    if (this.subgroup !== undefined) n += this.subgroup.queuedFor(this);
    return n;
  }

  /** Prefixes this peer currently has from us. */
  sentCount(family: AddressFamily): number {
    const f = this.byFamily[family];
    if (f === undefined) return 0;
    if (f.addPath) return f.paths.size;
    return this.subgroup === undefined ? f.sentCount : f.sentCount - this.own[this.fams.indexOf(f)].size;
  }

  /** What this peer has from us for a prefix: the set sent, or one per ADD-PATH id; none if nothing. */
  sentFor(family: AddressFamily, prefix: string): readonly OutAttrSet[] {
    const f = this.byFamily[family];
    if (f === undefined) return [];
    const key = prefixKey(family, prefix);
    if (f.addPath) return f.paths.get(key)?.sets ?? [];
    const n = f.slots.get(key) ?? -1;
    if (this.subgroup !== undefined && n >= 0 && this.own[this.fams.indexOf(f)].has(n)) return [];
    const s = this.sentSet(f, key, n);
    return s === undefined ? [] : [s];
  }

  /**
   * Route refresh (RFC 2918): send the whole Adj-RIB-Out of the family again, between
   * BoRR and EoRR when enhanced route refresh was negotiated (RFC 7313).
   */
  refresh(family: AddressFamily): void {
    if (this.byFamily[family] === undefined) throw new TypeError(`refresh: family ${family} is not negotiated with ${this.peer.address}`);
    // Its table goes again to it alone: it leaves its subgroup first.
    this.subgroup?.split(this);
    const fam = this.byFamily[family]!;
    const enhanced = this.peer.config.enhancedRouteRefresh === true;
    const afi = afiOf(family);
    if (enhanced)
      this.tasks.push({
        kind: 'message',
        buffer: encodeMessage({ type: 'route-refresh', afi, safi: Safi.UNICAST, subtype: RouteRefreshSubtype.BORR }),
      });
    this.tasks.push({ kind: 'dump', fam, numbers: fam.table.numbers(), force: true, done: false });
    if (enhanced)
      this.tasks.push({
        kind: 'message',
        buffer: encodeMessage({ type: 'route-refresh', afi, safi: Safi.UNICAST, subtype: RouteRefreshSubtype.EORR }),
      });
    this.kick();
  }

  /**
   * Encoded messages (UPDATEs, End-of-RIB, BoRR/EoRR) totalling about maxBytes: it stops
   * once maxBytes is reached, so the last batch may go over by up to one message's worth.
   * Returns [] when there is nothing to send.
   */
  pull(maxBytes = 65536): Buffer[] {
    if (this.subgroup !== undefined) return this.pullShared(this.subgroup, maxBytes);
    const out: Buffer[] = [];
    let bytes = 0;
    while (this.owed.length > 0 && bytes < maxBytes) {
      const b = this.owed.shift()!;
      out.push(b);
      bytes += b.length;
    }
    while (bytes < maxBytes) {
      let drained = false;
      for (const f of this.fams) {
        if (f.pending === 0) continue;
        bytes += this.drain(f, undefined, maxBytes - bytes, out);
        drained = true;
        if (bytes >= maxBytes) break;
      }
      if (drained) continue;
      const t = this.tasks[0];
      if (t === undefined) break;
      if (t.kind === 'message') {
        out.push(t.buffer);
        bytes += t.buffer.length;
        this.tasks.shift();
        continue;
      }
      bytes += this.drain(t.fam, t, maxBytes - bytes, out);
      if (t.done) this.tasks.shift();
    }
    this.stats.messages += out.length;
    if (!this.hasWork) {
      this.signalled = false;
      for (const f of this.fams) f.journal.sleep(f);
      // Caught up: a peer in sync with others of its group shares their state from now on.
      if (this.shape !== undefined) sync(this);
    }
    return out;
  }

  /** Gives back the shared sets this peer held (session down). */
  close(): void {
    this.closed = true;
    if (this.group.waiting === this) this.group.waiting = undefined;
    if (this.subgroup !== undefined) {
      this.subgroup.leave(this);
      this.fams = [];
    } else this.release();
    this.tasks.length = 0;
    this.owed.length = 0;
    this.onReady = undefined;
  }

  /** Drops its own record of what it sent and its places in the journals (it joins a subgroup, or closes). */
  release(): void {
    releaseFamilies(this.group, this.fams);
  }

  /** It reads from a subgroup from now on, or again alone (families in the same order). */
  useFamilies(fams: FamilyOut[]): void {
    this.fams = fams;
    this.byFamily = {};
    for (const f of fams) this.byFamily[f.family] = f;
  }

  /**
   * Reads from the subgroup from now on, at the end of its queue: its own record goes. `own`
   * per family: the prefixes whose best path it sent us.
   */
  enter(sg: Subgroup, own: Set<number>[]): void {
    this.release();
    this.useFamilies(sg.fams);
    this.subgroup = sg;
    this.pos = sg.end;
    this.own = own;
  }

  /**
   * Starts its session in a subgroup: `initial` (the subgroup's record as UPDATEs) is its
   * table, sent before its End-of-RIB markers and the subgroup's queue.
   */
  startIn(sg: Subgroup, initial: Buffer[]): void {
    this.enter(
      sg,
      sg.fams.map(() => new Set()),
    );
    const markers = this.tasks.filter((t) => t.kind === 'message');
    this.tasks.length = 0;
    for (const t of markers) this.tasks.push(t);
    this.owe(initial);
  }

  /** Messages it still has to send, first of all (what its subgroup had queued when it left). */
  owe(buffers: Buffer[]): void {
    for (const b of buffers) this.owed.push(b);
  }

  kick(): void {
    if (this.signalled) return;
    this.signalled = true;
    this.onReady?.();
  }

  /** Reads the subgroup's queue, which the subgroup fills from the journal when this peer reaches its end. */
  private pullShared(sg: Subgroup, maxBytes: number): Buffer[] {
    const out: Buffer[] = [];
    let bytes = 0;
    // Its initial table and End-of-RIB first, when it joined as its session started.
    while (bytes < maxBytes && (this.owed.length > 0 || this.tasks.length > 0)) {
      const b = this.owed.length > 0 ? this.owed.shift()! : (this.tasks.shift() as { buffer: Buffer }).buffer;
      out.push(b);
      bytes += b.length;
    }
    while (bytes < maxBytes) {
      if (this.pos === sg.end && !sg.fill(maxBytes - bytes)) break;
      const m = sg.queue[this.pos++ - sg.base];
      m.left--;
      if (m.only === undefined ? m.except === this : m.only !== this) continue;
      out.push(m.buffer);
      bytes += m.buffer.length;
      this.stats.announced += m.announced;
      this.stats.withdrawn += m.withdrawn;
    }
    sg.trim();
    this.stats.messages += out.length;
    if (!this.hasWork) this.signalled = false;
    return out;
  }

  private drain(f: FamilyOut, dump: DumpTask | undefined, room: number, out: Buffer[]): number {
    const buckets = new Map<OutAttrSet, Bucket>();
    const withdrawals = new Bucket();
    let estimate = 0;
    if (dump === undefined) {
      const j = f.journal;
      const keys = f.slots.keys;
      while (f.pending > 0) {
        const i = f.cursor++;
        const n = j.entries[i];
        // A hole (the prefix is further on), or only a path behind the best changed.
        if (n < 0 || (j.best[i] === 0 && !f.addPath)) continue;
        f.pending--;
        estimate += this.process(f, keys[n], n, false, buckets, withdrawals);
        if (estimate >= room) break;
      }
      // What is left is holes and entries of no concern.
      if (f.pending === 0) f.cursor = j.end;
    } else {
      while (estimate < room) {
        const r = dump.numbers.next();
        if (r.done) {
          dump.done = true;
          break;
        }
        estimate += this.process(f, f.slots.keys[r.value], r.value, dump.force, buckets, withdrawals);
      }
    }
    let bytes = 0;
    for (const [set, b] of buckets) bytes += emitAnnounce(f, this.maxMessageLength, set, b, out, this.stats);
    if (withdrawals.keys.length > 0) bytes += emitWithdraw(f, this.maxMessageLength, withdrawals, out);
    return bytes;
  }

  /** What its group sends for a path: the set, or null when the path does not go to this peer. */
  exportable(f: FamilyOut, key: PrefixKey, p: Path): OutAttrSet | null {
    if (p.peer === this.peer && !this.allowOwn) return null;
    return this.group.exportPath(f.family, key, p);
  }

  private add(buckets: Map<OutAttrSet, Bucket>, set: OutAttrSet, key: PrefixKey, id: number): number {
    const b = buckets.get(set);
    this.stats.announced++;
    if (b === undefined) {
      buckets.set(set, new Bucket(key, id));
      return set.attrBytes.length + 23;
    }
    b.keys.push(key);
    b.ids.push(id);
    return 0;
  }

  /**
   * Decides what the peer should have for one prefix and queues the difference. `n` is the
   * prefix's number when the caller knows it, -1 otherwise. Returns estimated octets.
   */
  private process(f: FamilyOut, key: PrefixKey, n: number, force: boolean, buckets: Map<OutAttrSet, Bucket>, wd: Bucket): number {
    const head = n < 0 ? f.table.get(key) : f.table.head(n);
    if (f.addPath) return this.processAddPath(f, key, head, force, buckets, wd);
    const desired = head === undefined ? null : this.exportable(f, key, head);
    if (n < 0) n = f.slots.get(key) ?? -1;
    const sent = this.sentSet(f, key, n);
    if (desired === null) {
      if (sent === undefined) return 0;
      forgetSent(f, n);
      this.group.release(sent);
      wd.keys.push(key);
      wd.ids.push(0);
      this.stats.withdrawn++;
      return wireLength(f, key);
    }
    if (desired === sent && !force) return 0;
    if (desired !== sent) {
      this.group.acquire(desired);
      recordSent(f, key, n, desired, sent === undefined);
      if (sent !== undefined) this.group.release(sent);
    }
    return this.add(buckets, desired, key, 0) + wireLength(f, key);
  }

  private processAddPath(
    f: FamilyOut,
    key: PrefixKey,
    head: Path | undefined,
    force: boolean,
    buckets: Map<OutAttrSet, Bucket>,
    wd: Bucket,
  ): number {
    const ids: number[] = [];
    const sets: OutAttrSet[] = [];
    for (let p = head ?? null; p !== null && ids.length < this.addPathMax; p = p.next) {
      const o = this.exportable(f, key, p);
      if (o !== null) {
        ids.push(localPathId(p));
        sets.push(o);
      }
    }
    const sent = f.paths.get(key);
    let estimate = 0;
    for (let i = 0; i < ids.length; i++) {
      const j = sent === undefined ? -1 : sent.ids.indexOf(ids[i]);
      if (force || j < 0 || sent!.sets[j] !== sets[i]) {
        estimate += this.add(buckets, sets[i], key, ids[i]) + wireLength(f, key);
      }
      this.group.acquire(sets[i]);
    }
    if (sent !== undefined) {
      for (let j = 0; j < sent.ids.length; j++) {
        if (!ids.includes(sent.ids[j])) {
          wd.keys.push(key);
          wd.ids.push(sent.ids[j]);
          this.stats.withdrawn++;
          estimate += wireLength(f, key);
        }
        this.group.release(sent.sets[j]);
      }
    }
    if (ids.length === 0) f.paths.delete(key);
    else f.paths.set(key, new SentPaths(ids, sets));
    return estimate;
  }

  /** The set the peer has for a prefix (not ADD-PATH); `n` its number, -1 to look it up. */
  private sentSet(f: FamilyOut, key: PrefixKey, n: number): OutAttrSet | undefined {
    if (n < 0) n = f.slots.get(key) ?? -1;
    if (n < 0 || n >= f.sent.length) return undefined;
    const id = f.sent[n];
    return id === 0 ? undefined : this.group.held(id);
  }
}

/** Records a held set as sent for a prefix (its number or -1); `added` when the peer had nothing for it. */
export function recordSent(f: FamilyOut, key: PrefixKey, n: number, set: OutAttrSet, added: boolean): void {
  if (added) {
    n = n < 0 ? f.slots.acquire(key) : f.slots.hold(n);
    f.sentCount++;
    // A quarter more than the numbers in use: one array per peer, so slack costs peers × prefixes.
    if (n >= f.sent.length) f.sent = grown(f.sent, Math.max(1024, f.slots.capacity + (f.slots.capacity >> 2)), set.id);
  }
  if (set.id > 0xffff && f.sent instanceof Uint16Array) f.sent = grown(f.sent, f.sent.length, set.id);
  f.sent[n] = set.id;
}

function grown(a: Uint16Array | Uint32Array, length: number, id: number): Uint16Array | Uint32Array {
  const b = id > 0xffff || a instanceof Uint32Array ? new Uint32Array(length) : new Uint16Array(length);
  b.set(a);
  return b;
}

/** Gives back every set and prefix number the families' records hold, and leaves their journals. */
export function releaseFamilies(group: UpdateGroup, fams: readonly FamilyOut[]): void {
  for (const f of fams) {
    f.journal.remove(f);
    for (const s of f.paths.values()) for (const x of s.sets) group.release(x);
    f.paths.clear();
    const n = Math.min(f.sent.length, f.slots.capacity);
    for (let i = 0; i < n; i++) {
      if (f.sent[i] === 0) continue;
      group.release(group.held(f.sent[i]));
      f.slots.release(i);
    }
    f.sent = new Uint16Array(0);
    f.sentCount = 0;
  }
}

/** The peer no longer has anything for prefix number n. */
export function forgetSent(f: FamilyOut, n: number): void {
  f.sent[n] = 0;
  f.slots.release(n);
  f.sentCount--;
}
