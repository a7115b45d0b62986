// The BFD state machine of RFC 5880 §6.2, with the reception rules of §6.8.6, the timer rules
// of §6.8.2–§6.8.4 and §6.8.7, and administrative control (§6.8.16), as a pure function.
// Comments cite the section each rule comes from; where this machine departs from the RFC's
// letter, the comment says why.
import type { BfdAction, BfdControlPacket, BfdEvent, BfdResult, BfdState, BfdStateName, BfdTimerName } from './types.js';
import { BfdDiag } from './types.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const TIMER_OF_EVENT: Partial<Record<BfdEvent['type'], BfdTimerName>> = {
  TransmitTimerExpired: 'TransmitTimer',
  DetectionTimerExpired: 'DetectionTimer',
};

const NO_ACTIONS: readonly never[] = Object.freeze([]);

/** §6.8.2: we send no faster than we want to nor than the remote can take. */
export function transmitInterval(s: BfdState): number {
  return Math.max(s.txIntervalInEffect, s.remoteMinRxInterval);
}

/** §6.8.4 (Asynchronous mode): the remote's Detect Mult times the agreed interval; 0 before any packet. */
export function detectionTime(s: BfdState): number {
  return s.remoteDetectMult * Math.max(s.rxIntervalInEffect, s.remoteDesiredMinTxInterval);
}

/** The Control packet this state sends (§6.8.7), with the P or F bit asked for. */
export function controlPacket(s: BfdState, bits: { poll?: boolean; final?: boolean } = {}): BfdControlPacket {
  return {
    diag: s.localDiag,
    state: s.sessionState,
    poll: bits.poll === true,
    final: bits.final === true,
    // A process in user space shares fate with its control plane.
    controlPlaneIndependent: false,
    authenticationPresent: false,
    demand: false,
    multipoint: false,
    detectMult: s.config.detectMult,
    myDiscriminator: s.localDiscr,
    yourDiscriminator: s.remoteDiscr,
    desiredMinTxInterval: s.desiredMinTxInterval,
    requiredMinRxInterval: s.requiredMinRxInterval,
    requiredMinEchoRxInterval: 0,
  };
}

class Draft {
  readonly next: Mutable<BfdState>;
  private readonly timers: Mutable<BfdState['timers']>;
  readonly actions: BfdAction[] = [];

  constructor(readonly from: BfdState) {
    this.timers = { ...from.timers };
    this.next = { ...from, timers: this.timers };
  }

  emit(a: BfdAction): void {
    this.actions.push(a);
  }

  running(t: BfdTimerName): boolean {
    return this.timers[t] !== null;
  }

  expired(t: BfdTimerName): void {
    this.timers[t] = null;
  }

  start(t: BfdTimerName, ms: number): void {
    this.timers[t] = ms;
    this.emit({ type: 'startTimer', timer: t, ms });
  }

  stop(t: BfdTimerName): void {
    if (this.timers[t] === null) return;
    this.timers[t] = null;
    this.emit({ type: 'stopTimer', timer: t });
  }

  send(bits: { poll?: boolean; final?: boolean } = {}): void {
    this.emit({ type: 'send', packet: controlPacket(this.next, bits) });
  }

  /**
   * §6.8.7: the next periodic packet after the transmit interval less 0–25 % at random, or
   * 10–25 % when bfd.DetectMult is 1, so that packets never come late enough to be missed.
   */
  scheduleTransmit(): void {
    const s = this.next;
    s.rng = nextRng(s.rng);
    const u = s.rng / 0x1_0000_0000;
    const factor = s.config.detectMult === 1 ? 0.9 - 0.15 * u : 1 - 0.25 * u;
    this.start('TransmitTimer', Math.max(1, Math.round((transmitInterval(s) * factor) / 1000)));
  }

  /** §6.8.4: a valid packet restarts detection; the timer runs in ms. */
  restartDetection(): void {
    const t = detectionTime(this.next);
    if (t > 0) this.start('DetectionTimer', t / 1000);
  }

