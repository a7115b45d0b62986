// A clock driven by hand, for tests of anything that runs FSM timers: time moves only when
// `advance` is called, and due timers fire in order of their due time.
import type { Clock, ClockTimer } from './timers.js';

interface Pending {
  due: number;
  readonly seq: number;
  readonly ms: number;
  readonly fire: () => void;
  cancelled: boolean;
}

export class ManualClock implements Clock {
  /** Milliseconds since the clock was made. */
  now = 0;
  private seq = 0;
  private readonly pending = new Set<Pending>();

  start(ms: number, fire: () => void): ClockTimer {
    const p: Pending = { due: this.now + ms, seq: this.seq++, ms, fire, cancelled: false };
    this.pending.add(p);
    return {
      cancel: () => {
        p.cancelled = true;
        this.pending.delete(p);
      },
      refresh: () => {
        if (p.cancelled) return;
        p.due = this.now + p.ms;
        this.pending.add(p);
      },
    };
  }

  /** Move time forward by `ms`, firing every timer that falls due (including ones started meanwhile). */
  advance(ms: number): void {
    const target = this.now + ms;
    for (;;) {
      let next: Pending | undefined;
      for (const p of this.pending) {
        if (p.due <= target && (next === undefined || p.due < next.due || (p.due === next.due && p.seq < next.seq))) next = p;
      }
      if (next === undefined) break;
      this.pending.delete(next);
      this.now = next.due;
      next.fire();
    }
    this.now = target;
  }

  /** How many timers are waiting. */
  get size(): number {
    return this.pending.size;
  }
}
