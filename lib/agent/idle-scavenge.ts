// V8 collects its young generation (a scavenge) when the generation is full, on the main thread,
// for as long as copying what survives takes. An agent's changes leave state that lives a few
// hundred changes (the versions of sets and chains it replaces), so each scavenge copies 1.5-3 MB:
// 4-5 ms, about every 150 policy changes, on a machine where a change takes 0.5-2 ms. Whichever
// change fills the generation pays it, so about one change in a hundred took 3-10 times its
// kind's median. Between changes the agent waits for the next: a scavenge run there, once the
// generation is half full, is one no change waits for (what a browser does in its idle time).
//
// Hazard: V8 lends no scavenge to a process but through `gc`, which it installs only with
// --expose-gc; the flag is set here at run time, after start, which Node says may misbehave for
// other flags, and `gc` is taken from a new context (the flag adds it to contexts made after).
// `gc({ type: 'minor' })` has been V8's since Node 12; without the option it would collect the
// whole heap, so nothing here calls it without.
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = (options: { type: 'minor' | 'major' }) => void;

let gc: Gc | undefined;

function exposedGc(): Gc {
  if (!gc) {
    const global = (globalThis as { gc?: Gc }).gc;
    if (global) gc = global;
    else {
      setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as Gc;
    }
  }
  return gc;
}

/** How full V8's young generation is, 0 to 1: what it holds over what it can before a scavenge. */
export function youngGenerationFill(): number {
  for (const s of getHeapSpaceStatistics()) {
    // space_size counts both semi-spaces; what one holds before the next scavenge is used + available.
    if (s.space_name === 'new_space') return s.space_used_size / Math.max(1, s.space_used_size + s.space_available_size);
  }
  return 0;
}

export interface IdleScavengeOptions {
  /** How long nothing must happen after the last work before the scavenge runs. Default 2 ms. */
  readonly quietMs?: number;
  /** How full the young generation must be for the scavenge to be worth running, 0 to 1. Default 0.5. */
  readonly fill?: number;
  /** Whether work is under way now (a transaction queued or in flight): the scavenge waits for the next quiet. */
  readonly busy?: () => boolean;
}

/** Runs V8's young-generation collection when the agent has been quiet a moment after its work. */
export class IdleScavenger {
  /** Scavenges run here. */
  runs = 0;
  private readonly quietMs: number;
  private readonly fill: number;
  private timer?: NodeJS.Timeout;

  constructor(private readonly options: IdleScavengeOptions = {}) {
    this.quietMs = options.quietMs ?? 2;
    this.fill = options.fill ?? 0.5;
    exposedGc();
  }

  /** Some work ended: the quiet is counted again from now. */
  workDone(): void {
    if (this.timer) {
      this.timer.refresh();
      return;
    }
    this.timer = setTimeout(() => this.quiet(), this.quietMs);
    this.timer.unref();
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private quiet(): void {
    this.timer = undefined;
    if (this.options.busy?.()) return;
    if (youngGenerationFill() < this.fill) return;
    this.runs++;
    exposedGc()({ type: 'minor' });
  }
}
