// A BGP peer: the FSM of RFC 4271 §8 driven over real connections, with its timers,
// connection collisions (§6.8), capability negotiation and the events a speaker needs.
// One FSM runs per TCP connection; a peer has its own (outgoing, unless passive) and, while
// a collision is being resolved, one for the connection the peer opened.
import type net from 'node:net';
import { EventEmitter } from 'eventemitter3';
import { parseIpv4Number } from '../../ip/index.js';
import {
  type BgpError,
  CeaseSubcode,
  ErrorCode,
  OpenSubcode,
  endOfRibFamily,
  familyOf,
  findCapability,
  negotiatedOptions,
  openAs,
  receivedUpdate,
  shutdownCommunicationData,
  type AddressFamily,
  type NegotiatedOptions,
  type OpenMessage,
  type ReceivedMessage,
  type ReceivedUpdate,
  type UpdateMessage,
} from '../codec/index.js';
import {
  FsmTimers,
  checkPeerOpen,
  createFsm,
  notificationEvent,
  resolveCollision,
  step,
  type DownReason,
  type FsmAction,
  type FsmEvent,
  type FsmState,
  type FsmStateName,
  type Notification,
  type PeerOpen,
} from '../fsm/index.js';
import { checkPeerConfig, longLivedStaleTime, peerFamilies, type LocalConfig, type PeerConfig } from './config.js';
import { BgpConnection, normalizeAddress, type UpdateSource } from './connection.js';
import { buildOpen } from './open.js';
import { connectSession, requireTcpMd5 } from './tcp-md5.js';
import { requireTtlAddon, sessionTtl, setAcceptedTtl, type TtlOptions } from './ttl.js';

export interface SessionInfo {
  remoteOpen: OpenMessage;
  localOpen: OpenMessage;
  remoteAs: number;
  remoteRouterId: string;
  localAddress: string;
  remoteAddress: string;
  holdTime: number;
  keepaliveTime: number;
  negotiated: NegotiatedOptions;
  /** The peer's graceful restart capability, when it sent one. */
  gracefulRestart?: { restartTime: number; restarting: boolean; families: { family: AddressFamily; forwardingPreserved: boolean }[] };
  /**
   * The peer's long-lived graceful restart capability (RFC 9494), when it sent one beside its
   * graceful restart capability (alone it means nothing): how long past its restart time it
   * asks us to keep its routes, per family.
   */
  longLivedGracefulRestart?: { families: { family: AddressFamily; forwardingPreserved: boolean; staleTime: number }[] };
  enhancedRouteRefresh: boolean;
  /** The peer can be asked to send its routes again (RFC 2918): it advertised route refresh. */
  routeRefresh: boolean;
}

export interface SessionDown {
  reason: DownReason;
  wasEstablished: boolean;
  /** A short text for logs and status: what ended the session. */
  message: string;
  /**
   * RFC 4724: the session ended without a NOTIFICATION and the peer does graceful restart, so
   * its routes stay as stale for up to `restartTime` seconds instead of being withdrawn.
   */
  gracefulRestart?: {
    restartTime: number;
    families: AddressFamily[];
    /**
     * RFC 9494, when both sides do long-lived graceful restart: the families whose routes stay
     * past the restart time (marked LLGR_STALE), each for its long-lived stale time (s).
     */
    longLived?: { family: AddressFamily; staleTime: number }[];
  };
}

export interface PeerEvents {
  state: [FsmStateName];
  established: [SessionInfo];
  down: [SessionDown];
  /** An UPDATE to apply. `error` is set under RFC 7606 treat-as-withdraw or attribute-discard. */
  update: [UpdateMessage, BgpError | undefined];
  /**
   * The same UPDATE as received, just before `update`, whose message is made only for a
   * listener to `update` or a read of `.message`: a reader of the octets alone (the codec's
   * receivedNlri and receivedAttributes take it) spares the objects.
   */
  receivedUpdate: [ReceivedUpdate, BgpError | undefined];
  endOfRib: [AddressFamily];
  /** The peer asks for our Adj-RIB-Out again (RFC 2918); subtype 1/2 are BoRR/EoRR (RFC 7313). */
  routeRefresh: [AddressFamily, number];
}

