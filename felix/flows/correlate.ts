// Joins the two streams into flows that say what decided them. A connection's first packet
// passes the flow log rules (an Allow's log rule, and any staged policy's on the way) before
// conntrack confirms it, but the two reach us on different sockets, and nfnetlink_log batches
// for a few milliseconds: whichever comes first waits, keyed by the packet's tuple (after DNAT,
// as the forward hook saw it; hashed by the addon, compared whole on a match), up to
// `pendingMs` for the other (a connection no policy decided has no log: its start is told when
// the wait ends). A refused packet never gets a conntrack entry; its Deny log is the flow.
// Every table here is bounded: a decision waits at most `pendingMs` and `maxPending` of them; a
// live connection's decision is kept for its DESTROY up to `maxLive` connections, the oldest
// forgotten first.

import type { ConntrackEvent } from './conntrack-event.js';
import type { Decision } from './decisions.js';
import type { LoggedPacket } from './nflog.js';
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
  /** Connections whose NEW came before their decision, oldest first: key → conntrack id. */
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

  /** The prefixes of the table now installed (felix/flows decisionIndex). */
  setDecisions(decisions: ReadonlyMap<string, Decision>): void {
    this.decisions = decisions;
  }

  packet(p: LoggedPacket): void {
    const d = this.decisions.get(p.prefix);
    if (!d) {
      this.unknownPrefixes++;
      return;
    }
    const now = this.now();
    const key = p.key ?? tupleKey(p.tuple);
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
      });
      return;
    }
    const id = this.undecided.get(key);
    const live = id === undefined ? undefined : this.live.get(id);
    if (live?.started && id !== undefined && seenAs(live.started, p.tuple)) {
      // The connection is known: its start waits only for this.
      if (d.code === 'A') {
        live.decision = d;
        this.undecided.delete(key);
        live.waiting = undefined;
        this.tellStart(id, live);
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

  private tellStart(id: number, live: Live, e = live.started!): void {
    live.started = undefined;
    this.emit({
      phase: 'start',
      id,
      timeMs: live.startMs,
      tuple: e.orig,
      endpoint: endpointOf(e),
      verdict: 'allow',
      decision: live.decision,
      staged: live.staged,
      packets: e.packets,
      bytes: e.bytes,
    });
    if (live.ended) {
      this.live.delete(id);
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
      decision: live?.decision ?? null,
      staged: live?.staged ?? NO_STAGED,
      packets: e.packets,
      bytes: e.bytes,
      startMs: live?.startMs,
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
      this.tellStart(id, live);
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
      const key = e.key ?? tupleKey(seenTuple(e));
      let waiting = this.pending.get(key);
      if (waiting && !seenAs(e, waiting.tuple)) waiting = undefined;
      if (waiting) this.pending.delete(key);
      const live: Live = {
        startMs: now,
        decision: waiting?.decision ?? null,
        staged: waiting?.staged ?? NO_STAGED,
        waiting: undefined,
        started: undefined,
      };
      if (this.live.size >= this.maxLive) this.forget(this.live.keys().next().value as number);
      this.live.set(e.id, live);
      if (live.decision) return this.tellStart(e.id, live, e);
      live.waiting = key;
      live.started = e;
      if (live.staged === NO_STAGED) live.staged = [];
      this.undecided.set(key, e.id);
      this.expire(now);
      this.arm();
      return;
    }
    const live = this.live.get(e.id);
    if (live?.waiting !== undefined) {
      live.ended = e;
      return;
    }
    if (live) this.live.delete(e.id);
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
