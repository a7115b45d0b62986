// One BFD session driven over the endpoint's sockets: the machine of fsm.ts, its timers, the
// packets it sends and takes, and what it tells its clients (a BGP session, say).
import { EventEmitter } from 'eventemitter3';
import { bfdConfig, createBfdSession, type BfdTimers } from './config.js';
import { detectionTime, step, transmitInterval } from './fsm.js';
import { encodeControlPacket } from './packet.js';
import { SessionTimers } from './timers.js';
import { diagText, type BfdAction, type BfdControlPacket, type BfdEvent, type BfdState, type BfdStateName } from './types.js';

export interface BfdSessionEvents {
  /** bfd.SessionState changed: the new state, the old one, and bfd.LocalDiag. */
  state: [BfdStateName, BfdStateName, number];
}

/** What `podroute bgpd` and `node status` show of a session. */
export interface BfdSessionStatus {
  peer: string;
  localAddress?: string;
  state: BfdStateName;
  remoteState: BfdStateName;
  /** bfd.LocalDiag in the RFC's words ("control detection time expired"). */
  diagnostic: string;
  localDiscriminator: number;
  remoteDiscriminator: number;
  /** The interval we send at now, ms. */
  transmitInterval: number;
  /** How long without a packet before Down, ms (0 until the remote is heard). */
  detectionTime: number;
  multiplier: number;
  /** When the current state began (ms since the epoch). */
  since: number;
  packetsIn: number;
  packetsOut: number;
  /** Times the session went Up. */
  upCount: number;
  /** When the last packet of the remote arrived (ms since the epoch; 0: none yet). */
  lastReceived: number;
}

/** How a session reaches the wire: the endpoint's side of it. */
export interface BfdTransport {
  send(session: BfdSession, octets: Buffer): void;
}

/**
 * What a client holds of a session, wherever its machine runs: in this thread (`BfdSession`)
 * or in the BFD thread (`BfdWorker`'s sessions, which mirror it here).
 */
export interface BfdSessionHandle {
  readonly peer: string;
  readonly localAddress: string | undefined;
  readonly state: BfdStateName;
  readonly isUp: boolean;
  readonly localDiscriminator: number;
  /** The machine's whole state (§6.8.1 variables) as of the last state event or change of timers. */
  readonly variables: BfdState;
  readonly packetsIn: number;
  readonly packetsOut: number;
  readonly upCount: number;
  readonly lastReceived: number;
  readonly since: number;
  status(): BfdSessionStatus;
  adminDown(): void;
  adminUp(): void;
  /** Stops the session without a word to the remote (its timers, its packets), as a dead host does. */
  dispose(): void;
  on(event: 'state', listener: (...a: BfdSessionEvents['state']) => void): this;
  once(event: 'state', listener: (...a: BfdSessionEvents['state']) => void): this;
  off(event: 'state', listener?: (...a: BfdSessionEvents['state']) => void): this;
}

/** Slots of a session's counters (a Float64Array; the BFD thread shares it with the main one). */
export const COUNTER = { packetsIn: 0, packetsOut: 1, lastReceived: 2 } as const;
export const COUNTERS = 3;

/** A session's status from its machine and counters (both kinds of session show the same). */
export function sessionStatus(
  peer: string,
  localAddress: string | undefined,
  s: BfdState,
  c: Float64Array,
  since: number,
  upCount: number,
  diagnostic = diagText(s.localDiag),
): BfdSessionStatus {
  return {
    peer,
    ...(localAddress !== undefined ? { localAddress } : {}),
    state: s.sessionState,
    remoteState: s.remoteSessionState,
    diagnostic,
    localDiscriminator: s.localDiscr,
    remoteDiscriminator: s.remoteDiscr,
    transmitInterval: transmitInterval(s) / 1000,
    detectionTime: detectionTime(s) / 1000,
    multiplier: s.config.detectMult,
    since,
    packetsIn: c[COUNTER.packetsIn],
    packetsOut: c[COUNTER.packetsOut],
    upCount,
    lastReceived: c[COUNTER.lastReceived],
  };
}

