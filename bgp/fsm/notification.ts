// The NOTIFICATIONs the FSM itself sends, from the codec's tables (bgp/codec/constants.ts).
import { CeaseSubcode, ErrorCode, OpenSubcode } from '../codec/constants.js';
import type { Notification } from './types.js';

export const HOLD_TIMER_EXPIRED_CODE = ErrorCode.HOLD_TIMER_EXPIRED;
export const FSM_ERROR_CODE = ErrorCode.FSM;
export const CEASE_CODE = ErrorCode.CEASE;
export const OPEN_MESSAGE_ERROR_CODE = ErrorCode.OPEN_MESSAGE;
export const UNACCEPTABLE_HOLD_TIME_SUBCODE = OpenSubcode.UNACCEPTABLE_HOLD_TIME;

/** RFC 6608: which state received the unexpected message. */
export const FsmErrorSubcode = {
  UNSPECIFIED: 0,
  UNEXPECTED_MESSAGE_IN_OPENSENT: 1,
  UNEXPECTED_MESSAGE_IN_OPENCONFIRM: 2,
  UNEXPECTED_MESSAGE_IN_ESTABLISHED: 3,
} as const;

const ADMINISTRATIVE_SHUTDOWN = CeaseSubcode.ADMINISTRATIVE_SHUTDOWN;
const CONNECTION_COLLISION_RESOLUTION = CeaseSubcode.CONNECTION_COLLISION_RESOLUTION;

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
