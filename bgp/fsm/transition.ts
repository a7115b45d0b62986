// A draft of the next state and its actions, built up by one step of the FSM. It keeps the
// timer table and the timer actions in agreement, so no transition can start a timer
// without the state knowing, or stop one without saying so.
import { jittered } from './jitter.js';
import type { FsmAction, FsmEvent, FsmResult, FsmState, FsmStateName, Notification, TimerName } from './types.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const TIMER_NAMES: readonly TimerName[] = ['ConnectRetryTimer', 'HoldTimer', 'KeepaliveTimer', 'DelayOpenTimer', 'IdleHoldTimer'];

export interface IdleOptions {
  /** The NOTIFICATION we send before dropping the connection. */
  readonly send?: Notification;
  /** The NOTIFICATION the peer sent, when that is what ended it. */
  readonly received?: Notification;
  readonly counter: 'increment' | 'zero' | 'keep';
  /** RFC 4271's "performs peer oscillation damping": grow IdleHoldTime. */
  readonly damp: boolean;
  /** False for stops (manual, automatic) and collision dumps: no restart via the IdleHoldTimer. */
  readonly restart: boolean;
}

export class Transition {
  readonly next: Mutable<FsmState>;
  private readonly timers: Mutable<Record<TimerName, number | null>>;
  readonly actions: FsmAction[] = [];

  constructor(
    readonly from: FsmState,
    readonly event: FsmEvent,
    readonly now: number,
  ) {
    this.timers = { ...from.timers };
    this.next = { ...from, timers: this.timers };
  }

  get state(): FsmStateName {
    return this.from.state;
  }

  running(timer: TimerName): boolean {
    return this.timers[timer] !== null;
  }

  /** A timer that fired is no longer running (the driver does not repeat timers). */
  expired(timer: TimerName): void {
    this.timers[timer] = null;
  }

  emit(action: FsmAction): void {
    this.actions.push(action);
  }

  start(timer: TimerName, seconds: number): void {
    this.timers[timer] = seconds;
    this.actions.push({ type: 'startTimer', timer, seconds });
  }

  /** Start with RFC 4271 §10 jitter, drawing from the state's generator. */
  startJittered(timer: TimerName, seconds: number): void {
    const j = jittered(seconds, this.from.config.jitter, this.next.rng);
    this.next.rng = j.rng;
    this.start(timer, j.seconds);
  }

  /** Stop a timer if it runs ("stops ... and sets it to zero"); silent when it does not. */
  stop(timer: TimerName): void {
    if (this.timers[timer] === null) return;
    this.timers[timer] = null;
    this.actions.push({ type: 'stopTimer', timer });
  }

  stopAll(): void {
    for (const timer of TIMER_NAMES) this.stop(timer);
  }

  go(state: FsmStateName): void {
    this.next.state = state;
  }

  /**
   * The common ending of RFC 4271 §8.2.2's error and stop paths: send the NOTIFICATION if any,
   * stop every timer, delete the routes if the session was up, release resources, drop TCP,
   * count, damp, and go to Idle; then, unless stopped, arm the IdleHoldTimer for a restart.
   */
  toIdle(o: IdleOptions): void {
    const s = this.next;
    const cfg = s.config;
    const wasEstablished = this.from.state === 'Established';
    if (o.send) this.emit({ type: 'sendNotification', notification: o.send });
    this.stopAll();
    if (wasEstablished) this.emit({ type: 'deleteRoutes' });
    this.emit({ type: 'releaseResources' });
    this.emit({ type: 'dropTcp' });
    this.emit({
      type: 'sessionDown',
      wasEstablished,
      reason: {
        event: this.event.type,
        from: this.from.state,
        ...(o.send ? { sent: o.send } : {}),
        ...(o.received ? { received: o.received } : {}),
      },
    });

    if (o.counter === 'increment') s.connectRetryCounter += 1;
    else if (o.counter === 'zero') s.connectRetryCounter = 0;
    // A session that stayed up long enough is not oscillating: forget the back-off.
    if (wasEstablished && s.establishedAt !== null && this.now - s.establishedAt >= cfg.idleHoldForgetTime * 1000) {
      s.idleHoldTime = cfg.idleHoldTime;
    }
    s.peer = null;
    s.negotiatedHoldTime = null;
    s.negotiatedKeepaliveTime = null;
    s.establishedAt = null;
    this.go('Idle');

    if (!o.restart) s.restartAfterError = false;
    if (s.restartAfterError && cfg.allowAutomaticStart) this.startJittered('IdleHoldTimer', s.idleHoldTime);
    if (o.damp && s.dampPeerOscillations) s.idleHoldTime = Math.min(s.idleHoldTime * 2, cfg.maxIdleHoldTime);
  }

  result(): FsmResult {
    return { state: this.next, actions: this.actions };
  }
}
