// The one impure piece: carries out the FSM's startTimer/stopTimer actions on real timers and
// reports expiries back as FSM events. The clock is injected so tests can drive time by hand.
import { timerExpiresEvent, type TimerExpiresEvent } from './events.js';
import type { FsmAction, TimerName } from './types.js';

export interface ClockTimer {
  cancel(): void;
  /** Restart with the same duration, counted from now. */
  refresh(): void;
}

export interface Clock {
  start(ms: number, fire: () => void): ClockTimer;
}

/**
 * Node's timers, unref'd: a BGP timer alone never keeps the process alive (the sockets do).
 * `refresh()` makes the per-UPDATE hold timer restart cheap.
 */
export const nodeClock: Clock = {
  start(ms, fire) {
    const handle = setTimeout(fire, ms);
    handle.unref();
    return {
      cancel: () => clearTimeout(handle),
      refresh: () => {
        handle.refresh();
      },
    };
  },
};

interface Running {
  readonly ms: number;
  readonly handle: ClockTimer;
}

export class FsmTimers {
  private readonly running = new Map<TimerName, Running>();

  /**
   * @param onExpire called with the timer's `*_Expires` event; feed it to `step` (through
   *   the session's event queue). A stopped or restarted timer never reports.
   */
  constructor(
    private readonly onExpire: (event: TimerExpiresEvent) => void,
    private readonly clock: Clock = nodeClock,
  ) {}

  /** Carries out a `startTimer` or `stopTimer` action; returns false for any other action. */
  apply(action: FsmAction): boolean {
    if (action.type === 'startTimer') {
      this.start(action.timer, action.seconds);
      return true;
    }
    if (action.type === 'stopTimer') {
      this.stop(action.timer);
      return true;
    }
    return false;
  }

  start(timer: TimerName, seconds: number): void {
    const ms = Math.round(seconds * 1000);
    const current = this.running.get(timer);
    if (current !== undefined && current.ms === ms) {
      current.handle.refresh();
      return;
    }
    current?.handle.cancel();
    const entry: Running = {
      ms,
      handle: this.clock.start(ms, () => {
        // Only the entry still registered may fire: guards against a clock that runs a
        // callback it was asked to cancel.
        if (this.running.get(timer) !== entry) return;
        this.running.delete(timer);
        this.onExpire(timerExpiresEvent(timer));
      }),
    };
    this.running.set(timer, entry);
  }

  stop(timer: TimerName): void {
    const current = this.running.get(timer);
    if (current === undefined) return;
    current.handle.cancel();
    this.running.delete(timer);
  }

  /** Cancel everything, e.g. when the peer is removed. */
  stopAll(): void {
    for (const timer of [...this.running.keys()]) this.stop(timer);
  }

  isRunning(timer: TimerName): boolean {
    return this.running.has(timer);
  }
}
