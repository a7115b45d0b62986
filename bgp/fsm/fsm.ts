// The BGP finite state machine of RFC 4271 §8.2.2, as a pure function. Comments quote the
// event numbers of §8.1; where this FSM departs from the RFC's letter, the comment says why.
import { FSM_EVENT_NUMBER } from './events.js';
import { isAcceptableHoldTime, keepaliveTimeFor, negotiateHoldTime } from './hold-time.js';
import { FsmErrorSubcode, cease, collisionCease, fsmError, holdTimerExpired, unacceptableHoldTime } from './notification.js';
import { Transition } from './transition.js';
import type { FsmAction, FsmEvent, FsmResult, FsmState, Notification, PeerOpen, TimerName } from './types.js';

const TIMER_OF_EVENT: Partial<Record<FsmEvent['type'], TimerName>> = {
  ConnectRetryTimer_Expires: 'ConnectRetryTimer',
  HoldTimer_Expires: 'HoldTimer',
  KeepaliveTimer_Expires: 'KeepaliveTimer',
  DelayOpenTimer_Expires: 'DelayOpenTimer',
  IdleHoldTimer_Expires: 'IdleHoldTimer',
};

const NO_ACTIONS: readonly never[] = Object.freeze([]);

/** The usual error ending: counted, damped, restarted after the IdleHoldTimer. */
const FAILURE = { counter: 'increment', damp: true, restart: true } as const;

/**
 * One step of the FSM: the state after `event` and what the caller must do, in order.
 * Pure: the same (state, event, now) always gives the same result, and `state` is not changed.
 *
 * `now` is the caller's monotonic clock in milliseconds (e.g. `performance.now()`); it is only
 * used to tell how long a session stayed Established, to forget the IdleHold back-off.
 */
export function step(state: FsmState, event: FsmEvent, now: number): FsmResult {
  const timer = TIMER_OF_EVENT[event.type];
  // An expiry of a timer this state does not run raced with its stop (the event was queued
  // before the stop was carried out): it is stale, and acting on it would be wrong.
  if (timer !== undefined && state.timers[timer] === null) return { state, actions: NO_ACTIONS };

  // The two messages of a busy Established session take a short path: no copy of the state.
  if (state.state === 'Established' && (event.type === 'KeepAliveMsg' || event.type === 'UpdateMsg')) {
    return established(state, event.type === 'UpdateMsg');
  }

  const t = new Transition(state, event, now);
  if (timer !== undefined) t.expired(timer);
  switch (state.state) {
    case 'Idle':
      idle(t);
      break;
    case 'Connect':
    case 'Active':
      connectOrActive(t);
      break;
    case 'OpenSent':
      openSent(t);
      break;
    case 'OpenConfirm':
      openConfirm(t);
      break;
    case 'Established':
      establishedState(t);
      break;
  }
  return t.result();
}

function isStart(type: FsmEvent['type']): boolean {
  const n = FSM_EVENT_NUMBER[type];
  return n === 1 || (n >= 3 && n <= 7);
}

/** Events 1 and 3–7 from Idle: initialise, zero the counter, start ConnectRetryTimer, connect or listen. */
function start(t: Transition, passive: boolean, counter: 'zero' | 'keep'): void {
  const s = t.next;
  t.stop('IdleHoldTimer');
  if (counter === 'zero') s.connectRetryCounter = 0;
  s.passiveTcpEstablishment = passive;
  s.restartAfterError = true;
  t.startJittered('ConnectRetryTimer', s.config.connectRetryTime);
  if (passive) {
    t.go('Active');
  } else {
    t.emit({ type: 'connect' });
    t.go('Connect');
  }
}

