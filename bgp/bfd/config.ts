// A session's configuration, in the milliseconds users write, checked with errors that name
// the field, and the initial state of §6.8.1 it gives.
import type { BfdConfig, BfdState } from './types.js';

export interface BfdTimers {
  /** How often we would like to send, ms (bfd.DesiredMinTxInterval). Default 300. */
  minTxInterval?: number;
  /** How often we can take the peer's packets, ms (bfd.RequiredMinRxInterval). Default 300. */
  minRxInterval?: number;
  /** Packets missed before the peer declares us down (bfd.DetectMult). Default 3. */
  multiplier?: number;
}

/** FRR's and BIRD's defaults: 300 ms × 3. */
export const DEFAULT_BFD_TIMERS: Readonly<Required<BfdTimers>> = Object.freeze({ minTxInterval: 300, minRxInterval: 300, multiplier: 3 });

/** §6.8.3: the slowest we send at until the session is Up. */
export const SLOW_TX_INTERVAL_US = 1_000_000;

const MAX_INTERVAL_MS = 60_000;

function interval(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_INTERVAL_MS) {
    throw new TypeError(`${field}: ${String(v)} is not an interval in milliseconds (1..${MAX_INTERVAL_MS})`);
  }
  return v;
}

/** The timers with their defaults, each checked; `field` prefixes the messages ("peer 10.0.0.2 bfd"). */
export function checkBfdTimers(field: string, t: BfdTimers = {}): Required<BfdTimers> {
  if (typeof t !== 'object' || t === null) throw new TypeError(`${field}: an object with minTxInterval, minRxInterval, multiplier`);
  for (const k of Object.keys(t)) {
    if (!(k in DEFAULT_BFD_TIMERS)) throw new TypeError(`${field}.${k}: unknown field (minTxInterval, minRxInterval, multiplier)`);
  }
  const m = t.multiplier ?? DEFAULT_BFD_TIMERS.multiplier;
  if (!Number.isInteger(m) || m < 1 || m > 255) throw new TypeError(`${field}.multiplier: ${String(m)} is not 1..255`);
  return {
    minTxInterval: interval(`${field}.minTxInterval`, t.minTxInterval ?? DEFAULT_BFD_TIMERS.minTxInterval),
    minRxInterval: interval(`${field}.minRxInterval`, t.minRxInterval ?? DEFAULT_BFD_TIMERS.minRxInterval),
    multiplier: m,
  };
}

export function bfdConfig(t: BfdTimers = {}): BfdConfig {
  const c = checkBfdTimers('bfd', t);
  return {
    desiredMinTxInterval: c.minTxInterval * 1000,
    requiredMinRxInterval: c.minRxInterval * 1000,
    detectMult: c.multiplier,
    slowTxInterval: SLOW_TX_INTERVAL_US,
  };
}

/**
 * A new session in Down (§6.8.1), its transmit timer not yet started: the first
 * `TransmitTimerExpired` (the caller sends it at once) sends the first packet.
 * `localDiscr` must be non-zero and unique among the caller's sessions; `seed` drives the jitter.
 */
export function createBfdSession(config: BfdConfig, localDiscr: number, seed = 0x9e3779b9): BfdState {
  if (!Number.isInteger(localDiscr) || localDiscr < 1 || localDiscr > 0xffffffff) {
    throw new TypeError(`localDiscr: ${localDiscr} is not a non-zero 32-bit discriminator`);
  }
  const desired = Math.max(config.desiredMinTxInterval, config.slowTxInterval);
  return {
    config,
    sessionState: 'Down',
    remoteSessionState: 'Down',
    localDiscr,
    remoteDiscr: 0,
    localDiag: 0,
    desiredMinTxInterval: desired,
    requiredMinRxInterval: config.requiredMinRxInterval,
    remoteMinRxInterval: 1,
    remoteDesiredMinTxInterval: 0,
    remoteDetectMult: 0,
    remoteDemandMode: false,
    txIntervalInEffect: desired,
    rxIntervalInEffect: config.requiredMinRxInterval,
    polling: false,
    timers: { TransmitTimer: 0, DetectionTimer: null },
    rng: seed >>> 0 || 1,
  };
}