// The events of every UPDATE and KEEPALIVE: made once, not per message.
const UPDATE_MSG: FsmEvent = Object.freeze({ type: 'UpdateMsg' });
const KEEPALIVE_MSG: FsmEvent = Object.freeze({ type: 'KeepAliveMsg' });

/** One TCP connection and the FSM that runs it. */
class Attempt {
  fsm: FsmState;
  readonly timers: FsmTimers;
  conn: BgpConnection | undefined;
  connecting: net.Socket | undefined;
  remoteOpen: OpenMessage | undefined;
  localOpen: OpenMessage | undefined;
  pending: { update: ReceivedUpdate; error?: BgpError } | undefined;
  private queue: FsmEvent[] = [];
  private draining = false;
  disposed = false;

  constructor(
    readonly peer: Peer,
    /** Who opened the connection this FSM runs (§6.8 decides by it): set again whenever one is attached. */
    public direction: 'outgoing' | 'incoming',
    fsm: FsmState,
  ) {
    this.fsm = fsm;
    this.timers = new FsmTimers((e) => this.dispatch(e));
  }

  dispatch(event: FsmEvent): void {
    if (this.disposed) return;
    this.queue.push(event);
    if (this.draining) return;
    this.draining = true;
    try {
      for (let e = this.queue.shift(); e; e = this.queue.shift()) {
        if (this.disposed) break; // an action of the last event dropped this connection
        const before = this.fsm.state;
        const r = step(this.fsm, e, performance.now());
        this.fsm = r.state;
        const actions = r.actions;
        for (let i = 0; i < actions.length; i++) if (!this.timers.apply(actions[i])) this.peer.perform(this, actions[i]);
        if (this.fsm.state !== before) this.peer.stateChanged(this, before);
      }
    } finally {
      this.draining = false;
    }
  }

  dispose(): void {
    this.disposed = true;
    this.timers.stopAll();
    this.connecting?.destroy();
    this.conn?.destroy();
    this.peer.attemptGone(this);
  }
}

/**
 * Longest wait for the fate of a connection the peer may hold Established (see Peer.park): a
 * live peer settles it within a round trip, by its KEEPALIVE, its Cease or a reset.
 */
const PARK_MS = 3000;

/** A new connection's OPEN, held until the connection it would replace is settled. */
interface Parked {
  attempt: Attempt;
  open: OpenMessage;
  /** The connection whose fate decides: Established, it wins; gone, the parked one carries on. */
  waitingOn: Attempt;
  /** What the peer sent on the parked connection meanwhile (its KEEPALIVE, a Cease). */
  messages: ReceivedMessage[];
  timer: NodeJS.Timeout;
}

export class Peer extends EventEmitter<PeerEvents> {
  readonly config: PeerConfig;
  private primary: Attempt;
  private secondary: Attempt | undefined;
  private established: Attempt | undefined;
  private parked: Parked | undefined;
  private source: UpdateSource | undefined;
  private stopping = false;
  /** Our connections in a row that the peer closed before its OPEN (see dialSoon). */
  private earlyCloses = 0;
  /** For dynamic neighbours: every AS a peer of the range may have. */
  private acceptedAsns: number[] | undefined;
  /** When the current state was entered (ms since the epoch). */
  since = Date.now();
  lastError = '';
  session: SessionInfo | undefined;
  private readonly ttl: TtlOptions | undefined;

