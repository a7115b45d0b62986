// The BGP finite state machine (RFC 4271 §8): pure transitions, collision resolution, OPEN
// checks that need configuration, and a small timer driver. See README.md in this folder.
export type {
  CeaseReason,
  DownReason,
  FsmAction,
  FsmActionType,
  FsmConfig,
  FsmEvent,
  FsmEventType,
  FsmResult,
  FsmState,
  FsmStateName,
  Notification,
  PeerOpen,
  TimerName,
  TimerTable,
} from './types.js';
export { step } from './fsm.js';
export { createFsm, fsmConfig, DEFAULT_FSM_CONFIG, type CreateFsmOptions } from './config.js';
export { FSM_EVENT_NUMBER, notificationEvent, timerExpiresEvent, type TimerExpiresEvent } from './events.js';
export { isAcceptableHoldTime, keepaliveTimeFor, negotiateHoldTime } from './hold-time.js';
export { FsmErrorSubcode } from './notification.js';
export {
  collisionWinner,
  resolveCollision,
  type CollisionCase,
  type CollisionIdentity,
  type CollisionOutcome,
  type ConnectionDirection,
} from './collision.js';
export { checkPeerOpen, type OpenExpectations } from './open-check.js';
export { FsmTimers, nodeClock, type Clock, type ClockTimer } from './timers.js';
export { ManualClock } from './manual-clock.js';