function idle(t: Transition): void {
  const e = t.event;
  const s = t.next;
  const cfg = s.config;
  switch (e.type) {
    case 'ManualStart':
    case 'ManualStart_with_PassiveTcpEstablishment':
      // An operator's start forgets any back-off built up so far.
      s.idleHoldTime = cfg.idleHoldTime;
      s.dampPeerOscillations = cfg.dampPeerOscillations;
      start(t, e.type !== 'ManualStart', 'zero');
      return;
    case 'AutomaticStart':
    case 'AutomaticStart_with_PassiveTcpEstablishment':
      if (!cfg.allowAutomaticStart) return;
      s.dampPeerOscillations = cfg.dampPeerOscillations;
      start(t, e.type !== 'AutomaticStart', 'zero');
      return;
    case 'AutomaticStart_with_DampPeerOscillations':
    case 'AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment': {
      if (!cfg.allowAutomaticStart) return;
      const passive = e.type !== 'AutomaticStart_with_DampPeerOscillations';
      s.dampPeerOscillations = true;
      if (t.running('IdleHoldTimer')) {
        // Damping: a start during the hold-down waits for the IdleHoldTimer, which restarts.
        s.passiveTcpEstablishment = passive;
        s.restartAfterError = true;
        return;
      }
      start(t, passive, 'zero');
      return;
    }
    case 'IdleHoldTimer_Expires':
      // Our own restart after an error; the counter keeps counting consecutive failures.
      if (s.restartAfterError && cfg.allowAutomaticStart) start(t, s.passiveTcpEstablishment, 'keep');
      return;
    case 'ManualStop':
    case 'AutomaticStop':
      if (e.type === 'AutomaticStop' && !cfg.allowAutomaticStop) return;
      // The RFC ignores stops in Idle; one during a hold-down must still cancel the restart.
      t.stop('IdleHoldTimer');
      s.restartAfterError = false;
      return;
    case 'Tcp_CR_Acked':
    case 'TcpConnectionConfirmed':
      // Idle refuses connections: one that completes anyway (a late connect) is closed.
      t.emit({ type: 'dropTcp' });
      return;
    default:
      // Events 9–12, 14–28 change nothing in Idle.
      return;
  }
}

/** Events 16/17 in Connect or Active: start DelayOpenTimer, or send OPEN and go to OpenSent. */
function tcpUp(t: Transition): void {
  const cfg = t.next.config;
  t.stop('ConnectRetryTimer');
  if (cfg.delayOpen) {
    t.start('DelayOpenTimer', cfg.delayOpenTime);
    return;
  }
  sendOpen(t);
}

function sendOpen(t: Transition): void {
  const cfg = t.next.config;
  t.stop('ConnectRetryTimer');
  t.stop('DelayOpenTimer');
  t.emit({ type: 'sendOpen', holdTime: cfg.holdTime });
  t.start('HoldTimer', cfg.largeHoldTime);
  t.go('OpenSent');
}

/** An acceptable OPEN: negotiate hold and keepalive, run their timers (none for hold 0). */
function acceptOpen(t: Transition, open: PeerOpen): void {
  const s = t.next;
  const hold = negotiateHoldTime(s.config.holdTime, open.holdTime);
  const keepalive = keepaliveTimeFor(hold, s.config.keepaliveTime);
  s.peer = open;
  s.negotiatedHoldTime = hold;
  s.negotiatedKeepaliveTime = keepalive;
  t.emit({ type: 'sendKeepalive' });
  if (hold === 0) {
    t.stop('KeepaliveTimer');
    t.stop('HoldTimer');
  } else {
    t.startJittered('KeepaliveTimer', keepalive);
    t.start('HoldTimer', hold);
  }
  t.go('OpenConfirm');
}

function connectOrActive(t: Transition): void {
  const e = t.event;
  const s = t.next;
  const cfg = s.config;
  const delayingOpen = t.running('DelayOpenTimer');
  if (isStart(e.type)) return;
  switch (e.type) {
    case 'ManualStop':
      // A connection exists only while the OPEN is delayed; then a Cease may go out first.
      return t.toIdle({
        ...(delayingOpen && cfg.sendNotificationWithoutOpen ? { send: cease(e.subcode, e.data) } : {}),
        counter: 'zero',
        damp: false,
        restart: false,
      });
    case 'ConnectRetryTimer_Expires':
      if (t.state === 'Connect') {
        t.emit({ type: 'dropTcp' });
        t.stop('DelayOpenTimer');
        t.startJittered('ConnectRetryTimer', cfg.connectRetryTime);
        t.emit({ type: 'connect' });
        return;
      }
      t.startJittered('ConnectRetryTimer', cfg.connectRetryTime);
      // A passive FSM never connects (the RFC's Active text assumes an active one): it keeps waiting.
      if (s.passiveTcpEstablishment) return;
      t.emit({ type: 'connect' });
      t.go('Connect');
      return;
    case 'DelayOpenTimer_Expires':
      return sendOpen(t);
    case 'TcpConnection_Valid':
    case 'Tcp_CR_Invalid':
      // The connection is accepted or refused by whoever reported it; no change here.
      return;
    case 'Tcp_CR_Acked':
    case 'TcpConnectionConfirmed':
      return tcpUp(t);
    case 'TcpConnectionFails':
      if (t.state === 'Connect' && delayingOpen) {
        t.stop('DelayOpenTimer');
        t.emit({ type: 'dropTcp' });
        t.startJittered('ConnectRetryTimer', cfg.connectRetryTime);
        t.go('Active');
        return;
      }
      // Connect without a delayed OPEN: the attempt failed, to Idle without counting it.
      // Active: counts and damps. The RFC restarts the ConnectRetryTimer on the way to Idle,
      // where its expiry is ignored; we stop it, and the IdleHoldTimer does the retrying.
      return t.toIdle({ counter: t.state === 'Active' ? 'increment' : 'keep', damp: t.state === 'Active', restart: true });
    case 'BGPOpen':
      if (delayingOpen) {
        // Event 20: the peer's OPEN came first; answer with ours and a KEEPALIVE.
        if (!isAcceptableHoldTime(e.open.holdTime)) return openError(t, unacceptableHoldTime);
        t.stop('ConnectRetryTimer');
        t.stop('DelayOpenTimer');
        t.emit({ type: 'sendOpen', holdTime: cfg.holdTime });
        return acceptOpen(t, e.open);
      }
      // Event 19 without a delayed OPEN: "any other event".
      return t.toIdle(FAILURE);
    case 'BGPHeaderErr':
    case 'BGPOpenMsgErr':
      return openError(t, e.notification);
    case 'NotifMsgVerErr':
      return t.toIdle({
        received: e.notification,
        counter: delayingOpen ? 'keep' : 'increment',
        damp: !delayingOpen,
        restart: true,
      });
    case 'AutomaticStop':
      if (!cfg.allowAutomaticStop) return;
      return t.toIdle({ counter: 'increment', damp: true, restart: false });
    case 'OpenCollisionDump':
      return t.toIdle({ counter: 'increment', damp: true, restart: false });
    case 'NotifMsg':
      return t.toIdle({ ...FAILURE, received: e.notification });
    default:
      // Events 10, 11, 13, 26–28: to Idle, counted and damped.
      return t.toIdle(FAILURE);
  }
}

