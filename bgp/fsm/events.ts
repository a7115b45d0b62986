// RFC 4271 §8.1 event numbers, and small helpers to build events from what a session sees.
import type { FsmEvent, FsmEventType, Notification, TimerName } from './types.js';

/** Event numbers as RFC 4271 §8.1 gives them (BGPOpen is 20 when the DelayOpenTimer runs). */
export const FSM_EVENT_NUMBER: Readonly<Record<FsmEventType, number>> = Object.freeze({
  ManualStart: 1,
  ManualStop: 2,
  AutomaticStart: 3,
  ManualStart_with_PassiveTcpEstablishment: 4,
  AutomaticStart_with_PassiveTcpEstablishment: 5,
  AutomaticStart_with_DampPeerOscillations: 6,
  AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment: 7,
  AutomaticStop: 8,
  ConnectRetryTimer_Expires: 9,
  HoldTimer_Expires: 10,
  KeepaliveTimer_Expires: 11,
  DelayOpenTimer_Expires: 12,
  IdleHoldTimer_Expires: 13,
  TcpConnection_Valid: 14,
  Tcp_CR_Invalid: 15,
  Tcp_CR_Acked: 16,
  TcpConnectionConfirmed: 17,
  TcpConnectionFails: 18,
  BGPOpen: 19,
  BGPHeaderErr: 21,
  BGPOpenMsgErr: 22,
  OpenCollisionDump: 23,
  NotifMsgVerErr: 24,
  NotifMsg: 25,
  KeepAliveMsg: 26,
  UpdateMsg: 27,
  UpdateMsgErr: 28,
});

export type TimerExpiresEvent = Extract<
  FsmEvent,
  {
    type: 'ConnectRetryTimer_Expires' | 'HoldTimer_Expires' | 'KeepaliveTimer_Expires' | 'DelayOpenTimer_Expires' | 'IdleHoldTimer_Expires';
  }
>;

const expires: Readonly<Record<TimerName, TimerExpiresEvent>> = Object.freeze({
  ConnectRetryTimer: Object.freeze({ type: 'ConnectRetryTimer_Expires' }),
  HoldTimer: Object.freeze({ type: 'HoldTimer_Expires' }),
  KeepaliveTimer: Object.freeze({ type: 'KeepaliveTimer_Expires' }),
  DelayOpenTimer: Object.freeze({ type: 'DelayOpenTimer_Expires' }),
  IdleHoldTimer: Object.freeze({ type: 'IdleHoldTimer_Expires' }),
});

/** The event a timer's expiry is reported as. */
export function timerExpiresEvent(timer: TimerName): TimerExpiresEvent {
  return expires[timer];
}

/** The event for a received NOTIFICATION: NotifMsgVerErr for 2/1 Unsupported Version Number, else NotifMsg. */
export function notificationEvent(notification: Notification): Extract<FsmEvent, { type: 'NotifMsg' | 'NotifMsgVerErr' }> {
  const versionError = notification.code === 2 && notification.subcode === 1;
  return { type: versionError ? 'NotifMsgVerErr' : 'NotifMsg', notification };
}
