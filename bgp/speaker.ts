// BgpSpeaker: many peers, one RIB. It listens for and opens sessions, feeds what peers send
// into the RIB, feeds the RIB's Adj-RIB-Outs back to the peers as their sockets drain, and
// keeps a restarting peer's routes as stale (RFC 4724 helper), then, where both sides do
// long-lived graceful restart, as LLGR_STALE past the restart time (RFC 9494 helper).
import net from 'node:net';
import { EventEmitter } from 'eventemitter3';
import { AddressError, cidrContains, formatAddress, parseAddress, type Cidr } from '../ip/index.js';
import { CeaseSubcode, parsePrefix, type AddressFamily, type BgpError, type ReceivedUpdate } from './codec/index.js';
import {
  checkBfdTimers,
  createBfdEndpoint,
  isBfdEndpoint,
  diagText,
  type BfdEndpoint,
  type BfdEndpointOptions,
  type BfdSessionHandle,
  type BfdSessionStatus,
  type BfdStateName,
  type BfdTimers,
} from './bfd/index.js';
import {
  GRACEFUL_SHUTDOWN,
  Rib,
  compilePolicy,
  type AdjRibOut,
  type BestPathChange,
  type OriginateOptions,
  type Policy,
  type RibOptions,
  type RibPeer,
  type RibRoute,
} from './rib/index.js';
import { checkAsn, checkPeerConfig, type LocalConfig, type PeerConfig } from './session/config.js';
import { normalizeAddress } from './session/connection.js';
import {
  checkMaxPrefixes,
  checkMaxRoutes,
  MaxPrefixGuard,
  maxPrefixData,
  maxRoutesExceeded,
  type MaxPrefixEvent,
  type MaxPrefixStatus,
  type MaxRoutes,
} from './session/max-prefix.js';
import { Peer, type SessionDown, type SessionInfo } from './session/peer.js';
import { linkLocalFor } from './session/link-local.js';
import { SelectionDeferral } from './selection-deferral.js';
import { type LongTimeout, setLongTimeout } from './long-timeout.js';
import { ListenerKeys, checkPassword } from './session/tcp-md5.js';
import { requireTtlAddon, setAcceptedTtl, setListenerTtl } from './session/ttl.js';

export interface SpeakerOptions {
  asn: number;
  routerId: string;
  /**
   * Where to accept sessions: a port (all addresses), an address and port, or false. Default port 179.
   * `alsoHosts`: more addresses on the same port (a dual-stack node's IPv6 address beside its IPv4 one).
   * A speaker that listens on an address also dials its peers from it (of the peer's family),
   * unless a peer's `localAddress` says otherwise: a peer that checks where we come from (any
   * BGP speaker does) then sees the address it was told.
   */
  listen?: false | number | { host?: string; alsoHosts?: string[]; port: number };
  hostname?: string;
  /** RIB options: multipath, default LOCAL_PREF, MED comparison, cluster ID and reflection. */
  rib?: Omit<RibOptions, 'localAs' | 'routerId'>;
  /** Seconds a re-established peer's stale routes wait for its End-of-RIB. Default 360 (as FRR). */
  stalePathTime?: number;
  /** A guard on memory: the most paths all peers together may have in the Adj-RIB-In (see max-prefix.ts). */
  maxRoutes?: MaxRoutes;
  /** The R and F bits of our graceful restart capability (a node agent that kept its routes). */
  restarting?: boolean;
  forwardingPreserved?: boolean;
  restartTime?: number;
  /** After a restart, longest wait (s) for the peers' End-of-RIBs before we send (RFC 4724 §4.1). Default 360 (FRR's select-defer-time). */
  selectDeferTime?: number;
  /**
   * The BFD endpoint of peers with `bfd`: one to share (with other speakers, or other users of
   * BFD), or options for the one the speaker makes when a peer first needs it: port 3784, its
   * sessions on a thread of their own (`thread: 'main'` runs them on this event loop).
   */
  bfd?: BfdEndpoint | BfdEndpointOptions;
}

/** A peer's configuration: the session's, plus what the RIB applies to its routes. */
export interface NeighborConfig extends PeerConfig {
  importPolicy?: Policy;
  exportPolicy?: Policy;
  /** Next hop self towards this iBGP peer. */
  nextHopSelf?: boolean;
  /**
   * Dial from whatever address the kernel picks for the route to the peer, even when the speaker
   * listens on one address (Calico's BGPPeer `sourceAddress: None`): a node with one link per
   * plane then reaches each ToR from its address on that plane. Ignored with a `localAddress`.
   */
  kernelSourceAddress?: boolean;
  routeReflectorClient?: boolean;
  /** Our global IPv6 address for next-hop-self of IPv6 routes over an IPv4 session. */
  localAddressV6?: string;
  /**
   * Our link-local address, sent after the global next hop (RFC 2545 §3). Default: over an IPv6
   * session, the one on the session's interface when the peer shares its link (as FRR does);
   * none for IPv6 routes over an IPv4 session unless given here. false never sends one (a
   * receiver that cannot place it: FRR's bgpd without zebra withdraws such routes).
   */
  linkLocalAddressV6?: string | false;
  /**
   * BFD to the peer (RFC 5880, single hop RFC 5881): true for 300 ms × 3, or the timers. When
   * BFD declares the path down, an Established session ends at once with Cease 6/10 (RFC 9384)
   * and the peer's routes go, instead of waiting out the hold timer (RFC 5882 §4.1).
   */
  bfd?: boolean | BfdTimers;
}