  constructor(
    config: PeerConfig,
    private local: LocalConfig,
  ) {
    super();
    this.config = checkPeerConfig(config);
    // A peer with a password runs signed or not at all (RFC 2385).
    if (config.password !== undefined) requireTcpMd5(config.address);
    // GTSM or a set TTL holds on every connection of the session, or the peer is not started.
    this.ttl = sessionTtl(config);
    if (this.ttl) requireTtlAddon(config.address, config.ttlSecurity !== undefined ? 'ttlSecurity' : 'ttl');
    this.primary = this.newAttempt(config.passive ? 'incoming' : 'outgoing');
  }

  get address(): string {
    return this.config.address;
  }

  get state(): FsmStateName {
    return this.established?.fsm.state ?? this.primary.fsm.state;
  }

  get families(): AddressFamily[] {
    return peerFamilies(this.config);
  }

  get isEstablished(): boolean {
    return this.established !== undefined;
  }

  /** Messages received and sent over the established connection. */
  get counters(): { in: number; out: number; buffered: number } {
    const c = this.established?.conn;
    return { in: c?.messagesIn ?? 0, out: c?.messagesOut ?? 0, buffered: c?.socket.writableLength ?? 0 };
  }

  private newAttempt(direction: 'outgoing' | 'incoming', automaticStart = true): Attempt {
    const c = this.config;
    const fsm = createFsm({
      holdTime: c.holdTime ?? 90,
      keepaliveTime: c.keepaliveTime ?? null,
      connectRetryTime: c.connectRetryTime ?? 120,
      idleHoldTime: c.idleHoldTime ?? 5,
      maxIdleHoldTime: Math.max(300, c.idleHoldTime ?? 5),
      allowAutomaticStart: automaticStart,
    });
    return new Attempt(this, direction, fsm);
  }

  start(): void {
    this.stopping = false;
    this.primary.dispatch({ type: this.config.passive ? 'ManualStart_with_PassiveTcpEstablishment' : 'ManualStart' });
  }

  /**
   * Stops the session with a Cease (default 6/2 Administrative Shutdown, with an RFC 8203
   * communication when `message` is given) and does not reconnect. Resolves when the
   * NOTIFICATION has left and the connection is closed. `data` is the Cease's data field as
   * given (RFC 4486's for 6/1), in place of a communication. `graceful`: when both sides
   * negotiated graceful restart, close without a NOTIFICATION instead, so the peer keeps our
   * routes for the restart time (a process that will come back).
   */
  stop(options: { subcode?: number; message?: string; data?: Uint8Array; graceful?: boolean } = {}): Promise<void> {
    this.stopping = true;
    const a = this.established;
    if (options.graceful && a?.conn && this.session?.gracefulRestart && findCapability(this.session.localOpen, 'graceful-restart')) {
      // RFC 4724 §4.2: the peer keeps our routes (stale, forwarding on) only when the session
      // ends without a NOTIFICATION, so a restart closes the connection and sends none.
      const done = a.conn.done;
      a.dispatch({ type: 'TcpConnectionFails' });
      a.timers.stopAll();
      this.secondary?.dispose();
      this.secondary = undefined;
      return done;
    }
    const subcode = options.subcode ?? CeaseSubcode.ADMINISTRATIVE_SHUTDOWN;
    const data = options.data ?? (options.message !== undefined ? shutdownCommunicationData(options.message) : undefined);
    // The connections that will carry the Cease; each closes once it has left (at most 2 s).
    const closing = [this.secondary, this.primary].flatMap((a) => (a?.conn ? [a.conn.done] : []));
    for (const a of [this.secondary, this.primary]) a?.dispatch({ type: 'ManualStop', subcode, data });
    this.secondary?.dispose();
    this.secondary = undefined;
    return Promise.all(closing).then(() => undefined);
  }

  /** Accept any of these ASes in the peer's OPEN (dynamic neighbours with several). */
  setAcceptedAsns(asns: number[]): void {
    this.acceptedAsns = asns;
  }

