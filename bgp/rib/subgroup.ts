// Subgroups: members of one update group that are in sync share what each would otherwise
// keep and do alone. The update group already computes and encodes each exported attribute
// set once; a subgroup also reads the change journal once, keeps one record of what was sent
// (per prefix, the set's id) and builds each UPDATE once, into a queue every member reads at
// its own pace. This is FRR's update subgroups: a reflector's thousand clients in sync cost
// one record and one UPDATE per change, not a thousand.
//
// Members are not quite alike: a peer is not sent its own routes (unless it allows them). The
// shared record is what a member has for a prefix unless the prefix's best path came from it;
// the subgroup notes that member, which then has nothing for the prefix, and a queued UPDATE
// names the member it skips, or the one member it is for.
//
// A peer whose session starts with no routes of its own joins at once: its initial table is
// the record, encoded once (the image) for all the peers that start after it. Another peer
// joins once it has caught up alone (its initial table sent) and its record equals the
// subgroup's. A member leaves with a copy of the record when it asks for a route refresh, when
// the queue runs too far ahead of it, or when its session goes down.
import { forgetSent, recordSent, releaseFamilies, type AdjRibOut, type FamilyOut, type JournalOwner } from './adj-rib-out.js';
import { Bucket, emitAnnounce, emitWithdraw, wireLength } from './out-messages.js';
import type { RibPeer } from './peer.js';
import type { PrefixKey } from './prefix.js';
import type { OutAttrSet, UpdateGroup } from './update-group.js';

/** A message of a subgroup's queue. */
export interface Queued {
  readonly buffer: Buffer;
  /** The member it is not for: the source of its routes, which it would send back. */
  readonly except: AdjRibOut | undefined;
  /** The one member it is for, when only that member's record differs. */
  readonly only: AdjRibOut | undefined;
  /** Prefixes it announces and withdraws (counted on the first message of a bucket). */
  readonly announced: number;
  readonly withdrawn: number;
  /** Octets queued before it since the subgroup began. */
  readonly offset: number;
  /** Members that have yet to read past it. */
  left: number;
}

/** How long an image no new member has used is kept. */
const IMAGE_MS = 30_000;
/** How long a peer the subgroup refused waits before it asks again. */
const RETRY_MS = 1000;

function isFor(q: Queued, m: AdjRibOut): boolean {
  return q.only === undefined ? q.except !== m : q.only === m;
}

/** What one fill of the queue sends, by recipients. */
class Batch {
  /** Announcements for every member but one (or none: the key undefined), by set. */
  readonly announce = new Map<AdjRibOut | undefined, Map<OutAttrSet, Bucket>>();
  readonly withdraw = new Map<AdjRibOut | undefined, Bucket>();
  /** For one member alone. */
  readonly announceTo = new Map<AdjRibOut, Map<OutAttrSet, Bucket>>();
  readonly withdrawTo = new Map<AdjRibOut, Bucket>();
}

function addTo<K>(byKey: Map<K, Map<OutAttrSet, Bucket>>, k: K, set: OutAttrSet, f: FamilyOut, key: PrefixKey): number {
  let sets = byKey.get(k);
  if (sets === undefined) {
    sets = new Map();
    byKey.set(k, sets);
  }
  const b = sets.get(set);
  if (b === undefined) {
    sets.set(set, new Bucket(key));
    return set.attrBytes.length + 23 + wireLength(f, key);
  }
  b.keys.push(key);
  b.ids.push(0);
  return wireLength(f, key);
}

function withdrawIn<K>(byKey: Map<K, Bucket>, k: K, f: FamilyOut, key: PrefixKey): number {
  const b = byKey.get(k);
  if (b === undefined) byKey.set(k, new Bucket(key));
  else {
    b.keys.push(key);
    b.ids.push(0);
  }
  return wireLength(f, key) + (b === undefined ? 23 : 0);
}