/** Peers from a range that connect to us (FRR's `bgp listen range`): created on accept, removed when down. */
export interface DynamicNeighbors extends Omit<NeighborConfig, 'address' | 'asn'> {
  range: string;
  /** Accepted AS numbers; one number for all. */
  asn: number | number[];
}

export interface PeerStatus {
  address: string;
  asn: number;
  type: 'ebgp' | 'ibgp';
  state: string;
  /** When the current state began (ms since the epoch). */
  since: number;
  routerId?: string;
  families: AddressFamily[];
  prefixesReceived: number;
  prefixesSent: number;
  messagesIn: number;
  messagesOut: number;
  /** Octets written and not yet taken by the peer: bounded by the back-pressure of the session. */
  outputBuffered: number;
  lastError: string;
  dynamic: boolean;
  description?: string;
  /** The peer's maxPrefixes limits, and the hold-down it is in after exceeding one. */
  maxPrefixes?: MaxPrefixStatus;
  /** The peer's BFD session, when it has one. */
  bfd?: BfdSessionStatus;
}

export interface SpeakerEvents {
  peerUp: [string, SessionInfo];
  peerDown: [string, SessionDown];
  peerState: [string, string];
  /** Best paths changed in the Loc-RIB. */
  bestPaths: [BestPathChange[]];
  endOfRib: [string, AddressFamily];
  /** A malformed UPDATE handled by RFC 7606 (the session stayed up). */
  updateError: [string, BgpError];
  /** A maxPrefixes threshold crossed or limit exceeded (then the session is stopped unless warningOnly). */
  maxPrefix: [string, MaxPrefixEvent];
  /** A connection refused before any message: the address it came from, and why (with the likely fix). */
  connectionRefused: [string, string];
  /** A peer's BFD session changed state: the peer, the new state, the old one, the diagnostic in words. */
  bfdState: [string, BfdStateName, BfdStateName, string];
  /** The BFD endpoint the speaker made failed: a socket, or its thread stopped (and when a new one starts). */
  bfdError: [Error];
}

interface Neighbor {
  config: NeighborConfig;
  peer: Peer;
  rib: RibPeer | undefined;
  dynamic: boolean;
  /** Families whose routes are stale, waiting for End-of-RIB or the timer. */
  stale: Set<AddressFamily>;
  /** The peer's restart time while it is away; the stale path time once it is back. */
  staleTimer: NodeJS.Timeout | undefined;
  /** RFC 9494: the long-lived stale time (s) of each family, from the session that went down. */
  longLived: Map<AddressFamily, number>;
  /** The families in their long-lived stale period, and when each ends. */
  longLivedTimers: Map<AddressFamily, LongTimeout>;
  maxPrefix: MaxPrefixGuard | undefined;
  bfd: BfdSessionHandle | undefined;
  /** Why BFD ended the session going down now, for its peerDown message. */
  bfdDown?: string;
  /** UPDATEs pulled from its Adj-RIB-Out and not yet written. */
  queue: Buffer[];
}

export class BgpSpeaker extends EventEmitter<SpeakerEvents> {
  readonly rib: Rib;
  private readonly local: LocalConfig;
  private readonly neighbors = new Map<string, Neighbor>();
  private readonly dynamic: { range: Cidr; config: DynamicNeighbors }[] = [];
  private servers: net.Server[] = [];
  /** TCP-MD5 keys of the listener: one per peer with a password, one per dynamic range with one. */
  private readonly md5Keys = new ListenerKeys();
  /** The listeners send TTL 255, for the GTSM peers (ttl.ts); other accepted sessions get the default back. */
  private listenerTtl = false;
  private kickScheduled = false;
  private readonly toKick = new Set<Peer>();
  private readonly deferral: SelectionDeferral;
  /** Set by drain(): what we originate carries GRACEFUL_SHUTDOWN from then on. */
  private draining = false;
  /** The BFD endpoint, once a peer needed it; `ownBfd` when the speaker made it (and closes it). */
  private bfdEndpoint: BfdEndpoint | undefined;
  private ownBfd = false;

  constructor(private readonly options: SpeakerOptions) {
    super();
    checkAsn('asn', options.asn);
    if (options.maxRoutes !== undefined) checkMaxRoutes('maxRoutes', options.maxRoutes);
    this.local = {
      asn: options.asn,
      routerId: options.routerId,
      hostname: options.hostname,
      restarting: options.restarting,
      forwardingPreserved: options.forwardingPreserved,
      restartTime: options.restartTime,
    };
    // Best-path change objects (a text prefix and a view per change) only when someone listens:
    // `podroute bgpd` does not, the node agent does.
    this.deferral = new SelectionDeferral(options.restarting === true, (options.selectDeferTime ?? 360) * 1000, () => {
      this.local.restarting = false;
      for (const n of this.neighbors.values()) this.scheduleKick(n.peer);
    });
    this.rib = new Rib({
      collectChanges: () => this.listenerCount('bestPaths') > 0,
      ...options.rib,
      localAs: options.asn,
      routerId: options.routerId,
    });
  }

