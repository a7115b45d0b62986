// Checks on a received OPEN that need configuration, split as follows:
// - the codec checks syntax: marker, lengths, version (2/1), optional parameters (2/4),
//   capability encodings; what it rejects reaches the FSM as BGPHeaderErr / BGPOpenMsgErr;
// - the session layer checks the OPEN against the peer's configuration with this function
//   (peer AS 2/2, BGP Identifier 2/3, hold time 2/6) and, on an error, sends the FSM a
//   BGPOpenMsgErr carrying the NOTIFICATION returned here;
// - the FSM checks the hold time again on BGPOpen (it negotiates it), so an OPEN with a hold
//   time of 1 or 2 never gets further even if this check was skipped.
import { isAcceptableHoldTime } from './hold-time.js';
import { OPEN_MESSAGE_ERROR_CODE, UNACCEPTABLE_HOLD_TIME_SUBCODE } from './notification.js';
import type { Notification, PeerOpen } from './types.js';

const BAD_PEER_AS = 2;
const BAD_BGP_IDENTIFIER = 3;

export interface OpenExpectations {
  readonly localAs: number;
  /** Our BGP Identifier as a 32-bit unsigned integer. */
  readonly localBgpId: number;
  /** The AS configured for the peer, several for a dynamic-neighbour range, or undefined for any. */
  readonly peerAs?: number | readonly number[];
}

/** The NOTIFICATION to refuse this OPEN with, or null when it is acceptable. RFC 4271 §6.2 order. */
export function checkPeerOpen(open: PeerOpen, expect: OpenExpectations): Notification | null {
  const allowed = expect.peerAs;
  if (allowed !== undefined && !(typeof allowed === 'number' ? allowed === open.asNumber : allowed.includes(open.asNumber))) {
    return { code: OPEN_MESSAGE_ERROR_CODE, subcode: BAD_PEER_AS };
  }
  if (!isAcceptableHoldTime(open.holdTime)) {
    return { code: OPEN_MESSAGE_ERROR_CODE, subcode: UNACCEPTABLE_HOLD_TIME_SUBCODE };
  }
  const remoteId = open.bgpIdentifier >>> 0;
  // RFC 6286 §2.2: non-zero, and unique within an AS (so only an iBGP peer may not share ours).
  if (remoteId === 0 || (open.asNumber === expect.localAs && remoteId === expect.localBgpId >>> 0)) {
    return { code: OPEN_MESSAGE_ERROR_CODE, subcode: BAD_BGP_IDENTIFIER };
  }
  return null;
}
