// Defaults and validation of the FSM's configured session attributes, and the initial state.
import type { FsmConfig, FsmState, TimerTable } from './types.js';

/**
 * RFC 4271 §10 suggests ConnectRetryTime 120 s, HoldTime 90 s, KeepaliveTime a third of it,
 * and 4 minutes for the OpenSent hold timer. The IdleHold back-off follows BIRD's error
 * wait (grow on each failure, forget after five minutes of stable session), starting lower
 * because a cluster wants a failed node-to-node session back within seconds.
 */
export const DEFAULT_FSM_CONFIG: FsmConfig = Object.freeze({
  holdTime: 90,
  keepaliveTime: null,
  connectRetryTime: 120,
  largeHoldTime: 240,
  delayOpen: false,
  delayOpenTime: 5,
  allowAutomaticStart: true,
  allowAutomaticStop: true,
  dampPeerOscillations: true,
  idleHoldTime: 5,
  maxIdleHoldTime: 300,
  idleHoldForgetTime: 300,
  collisionDetectEstablishedState: false,
  sendNotificationWithoutOpen: false,
  jitter: 0.25,
});

const MAX_SECONDS = 65535;

function seconds(field: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > MAX_SECONDS) {
    throw new RangeError(`FSM config: ${field} must be a number of seconds in ${min}..${MAX_SECONDS}, got ${String(value)}`);
  }
  return value;
}

function flag(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new TypeError(`FSM config: ${field} must be true or false, got ${String(value)}`);
  return value;
}

/** Fills in defaults and rejects values the RFC forbids, naming the field. */
export function fsmConfig(partial: Partial<FsmConfig> = {}): FsmConfig {
  const c = { ...DEFAULT_FSM_CONFIG, ...partial };
  const holdTime = seconds('holdTime', c.holdTime, 0);
  if (!Number.isInteger(holdTime) || holdTime === 1 || holdTime === 2) {
    // RFC 4271 §4.2: the Hold Time in an OPEN is a whole number of seconds, zero or at least three.
    throw new RangeError(`FSM config: holdTime must be 0 or a whole number in 3..65535, got ${holdTime}`);
  }
  const keepaliveTime = c.keepaliveTime === null ? null : seconds('keepaliveTime', c.keepaliveTime, 1);
  const idleHoldTime = seconds('idleHoldTime', c.idleHoldTime, 0);
  const maxIdleHoldTime = seconds('maxIdleHoldTime', c.maxIdleHoldTime, 0);
  if (maxIdleHoldTime < idleHoldTime) {
    throw new RangeError(`FSM config: maxIdleHoldTime (${maxIdleHoldTime}) must not be below idleHoldTime (${idleHoldTime})`);
  }
  if (typeof c.jitter !== 'number' || !(c.jitter >= 0 && c.jitter < 1)) {
    throw new RangeError(`FSM config: jitter must be a fraction in [0, 1), got ${String(c.jitter)}`);
  }
  return Object.freeze({
    holdTime,
    keepaliveTime,
    connectRetryTime: seconds('connectRetryTime', c.connectRetryTime, 1),
    largeHoldTime: seconds('largeHoldTime', c.largeHoldTime, 3),
    delayOpen: flag('delayOpen', c.delayOpen),
    delayOpenTime: seconds('delayOpenTime', c.delayOpenTime, 0),
    allowAutomaticStart: flag('allowAutomaticStart', c.allowAutomaticStart),
    allowAutomaticStop: flag('allowAutomaticStop', c.allowAutomaticStop),
    dampPeerOscillations: flag('dampPeerOscillations', c.dampPeerOscillations),
    idleHoldTime,
    maxIdleHoldTime,
    idleHoldForgetTime: seconds('idleHoldForgetTime', c.idleHoldForgetTime, 0),
    collisionDetectEstablishedState: flag('collisionDetectEstablishedState', c.collisionDetectEstablishedState),
    sendNotificationWithoutOpen: flag('sendNotificationWithoutOpen', c.sendNotificationWithoutOpen),
    jitter: c.jitter,
  });
}

export const NO_TIMERS: TimerTable = Object.freeze({
  ConnectRetryTimer: null,
  HoldTimer: null,
  KeepaliveTimer: null,
  DelayOpenTimer: null,
  IdleHoldTimer: null,
});

export interface CreateFsmOptions {
  /**
   * Seed of the jitter generator. Give one in tests for repeatable timer values; by default
   * each FSM gets its own, so that peers' timers do not fire in step.
   */
  readonly seed?: number;
}

/** A new FSM in Idle, not started. */
export function createFsm(config: Partial<FsmConfig> = {}, options: CreateFsmOptions = {}): FsmState {
  const cfg = fsmConfig(config);
  const seed = options.seed ?? Math.floor(Math.random() * 0x1_0000_0000);
  return {
    state: 'Idle',
    config: cfg,
    connectRetryCounter: 0,
    timers: NO_TIMERS,
    passiveTcpEstablishment: false,
    dampPeerOscillations: cfg.dampPeerOscillations,
    restartAfterError: false,
    idleHoldTime: cfg.idleHoldTime,
    peer: null,
    negotiatedHoldTime: null,
    negotiatedKeepaliveTime: null,
    establishedAt: null,
    // xorshift32 has a fixed point at 0; any other 32-bit value is a full-period seed.
    rng: seed >>> 0 || 0x9e3779b9,
  };
}
