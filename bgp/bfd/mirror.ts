// A session as the main thread holds it when its machine runs in the BFD thread (BfdWorker):
// the machine's variables as of the last change the thread reported, its counters read from
// memory the thread writes, and its state events in the order the thread saw them.
import { EventEmitter } from 'eventemitter3';
import { bfdConfig, createBfdSession, type BfdTimers } from './config.js';
import type { FromThread, ToThread } from './messages.js';
import { COUNTER, COUNTERS, sessionStatus, type BfdSessionEvents, type BfdSessionHandle, type BfdSessionStatus } from './session.js';
import { BFD_THREAD_STOPPED, type BfdState, type BfdStateName } from './types.js';

export class BfdSessionMirror extends EventEmitter<BfdSessionEvents> implements BfdSessionHandle {
  private fsm: BfdState;
  since = Date.now();
  upCount = 0;
  /** Times it went Up on threads that have stopped (a restarted thread counts from 0). */
  private upBase = 0;
  /** Clients sharing this session (see BfdWorker.add). */
  users = 1;
  /** Taken down by a client: a restarted thread is told again. */
  admin = false;
  disposed = false;
  /** Why the thread could not run the session, shown as its diagnostic. */
  private failure: string | undefined;
  readonly counters = new Float64Array(new SharedArrayBuffer(COUNTERS * 8));

  constructor(
    readonly peer: string,
    readonly localAddress: string | undefined,
    private timers: Required<BfdTimers>,
    readonly localDiscriminator: number,
    private readonly seed: number,
    private readonly post: (m: ToThread) => void,
  ) {
    super();
    this.fsm = createBfdSession(bfdConfig(timers), localDiscriminator, seed);
  }

  get state(): BfdStateName {
    return this.fsm.sessionState;
  }

  get isUp(): boolean {
    return this.fsm.sessionState === 'Up';
  }

  get variables(): BfdState {
    return this.fsm;
  }

  get packetsIn(): number {
    return this.counters[COUNTER.packetsIn];
  }

  get packetsOut(): number {
    return this.counters[COUNTER.packetsOut];
  }

  get lastReceived(): number {
    return this.counters[COUNTER.lastReceived];
  }

  status(): BfdSessionStatus {
    return sessionStatus(this.peer, this.localAddress, this.fsm, this.counters, this.since, this.upCount, this.failure);
  }

  /** What the thread needs to run it (again, after a restart). */
  addMessage(): ToThread {
    return {
      op: 'add',
      id: this.localDiscriminator,
      options: { peer: this.peer, ...(this.localAddress !== undefined ? { localAddress: this.localAddress } : {}), ...this.timers },
      seed: this.seed,
      counters: this.counters,
    };
  }

  setTimers(t: Required<BfdTimers>): void {
    this.timers = t;
    this.post({ op: 'timers', id: this.localDiscriminator, timers: t });
  }

  adminDown(): void {
    if (this.disposed) return;
    this.admin = true;
    this.post({ op: 'adminDown', id: this.localDiscriminator });
  }

  adminUp(): void {
    if (this.disposed) return;
    this.admin = false;
    this.post({ op: 'adminUp', id: this.localDiscriminator });
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.post({ op: 'dispose', id: this.localDiscriminator });
    this.removeAllListeners();
  }

  /** A report of the thread's. */
  apply(m: Extract<FromThread, { t: 'session' | 'failed' }>): void {
    if (this.disposed) return;
    if (m.t === 'failed') {
      this.failure = m.message;
      return;
    }
    this.failure = undefined;
    this.fsm = m.variables;
    this.since = m.since;
    this.upCount = this.upBase + m.upCount;
    if (m.change) this.emit('state', ...m.change);
  }

  /** The thread stopped: the session no longer runs, so it is Down, and its clients hear it. */
  threadStopped(): void {
    if (this.disposed) return;
    this.upBase = this.upCount;
    const from = this.fsm.sessionState;
    this.fsm = {
      ...this.fsm,
      sessionState: from === 'AdminDown' ? 'AdminDown' : 'Down',
      remoteSessionState: 'Down',
      remoteDiscr: 0,
      localDiag: BFD_THREAD_STOPPED,
      polling: false,
    };
    if (from === 'Down' || from === 'AdminDown') return;
    this.since = Date.now();
    this.emit('state', 'Down', from, BFD_THREAD_STOPPED);
  }
}