  /** Releases everything at once (timers, sockets): after stop(), or when the speaker closes. */
  dispose(): void {
    this.primary.dispose();
    this.secondary?.dispose();
  }

  /** Where UPDATEs to send come from while the session is up (pulled as the socket drains). */
  setUpdateSource(source: UpdateSource | undefined): void {
    this.source = source;
    this.established?.conn?.setSource(source);
  }

  /** Tells the peer that its update source has more to send; `gapMs`: the least time since its last batch. */
  kick(gapMs?: number): void {
    this.established?.conn?.kick(gapMs);
  }

  sendRouteRefresh(family: AddressFamily): void {
    const afi = family === 'ipv4-unicast' ? 1 : 2;
    this.established?.conn?.sendMessage({ type: 'route-refresh', afi, safi: 1, subtype: 0 });
  }

  /** A connection the speaker accepted from this peer's address. Returns false when refused. */
  acceptIncoming(socket: net.Socket): boolean {
    if (this.stopping) return false;
    if (this.ttl) {
      // Before anything is read: from here on the kernel drops what arrives below the least TTL.
      try {
        setAcceptedTtl(socket, this.config.address, this.ttl);
      } catch (e) {
        this.noteError(undefined, (e as Error).message);
        return false;
      }
    }
    const p = this.primary;
    if (p.fsm.state === 'Idle' && !p.connecting && !p.conn && this.config.passive) {
      // A passive peer waiting in Idle for its IdleHold to end: take the connection now.
      p.dispatch({ type: 'ManualStart_with_PassiveTcpEstablishment' });
    }
    // Our own dial still in flight has most likely been accepted by the peer already, which
    // treats it as its own session: dropping it here while the peer drops ours (it sees the
    // same race) would leave neither. Both run, and their OPENs settle it (§6.8).
    if ((p.fsm.state === 'Connect' && !p.connecting) || p.fsm.state === 'Active') {
      this.attach(p, socket, 'incoming');
      p.dispatch({ type: 'TcpConnectionConfirmed' });
      return true;
    }
    // RFC 4724 §4.2: a peer that does graceful restart may reconnect after a restart before
    // our hold timer noticed; its OPEN on the new connection decides (see onOpen).
    if (this.established && !this.session?.gracefulRestart) return false;
    if (this.secondary) this.secondary.dispose();
    const s = this.newAttempt('incoming', false);
    this.secondary = s;
    this.attach(s, socket, 'incoming');
    s.dispatch({ type: 'ManualStart_with_PassiveTcpEstablishment' });
    s.dispatch({ type: 'TcpConnectionConfirmed' });
    return true;
  }

  private attach(a: Attempt, socket: net.Socket, direction: 'outgoing' | 'incoming'): void {
    a.direction = direction;
    a.remoteOpen = undefined;
    const conn = new BgpConnection(socket, {
      message: (m) => this.onMessage(a, conn, m),
      decodeError: (e) => this.onDecodeError(a, conn, e),
      closed: (err) => {
        if (a.conn !== conn) return;
        if (err) this.noteError(a, err.message);
        a.dispatch({ type: 'TcpConnectionFails' });
      },
    });
    a.conn = conn;
  }

  private connect(a: Attempt): void {
    const c = this.config;
    const socket = connectSession({
      host: c.address,
      port: c.port ?? 179,
      localAddress: c.localAddress,
      password: c.password,
      ...this.ttl,
    });
    a.connecting = socket;
    const fail = (e: Error) => {
      if (a.connecting !== socket) return;
      a.connecting = undefined;
      this.noteError(a, e.message);
      socket.destroy();
      a.dispatch({ type: 'TcpConnectionFails' });
    };
    socket.once('error', fail);
    socket.once('connect', () => {
      if (a.connecting !== socket) return socket.destroy();
      socket.off('error', fail);
      a.connecting = undefined;
      this.attach(a, socket, 'outgoing');
      a.dispatch({ type: 'Tcp_CR_Acked' });
    });
  }

