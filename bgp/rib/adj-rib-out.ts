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
import { Afi, RouteRefreshSubtype, Safi, type AddressFamily } from '../codec/index.js';
import type { RibPeer } from './peer.js';
import { prefixKey, v4WireLength, writeV4Key, writeV6Key, type PrefixKey, type V4Key, type V6Key } from './prefix.js';
import type { Journal, JournalReader } from './journal.js';
import type { PrefixSlots } from './slots.js';
import { localPathId, type NumberedTable, type Path } from './table.js';
import type { OutAttrSet, UpdateGroup } from './update-group.js';
import { encodeMessage, endOfRib, maxMessageLength, writeUpdateHeader } from './wire.js';

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

/** One family of an Adj-RIB-Out: a reader of the family's journal. */
export interface FamilyOut extends JournalReader {
  readonly out: AdjRibOut;
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

class Bucket {
  readonly keys: PrefixKey[];
  readonly ids: number[];
  /**
   * Made with its first prefix when it has one: a list made by a literal is its exact size,
   * while the first push to an empty one reserves 17 slots, and most attribute sets of real
   * updates go out with one or two prefixes.
   */
  constructor(key?: PrefixKey, id = 0) {
    this.keys = key === undefined ? [] : [key];
    this.ids = key === undefined ? [] : [id];
  }
}

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
  private readonly fams: FamilyOut[] = [];
  private readonly byFamily: Partial<Record<AddressFamily, FamilyOut>> = {};
  private readonly tasks: Task[] = [];
  private signalled = false;
  private readonly allowOwn: boolean;
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
    if (this.tasks.length > 0) return true;
    // Holes and entries of no concern (a path behind the best, without ADD-PATH) are not work.
    for (const f of this.fams) if (f.pending > 0) return true;
    return false;
  }

  /** Prefixes marked dirty and not yet pulled. */
  get pendingCount(): number {
    let n = 0;
    for (const f of this.fams) n += f.pending;
    return n;
  }

  /** Prefixes this peer currently has from us. */
  sentCount(family: AddressFamily): number {
    const f = this.byFamily[family];
    return f === undefined ? 0 : f.addPath ? f.paths.size : f.sentCount;
  }

  /** What this peer has from us for a prefix: the set sent, or one per ADD-PATH id; none if nothing. */
  sentFor(family: AddressFamily, prefix: string): readonly OutAttrSet[] {
    const f = this.byFamily[family];
    if (f === undefined) return [];
    const key = prefixKey(family, prefix);
    if (f.addPath) return f.paths.get(key)?.sets ?? [];
    const s = this.sentSet(f, key, -1);
    return s === undefined ? [] : [s];
  }

  /**
   * Route refresh (RFC 2918): send the whole Adj-RIB-Out of the family again, between
   * BoRR and EoRR when enhanced route refresh was negotiated (RFC 7313).
   */
  refresh(family: AddressFamily): void {
    const fam = this.byFamily[family];
    if (fam === undefined) throw new TypeError(`refresh: family ${family} is not negotiated with ${this.peer.address}`);
    const enhanced = this.peer.config.enhancedRouteRefresh === true;
    const afi = fam.v6 ? Afi.IPV6 : Afi.IPV4;
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
    const out: Buffer[] = [];
    let bytes = 0;
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
    }
    return out;
  }

  /** Gives back the shared sets this peer held (session down). */
  close(): void {
    for (const f of this.fams) {
      f.journal.remove(f);
      for (const s of f.paths.values()) for (const x of s.sets) this.group.release(x);
      f.paths.clear();
      const n = Math.min(f.sent.length, f.slots.capacity);
      for (let i = 0; i < n; i++) {
        if (f.sent[i] === 0) continue;
        this.group.release(this.group.held(f.sent[i]));
        f.slots.release(i);
      }
      f.sent = new Uint16Array(0);
      f.sentCount = 0;
    }
    this.tasks.length = 0;
    this.onReady = undefined;
  }

  private kick(): void {
    if (this.signalled) return;
    this.signalled = true;
    this.onReady?.();
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
    for (const [set, b] of buckets) bytes += this.emitAnnounce(f, set, b, out);
    if (withdrawals.keys.length > 0) bytes += this.emitWithdraw(f, withdrawals, out);
    return bytes;
  }

  private exportable(f: FamilyOut, key: PrefixKey, p: Path): OutAttrSet | null {
    if (p.peer === this.peer && !this.allowOwn) return null;
    return this.group.exportPath(f.family, key, p);
  }

  private wireLength(f: FamilyOut, key: PrefixKey): number {
    return (f.v6 ? (key as V6Key).length : v4WireLength(key as V4Key)) + (f.addPath ? 4 : 0);
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
      this.forget(f, n);
      this.group.release(sent);
      wd.keys.push(key);
      wd.ids.push(0);
      this.stats.withdrawn++;
      return this.wireLength(f, key);
    }
    if (desired === sent && !force) return 0;
    if (desired !== sent) {
      this.group.acquire(desired);
      this.record(f, key, n, desired, sent === undefined);
      if (sent !== undefined) this.group.release(sent);
    }
    return this.add(buckets, desired, key, 0) + this.wireLength(f, key);
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
        estimate += this.add(buckets, sets[i], key, ids[i]) + this.wireLength(f, key);
      }
      this.group.acquire(sets[i]);
    }
    if (sent !== undefined) {
      for (let j = 0; j < sent.ids.length; j++) {
        if (!ids.includes(sent.ids[j])) {
          wd.keys.push(key);
          wd.ids.push(sent.ids[j]);
          this.stats.withdrawn++;
          estimate += this.wireLength(f, key);
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

  /** Records a held set as sent for a prefix (its number or -1); `added` when the peer had nothing for it. */
  private record(f: FamilyOut, key: PrefixKey, n: number, set: OutAttrSet, added: boolean): void {
    if (added) {
      n = n < 0 ? f.slots.acquire(key) : f.slots.hold(n);
      f.sentCount++;
      // A quarter more than the numbers in use: one array per peer, so slack costs peers × prefixes.
      if (n >= f.sent.length) f.sent = this.grown(f.sent, Math.max(1024, f.slots.capacity + (f.slots.capacity >> 2)), set.id);
    }
    if (set.id > 0xffff && f.sent instanceof Uint16Array) f.sent = this.grown(f.sent, f.sent.length, set.id);
    f.sent[n] = set.id;
  }

  private grown(a: Uint16Array | Uint32Array, length: number, id: number): Uint16Array | Uint32Array {
    const b = id > 0xffff || a instanceof Uint32Array ? new Uint32Array(length) : new Uint16Array(length);
    b.set(a);
    return b;
  }

  private forget(f: FamilyOut, n: number): void {
    f.sent[n] = 0;
    f.slots.release(n);
    f.sentCount--;
  }

  private writeNlri(f: FamilyOut, b: Bucket, from: number, to: number, buf: Buffer, pos: number): number {
    for (let k = from; k < to; k++) {
      if (f.addPath) {
        buf.writeUInt32BE(b.ids[k], pos);
        pos += 4;
      }
      pos = f.v6 ? writeV6Key(b.keys[k] as V6Key, buf, pos) : writeV4Key(b.keys[k] as V4Key, buf, pos);
    }
    return pos;
  }

  /** How many entries from `from` fit in `room` octets; returns the end index and their size. */
  private fit(f: FamilyOut, b: Bucket, from: number, room: number): [number, number] {
    let size = 0;
    let j = from;
    for (; j < b.keys.length; j++) {
      const l = this.wireLength(f, b.keys[j]);
      if (size + l > room) break;
      size += l;
    }
    return [j, size];
  }

  private emitAnnounce(f: FamilyOut, set: OutAttrSet, b: Bucket, out: Buffer[]): number {
    const attrs = set.attrBytes;
    const nh = set.mpNextHop;
    // IPv6: MP_REACH_NLRI goes first (RFC 7606 §5.1), always with a 2-octet length.
    const mpHead = f.v6 ? 4 + 5 + nh!.length : 0;
    const fixed = 23 + mpHead + attrs.length;
    let bytes = 0;
    let i = 0;
    while (i < b.keys.length) {
      const [j, nlriBytes] = this.fit(f, b, i, this.maxMessageLength - fixed);
      if (j === i) {
        this.stats.tooLarge++;
        i++;
        continue;
      }
      const size = fixed + nlriBytes;
      const buf = Buffer.allocUnsafe(size);
      writeUpdateHeader(buf, size);
      buf.writeUInt16BE(0, 19);
      // IPv6: every octet after this field is attributes; IPv4: the NLRI follow them.
      buf.writeUInt16BE(f.v6 ? size - 23 : attrs.length, 21);
      let pos = 23;
      if (f.v6) {
        buf[pos] = 0x90; // optional, extended length
        buf[pos + 1] = 14;
        buf.writeUInt16BE(5 + nh!.length + nlriBytes, pos + 2);
        buf.writeUInt16BE(Afi.IPV6, pos + 4);
        buf[pos + 6] = Safi.UNICAST;
        buf[pos + 7] = nh!.length;
        nh!.copy(buf, pos + 8);
        buf[pos + 8 + nh!.length] = 0;
        pos = this.writeNlri(f, b, i, j, buf, pos + mpHead);
        attrs.copy(buf, pos);
      } else {
        attrs.copy(buf, pos);
        this.writeNlri(f, b, i, j, buf, pos + attrs.length);
      }
      out.push(buf);
      bytes += size;
      i = j;
    }
    return bytes;
  }

  private emitWithdraw(f: FamilyOut, b: Bucket, out: Buffer[]): number {
    const fixed = f.v6 ? 23 + 7 : 23;
    let bytes = 0;
    let i = 0;
    while (i < b.keys.length) {
      const [j, nlriBytes] = this.fit(f, b, i, this.maxMessageLength - fixed);
      const size = fixed + nlriBytes;
      const buf = Buffer.allocUnsafe(size);
      writeUpdateHeader(buf, size);
      if (f.v6) {
        buf.writeUInt16BE(0, 19);
        buf.writeUInt16BE(size - 23, 21);
        buf[23] = 0x90;
        buf[24] = 15;
        buf.writeUInt16BE(3 + nlriBytes, 25);
        buf.writeUInt16BE(Afi.IPV6, 27);
        buf[29] = Safi.UNICAST;
        this.writeNlri(f, b, i, j, buf, 30);
      } else {
        buf.writeUInt16BE(nlriBytes, 19);
        const pos = this.writeNlri(f, b, i, j, buf, 21);
        buf.writeUInt16BE(0, pos);
      }
      out.push(buf);
      bytes += size;
      i = j;
    }
    return bytes;
  }
}