  get asn(): number {
    return this.options.asn;
  }

  get routerId(): string {
    return this.options.routerId;
  }

  /** Starts listening (unless `listen: false`). Resolves with the port bound. */
  async start(): Promise<number | undefined> {
    const l = this.options.listen ?? 179;
    if (l === false) return undefined;
    const { host, port, alsoHosts = [] } = typeof l === 'number' ? { host: undefined, port: l } : l;
    let bound: number | undefined;
    for (const h of [host, ...alsoHosts]) {
      const server = net.createServer((socket) => this.onIncoming(socket));
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen({ host: h, port: bound ?? port }, () => {
            server.off('error', reject);
            resolve();
          });
        });
        this.servers.push(server);
        // A listener that cannot hold a peer's key would take that peer's connections unsigned.
        this.md5Keys.attach(server);
        if (this.listenerTtl) setListenerTtl(server);
      } catch (e) {
        // All the addresses or none: a node half listening would lose one family's sessions quietly.
        await Promise.all(this.servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
        throw e;
      }
      bound ??= (server.address() as net.AddressInfo).port;
    }
    return bound;
  }

  /**
   * Stops every session with a Cease (RFC 8203 message optional) and closes the listener.
   * `graceful`: for a restart. Sessions that negotiated graceful restart close without a
   * Cease, so their peers keep our routes (and forward on them) until we are back or the
   * restart time runs out; the others get the Cease.
   */
  async stop(message = 'shutting down', options: { graceful?: boolean } = {}): Promise<void> {
    this.deferral.stop();
    const closing = [...this.neighbors.values()].map((n) => n.peer.stop({ message, graceful: options.graceful }));
    this.md5Keys.detach();
    await Promise.all([...this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))), ...closing]);
    for (const n of this.neighbors.values()) this.forget(n);
    this.neighbors.clear();
    if (this.ownBfd) await this.bfdEndpoint?.close();
  }

  addPeer(config: NeighborConfig): void {
    checkPeerConfig(config);
    if (config.bfd !== undefined) checkPeerBfd(config);
    const key = normalizeAddress(config.address);
    if (this.neighbors.has(key)) throw new TypeError(`peer ${config.address}: already configured`);
    if (config.password !== undefined) this.md5Keys.set(config.address, key, config.password);
    if (config.ttlSecurity !== undefined) this.gtsmListeners(config.address);
    const n = this.createNeighbor(config, false, this.dialSource(config));
    this.deferral.expect(config.address);
    n.peer.start();
  }

  /** Stops the session (Cease 6/3 Peer De-configured) and forgets the peer and its routes. */
  removePeer(address: string): void {
    const n = this.neighbors.get(normalizeAddress(address));
    if (!n) throw new TypeError(`peer ${address}: not configured`);
    this.neighbors.delete(normalizeAddress(address));
    this.deferral.forget(n.config.address);
    if (!n.dynamic) this.md5Keys.delete(normalizeAddress(address));
    void n.peer.stop({ subcode: 3 }).then(() => this.forget(n));
  }

  /** Accepts sessions from any address in a range (FRR's `bgp listen range`). */
  addDynamicNeighbors(d: DynamicNeighbors): void {
    let range: Cidr;
    try {
      const p = parsePrefix(d.range);
      range = { family: p.ipv6 ? 6 : 4, bytes: p.bytes, prefixLength: p.length };
    } catch (e) {
      throw new TypeError(`dynamic neighbors range: ${(e as Error).message}`);
    }
    for (const asn of Array.isArray(d.asn) ? d.asn : [d.asn]) checkAsn('dynamic neighbors asn', asn);
    // Checked now: a peer of the range is made only when it connects, too late to refuse.
    if (d.maxPrefixes !== undefined) checkMaxPrefixes(`dynamic neighbors ${d.range} maxPrefixes`, d.maxPrefixes);
    if (d.bfd !== undefined && d.bfd !== false) checkBfdTimers(`dynamic neighbors ${d.range} bfd`, d.bfd === true ? {} : d.bfd);
    if (d.password !== undefined) {
      checkPassword('dynamic neighbors password', d.password);
      this.md5Keys.set(`in ${d.range}`, formatAddress(range.bytes), d.password, range.prefixLength);
    }
    if (d.ttlSecurity !== undefined) this.gtsmListeners(`in ${d.range}`);
    this.dynamic.push({ range, config: d });
  }

  /** The first GTSM peer: every listener sends TTL 255 from now on. */
  private gtsmListeners(peer: string): void {
    if (this.listenerTtl) return;
    requireTtlAddon(peer, 'ttlSecurity');
    this.listenerTtl = true;
    for (const s of this.servers) setListenerTtl(s);
  }

  originate(prefix: string, options?: OriginateOptions): void {
    this.publish(this.rib.originate(prefix, this.draining ? shutdownMarked(options) : options));
  }

  /** Whether drain() has begun: what we originate is marked GRACEFUL_SHUTDOWN. */
  get isDraining(): boolean {
    return this.draining;
  }

  /**
   * Takes the speaker out of service without loss (RFC 8326 graceful shutdown): every route we
   * originate is announced again with GRACEFUL_SHUTDOWN, and LOCAL_PREF 0 (which only internal
   * peers are sent), so that peers with another path move to it while ours still forwards. Once
   * every peer has been sent that, `settleMs` more is left for them (and their peers) to move,
   * all bounded by `timeoutMs`; then every session closes with a Cease (Administrative
   * Shutdown, with `message`) and the listener with them, as stop() does.
   */
  async drain(options: { settleMs?: number; timeoutMs?: number; message?: string } = {}): Promise<void> {
    const deadline = performance.now() + (options.timeoutMs ?? 30_000);
    if (!this.draining) {
      this.draining = true;
      for (const family of ['ipv4-unicast', 'ipv6-unicast'] as const) {
        for (const r of this.rib.adjRibIn(this.rib.localPeer, family))
          this.publish(this.rib.originate(r.prefix, shutdownMarked({ attributes: r.attributes, nextHop: r.nextHop })));
      }
    }
    const sent = () =>
      [...this.neighbors.values()].every((n) => n.peer.state !== 'Established' || (!n.rib?.out?.hasWork && n.peer.counters.buffered === 0));
    while (!sent() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const settle = Math.min(options.settleMs ?? 3000, Math.max(0, deadline - performance.now()));
    await new Promise((r) => setTimeout(r, settle));
    await this.stop(options.message ?? 'graceful shutdown');
  }

  withdraw(prefix: string): void {
    this.publish(this.rib.withdrawOriginated(prefix));
  }

  /**
   * Best paths of a family (or both), one per prefix. Each prints as plain JSON (JSON.stringify)
   * and as one line (`${route}`), communities as text; `attributes` holds the codec's forms.
   */
  routes(family?: AddressFamily): RibRoute[] {
    const families: AddressFamily[] = family ? [family] : ['ipv4-unicast', 'ipv6-unicast'];
    return families.flatMap((f) => [...this.rib.routes(f)]);
  }

  /** One prefix ("10.1.0.0/16", "2001:db8::/32"): its best path, its ECMP set and every path; undefined when none. */
  lookup(prefix: string): ReturnType<Rib['lookup']> {
    return this.rib.lookup(prefix);
  }

  /** Routes a peer sent us (after import policy). */
  adjRibIn(address: string, family: AddressFamily = 'ipv4-unicast'): RibRoute[] {
    const n = this.neighbors.get(normalizeAddress(address));
    return n?.rib ? this.rib.adjRibIn(n.rib, family) : [];
  }

  /** What we sent a peer and it still has: one entry per prefix (per path id with ADD-PATH), as sent. */
  adjRibOut(
    address: string,
    family: AddressFamily = 'ipv4-unicast',
  ): { prefix: string; nextHop: string; attributes: RibRoute['attributes'] }[] {
    const out = this.neighbors.get(normalizeAddress(address))?.rib?.out;
    if (!out) return [];
    return [...this.rib.routes(family)].flatMap((r) =>
      out.sentFor(family, r.prefix).map((s) => ({ prefix: r.prefix, nextHop: s.nextHop, attributes: s.attributes })),
    );
  }

  /**
   * Ends a peer's session with Cease 6/4 (Administrative Reset, RFC 4486) and starts it again:
   * FRR's `clear bgp ADDR`, GoBGP's `neighbor ADDR reset`. False if there is no such peer.
   */
  async resetPeer(address: string, message?: string): Promise<boolean> {
    const n = this.neighbors.get(normalizeAddress(address));
    if (!n) return false;
    // A peer held down for its prefix limit has no session to reset: as FRR's clear, it starts again.
    if (n.maxPrefix?.tripped) return this.clearMaxPrefix(address);
    await n.peer.stop({ subcode: CeaseSubcode.ADMINISTRATIVE_RESET, message });
    n.peer.start();
    return true;
  }

  /** Sends a peer our whole Adj-RIB-Out of a family again (soft reset out), as if it had asked. */
  resend(address: string, family: AddressFamily = 'ipv4-unicast'): void {
    this.neighbors.get(normalizeAddress(address))?.rib?.out?.refresh(family);
  }

  /** Asks a peer to send its routes again (ROUTE-REFRESH). */
  refresh(address: string, family: AddressFamily = 'ipv4-unicast'): void {
    this.neighbors.get(normalizeAddress(address))?.peer.sendRouteRefresh(family);
  }

  peerStatus(): PeerStatus[] {
    return [...this.neighbors.values()].map((n) => {
      const s = n.peer.session;
      const c = n.peer.counters;
      const received = n.rib ? n.rib.stats.routes['ipv4-unicast'] + n.rib.stats.routes['ipv6-unicast'] : 0;
      const out = n.rib?.out;
      return {
        address: n.config.address,
        asn: s?.remoteAs ?? n.config.asn,
        type: (s?.remoteAs ?? n.config.asn) === (n.config.localAs ?? this.options.asn) ? 'ibgp' : 'ebgp',
        state: n.peer.state,
        since: n.peer.since,
        routerId: s?.remoteRouterId,
        families: s?.negotiated.families ?? [],
        prefixesReceived: received,
        prefixesSent: out ? out.sentCount('ipv4-unicast') + out.sentCount('ipv6-unicast') : 0,
        messagesIn: c.in,
        messagesOut: c.out,
        outputBuffered: c.buffered,
        lastError: n.peer.lastError,
        dynamic: n.dynamic,
        description: n.config.description,
        ...(n.maxPrefix ? { maxPrefixes: n.maxPrefix.status() } : {}),
        ...(n.bfd ? { bfd: n.bfd.status() } : {}),
      };
    });
  }

  /**
   * Where a peer's connections come from: its localAddress, else the address we listen on of
   * its family. Left to the kernel, a dial takes the outgoing interface's primary address (on
   * one host, 127.0.0.1 for every loopback address), which the peer knows as no neighbour.
   */
  private dialSource(config: NeighborConfig): PeerConfig {
    if (config.localAddress !== undefined || config.kernelSourceAddress || config.passive || config.address.includes('%')) return config;
    const l = this.options.listen;
    if (l === undefined || l === false || typeof l === 'number') return config;
    const family = net.isIP(config.address);
    const from = [l.host, ...(l.alsoHosts ?? [])].find((h) => h !== undefined && net.isIP(h) === family && !isWildcard(h));
    return from === undefined ? config : { ...config, localAddress: from };
  }

  private createNeighbor(config: NeighborConfig, dynamic: boolean, session: PeerConfig = config): Neighbor {
    const peer = new Peer(session, this.local);
    const maxPrefix = config.maxPrefixes ? new MaxPrefixGuard(config.maxPrefixes) : undefined;
    const n: Neighbor = {
      config,
      peer,
      rib: undefined,
      dynamic,
      stale: new Set(),
      staleTimer: undefined,
      longLived: new Map(),
      longLivedTimers: new Map(),
      maxPrefix,
      bfd: undefined,
      queue: [],
    };
    this.neighbors.set(normalizeAddress(config.address), n);
    if (config.bfd !== undefined && config.bfd !== false) this.startBfd(n, session.localAddress);
    peer.on('state', (s) => this.emit('peerState', config.address, s));
    peer.on('established', (info) => this.onEstablished(n, info));
    peer.on('down', (d) => this.onDown(n, d));
    peer.on('receivedUpdate', (u, e) => this.onUpdate(n, u, e));
    peer.on('endOfRib', (f) => this.onEndOfRib(n, f));
    peer.on('routeRefresh', (f, subtype) => {
      if (subtype === 0 && n.rib?.out) n.rib.out.refresh(f);
    });
    return n;
  }

  /** Whether the range `address` falls in sets TTL options of its own. */
  private dynamicTtl(address: string): boolean {
    const d = this.dynamic.find((x) => inRange(address, x.range));
    return d !== undefined && (d.config.ttlSecurity !== undefined || d.config.ttl !== undefined);
  }

  private onIncoming(socket: net.Socket): void {
    const address = normalizeAddress(socket.remoteAddress ?? '');
    const n = this.neighbors.get(address);
    const gtsm = n ? n.config.ttlSecurity !== undefined || n.config.ttl !== undefined : this.dynamicTtl(address);
    // The listener's TTL 255 is for GTSM peers; any other session sends the kernel's default.
    if (this.listenerTtl && !gtsm) {
      try {
        setAcceptedTtl(socket, address, { ttl: -1 });
      } catch (e) {
        socket.destroy();
        this.emit('connectionRefused', address, (e as Error).message);
        return;
      }
    }
    if (n) {
      // Refused (held down for its prefix limit, stopping): reset at once, before any OPEN, as
      // near to refusing the SYN as a listening socket can come.
      if (!n.peer.acceptIncoming(socket)) socket.resetAndDestroy();
      return;
    }
    const d = this.dynamic.find((x) => inRange(address, x.range));
    if (!d) {
      // The reason first: a destroyed socket no longer knows its local address.
      const reason = this.unknownPeer(address, socket);
      socket.destroy();
      this.emit('connectionRefused', address, reason);
      return;
    }
    const asns = Array.isArray(d.config.asn) ? d.config.asn : [d.config.asn];
    // Any listed AS is accepted in the OPEN; the status shows the one the peer uses.
    const config: NeighborConfig = { ...d.config, address, asn: asns[0], passive: true };
    const created = this.createNeighbor(config, true);
    if (asns.length > 1) created.peer.setAcceptedAsns(asns);
    created.peer.start();
    if (!created.peer.acceptIncoming(socket)) socket.destroy();
  }

  /** Why a connection from `address` was refused, and what would most likely let it in. */
  private unknownPeer(address: string, socket: net.Socket): string {
    const to = normalizeAddress(socket.localAddress ?? '');
    const base = `connection from ${address} to ${to} refused: no peer has that address`;
    // A configured peer on the same host, or one whose address is of this family, that dialled
    // from another of its addresses: the usual cause, on loopback and multi-homed hosts alike.
    const peers = [...this.neighbors.values()].filter((n) => !n.dynamic && net.isIP(n.config.address) === net.isIP(address));
    if (peers.length === 0) return `${base} (add it as a peer, or a dynamic neighbors range that holds it)`;
    const names = peers
      .slice(0, 3)
      .map((n) => n.config.address)
      .join(', ');
    return (
      `${base}; if it is one of the configured peers (${names}${peers.length > 3 ? ', ...' : ''}) dialling from another of its ` +
      `addresses, set that speaker's localAddress (or its listen address) to the address configured here, or add ${address} as a peer`
    );
  }

  private onEstablished(n: Neighbor, info: SessionInfo): void {
    const ipv6Session = info.localAddress.includes(':');
    const ribConfig = {
      address: n.config.address,
      asn: info.remoteAs,
      routerId: info.remoteRouterId,
      localAddress: ipv6Session ? undefined : info.localAddress,
      localAddressV6: ipv6Session ? info.localAddress : n.config.localAddressV6,
      linkLocalAddressV6:
        n.config.linkLocalAddressV6 === false
          ? undefined
          : (n.config.linkLocalAddressV6 ?? (ipv6Session ? linkLocalFor(info.localAddress, info.remoteAddress) : undefined)),
      families: info.negotiated.families,
      sendOptions: info.negotiated.send,
      fourOctetAs: info.negotiated.send.fourOctetAs,
      localAs: n.config.localAs,
      importPolicy: n.config.importPolicy,
      exportPolicy: n.config.exportPolicy,
      nextHopSelf: n.config.nextHopSelf,
      routeReflectorClient: n.config.routeReflectorClient,
      enhancedRouteRefresh: info.enhancedRouteRefresh,
      longLivedGracefulRestart: info.longLivedGracefulRestart !== undefined,
    };
    if (n.rib) this.rib.peerUp(n.rib, ribConfig);
    else n.rib = this.rib.addPeer(ribConfig);
    n.queue = [];
    this.sendFrom(n, n.rib.out!);
    if (n.stale.size > 0) {
      // RFC 4724 §4.2: where the peer did not keep its forwarding state (F=0, or no capability
      // now), its stale routes lead nowhere: they go at once, not at its End-of-RIB. Routes in
      // their long-lived stale period go by the F bit of either capability (RFC 9494).
      const kept = new Set(info.gracefulRestart?.families.filter((f) => f.forwardingPreserved).map((f) => f.family));
      for (const f of info.longLivedGracefulRestart?.families ?? [])
        if (f.forwardingPreserved && n.longLivedTimers.has(f.family)) kept.add(f.family);
      const lost = [...n.stale].filter((f) => !kept.has(f));
      if (lost.length > 0) this.sweep(n, lost);
    }
    if (n.stale.size > 0) {
      // RFC 4724 §4.2: stale routes wait for End-of-RIB, at most the stale path time, long-lived ones too.
      this.clearStaleTimers(n);
      n.staleTimer = setTimeout(() => this.sweep(n, [...n.stale]), (this.options.stalePathTime ?? 360) * 1000).unref();
    }
    this.emit('peerUp', n.config.address, info);
    this.deferral.established(n.config.address, info);
  }

  /** The session sends what `out` gives, after what it pulled and has not sent yet. */
  private sendFrom(n: Neighbor, out: AdjRibOut): void {
    out.onReady = () => this.scheduleKick(n.peer);
    n.peer.setUpdateSource(() => {
      if (this.deferral.deferring) return undefined;
      if (n.queue.length === 0) n.queue = out.pull(64 * 1024);
      return n.queue.shift();
    });
  }

  /**
   * Gives a peer new import and export policies without ending its session: a key left out
   * keeps its policy, undefined removes it. An export policy applies at once: the peer is sent
   * our routes again under it, and what it had that the policy now refuses is withdrawn. An
   * import policy applies to what the peer sends, so the peer is asked to send its routes again
   * (route refresh, RFC 2918); one that cannot be asked (no route refresh capability) has its
   * session reset. Throws, changing nothing, when a policy does not compile.
   */
  setPolicies(address: string, policies: Pick<NeighborConfig, 'importPolicy' | 'exportPolicy'>): void {
    const n = this.neighbors.get(normalizeAddress(address));
    if (!n) throw new TypeError(`peer ${address}: not configured`);
    const importChanged = 'importPolicy' in policies && policies.importPolicy !== n.config.importPolicy;
    if (n.rib) {
      if (this.rib.setPolicies(n.rib, policies)) this.sendFrom(n, n.rib.out!);
    } else {
      // Checked now, as a session coming up would find them.
      if (policies.importPolicy !== undefined) compilePolicy(policies.importPolicy);
      if (policies.exportPolicy !== undefined) compilePolicy(policies.exportPolicy);
    }
    n.config = { ...n.config, ...policies };
    const s = n.peer.session;
    if (!importChanged || n.peer.state !== 'Established' || s === undefined) return;
    if (!s.routeRefresh) {
      void this.resetPeer(address, 'import policy changed; the peer cannot send its routes again (no route refresh)');
      return;
    }
    for (const f of s.negotiated.families) n.peer.sendRouteRefresh(f);
  }

  private onDown(n: Neighbor, d: SessionDown): void {
    n.peer.setUpdateSource(undefined);
    const held = n.maxPrefix?.tripped;
    n.maxPrefix?.sessionDown();
    if (held) {
      n.peer.lastError = held.message;
      d = { ...d, message: held.message };
    }
    if (n.bfdDown) {
      d = { ...d, message: `${n.bfdDown}; ${d.message}` };
      n.bfdDown = undefined;
    }
    if (n.rib) this.keepStale(n, n.rib, d.gracefulRestart);
    this.emit('peerDown', n.config.address, d);
    this.deferral.down(n.config.address);
    // A dynamic neighbour held down for its limit stays, refusing its connections, until released.
    if (n.dynamic && n.stale.size === 0 && !held) {
      // A dynamic neighbour lives as long as its session (as FRR's listen range).
      void n.peer.stop();
      this.neighbors.delete(normalizeAddress(n.config.address));
      this.forget(n);
    }
  }

  private onUpdate(n: Neighbor, u: ReceivedUpdate, error: BgpError | undefined): void {
    if (!n.rib) return;
    if (error) this.emit('updateError', n.config.address, error);
    this.publish(error?.action === 'treat-as-withdraw' ? this.rib.treatAsWithdraw(n.rib, u.message) : this.rib.update(n.rib, u));
    if (n.maxPrefix) this.checkMaxPrefix(n, n.maxPrefix);
    if (this.options.maxRoutes) this.checkMaxRoutes(n, this.options.maxRoutes);
  }

  /** After an UPDATE: past the speaker's maxRoutes, the peer that sent it is stopped with Cease 6/8 and held down. */
  private checkMaxRoutes(n: Neighbor, m: MaxRoutes): void {
    if (!n.rib || n.maxPrefix?.tripped) return;
    const e = maxRoutesExceeded(m, this.rib.receivedPaths, n.rib.stats.routes);
    if (!e) return;
    n.maxPrefix ??= new MaxPrefixGuard({});
    this.emit('maxPrefix', n.config.address, e);
    n.maxPrefix.holdDown(e, () => this.release(n));
    void n.peer.stop({ subcode: CeaseSubcode.OUT_OF_RESOURCES });
  }

  /** After an UPDATE: warn, or stop the session with Cease 6/1 and hold the peer down (FRR's maximum-prefix). */
  private checkMaxPrefix(n: Neighbor, guard: MaxPrefixGuard): void {
    if (guard.tripped || !n.rib) return;
    const stats = n.rib.stats;
    for (const e of guard.check((f) => stats.routes[f])) {
      this.emit('maxPrefix', n.config.address, e);
      if (e.action !== 'shutdown' || guard.tripped) continue;
      guard.holdDown(e, () => this.release(n));
      void n.peer.stop({ subcode: CeaseSubcode.MAX_PREFIXES_REACHED, data: maxPrefixData(e.family, e.limit) });
    }
  }

  /**
   * Ends a peer's hold-down after it exceeded its maxPrefixes (FRR's `clear bgp` for a limit
   * with no restart time): the session starts again now. Returns false when the peer was not held.
   */
  clearMaxPrefix(address: string): boolean {
    const n = this.neighbors.get(normalizeAddress(address));
    if (!n) throw new TypeError(`peer ${address}: not configured`);
    if (!n.maxPrefix?.clear()) return false;
    this.release(n);
    return true;
  }

  /** A held-down peer starts again; a dynamic one is forgotten, to be made anew when it connects. */
  private release(n: Neighbor): void {
    if (this.neighbors.get(normalizeAddress(n.config.address)) !== n) return;
    if (n.dynamic) {
      this.neighbors.delete(normalizeAddress(n.config.address));
      this.forget(n);
      return;
    }
    n.peer.start();
  }

  private onEndOfRib(n: Neighbor, family: AddressFamily): void {
    if (n.stale.has(family)) this.sweep(n, [family]);
    this.deferral.endOfRib(n.config.address, family);
    this.emit('endOfRib', n.config.address, family);
  }

  /**
   * A session went down: the routes of the families the peer restarts gracefully in stay, as
   * stale, for its restart time; then, in the families where both sides do long-lived graceful
   * restart, for its long-lived stale time more, marked LLGR_STALE (RFC 9494). A restart time of
   * 0, or a family in the long-lived capability alone, starts the long-lived period at once.
   */
  private keepStale(n: Neighbor, rib: RibPeer, gr: SessionDown['gracefulRestart']): void {
    const has = (f: AddressFamily) => rib.families.includes(f);
    const restarting = gr?.families.filter(has) ?? [];
    const longLived = new Map((gr?.longLived ?? []).filter((l) => has(l.family)).map((l) => [l.family, l.staleTime]));
    const keep = [...new Set([...restarting, ...longLived.keys()])];
    this.publish(this.rib.peerDown(rib, { keepStale: keep }));
    this.clearStaleTimers(n);
    n.stale = new Set(keep);
    n.longLived = longLived;
    const waiting = gr !== undefined && gr.restartTime > 0 ? restarting : [];
    for (const f of keep) if (!waiting.includes(f)) this.restartTimeOver(n, f);
    if (waiting.length > 0) {
      n.staleTimer = setTimeout(() => {
        for (const f of [...n.stale]) if (!n.longLivedTimers.has(f)) this.restartTimeOver(n, f);
      }, gr!.restartTime * 1000).unref();
    }
  }

  /** The restart time is over for a family: its stale routes go, or enter their long-lived stale period. */
  private restartTimeOver(n: Neighbor, f: AddressFamily): void {
    const staleTime = n.longLived.get(f);
    if (staleTime === undefined || staleTime === 0 || !n.rib) {
      this.sweep(n, [f]);
      return;
    }
    this.publish(this.rib.markLongLivedStale(n.rib, f));
    n.longLivedTimers.set(
      f,
      setLongTimeout(() => this.sweep(n, [f]), staleTime * 1000),
    );
  }

  private clearStaleTimers(n: Neighbor): void {
    clearTimeout(n.staleTimer);
    n.staleTimer = undefined;
    for (const t of n.longLivedTimers.values()) t.clear();
    n.longLivedTimers.clear();
  }

  private sweep(n: Neighbor, families: AddressFamily[]): void {
    for (const f of families) {
      n.stale.delete(f);
      n.longLivedTimers.get(f)?.clear();
      n.longLivedTimers.delete(f);
      if (n.rib) this.publish(this.rib.sweepStale(n.rib, f));
    }
    if (n.stale.size === 0) this.clearStaleTimers(n);
  }

  /**
   * RFC 5882: the peer's BFD session, shared with any other client of the same path. A path
   * that goes down ends an Established session at once; a remote that took BFD down
   * administratively (AdminDown) does not (§3.2): only the path's failure counts.
   */
  private startBfd(n: Neighbor, localAddress: string | undefined): void {
    const timers = n.config.bfd === true ? {} : (n.config.bfd as BfdTimers);
    if (!this.bfdEndpoint) {
      const o = this.options.bfd;
      this.ownBfd = !isBfdEndpoint(o);
      this.bfdEndpoint = isBfdEndpoint(o) ? o : createBfdEndpoint(o);
      if (this.ownBfd) this.bfdEndpoint.on('error', (e) => this.emit('bfdError', e));
    }
    const s = this.bfdEndpoint.add({ peer: n.config.address, localAddress, ...timers });
    n.bfd = s;
    s.on('state', (to, from, diag) => {
      if (this.neighbors.get(normalizeAddress(n.config.address)) !== n) return;
      this.emit('bfdState', n.config.address, to, from, diagText(diag));
      if (from !== 'Up' || to !== 'Down' || s.variables.remoteSessionState === 'AdminDown') return;
      if (!n.peer.isEstablished) return;
      this.bfdDown(n, diag);
    });
  }

  /** RFC 5882 §4.1, RFC 9384: the path is gone, so is the session (Cease 6/10), and it starts again. */
  private bfdDown(n: Neighbor, diag: number): void {
    const why = `BFD down: ${diagText(diag)}`;
    n.bfdDown = why;
    void n.peer.stop({ subcode: CeaseSubcode.BFD_DOWN }).then(() => {
      n.peer.lastError = why;
      if (this.neighbors.get(normalizeAddress(n.config.address)) === n && !n.maxPrefix?.tripped) n.peer.start();
    });
    n.peer.lastError = why;
  }

  private forget(n: Neighbor): void {
    if (n.bfd) this.bfdEndpoint?.release(n.bfd);
    n.bfd = undefined;
    this.clearStaleTimers(n);
    n.maxPrefix?.clear();
    n.peer.dispose();
    if (n.rib) this.publish(this.rib.removePeer(n.rib));
    n.rib = undefined;
  }

  private publish(changes: BestPathChange[]): void {
    if (changes.length > 0) this.emit('bestPaths', changes);
  }

  private scheduleKick(peer: Peer): void {
    this.toKick.add(peer);
    if (this.kickScheduled) return;
    this.kickScheduled = true;
    setImmediate(() => {
      this.kickScheduled = false;
      const peers = [...this.toKick];
      this.toKick.clear();
      const gap = pacingMs(this.neighbors.size);
      for (const p of peers) p.kick(gap);
    });
  }
}

