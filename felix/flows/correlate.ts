// Joins the two streams into flows that say what decided them. A connection's first packet
// passes the flow log rules (an Allow's log rule, and any staged policy's on the way) before
// conntrack confirms it, but the two reach us on different sockets, and nfnetlink_log batches
// for a few milliseconds: whichever comes first waits, keyed by the packet's tuple (after DNAT,
// as the forward hook saw it; hashed by the addon, compared whole on a match), up to
// `pendingMs` for the other (a connection no policy decided has no log: its start is told when
// the wait ends). A refused packet never gets a conntrack entry; its Deny log is the flow.
// Every table here is bounded: a decision waits at most `pendingMs` and `maxPending` of them; a
// live connection's decision is kept for its DESTROY up to `maxLive` connections, the oldest
// forgotten first. The addon's fold (FlowReader's `fold`) does the same join in C while no staged
// policy logs, and hands on aggregates (`aggregate`); rows come here for what it cannot take.

import type { ConntrackEvent } from './conntrack-event.js';
import type { Decision, MarkDecisions } from './decisions.js';
import type { LoggedPacket } from './nflog.js';
import { CFG, FOLD } from './batch.js';
import { markRuleNumber } from './rule-marks.js';
import { type FlowTuple, tupleKey } from './tuple.js';

export interface FlowObservation {
  /** start: a connection was accepted; end: it closed (with its counts); denied: a packet was refused. */
  readonly phase: 'start' | 'end' | 'denied';
  /** conntrack's id of the connection (the same in its start and its end); -1 when unknown. */
  readonly id: number;
  readonly timeMs: number;
  /** As the client sent it: the destination is a Service's address when DNATed. */
  readonly tuple: FlowTuple;
  /** The address and port the packet went to after DNAT (the chosen endpoint); undefined when not NATed. */
  readonly endpoint?: { readonly address: string; readonly port: number };
  readonly verdict: 'allow' | 'deny';
  /** The rule that decided; null when no policy did (no policy selects the endpoints: allowed). */
  readonly decision: Decision | null;
  /**
   * A packet refused after a Service's DNAT: the tuple's destination is the endpoint it was
   * refused at; the address the client sent to is not known here (the agent names the Service
   * from its endpoints).
   */
  readonly dnat?: boolean;
  /** What staged policies would have done on the way. */
  readonly staged: readonly Decision[];
  readonly packets: number;
  readonly bytes: number;
  /** When the connection started (end only). */
  readonly startMs?: number;
  /** What names the flow apart from its client's port, hashed by the addon (batch.ts F.NAME); absent when not read from rows. */
  readonly nameKey?: number;
  /** Flows this one stands for (an aggregate of the addon's fold: starts, ends or refused packets alike); 1 when absent. */
  readonly count?: number;
}

/** Flows the addon folded into one (batch.ts KIND_STARTS, _ENDS, _DENIALS): their naming, rule and sums. */
export interface FlowAggregate {
  readonly phase: 'start' | 'end' | 'denied';
  readonly count: number;
  /** As the client sent it (a refused packet's: as the rule saw it, after DNAT); of the first flow (client ports differ). */
  readonly tuple: FlowTuple;
  readonly endpoint: { readonly address: string; readonly port: number } | undefined;
  /** What decided: a log rule's prefix, an Allow's number in the conntrack mark, or null (no policy did). */
  readonly rule: string | number | null;
  readonly packets: number;
  readonly bytes: number;
  /** When the last was read. */
  readonly timeMs: number;
  /** When the first started. */
  readonly startMs: number | undefined;
  readonly nameKey: number;
}

export interface CorrelatorOptions {
  readonly pendingMs?: number;
  readonly maxPending?: number;
  readonly maxLive?: number;
  readonly now?: () => number;
}

type Key = number | string;

interface Pending {
  at: number;
  /** The packet's flow: a key's match is checked against it. */
  tuple: FlowTuple;
  decision: Decision | null;
  staged: Decision[];
}