export class Subgroup implements JournalOwner {
  /** How far (octets) the queue may run ahead of a member before the member leaves with a copy. */
  static maxBehind = 8 << 20;
  readonly group: UpdateGroup;
  readonly members = new Set<AdjRibOut>();
  /** The families, in the founder's order (every member's: it is part of the shape). */
  readonly fams: FamilyOut[];
  readonly shape: string;
  readonly queue: Queued[] = [];
  /** The number of the queue's first message. */
  base = 0;
  private readonly maxMessageLength: number;
  private readonly allowOwn: boolean;
  /** Per family: the member a prefix's shared route came from, where that is a member. */
  private readonly source: Map<number, AdjRibOut>[];
  private octets = 0;
  private readonly counts = { tooLarge: 0 };
  /**
   * The record encoded as UPDATEs, as it was at queue number `imageAt`: what a new member is
   * sent as its initial table, with the queue's messages since. Made when a peer joins at the
   * start of its session, dropped once the queue since holds more than it, or when no peer
   * has joined for IMAGE_MS (for a full table it is tens of megabytes).
   */
  private image: Buffer[] | undefined = undefined;
  private imageUsed = 0;
  private imageAt = 0;
  private imageOctets = 0;
  private imagePrefixes = 0;

  /** The founder's record becomes the subgroup's. */
  constructor(founder: AdjRibOut) {
    this.group = founder.group;
    this.fams = founder.fams;
    this.shape = founder.shape!;
    this.maxMessageLength = founder.maxMessageLength;
    this.allowOwn = founder.allowOwn;
    this.source = this.fams.map(() => new Map());
    for (const f of this.fams) f.out = this;
    founder.subgroup = this;
    founder.pos = 0;
    founder.own = this.fams.map(() => new Set());
    this.members.add(founder);
    // The founder's own routes: it has nothing for them, but every other member has them.
    if (!this.allowOwn) for (let i = 0; i < this.fams.length; i++) this.adoptOwn(founder, i);
    this.group.subgroups.push(this);
  }

  /** The number of the message after the last queued. */
  get end(): number {
    return this.base + this.queue.length;
  }

  get caughtUp(): boolean {
    for (const f of this.fams) if (f.pending > 0) return false;
    return true;
  }

  /** A change in the journal concerns the subgroup: every member has work. */
  wake(): void {
    for (const m of this.members) m.kick();
  }

  /** Prefixes in the queued messages a member has yet to read. */
  queuedFor(m: AdjRibOut): number {
    let n = 0;
    for (let p = m.pos; p < this.end; p++) {
      const q = this.queue[p - this.base];
      if (isFor(q, m)) n += q.announced + q.withdrawn;
    }
    return n;
  }

  /**
   * Reads the journal from the subgroup's cursor and queues the UPDATEs, about `room` octets
   * of them. Returns whether it queued any.
   */
  fill(room: number): boolean {
    const before = this.queue.length;
    const end = this.end;
    const octets = this.octets;
    let estimate = 0;
    for (let i = 0; i < this.fams.length && estimate < room; i++) {
      const f = this.fams[i];
      if (f.pending === 0) continue;
      const j = f.journal;
      const keys = f.slots.keys;
      const batch = new Batch();
      while (f.pending > 0) {
        const c = f.cursor++;
        const n = j.entries[c];
        // A hole (the prefix is further on), or only a path behind the best changed.
        if (n < 0 || j.best[c] === 0) continue;
        f.pending--;
        estimate += this.decide(f, i, keys[n], n, batch);
        if (estimate >= room) break;
      }
      if (f.pending === 0) {
        f.cursor = j.end;
        j.sleep(f);
      }
      this.emit(f, batch);
    }
    if (this.queue.length === before) return false;
    // The image with the messages since would cost a new member more than a new image.
    if (this.image !== undefined && this.octets - this.offsetAt(this.imageAt) > this.imageOctets) this.image = undefined;
    if (this.image !== undefined && Date.now() - this.imageUsed > IMAGE_MS) this.image = undefined;
    // A member this far behind would hold every message since: it goes on alone. (Counted
    // before this fill: a member that had read everything, such as the one asking, stays.)
    if (this.members.size > 1)
      for (const m of this.members) if (m.pos < end && octets - this.queue[m.pos - this.base].offset > Subgroup.maxBehind) this.split(m);
    return true;
  }