  /** Carries out one FSM action (called by the Attempt). */
  perform(a: Attempt, action: FsmAction): void {
    switch (action.type) {
      case 'connect':
        if (a === this.primary && !this.config.passive) this.connect(a);
        return;
      case 'dropTcp':
        a.connecting?.destroy();
        a.connecting = undefined;
        a.conn?.close();
        a.conn = undefined;
        return;
      case 'sendOpen':
        a.localOpen = buildOpen(this.local, this.config, action.holdTime);
        a.conn?.sendMessage(a.localOpen);
        return;
      case 'sendKeepalive':
        a.conn?.sendMessage({ type: 'keepalive' });
        return;
      case 'sendNotification':
        this.noteError(a, `sent NOTIFICATION ${action.notification.code}/${action.notification.subcode}`);
        a.conn?.sendMessage({
          type: 'notification',
          code: action.notification.code,
          subcode: action.notification.subcode,
          data: Buffer.from(action.notification.data ?? []),
        });
        return;
      case 'processUpdate': {
        const p = a.pending;
        a.pending = undefined;
        if (!p || a !== this.established) return;
        const eor = p.error ? undefined : endOfRibFamily(p.update);
        if (eor) {
          this.emit('endOfRib', eor);
          return;
        }
        this.emit('receivedUpdate', p.update, p.error);
        if (this.listenerCount('update') > 0) this.emit('update', p.update.message, p.error);
        return;
      }
      case 'deleteRoutes':
      case 'releaseResources':
        return;
      case 'established':
        return this.onEstablished(a, action.holdTime, action.keepaliveTime);
      case 'sessionDown':
        return this.onSessionDown(a, action.reason, action.wasEstablished);
    }
  }

  stateChanged(a: Attempt, before: FsmStateName): void {
    const s = a.fsm.state;
    if (a === this.primary && before === 'OpenSent' && s === 'Active' && a.remoteOpen === undefined) this.dialSoon(a);
    if (this.parked?.waitingOn === a && s !== 'OpenConfirm' && s !== 'Established') queueMicrotask(() => this.release());
    // Our own connection, parked, that failed: its OPEN is moot, and the attempt dials again.
    if (this.parked?.attempt === a && s !== 'OpenSent') this.attemptGone(a);
    if (a === this.primary || a === this.established) {
      this.since = Date.now();
      this.emit('state', a.fsm.state);
    }
  }

  private onMessage(a: Attempt, conn: BgpConnection, m: ReceivedMessage): void {
    // A dropped connection may still hand over messages already read from its socket.
    if (a.disposed || a.conn !== conn) return;
    if (this.parked?.attempt === a) {
      // Until our KEEPALIVE on this connection, the peer has only a KEEPALIVE or a Cease to say.
      if (this.parked.messages.length < 4) this.parked.messages.push(m);
      else this.dump(a);
      return;
    }
    switch (m.type) {
      case 'open':
        return this.onOpen(a, conn, m);
      case 'update':
        a.pending = { update: m };
        return a.dispatch(UPDATE_MSG);
      case 'keepalive':
        return a.dispatch(KEEPALIVE_MSG);
      case 'notification': {
        const comm = m.shutdownCommunication ? ` "${m.shutdownCommunication}"` : '';
        this.noteError(a, `received NOTIFICATION ${m.code}/${m.subcode}${comm}`);
        return a.dispatch(notificationEvent({ code: m.code, subcode: m.subcode, data: m.data }));
      }
      case 'route-refresh': {
        const family = familyOf(m.afi, m.safi);
        // RFC 7313 §5: unknown subtypes are ignored; so are families we did not agree on.
        if (a === this.established && family && m.subtype <= 2 && this.session?.negotiated.families.includes(family)) {
          this.emit('routeRefresh', family, m.subtype);
        }
        return;
      }
    }
  }