export class BfdSession extends EventEmitter<BfdSessionEvents> implements BfdSessionHandle {
  private fsm: BfdState;
  private readonly timers: SessionTimers;
  private readonly queue: BfdEvent[] = [];
  private draining = false;
  private disposed = false;
  since = Date.now();
  upCount = 0;
  /** Clients sharing this session (see Bfd.add). */
  users = 1;
  /** Called once the machine has taken an event and its actions are done (the BFD thread mirrors what changed). */
  onStep: ((s: BfdSession) => void) | undefined;

  constructor(
    /** The peer's address as the socket takes it (a link-local one with its zone). */
    readonly peer: string,
    readonly localAddress: string | undefined,
    timers: Required<BfdTimers>,
    localDiscr: number,
    seed: number,
    private readonly transport: BfdTransport,
    /** packetsIn, packetsOut, lastReceived (see COUNTER): the BFD thread passes shared memory. */
    readonly counters: Float64Array = new Float64Array(COUNTERS),
  ) {
    super();
    this.fsm = createBfdSession(bfdConfig(timers), localDiscr, seed);
    this.timers = new SessionTimers((e) => this.dispatch(e));
    // The first packet goes out at once (createBfdSession's transmit timer is at 0 ms).
    this.timers.apply({ type: 'startTimer', timer: 'TransmitTimer', ms: 0 });
  }

  get state(): BfdStateName {
    return this.fsm.sessionState;
  }

  get localDiscriminator(): number {
    return this.fsm.localDiscr;
  }

  get packetsIn(): number {
    return this.counters[COUNTER.packetsIn];
  }

  get packetsOut(): number {
    return this.counters[COUNTER.packetsOut];
  }

  /** When the last packet of the remote arrived (ms since the epoch; 0: none yet). */
  get lastReceived(): number {
    return this.counters[COUNTER.lastReceived];
  }

  get isUp(): boolean {
    return this.fsm.sessionState === 'Up';
  }

  /** The machine's whole state (§6.8.1 variables), for tests and debugging. */
  get variables(): BfdState {
    return this.fsm;
  }

  status(): BfdSessionStatus {
    return sessionStatus(this.peer, this.localAddress, this.fsm, this.counters, this.since, this.upCount);
  }

  /** New intervals or multiplier; while Up they are announced by a Poll Sequence (§6.8.3). */
  setTimers(t: Required<BfdTimers>): void {
    this.dispatch({
      type: 'SetParameters',
      desiredMinTxInterval: t.minTxInterval * 1000,
      requiredMinRxInterval: t.minRxInterval * 1000,
      detectMult: t.multiplier,
    });
  }

  adminDown(): void {
    this.dispatch({ type: 'AdminDown' });
  }

  adminUp(): void {
    this.dispatch({ type: 'AdminUp' });
  }

  /** A packet the endpoint matched to this session. */
  receive(p: BfdControlPacket): void {
    this.counters[COUNTER.packetsIn]++;
    this.counters[COUNTER.lastReceived] = Date.now();
    this.dispatch({ type: 'ReceivedPacket', packet: p });
  }

  dispose(): void {
    this.disposed = true;
    this.timers.stopAll();
    this.removeAllListeners();
  }

  private dispatch(event: BfdEvent): void {
    if (this.disposed) return;
    this.queue.push(event);
    // An action's listener may cause an event (a client that takes the session down): never re-enter step().
    if (this.draining) return;
    this.draining = true;
    try {
      for (let e = this.queue.shift(); e; e = this.queue.shift()) {
        const r = step(this.fsm, e);
        this.fsm = r.state;
        for (const a of r.actions) if (!this.timers.apply(a)) this.perform(a);
      }
    } finally {
      this.draining = false;
    }
    this.onStep?.(this);
  }

  private perform(a: BfdAction): void {
    if (a.type === 'send') {
      this.counters[COUNTER.packetsOut]++;
      this.transport.send(this, encodeControlPacket(a.packet));
    } else if (a.type === 'stateChange') {
      this.since = Date.now();
      if (a.to === 'Up') this.upCount++;
      this.emit('state', a.to, a.from, a.diag);
    }
  }
}