  /** Drops the messages every member has read. */
  trim(): void {
    let k = 0;
    // Messages since the image stay for the next member to join.
    const keep = this.image === undefined ? this.end : this.imageAt;
    while (k < this.queue.length && this.queue[k].left === 0 && this.base + k < keep) k++;
    if (k === 0) return;
    this.queue.splice(0, k);
    this.base += k;
  }

  /**
   * Takes in a peer whose session has just started and that sent us no route: it has nothing
   * yet, so its initial table is the record, sent from the image and the queue since, instead
   * of a walk of the table with a decision per prefix for this peer alone.
   */
  welcome(k: AdjRibOut): void {
    if (!this.caughtUp) this.fill(Number.POSITIVE_INFINITY);
    if (this.image === undefined) this.draw();
    this.imageUsed = Date.now();
    const initial = this.image!.slice();
    let announced = this.imagePrefixes;
    for (let p = this.imageAt; p < this.end; p++) {
      const q = this.queue[p - this.base];
      if (q.only !== undefined) continue;
      initial.push(q.buffer);
      announced += q.announced;
    }
    k.stats.announced += announced;
    k.startIn(this, initial);
    this.members.add(k);
  }

  /**
   * Takes in a peer that has caught up alone, if its record is the subgroup's (but for its
   * own routes); the subgroup first reads what the journal holds for it. Returns whether it did.
   */
  admit(k: AdjRibOut): boolean {
    if (!this.caughtUp) this.fill(Number.POSITIVE_INFINITY);
    const owns: number[][] = [];
    for (let i = 0; i < this.fams.length; i++) {
      const f = this.fams[i];
      const kf = k.fams[i];
      const own: number[] = [];
      const length = Math.max(f.sent.length, kf.sent.length);
      for (let n = 0; n < length; n++) {
        const shared = n < f.sent.length ? f.sent[n] : 0;
        const its = n < kf.sent.length ? kf.sent[n] : 0;
        if (shared === its) continue;
        // Only a route k sent us may be missing from its record, and it must be the shared one.
        if (its !== 0 || this.allowOwn || this.source[i].has(n) || f.table.head(n)?.peer !== k.peer) return false;
        own.push(n);
      }
      owns.push(own);
    }
    k.enter(
      this,
      owns.map((own) => new Set(own)),
    );
    for (let i = 0; i < owns.length; i++) for (const n of owns[i]) this.source[i].set(n, k);
    this.members.add(k);
    return true;
  }

  /** A member goes on alone, with a copy of its record and the messages it has yet to read. */
  split(m: AdjRibOut): void {
    const fams = this.fams.map((f, i) => this.copyFor(m, f, i));
    const owed: Buffer[] = [];
    for (let p = m.pos; p < this.end; p++) {
      const q = this.queue[p - this.base];
      if (!isFor(q, m)) continue;
      owed.push(q.buffer);
      m.stats.announced += q.announced;
      m.stats.withdrawn += q.withdrawn;
    }
    this.leave(m);
    m.useFamilies(fams);
    m.owe(owed);
    if (m.hasWork) m.kick();
  }

  /** A member goes (its session is down, or it leaves with a copy). */
  leave(m: AdjRibOut): void {
    for (let p = m.pos; p < this.end; p++) this.queue[p - this.base].left--;
    this.members.delete(m);
    for (let i = 0; i < this.fams.length; i++) for (const n of m.own[i] ?? []) this.source[i].delete(n);
    m.own = [];
    m.subgroup = undefined;
    m.pos = 0;
    if (this.members.size > 0) {
      this.trim();
      return;
    }
    // The last one: the record goes with it.
    releaseFamilies(this.group, this.fams);
    this.queue.length = 0;
    this.image = undefined;
    this.group.subgroups.splice(this.group.subgroups.indexOf(this), 1);
  }

