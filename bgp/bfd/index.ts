// BFD (RFC 5880, single hop RFC 5881): the pure state machine, the Control packet codec, and
// sessions over UDP. A layer of its own: it knows nothing of BGP. See README.md in this folder.
export {
  BFD_STATES,
  BfdDiag,
  BFD_THREAD_STOPPED,
  diagText,
  type BfdAction,
  type BfdConfig,
  type BfdControlPacket,
  type BfdEvent,
  type BfdEventType,
  type BfdResult,
  type BfdState,
  type BfdStateName,
  type BfdTimerName,
} from './types.js';
export { step, transmitInterval, detectionTime, controlPacket } from './fsm.js';
export { bfdConfig, checkBfdTimers, createBfdSession, DEFAULT_BFD_TIMERS, SLOW_TX_INTERVAL_US, type BfdTimers } from './config.js';
export { encodeControlPacket, decodeControlPacket, BFD_CONTROL_LENGTH, type DecodeResult } from './packet.js';
export { Bfd, BFD_SINGLE_HOP_PORT, type BfdEndpoint, type BfdOptions, type BfdSessionOptions, type BfdEvents } from './endpoint.js';
export { BfdSession, type BfdSessionEvents, type BfdSessionHandle, type BfdSessionStatus } from './session.js';
export { BfdWorker, createBfdEndpoint, isBfdEndpoint, type BfdEndpointOptions } from './worker.js';
export { BfdSessionMirror } from './mirror.js';
export { BfdUnavailableError, loadBfdSocket, bfdLoadError } from './native.js';
