// Shared helpers for the FSM tests: reach a state by real transitions, and describe action
// lists as short strings so that a table row reads like the RFC's bullet list.
import {
  createFsm,
  step,
  type FsmAction,
  type FsmConfig,
  type FsmEvent,
  type FsmEventType,
  type FsmResult,
  type FsmState,
  type PeerOpen,
} from '../../../bgp/fsm/index.js';

/** Jitter off, so timer values are exact; tests of jitter turn it back on. */
export function fresh(config: Partial<FsmConfig> = {}, seed = 1): FsmState {
  return createFsm({ jitter: 0, ...config }, { seed });
}

export const PEER_OPEN: PeerOpen = { holdTime: 90, asNumber: 65002, bgpIdentifier: 0x0a000002 };

/** A representative event of each type. */
export function sample(type: FsmEventType): FsmEvent {
  switch (type) {
    case 'BGPOpen':
      return { type, open: PEER_OPEN };
    case 'BGPHeaderErr':
      return { type, notification: { code: 1, subcode: 2, data: Uint8Array.of(0, 18) } };
    case 'BGPOpenMsgErr':
      return { type, notification: { code: 2, subcode: 2 } };
    case 'NotifMsgVerErr':
      return { type, notification: { code: 2, subcode: 1, data: Uint8Array.of(0, 4) } };
    case 'NotifMsg':
      return { type, notification: { code: 6, subcode: 4 } };
    case 'UpdateMsgErr':
      return { type, notification: { code: 3, subcode: 1 } };
    case 'AutomaticStop':
      return { type, subcode: 1 };
    default:
      return { type } as FsmEvent;
  }
}

export const ALL_EVENTS: readonly FsmEventType[] = [
  'ManualStart',
  'ManualStop',
  'AutomaticStart',
  'ManualStart_with_PassiveTcpEstablishment',
  'AutomaticStart_with_PassiveTcpEstablishment',
  'AutomaticStart_with_DampPeerOscillations',
  'AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment',
  'AutomaticStop',
  'ConnectRetryTimer_Expires',
  'HoldTimer_Expires',
  'KeepaliveTimer_Expires',
  'DelayOpenTimer_Expires',
  'IdleHoldTimer_Expires',
  'TcpConnection_Valid',
  'Tcp_CR_Invalid',
  'Tcp_CR_Acked',
  'TcpConnectionConfirmed',
  'TcpConnectionFails',
  'BGPOpen',
  'BGPHeaderErr',
  'BGPOpenMsgErr',
  'OpenCollisionDump',
  'NotifMsgVerErr',
  'NotifMsg',
  'KeepAliveMsg',
  'UpdateMsg',
  'UpdateMsgErr',
];

/** Feed events in order; returns the last result. Time advances 1 ms per event unless `now` is given. */
export function run(state: FsmState, events: readonly FsmEvent[], now = 0): FsmResult {
  let r: FsmResult = { state, actions: [] };
  events.forEach((e, i) => {
    r = step(r.state, e, now + i);
  });
  return r;
}

export function go(state: FsmState, ...types: FsmEventType[]): FsmState {
  return run(state, types.map(sample)).state;
}

export type Reachable = 'Idle' | 'Connect' | 'Active' | 'OpenSent' | 'OpenConfirm' | 'Established';

/** The FSM in `name`, reached from Idle through the usual events (active start unless said). */
export function reach(name: Reachable, config: Partial<FsmConfig> = {}): FsmState {
  const s = fresh(config);
  switch (name) {
    case 'Idle':
      return s;
    case 'Connect':
      return go(s, 'ManualStart');
    case 'Active':
      return go(s, 'ManualStart_with_PassiveTcpEstablishment');
    case 'OpenSent':
      return go(s, 'ManualStart', 'Tcp_CR_Acked');
    case 'OpenConfirm':
      return go(s, 'ManualStart', 'Tcp_CR_Acked', 'BGPOpen');
    case 'Established':
      return go(s, 'ManualStart', 'Tcp_CR_Acked', 'BGPOpen', 'KeepAliveMsg');
  }
}

/** One short string per action: `startTimer:HoldTimer:90`, `sendNotification:6/2`, ... */
export function describe(actions: readonly FsmAction[]): string[] {
  return actions.map((a) => {
    switch (a.type) {
      case 'startTimer':
        return `startTimer:${a.timer}:${a.seconds}`;
      case 'stopTimer':
        return `stopTimer:${a.timer}`;
      case 'sendNotification':
        return `sendNotification:${a.notification.code}/${a.notification.subcode}`;
      case 'sendOpen':
        return `sendOpen:${a.holdTime}`;
      default:
        return a.type;
    }
  });
}

/** The running timers of a state and their values. */
export function running(s: FsmState): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(s.timers)) if (v !== null) out[k] = v;
  return out;
}

/** A state with extra timers marked running, as if a stale timer were still live. */
export function withTimers(s: FsmState, timers: Partial<Record<keyof FsmState['timers'], number>>): FsmState {
  return { ...s, timers: { ...s.timers, ...timers } };
}

export interface Row {
  readonly to: Reachable;
  readonly actions: readonly string[];
  readonly counter?: number;
}

/** Same state object back and no actions: the event changed nothing. */
export const UNCHANGED = 'unchanged' as const;
export type Expectation = Row | typeof UNCHANGED;