  /** Octets queued before message number p. */
  private offsetAt(p: number): number {
    return p < this.end ? this.queue[p - this.base].offset : this.octets;
  }

  /** Encodes the record as it is now: every prefix under its set, as few UPDATEs as fit. */
  private draw(): void {
    const image: Buffer[] = [];
    let prefixes = 0;
    for (const f of this.fams) {
      const bySet = new Map<number, Bucket>();
      const sent = f.sent;
      const keys = f.slots.keys;
      for (let n = 0; n < sent.length; n++) {
        const id = sent[n];
        if (id === 0) continue;
        const b = bySet.get(id);
        if (b === undefined) bySet.set(id, new Bucket(keys[n]));
        else {
          b.keys.push(keys[n]);
          b.ids.push(0);
        }
        prefixes++;
      }
      for (const [id, b] of bySet) emitAnnounce(f, this.maxMessageLength, this.group.held(id), b, image, this.counts);
    }
    this.counts.tooLarge = 0;
    this.image = image;
    this.imageAt = this.end;
    this.imagePrefixes = prefixes;
    let octets = 0;
    for (const b of image) octets += b.length;
    this.imageOctets = octets;
  }

  private memberOf(peer: RibPeer): AdjRibOut | undefined {
    const o = peer.out;
    return o !== undefined && o.subgroup === this ? o : undefined;
  }

  /** Adds to the shared record the routes a member sent us, which the others have. */
  private adoptOwn(m: AdjRibOut, i: number): void {
    const f = this.fams[i];
    for (const n of f.table.numbers()) {
      const head = f.table.head(n);
      if (head === undefined || head.peer !== m.peer || (n < f.sent.length && f.sent[n] !== 0)) continue;
      const key = f.slots.keys[n];
      const set = this.group.exportPath(f.family, key, head);
      if (set === null) continue;
      this.group.acquire(set);
      recordSent(f, key, n, set, true);
      this.source[i].set(n, m);
      m.own[i].add(n);
    }
  }

  /**
   * What the members should have for one prefix, against what they have; queues the
   * difference. Returns estimated octets.
   */
  private decide(f: FamilyOut, i: number, key: PrefixKey, n: number, batch: Batch): number {
    const g = this.group;
    const head = f.table.head(n);
    const desired = head === undefined ? null : g.exportPath(f.family, key, head);
    const from = desired === null || this.allowOwn ? undefined : this.memberOf(head!.peer);
    const id = n < f.sent.length ? f.sent[n] : 0;
    const sent = id === 0 ? null : g.held(id);
    const source = this.source[i];
    const was = sent === null ? undefined : source.get(n);
    if (desired === sent && from === was) return 0;
    if (was !== undefined && was !== from) {
      source.delete(n);
      was.own[i].delete(n);
    }
    if (from !== undefined && from !== was) {
      source.set(n, from);
      from.own[i].add(n);
    }
    if (desired === sent) {
      // The same set from another member: the old source gets it now, the new one loses it.
      let e = 0;
      if (was !== undefined) e += addTo(batch.announceTo, was, desired!, f, key);
      if (from !== undefined) e += withdrawIn(batch.withdrawTo, from, f, key);
      return e;
    }
    if (desired === null) {
      forgetSent(f, n);
      g.release(sent!);
      // Its source had nothing for it.
      return withdrawIn(batch.withdraw, was, f, key);
    }
    g.acquire(desired);
    recordSent(f, key, n, desired, sent === null);
    if (sent !== null) g.release(sent);
    let e = addTo(batch.announce, from, desired, f, key);
    // The new source had the old route: it is withdrawn from it alone.
    if (from !== undefined && from !== was && sent !== null) e += withdrawIn(batch.withdrawTo, from, f, key);
    return e;
  }

  private emit(f: FamilyOut, batch: Batch): void {
    this.emitEach(f, batch.announce, batch.withdraw, false);
    this.emitEach(f, batch.announceTo, batch.withdrawTo, true);
    if (this.counts.tooLarge > 0) {
      for (const m of this.members) m.stats.tooLarge += this.counts.tooLarge;
      this.counts.tooLarge = 0;
    }
  }

