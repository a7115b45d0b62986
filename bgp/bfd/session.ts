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

export class BfdSession extends EventEmitter<BfdSessionEvents> {
  private fsm: BfdState;
  private readonly timers: SessionTimers;
  private readonly queue: BfdEvent[] = [];
  private draining = false;
  private disposed = false;
  since = Date.now();
  packetsIn = 0;
  packetsOut = 0;
  upCount = 0;
  lastReceived = 0;
  /** Clients sharing this session (see Bfd.add). */
  users = 1;

  constructor(
    /** The peer's address as the socket takes it (a link-local one with its zone). */
    readonly peer: string,
    readonly localAddress: string | undefined,
    timers: Required<BfdTimers>,
    localDiscr: number,
    seed: number,
    private readonly transport: BfdTransport,
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

  get isUp(): boolean {
    return this.fsm.sessionState === 'Up';
  }

  /** The machine's whole state (§6.8.1 variables), for tests and debugging. */
  get variables(): BfdState {
    return this.fsm;
  }

  status(): BfdSessionStatus {
    const s = this.fsm;
    return {
      peer: this.peer,
      ...(this.localAddress !== undefined ? { localAddress: this.localAddress } : {}),
      state: s.sessionState,
      remoteState: s.remoteSessionState,
      diagnostic: diagText(s.localDiag),
      localDiscriminator: s.localDiscr,
      remoteDiscriminator: s.remoteDiscr,
      transmitInterval: transmitInterval(s) / 1000,
      detectionTime: detectionTime(s) / 1000,
      multiplier: s.config.detectMult,
      since: this.since,
      packetsIn: this.packetsIn,
      packetsOut: this.packetsOut,
      upCount: this.upCount,
      lastReceived: this.lastReceived,
    };
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
    this.packetsIn++;
    this.lastReceived = Date.now();
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
  }

  private perform(a: BfdAction): void {
    if (a.type === 'send') {
      this.packetsOut++;
      this.transport.send(this, encodeControlPacket(a.packet));
    } else if (a.type === 'stateChange') {
      this.since = Date.now();
      if (a.to === 'Up') this.upCount++;
      this.emit('state', a.to, a.from, a.diag);
    }
  }
}
