// What the main thread and the BFD thread say to each other (BfdWorker and thread.ts): the
// main thread makes and ends sessions; the thread reports each change of a session's machine
// that a client can see, in the order it happened, as arrays: what one turn of the thread's
// loop changed goes in one message. Counters are shared memory, not messages.
import type { BfdOptions, BfdSessionOptions } from './endpoint.js';
import type { BfdTimers } from './config.js';
import type { BfdState, BfdStateName } from './types.js';

export type ToThread =
  /** A new session; `id` is its local discriminator, chosen by the main thread. */
  | { op: 'add'; id: number; options: BfdSessionOptions; seed: number; counters: Float64Array }
  | { op: 'timers'; id: number; timers: Required<BfdTimers> }
  | { op: 'adminDown' | 'adminUp' | 'dispose' | 'release'; id: number }
  | { op: 'close' }
  /** Answered by `synced` once every message before it is done. */
  | { op: 'sync'; n: number };

export type FromThread =
  /** The session's machine as it is now; `change` when its state changed ([to, from, diag]). */
  | {
      t: 'session';
      id: number;
      variables: BfdState;
      since: number;
      upCount: number;
      change?: [BfdStateName, BfdStateName, number];
    }
  /** The session could not start (its socket): it stays Down, and says why. */
  | { t: 'failed'; id: number; message: string }
  | { t: 'discarded'; from: string; why: string }
  | { t: 'error'; message: string }
  | { t: 'synced'; n: number }
  | { t: 'closed' };

/** The thread's workerData. */
export interface ThreadData {
  options: BfdOptions;
  /** [discards]: the endpoint's count of packets dropped before any session (§6.8.6). */
  discards: Float64Array;
  /** The module the thread runs (thread.ts or thread.js) and, from the sources, tsx's API to load it. */
  entry: string;
  tsx?: string;
}