interface Live {
  /** conntrack's id of the entry (the table's key is it as an int32: a Map hashes that unboxed). */
  readonly id: number;
  startMs: number;
  decision: Decision | null;
  staged: readonly Decision[];
  /** Its start not yet told: waiting for its decision under this key, with its NEW. */
  waiting: Key | undefined;
  started: ConntrackEvent | undefined;
  /** Its DESTROY, when it came before the start was told. */
  ended?: ConntrackEvent;
}

const NO_STAGED: readonly Decision[] = [];

export class FlowCorrelator {
  /** Decisions logged before their connection's NEW, by the flow's key. */
  private readonly pending = new Map<Key, Pending>();
  private readonly live = new Map<number, Live>();
  /** Connections whose NEW came before their decision, oldest first: key → the live table's key. */
  private readonly undecided = new Map<Key, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly pendingMs: number;
  private readonly maxPending: number;
  private readonly maxLive: number;
  private readonly now: () => number;
  /** Logged packets whose prefix no current decision has (a rule changed since). */
  unknownPrefixes = 0;

  constructor(
    private decisions: ReadonlyMap<string, Decision>,
    private readonly emit: (o: FlowObservation) => void,
    o: CorrelatorOptions = {},
  ) {
    this.pendingMs = o.pendingMs ?? 250;
    this.maxPending = o.maxPending ?? 4_096;
    this.maxLive = o.maxLive ?? 65_536;
    this.now = o.now ?? Date.now;
  }

  /** Allow rules' numbers in the connections' mark, when the table's Allows write them (decisionMarks). */
  private marks: MarkDecisions | undefined;

  /** The prefixes of the table now installed (felix/flows decisionIndex), and its Allows' mark numbers. */
  setDecisions(decisions: ReadonlyMap<string, Decision>, marks?: MarkDecisions): void {
    this.decisions = decisions;
    this.marks = marks;
    this.staged = [...decisions.values()].some((d) => d.code === 'SA' || d.code === 'SD' || d.code === 'SP');
  }

  /** Whether a staged policy's rule logs: its logs ride with the Allow of the same packet, which only this side joins. */
  private staged = false;

  /**
   * What the addon's fold may take (batch.ts CFG), written before each read: the join of Allows'
   * logs to their NEWs when no staged policy logs, the mark's layout, and whether this side holds
   * logged packets or connections a row may belong to. `ports`: records keep the client's port.
   */
  foldSettings(cfg: Float64Array, ports: { allow: boolean; deny: boolean }): void {
    const m = this.marks?.layout;
    cfg[CFG.FLAGS] =
      (this.staged ? 0 : FOLD.JOIN) |
      (m ? FOLD.MARK : 0) |
      (ports.allow ? FOLD.PORT_ALLOW : 0) |
      (ports.deny ? FOLD.PORT_DENY : 0) |
      (this.pending.size > 0 ? FOLD.JS_PENDING : 0) |
      (this.live.size > 0 ? FOLD.JS_LIVE : 0);
    cfg[CFG.NUMBER_BITS] = m?.numberBits ?? 0;
    cfg[CFG.STAGED_BIT] = m?.staged ?? 0;
    cfg[CFG.SHIFT] = m?.shift ?? 0;
    cfg[CFG.PENDING_MS] = this.pendingMs;
  }

  /** Flows the addon folded: one observation for them all. */
  aggregate(a: FlowAggregate): void {
    let decision: Decision | null = null;
    if (typeof a.rule === 'string') {
      const d = this.decisions.get(a.rule);
      if (d) decision = d;
      else {
        // A rule changed since: a refused packet is dropped, as a row's would be; a connection is told undecided.
        this.unknownPrefixes += a.count;
        if (a.phase === 'denied') return;
      }
    } else if (typeof a.rule === 'number') decision = this.marks?.byNumber.get(a.rule) ?? null;
    const denied = a.phase === 'denied';
    this.emit({
      phase: a.phase,
      id: -1,
      timeMs: a.timeMs,
      tuple: a.tuple,
      endpoint: a.endpoint,
      verdict: denied ? 'deny' : 'allow',
      decision,
      ...(denied ? { dnat: decision?.code === 'DN' } : {}),
      staged: NO_STAGED,
      packets: a.packets,
      bytes: a.bytes,
      startMs: a.startMs,
      nameKey: a.nameKey,
      count: a.count,
    });
  }

