// The NOTIFICATION codes the FSM itself sends. The codec has the full tables
// (bgp/codec/constants.ts); these few are kept here so the FSM stands on its own.
import type { Notification } from './types.js';

export const HOLD_TIMER_EXPIRED_CODE = 4;
export const FSM_ERROR_CODE = 5;
export const CEASE_CODE = 6;
export const OPEN_MESSAGE_ERROR_CODE = 2;
export const UNACCEPTABLE_HOLD_TIME_SUBCODE = 6;

/** RFC 6608: which state received the unexpected message. */
export const FsmErrorSubcode = {
  UNSPECIFIED: 0,
  UNEXPECTED_MESSAGE_IN_OPENSENT: 1,
  UNEXPECTED_MESSAGE_IN_OPENCONFIRM: 2,
  UNEXPECTED_MESSAGE_IN_ESTABLISHED: 3,
} as const;

/** The Cease subcodes the FSM uses by default (RFC 4486). */
const ADMINISTRATIVE_SHUTDOWN = 2;
const CONNECTION_COLLISION_RESOLUTION = 7;

export const holdTimerExpired: Notification = Object.freeze({ code: HOLD_TIMER_EXPIRED_CODE, subcode: 0 });
export const unacceptableHoldTime: Notification = Object.freeze({
  code: OPEN_MESSAGE_ERROR_CODE,
  subcode: UNACCEPTABLE_HOLD_TIME_SUBCODE,
});
export const collisionCease: Notification = Object.freeze({ code: CEASE_CODE, subcode: CONNECTION_COLLISION_RESOLUTION });

export function cease(subcode: number = ADMINISTRATIVE_SHUTDOWN, data?: Uint8Array): Notification {
  return data === undefined ? { code: CEASE_CODE, subcode } : { code: CEASE_CODE, subcode, data };
}

export function fsmError(subcode: number): Notification {
  return { code: FSM_ERROR_CODE, subcode };
}