/** An origination's options with GRACEFUL_SHUTDOWN added and LOCAL_PREF 0 (RFC 8326 §3). */
function shutdownMarked(options: OriginateOptions | undefined): OriginateOptions {
  const a = (options?.attributes ?? {}) as OriginateOptions['attributes'] & { communities?: Array<number | string> };
  const communities = [...new Set([...(a.communities ?? []), GRACEFUL_SHUTDOWN])];
  return { ...options, attributes: { ...a, communities, localPref: 0 } as OriginateOptions['attributes'] };
}

/**
 * How long a session holds UPDATEs prompted by new changes after its last batch: a batch per
 * change costs a pull and a write per session, which a speaker of thousands of sessions cannot
 * pay for every client's announcement (200 ms at 1,000 sessions and up), while a node with a
 * few peers sends each change at once (a new pod's block reaches every kernel without waiting).
 */
function pacingMs(sessions: number): number {
  return Math.min(200, Math.round(sessions * 0.2));
}

/** A peer's `bfd`: true, false or timers, each checked, naming the field. */
function checkPeerBfd(c: NeighborConfig): void {
  const b = c.bfd;
  if (typeof b === 'boolean') return;
  checkBfdTimers(`peer ${c.address} bfd`, b);
}

/** An address that means "every address" to listen(): no one address to dial from. */
function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || /^(0:){7}0$|^::0?$/.test(host);
}

/** Whether a connecting peer's address lies in a dynamic neighbors range (ip/ reads both). */
function inRange(address: string, range: Cidr): boolean {
  try {
    return cidrContains(range, parseAddress(address, 'peer address'));
  } catch (e) {
    // An address ip/ does not read (one with a zone, say) is in no range: the socket is refused.
    if (e instanceof AddressError) return false;
    throw e;
  }
}
