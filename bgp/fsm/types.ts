// The vocabulary of the BGP finite state machine (RFC 4271 §8): states, timers, events,
// the session attributes the FSM keeps, and the actions it asks its caller to carry out.
// Everything here is plain data, so a state can be logged, compared and copied freely.

export type FsmStateName = 'Idle' | 'Connect' | 'Active' | 'OpenSent' | 'OpenConfirm' | 'Established';

export type TimerName = 'ConnectRetryTimer' | 'HoldTimer' | 'KeepaliveTimer' | 'DelayOpenTimer' | 'IdleHoldTimer';

/** A NOTIFICATION message's content (RFC 4271 §4.5). */
export interface Notification {
  readonly code: number;
  readonly subcode: number;
  /** Raw data field; for a Cease 6/2 or 6/4 this may be an RFC 9003 shutdown communication. */
  readonly data?: Uint8Array;
}

/**
 * What the FSM needs from a received OPEN that passed the codec's syntax checks.
 * Capabilities stay with the session layer: nothing in the FSM depends on them.
 */
export interface PeerOpen {
  /** Hold Time the peer proposed, seconds (0..65535). */
  readonly holdTime: number;
  /** The peer's AS: the 4-octet AS capability's value when present, else My Autonomous System. */
  readonly asNumber: number;
  /** BGP Identifier as a 32-bit unsigned integer in host order. */
  readonly bgpIdentifier: number;
}

// ---------------------------------------------------------------------------------------
// Events, named and numbered as RFC 4271 §8.1 does. Event 20 (BGPOpen with DelayOpenTimer
// running) is not a separate input: the FSM tells 19 from 20 by its own DelayOpenTimer.

export interface CeaseReason {
  /** Cease subcode to send (RFC 4486, RFC 8538); see `CeaseSubcode`. */
  readonly subcode?: number;
  readonly data?: Uint8Array;
}

export type FsmEvent =
  | { readonly type: 'ManualStart' }
  | ({ readonly type: 'ManualStop' } & CeaseReason)
  | { readonly type: 'AutomaticStart' }
  | { readonly type: 'ManualStart_with_PassiveTcpEstablishment' }
  | { readonly type: 'AutomaticStart_with_PassiveTcpEstablishment' }
  | { readonly type: 'AutomaticStart_with_DampPeerOscillations' }
  | { readonly type: 'AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment' }
  | ({ readonly type: 'AutomaticStop' } & CeaseReason)
  | { readonly type: 'ConnectRetryTimer_Expires' }
  | { readonly type: 'HoldTimer_Expires' }
  | { readonly type: 'KeepaliveTimer_Expires' }
  | { readonly type: 'DelayOpenTimer_Expires' }
  | { readonly type: 'IdleHoldTimer_Expires' }
  | { readonly type: 'TcpConnection_Valid' }
  | { readonly type: 'Tcp_CR_Invalid' }
  | { readonly type: 'Tcp_CR_Acked' }
  | { readonly type: 'TcpConnectionConfirmed' }
  | { readonly type: 'TcpConnectionFails' }
  | { readonly type: 'BGPOpen'; readonly open: PeerOpen }
  | { readonly type: 'BGPHeaderErr'; readonly notification: Notification }
  | { readonly type: 'BGPOpenMsgErr'; readonly notification: Notification }
  | { readonly type: 'OpenCollisionDump' }
  | { readonly type: 'NotifMsgVerErr'; readonly notification: Notification }
  | { readonly type: 'NotifMsg'; readonly notification: Notification }
  | { readonly type: 'KeepAliveMsg' }
  | { readonly type: 'UpdateMsg' }
  | { readonly type: 'UpdateMsgErr'; readonly notification: Notification };

export type FsmEventType = FsmEvent['type'];

// ---------------------------------------------------------------------------------------
// Actions: what the caller does, in the order given.

/** Why a connection went back to Idle. */
export interface DownReason {
  /** The event that ended it. */
  readonly event: FsmEventType;
  /** The state it left. */
  readonly from: FsmStateName;
  readonly sent?: Notification;
  readonly received?: Notification;
}