  /** bfd.SessionState changes, with the timers that go with leaving or reaching Up (§6.8.3). */
  go(to: BfdStateName, diag: number): void {
    const s = this.next;
    const from = s.sessionState;
    s.localDiag = diag;
    if (from === to) return;
    s.sessionState = to;
    this.emit({ type: 'stateChange', from, to, diag });
    const before = transmitInterval(s);
    if (to === 'Up') {
      // Up: from the slow start rate to the configured one, announced by a Poll Sequence.
      this.setIntervals(s.config.desiredMinTxInterval, s.config.requiredMinRxInterval);
    } else {
      // §6.8.3: not Up, we send no faster than once a second; no Poll: the remote is not Up with us.
      s.polling = false;
      s.desiredMinTxInterval = Math.max(s.config.desiredMinTxInterval, s.config.slowTxInterval);
      s.txIntervalInEffect = s.desiredMinTxInterval;
      s.rxIntervalInEffect = s.requiredMinRxInterval;
    }
    // Departure: the RFC asks only for periodic packets; a change is sent at once (as FRR and
    // BIRD do), so the remote follows within a round trip and not a transmit interval.
    this.send({ poll: s.polling });
    if (transmitInterval(s) !== before || !this.running('TransmitTimer')) this.scheduleTransmit();
  }

  /**
   * §6.8.3: new advertised intervals. While Up a change runs a Poll Sequence; an increase of
   * DesiredMinTx and a decrease of RequiredMinRx take effect only at its Final, the others at once.
   */
  setIntervals(desired: number, required: number): void {
    const s = this.next;
    if (desired === s.desiredMinTxInterval && required === s.requiredMinRxInterval) return;
    s.desiredMinTxInterval = desired;
    s.requiredMinRxInterval = required;
    if (s.sessionState !== 'Up') {
      s.txIntervalInEffect = desired;
      s.rxIntervalInEffect = required;
      return;
    }
    if (desired < s.txIntervalInEffect) s.txIntervalInEffect = desired;
    if (required > s.rxIntervalInEffect) s.rxIntervalInEffect = required;
    s.polling = true;
  }

  /** §6.5: the Final ends the Poll Sequence; the values it announced all take effect. */
  endPoll(): void {
    const s = this.next;
    s.polling = false;
    s.txIntervalInEffect = s.desiredMinTxInterval;
    s.rxIntervalInEffect = s.requiredMinRxInterval;
  }

  result(): BfdResult {
    return { state: this.next, actions: this.actions };
  }
}

/** One xorshift32 step: the transmit jitter is a pure function of the state. */
function nextRng(x: number): number {
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  return x >>> 0 || 1;
}

/**
 * One step of the machine: the state after `event` and what the caller must do, in order.
 * Pure: the same (state, event) always gives the same result, and `state` is not changed.
 */
export function step(state: BfdState, event: BfdEvent): BfdResult {
  const timer = TIMER_OF_EVENT[event.type];
  // An expiry of a timer this state no longer runs raced with its stop: stale, ignored.
  if (timer !== undefined && state.timers[timer] === null) return { state, actions: NO_ACTIONS };
  const d = new Draft(state);
  if (timer !== undefined) d.expired(timer);
  switch (event.type) {
    case 'ReceivedPacket':
      received(d, event.packet);
      break;
    case 'DetectionTimerExpired':
      detectionExpired(d);
      break;
    case 'TransmitTimerExpired':
      // §6.8.7: nothing periodic while the remote asks for none (Required Min RX Interval 0).
      if (d.next.remoteMinRxInterval > 0) d.send({ poll: d.next.polling });
      d.scheduleTransmit();
      break;
    case 'AdminDown':
      // §6.8.16: AdminDown with diagnostic 7; packets go on, so the remote learns why.
      if (d.next.sessionState === 'AdminDown') break;
      d.stop('DetectionTimer');
      d.go('AdminDown', BfdDiag.ADMINISTRATIVELY_DOWN);
      break;
    case 'AdminUp':
      if (d.next.sessionState === 'AdminDown') d.go('Down', BfdDiag.NONE);
      break;
    case 'SetParameters':
      setParameters(d, event);
      break;
  }
  return d.result();
}