  private onDecodeError(a: Attempt, conn: BgpConnection, e: BgpError): void {
    if (a.disposed || a.conn !== conn) return;
    if (this.parked?.attempt === a) this.attemptGone(a); // the error ends this connection, parked or not
    this.noteError(a, e.message);
    const notification: Notification = { code: e.code, subcode: e.subcode, data: e.data };
    if (e.code === ErrorCode.MESSAGE_HEADER) return a.dispatch({ type: 'BGPHeaderErr', notification });
    if (e.code === ErrorCode.OPEN_MESSAGE) return a.dispatch({ type: 'BGPOpenMsgErr', notification });
    if (e.action !== 'session-reset' && e.update) {
      // RFC 7606: the session stays up; the RIB withdraws or uses what could be read.
      a.pending = { update: receivedUpdate(e.update), error: e };
      return a.dispatch(UPDATE_MSG);
    }
    a.dispatch({ type: 'UpdateMsgErr', notification });
  }

  private onOpen(a: Attempt, conn: BgpConnection, open: OpenMessage): void {
    const peerOpen: PeerOpen = { holdTime: open.holdTime, asNumber: openAs(open), bgpIdentifier: parseIpv4Number(open.bgpId, 'bgpId') };
    const bad = checkPeerOpen(peerOpen, {
      localAs: this.config.localAs ?? this.local.asn,
      localBgpId: parseIpv4Number(this.local.routerId, 'routerId'),
      peerAs: this.acceptedAsns ?? this.config.asn,
    });
    if (bad) {
      this.noteError(a, `OPEN refused: ${bad.code}/${bad.subcode} (peer AS ${peerOpen.asNumber}, id ${open.bgpId})`);
      return a.dispatch({ type: 'BGPOpenMsgErr', notification: bad });
    }
    const local = a.localOpen ?? buildOpen(this.local, this.config, this.config.holdTime ?? 90);
    const negotiated = negotiatedOptions(local, open);
    if (negotiated.families.length === 0) {
      this.noteError(a, 'no address family in common with the peer');
      return a.dispatch({
        type: 'BGPOpenMsgErr',
        notification: { code: ErrorCode.OPEN_MESSAGE, subcode: OpenSubcode.UNSUPPORTED_CAPABILITY },
      });
    }
    // The other connection to this peer, if any, collides with this one (§6.8).
    const other = a === this.primary ? this.secondary : this.primary;
    if (other?.conn && !other.disposed) {
      // A peer doing graceful restart that dials us while our session is Established has
      // restarted (RFC 4724 §4.2), or dialled just before that session came up and will drop
      // the new connection itself: the old session's fate tells which. (A connection we
      // dialled ourselves is simply late: §6.8 drops it.)
      if (other.fsm.state === 'Established' && this.session?.gracefulRestart && a.direction === 'incoming') {
        return this.park(a, open, other);
      }
      const outcome = resolveCollision({
        localBgpId: parseIpv4Number(this.local.routerId, 'routerId'),
        remoteBgpId: peerOpen.bgpIdentifier,
        localAs: this.config.localAs ?? this.local.asn,
        remoteAs: peerOpen.asNumber,
        existing: { direction: other.direction, state: other.fsm.state },
        newDirection: a.direction,
      });
      if (outcome === 'dumpNew') return this.dump(a);
      if (outcome === 'dumpExisting') {
        if (other.fsm.state === 'OpenConfirm') return this.park(a, open, other);
        this.dump(other);
      }
    }
    a.remoteOpen = open;
    conn.negotiate(negotiated.receive, negotiated.send);
    a.dispatch({ type: 'BGPOpen', open: peerOpen });
  }