  /**
   * What a connection's mark says decided it: the Allow whose number it carries, null when it
   * carries none and no Allow rule logs instead, undefined when the mark does not say (no marks,
   * or a number the table no longer has: its Allow may still come as a logged packet).
   */
  private marked(e: ConntrackEvent): Decision | null | undefined {
    const m = this.marks;
    if (!m) return undefined;
    const n = markRuleNumber(e.mark, m.layout);
    if (n === 0) return m.complete ? null : undefined;
    return m.byNumber.get(n);
  }

  packet(p: LoggedPacket): void {
    const d = this.decisions.get(p.prefix);
    if (!d) {
      this.unknownPrefixes++;
      return;
    }
    const now = this.now();
    const key = p.key === undefined ? tupleKey(p.tuple) : p.key | 0;
    let waiting = this.pending.get(key);
    if (waiting && !sameTuple(waiting.tuple, p.tuple)) waiting = undefined;
    if (d.code === 'D' || d.code === 'DN') {
      if (waiting) this.pending.delete(key);
      this.emit({
        phase: 'denied',
        id: -1,
        timeMs: now,
        tuple: p.tuple,
        endpoint: undefined,
        dnat: d.code === 'DN',
        verdict: 'deny',
        decision: d,
        staged: waiting?.staged ?? NO_STAGED,
        packets: 1,
        bytes: p.bytes,
        nameKey: p.nameKey,
      });
      return;
    }
    const id = this.undecided.get(key);
    const live = id === undefined ? undefined : this.live.get(id);
    if (live?.started && id !== undefined && seenAs(live.started, p.tuple)) {
      // The connection is known: its start waits only for this (or, its Allow told by its mark,
      // for the staged rules' logs, which come together: its wait's end tells it).
      if (d.code === 'A') {
        live.decision = d;
        this.undecided.delete(key);
        live.waiting = undefined;
        this.tellStart(live);
      } else if (live.staged.length < 8) (live.staged as Decision[]).push(d);
      return;
    }
    if (!waiting) {
      this.prune(now);
      waiting = { at: now, tuple: p.tuple, decision: null, staged: [] };
      this.pending.set(key, waiting);
    }
    // An Allow: the last one the packet met decides (egress on the way out, then the destination's ingress).
    if (d.code === 'A') waiting.decision = d;
    else if (waiting.staged.length < 8) waiting.staged.push(d);
  }

  private tellStart(live: Live, e = live.started!): void {
    live.started = undefined;
    this.emit({
      phase: 'start',
      id: live.id,
      timeMs: live.startMs,
      tuple: e.orig,
      endpoint: endpointOf(e),
      verdict: 'allow',
      decision: live.decision,
      staged: live.staged,
      packets: e.packets,
      bytes: e.bytes,
      nameKey: e.nameKey,
    });
    if (live.ended) {
      this.live.delete(live.id | 0);
      this.tellEnd(live.ended, live);
    }
  }

  private tellEnd(e: ConntrackEvent, live: Live | undefined): void {
    this.emit({
      phase: 'end',
      id: e.id,
      timeMs: this.now(),
      tuple: e.orig,
      endpoint: endpointOf(e),
      verdict: 'allow',
      decision: live ? live.decision : (this.marked(e) ?? null),
      staged: live?.staged ?? NO_STAGED,
      packets: e.packets,
      bytes: e.bytes,
      startMs: live?.startMs ?? e.startMs,
      nameKey: e.nameKey,
    });
  }

