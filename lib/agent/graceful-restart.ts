// Our side of graceful restart. Felix's first resync replaces the kernel's routes with what we
// know; after a restart (routes of ours already in the kernel) it must wait until every peer
// has sent its routes again (End-of-RIB), or it would delete the preserved remote routes.
// This gate holds that first resync back until then, or until the wait runs out.
import type { Dataplane } from '../../felix/index.js';

/** True when the dataplane already holds routes of `protocol`: we restarted and forwarding was kept. */
export async function detectRestart(dataplane: Dataplane, protocol: number): Promise<boolean> {
  const installed = await dataplane.listRoutes();
  return installed.some((r) => r.protocol === protocol);
}

export interface GracefulRestartOptions {
  restarting: boolean;
  /** Longest wait for every End-of-RIB (ms). */
  waitMs: number;
  /** The peers we hold sessions with now. */
  peers: () => Iterable<string>;
  /** Runs once, when the first resync may go. */
  release: () => void;
  log: (event: string, fields: Record<string, unknown>) => void;
}

export class GracefulRestart {
  private readonly endOfRib = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private released = false;
  private stopped = false;

  constructor(private readonly options: GracefulRestartOptions) {}

  get restarting(): boolean {
    return this.options.restarting;
  }

  /** Peers whose End-of-RIB has not come yet. */
  waitingFor(): string[] {
    return [...this.options.peers()].filter((a) => !this.endOfRib.has(a));
  }

  markEndOfRib(address: string): void {
    this.endOfRib.add(address);
  }

  /** Releases the first resync now if nothing is awaited; else starts the wait's deadline once. */
  check(): void {
    if (this.released || this.stopped) return;
    if (this.options.restarting && this.waitingFor().length > 0) {
      this.timer ??= setTimeout(() => {
        this.options.log('graceful-restart-timeout', { waitingFor: this.waitingFor() });
        this.releaseNow();
      }, this.options.waitMs);
      this.timer.unref?.();
      return;
    }
    this.releaseNow();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private releaseNow(): void {
    if (this.released || this.stopped) return;
    this.released = true;
    clearTimeout(this.timer);
    this.options.release();
  }
}