  /**
   * Holds `a`'s OPEN until `waitingOn` is settled. The rule at hand (§6.8 for a connection in
   * OpenConfirm, RFC 4724's takeover for an Established one) would end `waitingOn` now. But we
   * have sent our KEEPALIVE on it, so the peer may hold it Established, and ending it would end a
   * session the peer considers up: a route flap, and a graceful-restart helper drops the stale
   * routes it keeps for us. So the peer settles it. Its KEEPALIVE there means `a` is dropped.
   * Its Cease there, or a reset (a restarted peer's kernel answers our probe with one), means `a`
   * carries on. After PARK_MS the rule applies regardless.
   */
  private park(a: Attempt, open: OpenMessage, waitingOn: Attempt): void {
    const timer = setTimeout(() => {
      if (this.parked?.attempt !== a) return;
      if (waitingOn === this.established) waitingOn.dispatch({ type: 'TcpConnectionFails' });
      else this.dump(waitingOn);
      this.release();
    }, PARK_MS);
    timer.unref?.();
    this.parked = { attempt: a, open, waitingOn, messages: [], timer };
    if (waitingOn === this.established) waitingOn.conn?.sendMessage({ type: 'keepalive' });
  }

  /** Lets the parked OPEN (and what came after it) run, now that nothing else holds its place. */
  private release(): void {
    const p = this.parked;
    if (!p) return;
    this.parked = undefined;
    clearTimeout(p.timer);
    const conn = p.attempt.conn;
    if (p.attempt.disposed || conn === undefined) return;
    this.onOpen(p.attempt, conn, p.open);
    for (const m of p.messages) this.onMessage(p.attempt, conn, m);
  }

  /** `a` is gone (disposed of, or its connection failed): an OPEN parked on it is dropped; one waiting on it may go on. */
  attemptGone(a: Attempt): void {
    if (this.parked?.attempt === a) {
      clearTimeout(this.parked.timer);
      this.parked = undefined;
    } else if (this.parked?.waitingOn === a) {
      // After the caller has finished with `a` (a dump, a session's end).
      queueMicrotask(() => this.release());
    }
  }

  /**
   * The peer's connection becomes the primary: the FSM that stays when it fails. It was made
   * to answer one connection (passive, no restart); as the primary of an active peer it must
   * dial again after a failure, or a session lost after a collision would wait for the peer.
   */
  private promote(a: Attempt): void {
    this.primary = a;
    this.secondary = undefined;
    if (this.config.passive) return;
    a.fsm = { ...a.fsm, passiveTcpEstablishment: false, config: { ...a.fsm.config, allowAutomaticStart: true } };
  }

  /**
   * The peer closed our connection before its OPEN: it was not ready for us (idle after a reset,
   * shut down, or about to use its own connection). RFC 4271 waits the whole ConnectRetryTime in
   * Active (120 s by default), and two speakers in step can both be waiting so; we dial again
   * after the IdleHold back-off instead (doubling while it goes on), still taking its connection
   * meanwhile.
   */
  private dialSoon(a: Attempt): void {
    if (this.config.passive || this.stopping) return;
    const retry = this.config.connectRetryTime ?? 120;
    const seconds = Math.max(this.config.idleHoldTime ?? 5, 1) * 2 ** Math.min(this.earlyCloses++, 8);
    if (seconds < retry) a.timers.start('ConnectRetryTimer', seconds);
  }

  /** Drops the losing connection of a collision with Cease 6/7. */
  private dump(loser: Attempt): void {
    loser.dispatch({ type: 'OpenCollisionDump' });
    loser.dispose();
    if (loser === this.secondary) this.secondary = undefined;
    else if (loser === this.primary && this.secondary) {
      // Our own connection lost: the peer's connection takes its place as the primary.
      this.promote(this.secondary);
    }
  }