/** §6.8.6, from "Set bfd.RemoteDiscr" on: the packet passed the codec and was matched to this session. */
function received(d: Draft, p: BfdControlPacket): void {
  const s = d.next;
  const txBefore = transmitInterval(s);
  s.remoteDiscr = p.myDiscriminator;
  s.remoteSessionState = p.state;
  s.remoteDemandMode = p.demand;
  s.remoteMinRxInterval = p.requiredMinRxInterval;
  s.remoteDesiredMinTxInterval = p.desiredMinTxInterval;
  s.remoteDetectMult = p.detectMult;
  if (s.polling && p.final) d.endPoll();
  // §6.8.6 "If bfd.SessionState is AdminDown: Discard the packet".
  if (s.sessionState === 'AdminDown') {
    if (transmitInterval(s) !== txBefore) d.scheduleTransmit();
    return;
  }
  const was = s.sessionState;
  if (p.state === 'AdminDown') {
    if (was !== 'Down') d.go('Down', BfdDiag.NEIGHBOR_SIGNALED_SESSION_DOWN);
  } else if (was === 'Down') {
    // §6.2: Down + DOWN → Init; Down + INIT → Up; Down + UP stays Down.
    if (p.state === 'Down') d.go('Init', BfdDiag.NONE);
    else if (p.state === 'Init') d.go('Up', BfdDiag.NONE);
  } else if (was === 'Init') {
    // §6.2: Init + INIT or UP → Up; Init + DOWN stays Init.
    if (p.state === 'Init' || p.state === 'Up') d.go('Up', BfdDiag.NONE);
  } else if (p.state === 'Down') {
    // §6.2: Up + DOWN → Down, the neighbor signalled it.
    d.go('Down', BfdDiag.NEIGHBOR_SIGNALED_SESSION_DOWN);
  }
  // §6.8.2: a remote that now takes packets more slowly (or faster) changes our rate at once.
  if (s.sessionState === was && transmitInterval(s) !== txBefore) d.scheduleTransmit();
  // §6.8.6: a Poll is answered with a Final at once, without respect to the transmit timer;
  // never with both bits (§6.5), so a Poll of ours waits for the next periodic packet.
  if (p.poll) d.send({ final: true });
  d.restartDetection();
}

/** §6.8.4: a Detection Time without a valid packet. */
function detectionExpired(d: Draft): void {
  const s = d.next;
  const was = s.sessionState;
  // §6.8.1: bfd.RemoteDiscr goes back to zero; we start again as towards a new remote.
  s.remoteDiscr = 0;
  s.remoteSessionState = 'Down';
  s.remoteDetectMult = 0;
  if (was === 'Init' || was === 'Up') d.go('Down', BfdDiag.CONTROL_DETECTION_TIME_EXPIRED);
}

function setParameters(d: Draft, e: Extract<BfdEvent, { type: 'SetParameters' }>): void {
  const s = d.next;
  const config = {
    ...s.config,
    desiredMinTxInterval: e.desiredMinTxInterval ?? s.config.desiredMinTxInterval,
    requiredMinRxInterval: e.requiredMinRxInterval ?? s.config.requiredMinRxInterval,
    detectMult: e.detectMult ?? s.config.detectMult,
  };
  s.config = config;
  const up = s.sessionState === 'Up';
  const txBefore = transmitInterval(s);
  const detectBefore = detectionTime(s);
  const wasPolling = s.polling;
  d.setIntervals(
    up ? config.desiredMinTxInterval : Math.max(config.desiredMinTxInterval, config.slowTxInterval),
    config.requiredMinRxInterval,
  );
  // The Poll goes out at once, so the new values are in force within a round trip.
  if (s.polling && !wasPolling) d.send({ poll: true });
  if (transmitInterval(s) !== txBefore) d.scheduleTransmit();
  if (d.running('DetectionTimer') && detectionTime(s) !== detectBefore) d.restartDetection();
}