  /** Tells the starts whose decision did not come in time: no policy decided them (or its log was limited). */
  private expire(now: number): void {
    for (const [key, id] of this.undecided) {
      const live = this.live.get(id);
      if (live && now - live.startMs < this.pendingMs && this.undecided.size <= this.maxPending) break;
      this.undecided.delete(key);
      if (!live) continue;
      live.waiting = undefined;
      this.tellStart(live);
    }
    if (this.undecided.size > 0) this.arm();
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.expire(this.now());
    }, this.pendingMs);
    this.timer.unref();
  }

  /** Tells what still waits and stops the timer. */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.expire(Number.POSITIVE_INFINITY);
  }

  conntrack(e: ConntrackEvent): void {
    if (e.kind === 'new') {
      const now = this.now();
      const marked = this.marked(e);
      // Decided by its mark alone (no staged rule's log to come, none come first): told at once,
      // and kept in no table; its DESTROY carries the same mark, and its start's time.
      if (marked !== undefined && this.pending.size === 0 && (e.mark & this.marks!.layout.staged) === 0) {
        this.emit({
          phase: 'start',
          id: e.id,
          timeMs: now,
          tuple: e.orig,
          endpoint: endpointOf(e),
          verdict: 'allow',
          decision: marked,
          staged: NO_STAGED,
          packets: e.packets,
          bytes: e.bytes,
          nameKey: e.nameKey,
        });
        return;
      }
      const key = e.key === undefined ? tupleKey(seenTuple(e)) : e.key | 0;
      let waiting = this.pending.get(key);
      if (waiting && !seenAs(e, waiting.tuple)) waiting = undefined;
      if (waiting) this.pending.delete(key);
      const live: Live = {
        id: e.id,
        startMs: now,
        decision: marked ?? waiting?.decision ?? null,
        staged: waiting?.staged ?? NO_STAGED,
        waiting: undefined,
        started: undefined,
      };
      if (this.live.size >= this.maxLive) this.forget(this.live.keys().next().value as number);
      const id = e.id | 0;
      this.live.set(id, live);
      // A staged rule's log is still to come when the mark says one met the packet and none came yet.
      const stagedToCome = this.marks !== undefined && (e.mark & this.marks.layout.staged) !== 0 && live.staged.length === 0;
      if (!stagedToCome && (live.decision || marked === null)) return this.tellStart(live, e);
      live.waiting = key;
      live.started = e;
      if (live.staged === NO_STAGED) live.staged = [];
      this.undecided.set(key, id);
      this.expire(now);
      this.arm();
      return;
    }
    const live = this.live.get(e.id | 0);
    if (live?.waiting !== undefined) {
      live.ended = e;
      return;
    }
    if (live) this.live.delete(e.id | 0);
    this.tellEnd(e, live);
  }

  private forget(id: number): void {
    const live = this.live.get(id);
    if (live?.waiting !== undefined) this.undecided.delete(live.waiting);
    this.live.delete(id);
  }

  /** Decisions waiting and connections whose decision is kept: bounded by the options. */
  get sizes(): { pending: number; live: number; undecided: number } {
    return { pending: this.pending.size, live: this.live.size, undecided: this.undecided.size };
  }

  private prune(now: number): void {
    for (const [id, p] of this.pending) {
      if (this.pending.size < this.maxPending && now - p.at <= this.pendingMs) break;
      this.pending.delete(id);
    }
  }
}

const sameTuple = (a: FlowTuple, b: FlowTuple): boolean =>
  a.proto === b.proto && a.src === b.src && a.sport === b.sport && a.dst === b.dst && a.dport === b.dport;

/** Whether `t` is the connection's first packet as the forward hook saw it: after DNAT, to the reply's source. */
const seenAs = (e: ConntrackEvent, t: FlowTuple): boolean =>
  e.orig.proto === t.proto && e.orig.src === t.src && e.orig.sport === t.sport && e.reply.src === t.dst && e.reply.sport === t.dport;

const seenTuple = (e: ConntrackEvent): FlowTuple => ({
  proto: e.orig.proto,
  src: e.orig.src,
  sport: e.orig.sport,
  dst: e.reply.src,
  dport: e.reply.sport,
});

/** Where a DNATed connection went (the reply's source); undefined when it was not NATed. */
const endpointOf = (e: ConntrackEvent): { address: string; port: number } | undefined =>
  e.reply.src !== e.orig.dst || e.reply.sport !== e.orig.dport ? { address: e.reply.src, port: e.reply.sport } : undefined;
