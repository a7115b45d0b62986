// Joins the two streams into flows that say what decided them. A connection's first packet
// passes the flow log rules (an Allow's log rule, and any staged policy's on the way) before
// conntrack confirms it, but the two reach us on different sockets, and nfnetlink_log batches
// for a few milliseconds: whichever comes first waits, keyed by the packet's tuple (after DNAT,
// as the forward hook saw it), up to `pendingMs` for the other (a connection no policy decided
// has no log: its start is told when the wait ends). A refused packet never gets a conntrack
// entry; its Deny log is the flow. Every table here is bounded: a decision waits at
// most `pendingMs` and `maxPending` of them; a live connection's decision is kept for its
// DESTROY up to `maxLive` connections, the oldest forgotten first.

import type { ConntrackEvent } from './conntrack-event.js';
import type { Decision } from './decisions.js';
import type { LoggedPacket } from './nflog.js';
import { type FlowTuple, tupleKey } from './tuple.js';

export interface FlowObservation {
  /** start: a connection was accepted; end: it closed (with its counts); denied: a packet was refused. */
  readonly phase: 'start' | 'end' | 'denied';
  readonly timeMs: number;
  /** As the client sent it: the destination is a Service's address when DNATed. */
  readonly tuple: FlowTuple;
  /** The address and port the packet went to after DNAT (the chosen endpoint); undefined when not NATed. */
  readonly endpoint?: { readonly address: string; readonly port: number };
  readonly verdict: 'allow' | 'deny';
  /** The rule that decided; null when no policy did (no policy selects the endpoints: allowed). */
  readonly decision: Decision | null;
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

interface Pending {
  at: number;
  decision: Decision | null;
  staged: Decision[];
}

interface Live {
  startMs: number;
  decision: Decision | null;
  staged: readonly Decision[];
  /** Its start not yet told: waiting for its decision under this key. */
  waitingKey?: string;
  started: ConntrackEvent;
  /** Its DESTROY, when it came before the start was told. */
  ended?: ConntrackEvent;
}

export class FlowCorrelator {
  private readonly pending = new Map<string, Pending>();
  private readonly live = new Map<number, Live>();
  /** Connections whose NEW came before their decision: tuple key → conntrack id. */
  private readonly undecided = new Map<string, number>();
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
    this.prune(now);
    const key = tupleKey(p.tuple);
    let waiting = this.pending.get(key);
    if (d.code === 'D') {
      if (waiting) this.pending.delete(key);
      this.emit({
        phase: 'denied',
        timeMs: now,
        tuple: p.tuple,
        verdict: 'deny',
        decision: d,
        staged: waiting?.staged ?? [],
        packets: 1,
        bytes: p.bytes,
      });
      return;
    }
    const id = this.undecided.get(key);
    const live = id === undefined ? undefined : this.live.get(id);
    if (live) {
      // The connection is known: its start waits only for this.
      if (d.code === 'A') {
        live.decision = d;
        this.undecided.delete(key);
        live.waitingKey = undefined;
        this.tellStart(live);
      } else if (live.staged.length < 8) (live.staged as Decision[]).push(d);
      return;
    }
    if (!waiting) {
      waiting = { at: now, decision: null, staged: [] };
      this.pending.set(key, waiting);
    }
    // An Allow: the last one the packet met decides (egress on the way out, then the destination's ingress).
    if (d.code === 'A') waiting.decision = d;
    else if (waiting.staged.length < 8) waiting.staged.push(d);
  }

  private tellStart(live: Live): void {
    const e = live.started;
    this.emit({
      phase: 'start',
      timeMs: live.startMs,
      ...this.flowOf(e),
      verdict: 'allow',
      decision: live.decision,
      staged: live.staged,
      packets: e.packets,
      bytes: e.bytes,
    });
    if (live.ended) {
      this.tellEnd(live.ended, live);
      this.live.delete(live.ended.id);
    }
  }

  private tellEnd(e: ConntrackEvent, live: Live | undefined): void {
    this.emit({
      phase: 'end',
      timeMs: this.now(),
      ...this.flowOf(e),
      verdict: 'allow',
      decision: live?.decision ?? null,
      staged: live?.staged ?? [],
      packets: e.packets,
      bytes: e.bytes,
      ...(live ? { startMs: live.startMs } : {}),
    });
  }

  /** Tells the starts whose decision did not come in time: no policy decided them (or its log was limited). */
  private expire(now: number): void {
    for (const [key, id] of this.undecided) {
      const live = this.live.get(id);
      if (live && now - live.startMs < this.pendingMs && this.undecided.size <= this.maxPending) break;
      this.undecided.delete(key);
      if (!live) continue;
      live.waitingKey = undefined;
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
    const now = this.now();
    if (e.kind === 'new') {
      this.prune(now);
      // The forward hook saw the packet after DNAT: to the reply's source.
      const seen: FlowTuple = { proto: e.orig.proto, src: e.orig.src, sport: e.orig.sport, dst: e.reply.src, dport: e.reply.sport };
      const key = tupleKey(seen);
      const waiting = this.pending.get(key);
      if (waiting) this.pending.delete(key);
      const live: Live = { startMs: now, decision: waiting?.decision ?? null, staged: waiting?.staged ?? [], started: e };
      if (this.live.size >= this.maxLive) this.forget(this.live.keys().next().value as number);
      this.live.set(e.id, live);
      if (live.decision) return this.tellStart(live);
      live.waitingKey = key;
      this.undecided.set(key, e.id);
      this.expire(now);
      this.arm();
      return;
    }
    const live = this.live.get(e.id);
    if (live?.waitingKey !== undefined) {
      live.ended = e;
      return;
    }
    if (live) this.live.delete(e.id);
    this.tellEnd(e, live);
  }

  private forget(id: number): void {
    const live = this.live.get(id);
    if (live?.waitingKey !== undefined) this.undecided.delete(live.waitingKey);
    this.live.delete(id);
  }

  /** Decisions waiting and connections whose decision is kept: bounded by the options. */
  get sizes(): { pending: number; live: number; undecided: number } {
    return { pending: this.pending.size, live: this.live.size, undecided: this.undecided.size };
  }

  private flowOf(e: ConntrackEvent): { tuple: FlowTuple; endpoint?: { address: string; port: number } } {
    const natted = e.reply.src !== e.orig.dst || e.reply.sport !== e.orig.dport;
    return natted ? { tuple: e.orig, endpoint: { address: e.reply.src, port: e.reply.sport } } : { tuple: e.orig };
  }

  private prune(now: number): void {
    for (const [key, p] of this.pending) {
      if (this.pending.size <= this.maxPending && now - p.at <= this.pendingMs) break;
      this.pending.delete(key);
    }
  }
}
