// One Node timer per BFD session, whatever its machine asks for. The detection timer restarts
// on every packet received; that only moves a deadline later, so it costs no clearTimeout and
// setTimeout: the timer armed for the earlier deadline finds, when it fires, that nothing is
// due yet and sleeps until the next deadline. A session at 100 ms thus wakes about once per
// packet it sends, and never spins.
import type { BfdAction, BfdEvent, BfdTimerName } from './types.js';

const EXPIRY: Record<BfdTimerName, BfdEvent> = {
  DetectionTimer: Object.freeze({ type: 'DetectionTimerExpired' }),
  TransmitTimer: Object.freeze({ type: 'TransmitTimerExpired' }),
};

export class SessionTimers {
  private detection = Number.POSITIVE_INFINITY;
  private transmit = Number.POSITIVE_INFINITY;
  private handle: NodeJS.Timeout | undefined;
  private armedFor = Number.POSITIVE_INFINITY;

  constructor(
    private readonly fire: (e: BfdEvent) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Carries out a timer action; false for any other action. */
  apply(a: BfdAction): boolean {
    if (a.type === 'startTimer') {
      const at = this.now() + a.ms;
      if (a.timer === 'DetectionTimer') this.detection = at;
      else this.transmit = at;
      if (at < this.armedFor) this.arm(at);
      return true;
    }
    if (a.type === 'stopTimer') {
      if (a.timer === 'DetectionTimer') this.detection = Number.POSITIVE_INFINITY;
      else this.transmit = Number.POSITIVE_INFINITY;
      return true;
    }
    return false;
  }

  /** When the detection timer fires, in this clock's ms (Infinity when stopped). */
  get detectionDeadline(): number {
    return this.detection;
  }

  stopAll(): void {
    clearTimeout(this.handle);
    this.handle = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    this.detection = Number.POSITIVE_INFINITY;
    this.transmit = Number.POSITIVE_INFINITY;
  }

  private arm(at: number): void {
    clearTimeout(this.handle);
    this.armedFor = at;
    this.handle = setTimeout(() => this.due(), Math.max(0, at - this.now()));
    this.handle.unref();
  }

  private due(): void {
    this.handle = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    // Node's timers keep whole milliseconds: a deadline within half of one is due.
    const now = this.now() + 0.5;
    // Detection first: a session that timed out sends its Down in the same breath.
    if (this.detection <= now) {
      this.detection = Number.POSITIVE_INFINITY;
      this.fire(EXPIRY.DetectionTimer);
    }
    if (this.transmit <= now) {
      this.transmit = Number.POSITIVE_INFINITY;
      this.fire(EXPIRY.TransmitTimer);
    }
    const next = Math.min(this.detection, this.transmit);
    if (next < this.armedFor && next !== Number.POSITIVE_INFINITY) this.arm(next);
  }
}
