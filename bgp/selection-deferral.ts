// RFC 4724 §4.1, the restarting side: after a restart we hold back what we send (our route
// selection's result, and so our End-of-RIB) until every peer that restarts gracefully with us
// has sent its whole table and End-of-RIB, or the selection deferral timer runs out (FRR's
// `select-defer-time`). Sending earlier would end the helpers' wait on a partial table, and they
// would drop the routes we had not yet relearned: the flap graceful restart is there to avoid.
// Until then our OPENs carry the Restart State bit.
//
// RFC 4724 leaves out of the wait a peer whose OPEN has the Restart State bit, so that two
// speakers restarting together do not wait for each other. FRR sets that bit whenever it starts
// with graceful restart configured, restarted or not, so leaving such peers out would mean never
// waiting for an FRR peer's routes, and the helpers would flap every route learnt from it. As
// FRR's own deferral does, every peer that does graceful restart is waited for; two speakers
// that really restarted together wait out the timer.
import type { AddressFamily } from './codec/index.js';
import type { SessionInfo } from './session/peer.js';

export class SelectionDeferral {
  /** `peer|family` of every End-of-RIB still awaited. */
  private readonly awaiting = new Set<string>();
  /** Configured peers: until a session with one is up, we cannot know what it owes us. */
  private readonly configured = new Set<string>();
  private readonly notUp = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private done: boolean;

  constructor(
    restarting: boolean,
    private readonly deferMs: number,
    private readonly onDone: () => void,
  ) {
    this.done = !restarting;
  }

  /** Whether what we send is still held back. */
  get deferring(): boolean {
    return !this.done;
  }

  /** End-of-RIBs not yet received, as `peer|family`, and configured peers not yet up. */
  get waitingFor(): string[] {
    return [...this.awaiting, ...this.notUp];
  }

  /**
   * A configured peer: RFC 4724 §4.1 waits for all our peers, so one whose session is not up
   * yet is waited for too (up to the timer), or its routes would be missing from what we send.
   */
  expect(peer: string): void {
    if (this.done) return;
    this.configured.add(peer);
    this.notUp.add(peer);
  }

  /** A peer removed from the configuration: nothing is awaited from it any more. */
  forget(peer: string): void {
    this.configured.delete(peer);
    this.notUp.delete(peer);
    this.down(peer);
  }

  /** A session came up: a peer that does graceful restart owes us its End-of-RIB in each family. */
  established(peer: string, info: SessionInfo): void {
    if (this.done) return;
    this.timer ??= setTimeout(() => this.finish(), this.deferMs);
    this.timer.unref?.();
    this.notUp.delete(peer);
    const gr = info.gracefulRestart;
    if (gr) {
      for (const f of info.negotiated.families) if (gr.families.some((g) => g.family === f)) this.awaiting.add(`${peer}|${f}`);
    }
    this.check();
  }

  endOfRib(peer: string, family: AddressFamily): void {
    if (this.done) return;
    this.awaiting.delete(`${peer}|${family}`);
    this.check();
  }

  /** A session went down: nothing more is awaited from it. */
  down(peer: string): void {
    if (this.done) return;
    for (const k of this.awaiting) if (k.startsWith(`${peer}|`)) this.awaiting.delete(k);
    if (this.configured.has(peer)) this.notUp.add(peer);
    if (this.timer !== undefined) this.check();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  private check(): void {
    if (this.awaiting.size === 0 && this.notUp.size === 0) this.finish();
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.timer);
    this.awaiting.clear();
    this.notUp.clear();
    this.onDone();
  }
}