  private onEstablished(a: Attempt, holdTime: number, keepaliveTime: number): void {
    if (a.disposed) return;
    if (this.parked?.waitingOn === a) this.dump(this.parked.attempt);
    if (a !== this.primary) {
      // An incoming connection that reached Established wins over our still-pending one.
      this.primary.dispose();
      this.promote(a);
    }
    this.established = a;
    const remote = a.remoteOpen!;
    const local = a.localOpen!;
    const conn = a.conn!;
    const gr = findCapability(remote, 'graceful-restart');
    const llgr = gr ? findCapability(remote, 'long-lived-graceful-restart') : undefined;
    this.session = {
      remoteOpen: remote,
      localOpen: local,
      remoteAs: openAs(remote),
      remoteRouterId: remote.bgpId,
      localAddress: conn.localAddress,
      remoteAddress: normalizeAddress(conn.remoteAddress),
      holdTime,
      keepaliveTime,
      negotiated: negotiatedOptions(local, remote),
      gracefulRestart:
        gr && this.config.gracefulRestart !== false
          ? {
              restartTime: gr.restartTime,
              restarting: (gr.restartFlags & 0x8) !== 0,
              families: gr.families.flatMap((f) => {
                const family = familyOf(f.afi, f.safi);
                return family ? [{ family, forwardingPreserved: (f.flags & 0x80) !== 0 }] : [];
              }),
            }
          : undefined,
      longLivedGracefulRestart: llgr
        ? {
            families: llgr.families.flatMap((f) => {
              const family = familyOf(f.afi, f.safi);
              return family ? [{ family, forwardingPreserved: (f.flags & 0x80) !== 0, staleTime: f.staleTime }] : [];
            }),
          }
        : undefined,
      enhancedRouteRefresh:
        findCapability(remote, 'enhanced-route-refresh') !== undefined && findCapability(local, 'enhanced-route-refresh') !== undefined,
      routeRefresh: findCapability(remote, 'route-refresh') !== undefined || findCapability(remote, 'enhanced-route-refresh') !== undefined,
    };
    this.lastError = '';
    this.earlyCloses = 0;
    this.emit('established', this.session);
    conn.setSource(this.source);
  }

  /**
   * Records why a connection failed. While a session is up, what befalls another attempt (a
   * collision's loser, a connection refused or reset beside it) is not the session's error.
   */
  private noteError(a: Attempt | undefined, message: string): void {
    if (this.established && a !== this.established) return;
    this.lastError = message;
  }

  private onSessionDown(a: Attempt, reason: DownReason, wasEstablished: boolean): void {
    const message = describe(reason) || this.lastError;
    if (message) this.noteError(a, message);
    if (a === this.secondary) {
      a.dispose();
      this.secondary = undefined;
      return;
    }
    if (a !== this.established) return;
    this.established = undefined;
    const session = this.session;
    this.session = undefined;
    let gracefulRestart: SessionDown['gracefulRestart'];
    // RFC 4724 §4.2: only a session that ends without a NOTIFICATION keeps its routes.
    if (wasEstablished && session?.gracefulRestart && !reason.sent && !reason.received && !this.stopping) {
      const longLived = longLivedStaleTime(this.config) !== undefined ? session.longLivedGracefulRestart?.families : undefined;
      gracefulRestart = {
        restartTime: session.gracefulRestart.restartTime,
        families: session.gracefulRestart.families.map((f) => f.family),
        ...(longLived?.length ? { longLived: longLived.map((f) => ({ family: f.family, staleTime: f.staleTime })) } : {}),
      };
    }
    this.emit('down', { reason, wasEstablished, message, gracefulRestart });
  }
}

function describe(r: DownReason): string {
  const n = r.sent ?? r.received;
  if (!n) return `${r.event} in ${r.from}`;
  const comm =
    n.data && n.data.length > 1 && n.code === 6 && (n.subcode === 2 || n.subcode === 4)
      ? ` "${Buffer.from(n.data).subarray(1).toString('utf8')}"`
      : '';
  return `${r.sent ? 'sent' : 'received'} NOTIFICATION ${n.code}/${n.subcode}${comm} (${r.event} in ${r.from})`;
}
