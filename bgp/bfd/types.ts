// The vocabulary of BFD (RFC 5880): session states, diagnostics, the control packet, the
// session variables of §6.8.1, and the events and actions of the pure state machine.
// Intervals are in microseconds throughout, as the packet carries them; timer actions are in
// milliseconds, as the caller's clock runs.

/** §4.1 State (Sta), in wire order. */
export type BfdStateName = 'AdminDown' | 'Down' | 'Init' | 'Up';

export const BFD_STATES: readonly BfdStateName[] = ['AdminDown', 'Down', 'Init', 'Up'];

/** §4.1 Diagnostic (Diag). */
export const BfdDiag = {
  NONE: 0,
  CONTROL_DETECTION_TIME_EXPIRED: 1,
  ECHO_FUNCTION_FAILED: 2,
  NEIGHBOR_SIGNALED_SESSION_DOWN: 3,
  FORWARDING_PLANE_RESET: 4,
  PATH_DOWN: 5,
  CONCATENATED_PATH_DOWN: 6,
  ADMINISTRATIVELY_DOWN: 7,
  REVERSE_CONCATENATED_PATH_DOWN: 8,
} as const;

const DIAG_TEXT = [
  'no diagnostic',
  'control detection time expired',
  'echo function failed',
  'neighbor signaled session down',
  'forwarding plane reset',
  'path down',
  'concatenated path down',
  'administratively down',
  'reverse concatenated path down',
];

/**
 * Not a code of the wire (Diag has 5 bits): what a session's clients are told when the thread
 * its machine ran on stopped (see BfdWorker). The session starts again from Down, diagnostic 0.
 */
export const BFD_THREAD_STOPPED = 32;

/** The RFC's words for a diagnostic code, for logs and status. */
export function diagText(diag: number): string {
  if (diag === BFD_THREAD_STOPPED) return 'the BFD thread stopped';
  return DIAG_TEXT[diag] ?? `diagnostic ${diag}`;
}

/** A BFD Control packet (§4.1) without authentication: the only kind this implementation sends or takes. */
export interface BfdControlPacket {
  readonly diag: number;
  readonly state: BfdStateName;
  readonly poll: boolean;
  readonly final: boolean;
  readonly controlPlaneIndependent: boolean;
  readonly authenticationPresent: boolean;
  readonly demand: boolean;
  readonly multipoint: boolean;
  readonly detectMult: number;
  readonly myDiscriminator: number;
  readonly yourDiscriminator: number;
  /** µs */
  readonly desiredMinTxInterval: number;
  /** µs */
  readonly requiredMinRxInterval: number;
  /** µs; we send 0: no Echo function. */
  readonly requiredMinEchoRxInterval: number;
}

export type BfdTimerName = 'TransmitTimer' | 'DetectionTimer';

/** What the session is configured with (µs). */
export interface BfdConfig {
  readonly desiredMinTxInterval: number;
  readonly requiredMinRxInterval: number;
  readonly detectMult: number;
  /** §6.8.3: the least DesiredMinTxInterval while the session is not Up (1 s). */
  readonly slowTxInterval: number;
}

/** The session's state variables (§6.8.1), and what the machine needs to keep its timers. */
export interface BfdState {
  readonly config: BfdConfig;
  readonly sessionState: BfdStateName;
  readonly remoteSessionState: BfdStateName;
  readonly localDiscr: number;
  readonly remoteDiscr: number;
  readonly localDiag: number;
  /** The value we advertise (µs): at least slowTxInterval until Up. */
  readonly desiredMinTxInterval: number;
  /** The value we advertise (µs). */
  readonly requiredMinRxInterval: number;
  readonly remoteMinRxInterval: number;
  /** The remote's Desired Min TX Interval, last received (µs); 0 before any packet. */
  readonly remoteDesiredMinTxInterval: number;
  /** The remote's Detect Mult, last received; 0 before any packet. */
  readonly remoteDetectMult: number;
  readonly remoteDemandMode: boolean;
  /**
   * The DesiredMinTxInterval our transmissions follow: an increase waits for the end of the
   * Poll Sequence that announces it (§6.8.3).
   */
  readonly txIntervalInEffect: number;
  /** The RequiredMinRxInterval our detection time follows: a decrease waits for the Final (§6.8.3). */
  readonly rxIntervalInEffect: number;
  /** A Poll Sequence is being transmitted (§6.5). */
  readonly polling: boolean;
  /** Milliseconds each timer was last started with, or null when stopped. */
  readonly timers: Readonly<Record<BfdTimerName, number | null>>;
  /** xorshift32 state of the transmit jitter. */
  readonly rng: number;
}

export type BfdEvent =
  /** §6.8.6: a Control packet for this session that passed the codec's checks. */
  | { readonly type: 'ReceivedPacket'; readonly packet: BfdControlPacket }
  /** §6.8.4: no valid packet for a Detection Time. */
  | { readonly type: 'DetectionTimerExpired' }
  /** §6.8.7: time for the next periodic packet. */
  | { readonly type: 'TransmitTimerExpired' }
  /** §6.8.16: the session is taken down administratively. */
  | { readonly type: 'AdminDown' }
  /** §6.8.16: the session is enabled again (from AdminDown to Down). */
  | { readonly type: 'AdminUp' }
  /** §6.8.3: new timer parameters (µs); a change while Up runs a Poll Sequence. */
  | {
      readonly type: 'SetParameters';
      readonly desiredMinTxInterval?: number;
      readonly requiredMinRxInterval?: number;
      readonly detectMult?: number;
    };

export type BfdEventType = BfdEvent['type'];

export type BfdAction =
  /** Transmit this Control packet now. */
  | { readonly type: 'send'; readonly packet: BfdControlPacket }
  /** Start the timer, or restart it if it runs, to fire after `ms`. */
  | { readonly type: 'startTimer'; readonly timer: BfdTimerName; readonly ms: number }
  | { readonly type: 'stopTimer'; readonly timer: BfdTimerName }
  /** bfd.SessionState changed; `diag` is bfd.LocalDiag after the change. */
  | { readonly type: 'stateChange'; readonly from: BfdStateName; readonly to: BfdStateName; readonly diag: number };

export interface BfdResult {
  readonly state: BfdState;
  readonly actions: readonly BfdAction[];
}