/** Events 21/22 before our OPEN went out: a NOTIFICATION only with SendNOTIFICATIONwithoutOPEN. */
function openError(t: Transition, notification: Notification): void {
  const allowed = t.next.config.sendNotificationWithoutOpen;
  t.toIdle({ ...(allowed ? { send: notification } : {}), counter: 'increment', damp: true, restart: true });
}

/** Events 2, 8, 10, 23: the exits OpenSent, OpenConfirm and Established share. */
function commonExit(t: Transition): boolean {
  const e = t.event;
  const cfg = t.next.config;
  switch (e.type) {
    case 'ManualStop':
      t.toIdle({ send: cease(e.subcode, e.data), counter: 'zero', damp: false, restart: false });
      return true;
    case 'AutomaticStop':
      if (cfg.allowAutomaticStop) {
        t.toIdle({ send: cease(e.subcode, e.data), counter: 'increment', damp: true, restart: false });
      }
      return true;
    case 'HoldTimer_Expires':
      t.toIdle({ ...FAILURE, send: holdTimerExpired });
      return true;
    case 'OpenCollisionDump':
      if (t.state === 'Established' && !cfg.collisionDetectEstablishedState) return true;
      t.toIdle({ send: collisionCease, counter: 'increment', damp: true, restart: false });
      return true;
    case 'TcpConnection_Valid':
    case 'Tcp_CR_Invalid':
    case 'Tcp_CR_Acked':
    case 'TcpConnectionConfirmed':
      // A second connection: the session layer runs it in its own FSM and resolves the
      // collision when its OPEN arrives (collision.ts). Nothing changes here.
      return true;
    default:
      return isStart(e.type);
  }
}

/** "Any other event" in OpenSent, OpenConfirm, Established: FSM Error with RFC 6608's subcode. */
function unexpected(t: Transition, subcode: number, received?: Notification): void {
  // The RFC would answer a NOTIFICATION with an FSM Error; the peer has closed by then, so we
  // only record what it sent.
  t.toIdle({
    ...(received ? { received } : { send: fsmError(subcode) }),
    counter: 'increment',
    damp: true,
    restart: true,
  });
}

function openSent(t: Transition): void {
  const e = t.event;
  if (commonExit(t)) return;
  switch (e.type) {
    case 'TcpConnectionFails':
      // Back to listening, and to connecting again when the ConnectRetryTimer fires.
      t.emit({ type: 'dropTcp' });
      t.stop('HoldTimer');
      t.startJittered('ConnectRetryTimer', t.next.config.connectRetryTime);
      t.go('Active');
      return;
    case 'BGPOpen':
      if (!isAcceptableHoldTime(e.open.holdTime)) {
        t.toIdle({ ...FAILURE, send: unacceptableHoldTime });
        return;
      }
      t.stop('DelayOpenTimer');
      t.stop('ConnectRetryTimer');
      acceptOpen(t, e.open);
      return;
    case 'BGPHeaderErr':
    case 'BGPOpenMsgErr':
      t.toIdle({ ...FAILURE, send: e.notification });
      return;
    case 'NotifMsgVerErr':
      t.toIdle({ received: e.notification, counter: 'keep', damp: false, restart: true });
      return;
    case 'NotifMsg':
      unexpected(t, FsmErrorSubcode.UNEXPECTED_MESSAGE_IN_OPENSENT, e.notification);
      return;
    default:
      // Events 9, 11–13, 26–28.
      unexpected(t, FsmErrorSubcode.UNEXPECTED_MESSAGE_IN_OPENSENT);
  }
}