  /** Packs and queues the buckets, keyed by the member they skip or, `alone`, the one they are for. */
  private emitEach(
    f: FamilyOut,
    announce: Map<AdjRibOut | undefined, Map<OutAttrSet, Bucket>>,
    withdraw: Map<AdjRibOut | undefined, Bucket>,
    alone: boolean,
  ): void {
    const max = this.maxMessageLength;
    const out: Buffer[] = [];
    for (const [m, sets] of announce)
      for (const [set, b] of sets) {
        emitAnnounce(f, max, set, b, out, this.counts);
        this.queueAll(out, alone ? undefined : m, alone ? m : undefined, b.keys.length, 0);
      }
    for (const [m, b] of withdraw) {
      emitWithdraw(f, max, b, out);
      this.queueAll(out, alone ? undefined : m, alone ? m : undefined, 0, b.keys.length);
    }
  }

  /** Queues the messages (and empties the list); the first carries the bucket's counts. */
  private queueAll(out: Buffer[], except: AdjRibOut | undefined, only: AdjRibOut | undefined, announced: number, withdrawn: number): void {
    const left = this.members.size;
    for (let k = 0; k < out.length; k++) {
      const buffer = out[k];
      const first = k === 0;
      this.queue.push({
        buffer,
        except,
        only,
        announced: first ? announced : 0,
        withdrawn: first ? withdrawn : 0,
        offset: this.octets,
        left,
      });
      this.octets += buffer.length;
    }
    out.length = 0;
  }

  /** A copy of the record as a member has it, for it to go on alone. */
  private copyFor(m: AdjRibOut, f: FamilyOut, i: number): FamilyOut {
    const sent = f.sent.slice();
    const own = m.own[i];
    for (const n of own) sent[n] = 0;
    const c: FamilyOut = {
      out: m,
      family: f.family,
      v6: f.v6,
      addPath: false,
      table: f.table,
      journal: f.journal,
      slots: f.slots,
      cursor: 0,
      pending: 0,
      idle: false,
      place: -1,
      sent,
      sentCount: f.sentCount - own.size,
      paths: new Map(),
    };
    const g = this.group;
    const length = Math.min(sent.length, f.slots.capacity);
    for (let n = 0; n < length; n++) {
      if (sent[n] === 0) continue;
      g.acquire(g.held(sent[n]));
      f.slots.hold(n);
    }
    f.journal.add(c);
    if (f.idle) f.journal.sleep(c);
    else {
      c.cursor = f.cursor;
      c.pending = f.pending;
    }
    return c;
  }
}

/** A session starts: a peer that sent us nothing joins a subgroup of its shape at once, if there is one. */
export function joinAtStart(out: AdjRibOut): void {
  if (out.shape === undefined) return;
  const routes = out.peer.stats.routes;
  if (routes['ipv4-unicast'] + routes['ipv6-unicast'] > 0) return;
  for (const sg of out.group.subgroups) {
    if (sg.shape !== out.shape) continue;
    sg.welcome(out);
    return;
  }
}

/**
 * A peer has caught up alone: it joins a subgroup of its shape in its update group, or founds
 * one with the last peer of that shape that caught up alone.
 */
export function sync(out: AdjRibOut): void {
  if (out.closed || out.subgroup !== undefined) return;
  const now = Date.now();
  if (out.syncAfter > now) return;
  const g = out.group;
  for (const sg of g.subgroups) {
    if (sg.shape !== out.shape) continue;
    if (!sg.admit(out)) out.syncAfter = now + RETRY_MS;
    return;
  }
  const w = g.waiting;
  if (w === undefined || w === out || w.closed || w.subgroup !== undefined || w.shape !== out.shape || w.hasWork) {
    g.waiting = out;
    return;
  }
  g.waiting = undefined;
  if (!new Subgroup(w).admit(out)) out.syncAfter = now + RETRY_MS;
}