export type FsmAction =
  /** Initiate a TCP connection to the peer (keep listening as well). */
  | { readonly type: 'connect' }
  /** Close this FSM's TCP connection, or abandon its connection attempt. */
  | { readonly type: 'dropTcp' }
  /** Send our OPEN, offering this hold time. */
  | { readonly type: 'sendOpen'; readonly holdTime: number }
  | { readonly type: 'sendKeepalive' }
  /** Send a NOTIFICATION; always followed by `dropTcp` in the same action list. */
  | { readonly type: 'sendNotification'; readonly notification: Notification }
  /** Start the timer, or restart it if it runs, to fire after `seconds`. */
  | { readonly type: 'startTimer'; readonly timer: TimerName; readonly seconds: number }
  | { readonly type: 'stopTimer'; readonly timer: TimerName }
  /** The UPDATE just reported is acceptable in this state: hand it to the RIB. */
  | { readonly type: 'processUpdate' }
  /** Delete all routes learned over this connection (leaving Established). */
  | { readonly type: 'deleteRoutes' }
  /** Free per-connection resources (buffers, negotiated capabilities, queued output). */
  | { readonly type: 'releaseResources' }
  | {
      readonly type: 'established';
      readonly peer: PeerOpen;
      readonly holdTime: number;
      readonly keepaliveTime: number;
    }
  /** The connection went to Idle; `wasEstablished` says whether routes were up. */
  | { readonly type: 'sessionDown'; readonly wasEstablished: boolean; readonly reason: DownReason };

export type FsmActionType = FsmAction['type'];

// ---------------------------------------------------------------------------------------
// Configuration and state.

/** Session attributes fixed by configuration (seconds throughout). */
export interface FsmConfig {
  /** HoldTime we offer in our OPEN: 0 (no keepalives) or 3..65535. */
  readonly holdTime: number;
  /** KeepaliveTime when it is below a third of the negotiated hold time; else hold/3. */
  readonly keepaliveTime: number | null;
  readonly connectRetryTime: number;
  /** The HoldTimer's "large value" while waiting for the peer's OPEN (4 minutes suggested). */
  readonly largeHoldTime: number;
  readonly delayOpen: boolean;
  readonly delayOpenTime: number;
  /** Whether the FSM restarts itself after an error (via the IdleHoldTimer). */
  readonly allowAutomaticStart: boolean;
  readonly allowAutomaticStop: boolean;
  /** Double IdleHoldTime on every failure the RFC says to damp, up to maxIdleHoldTime. */
  readonly dampPeerOscillations: boolean;
  /** Initial IdleHoldTime: the wait in Idle before an automatic restart. */
  readonly idleHoldTime: number;
  readonly maxIdleHoldTime: number;
  /** A session Established at least this long resets IdleHoldTime when it goes down. */
  readonly idleHoldForgetTime: number;
  readonly collisionDetectEstablishedState: boolean;
  /** Allows a NOTIFICATION before our OPEN was sent (Connect and Active states). */
  readonly sendNotificationWithoutOpen: boolean;
  /**
   * Fraction taken off the ConnectRetry, Keepalive and IdleHold timers at random:
   * a timer of T seconds runs T·(1 − jitter·u), u uniform in [0, 1). RFC 4271 §10: 0.25.
   */
  readonly jitter: number;
}

/** One state value per TimerName: the seconds it was last (re)started with, or null when stopped. */
export type TimerTable = Readonly<Record<TimerName, number | null>>;

export interface FsmState {
  readonly state: FsmStateName;
  readonly config: FsmConfig;
  readonly connectRetryCounter: number;
  readonly timers: TimerTable;
  /** Set by the start event used (events 4, 5, 7): wait for the peer to connect. */
  readonly passiveTcpEstablishment: boolean;
  /** Set from config, and by events 6 and 7. */
  readonly dampPeerOscillations: boolean;
  /**
   * True once started and until stopped: an error leaves the FSM in Idle with the
   * IdleHoldTimer running, and its expiry starts it again.
   */
  readonly restartAfterError: boolean;
  /** Current IdleHoldTime, grown by damping; the timer runs a jittered copy. */
  readonly idleHoldTime: number;
  /** The accepted OPEN of the peer, from OpenConfirm on. */
  readonly peer: PeerOpen | null;
  readonly negotiatedHoldTime: number | null;
  readonly negotiatedKeepaliveTime: number | null;
  /** Caller's clock (ms) when Established was entered, for the damping reset. */
  readonly establishedAt: number | null;
  /** xorshift32 state of the jitter generator. */
  readonly rng: number;
}

export interface FsmResult {
  readonly state: FsmState;
  readonly actions: readonly FsmAction[];
}