/** Event 11 in OpenConfirm and Established: send a KEEPALIVE and restart the timer. */
function keepaliveDue(t: Transition): void {
  t.emit({ type: 'sendKeepalive' });
  t.startJittered('KeepaliveTimer', t.next.negotiatedKeepaliveTime ?? 0);
}

function openConfirm(t: Transition): void {
  const e = t.event;
  const s = t.next;
  if (commonExit(t)) return;
  switch (e.type) {
    case 'KeepaliveTimer_Expires':
      return keepaliveDue(t);
    case 'TcpConnectionFails':
      t.toIdle(FAILURE);
      return;
    case 'NotifMsg':
      t.toIdle({ ...FAILURE, received: e.notification });
      return;
    case 'NotifMsgVerErr':
      t.toIdle({ received: e.notification, counter: 'keep', damp: false, restart: true });
      return;
    case 'BGPHeaderErr':
    case 'BGPOpenMsgErr':
      t.toIdle({ ...FAILURE, send: e.notification });
      return;
    case 'KeepAliveMsg': {
      const hold = s.negotiatedHoldTime ?? 0;
      if (hold !== 0) t.start('HoldTimer', hold);
      s.establishedAt = t.now;
      t.go('Established');
      if (s.peer !== null) {
        t.emit({ type: 'established', peer: s.peer, holdTime: hold, keepaliveTime: s.negotiatedKeepaliveTime ?? 0 });
      }
      return;
    }
    default:
      // Events 9, 12, 13, 27, 28, and BGPOpen: a second OPEN on this connection is a protocol
      // error (a colliding OPEN arrives on the other connection's FSM; see collision.ts).
      unexpected(t, FsmErrorSubcode.UNEXPECTED_MESSAGE_IN_OPENCONFIRM);
  }
}

function established(state: FsmState, update: boolean): FsmResult {
  const hold = state.negotiatedHoldTime ?? 0;
  const restartHold = hold !== 0 && state.timers.HoldTimer !== null;
  if (!update) return { state, actions: restartHold ? steadyActions(hold).keepalive : NO_ACTIONS };
  return { state, actions: restartHold ? steadyActions(hold).update : PROCESS_UPDATE };
}

// Every UPDATE and KEEPALIVE of an Established session gets one of the same few action
// lists: made once per hold time, frozen, not once per message (a table is ~10^5 UPDATEs).
const PROCESS_UPDATE: readonly FsmAction[] = Object.freeze([Object.freeze({ type: 'processUpdate' as const })]);
const steady = new Map<number, { keepalive: readonly FsmAction[]; update: readonly FsmAction[] }>();

function steadyActions(hold: number): { keepalive: readonly FsmAction[]; update: readonly FsmAction[] } {
  let a = steady.get(hold);
  if (a === undefined) {
    const restart: FsmAction = Object.freeze({ type: 'startTimer', timer: 'HoldTimer', seconds: hold });
    a = { keepalive: Object.freeze([restart]), update: Object.freeze([PROCESS_UPDATE[0], restart]) };
    steady.set(hold, a);
  }
  return a;
}

function establishedState(t: Transition): void {
  const e = t.event;
  if (commonExit(t)) return;
  switch (e.type) {
    case 'KeepaliveTimer_Expires':
      return keepaliveDue(t);
    case 'NotifMsg':
    case 'NotifMsgVerErr':
      // The RFC does not damp here; we do, since a session that flaps after coming up is
      // the oscillation damping exists for (a stable one resets it on the way down).
      t.toIdle({ ...FAILURE, received: e.notification });
      return;
    case 'TcpConnectionFails':
      t.toIdle(FAILURE);
      return;
    case 'UpdateMsgErr':
    case 'BGPHeaderErr':
      // A bad header gets its own Message Header Error (§6.1), not the FSM Error the RFC's
      // Established list would send.
      t.toIdle({ ...FAILURE, send: e.notification });
      return;
    default:
      // Events 9, 12, 13, 19/20 (an OPEN on an Established connection), 22.
      unexpected(t, FsmErrorSubcode.UNEXPECTED_MESSAGE_IN_ESTABLISHED);
  }
}
