// Joins the two streams into flows that say what decided them. A connection's first packet
// passes the flow log rules (an Allow's log rule, and any staged policy's on the way) before
// conntrack confirms it, so its decision waits here, keyed by the packet's tuple (after DNAT, as
// the forward hook saw it), for the NEW event that follows; a refused packet never gets a
// conntrack entry, its Deny log is the flow. Every table here is bounded: a decision waits at
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
}

export class FlowCorrelator {
  private readonly pending = new Map<string, Pending>();
  private readonly live = new Map<number, Live>();
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
    this.pendingMs = o.pendingMs ?? 2_000;
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
    if (!waiting) {
      waiting = { at: now, decision: null, staged: [] };
      this.pending.set(key, waiting);
    }
    // An Allow: the last one the packet met decides (egress on the way out, then the destination's ingress).
    if (d.code === 'A') waiting.decision = d;
    else if (waiting.staged.length < 8) waiting.staged.push(d);
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
      const live: Live = { startMs: now, decision: waiting?.decision ?? null, staged: waiting?.staged ?? [] };
      if (this.live.size >= this.maxLive) this.live.delete(this.live.keys().next().value as number);
      this.live.set(e.id, live);
      this.emit({
        phase: 'start',
        timeMs: now,
        ...this.flowOf(e),
        verdict: 'allow',
        decision: live.decision,
        staged: live.staged,
        packets: e.packets,
        bytes: e.bytes,
      });
      return;
    }
    const live = this.live.get(e.id);
    if (live) this.live.delete(e.id);
    this.emit({
      phase: 'end',
      timeMs: now,
      ...this.flowOf(e),
      verdict: 'allow',
      decision: live?.decision ?? null,
      staged: live?.staged ?? [],
      packets: e.packets,
      bytes: e.bytes,
      ...(live ? { startMs: live.startMs } : {}),
    });
  }

  /** Decisions waiting and connections whose decision is kept: bounded by the options. */
  get sizes(): { pending: number; live: number } {
    return { pending: this.pending.size, live: this.live.size };
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
