// The node agent: one per host. It registers the host's Node, keeps BGP sessions equal to
// what the cluster state asks for (mesh, reflectors, BGPPeers), announces the node's blocks
// and borrowed addresses, and feeds felix with local workloads, learned routes and the
// pools' encapsulation. Everything follows one datastore watch, live.
//
// This file only wires the parts together; each part is its own file (see README.md).
import { dirname } from 'node:path';
import { EventEmitter } from 'eventemitter3';
import type { BestPathChange, BgpSpeaker } from '../../bgp/index.js';
import {
  Felix,
  PODROUTE_PROTOCOL,
  PolicyProgrammer,
  type ApplyReport,
  type CompileOptions,
  type ConntrackCleaner,
  type Dataplane,
  type FelixOptions,
  type NftDataplane,
  type PolicyProgrammerOptions,
  type RemoteRoute,
  type RuleCounter,
  type ServiceInput,
  type TableDump,
  type WireguardInput,
  type WireguardLocal,
} from '../../felix/index.js';
import { defaultDatastoreFile, type BackendDatastore, type Durability, type WatchEvent, type Watcher } from '../datastore/index.js';
import { Ipam } from '../ipam/index.js';
import type { Advertisements } from './advertise.js';
import { IdleScavenger } from './idle-scavenge.js';
import { Advertiser, NOTHING_ADVERTISED } from './advertiser.js';
import { serviceExportPolicy } from './service-advertise.js';
import { AgentMetrics } from './agent-metrics.js';
import { autodetectIpv4, autodetectIpv6, checkNodeAddress, interfaceOf, withPrefixLength } from './autodetect.js';
import { routerIdFor } from './router-id.js';
import { CLUSTER_KINDS, ClusterCache } from './cluster-cache.js';
import { FelixFeed } from './felix-feed.js';
import { StoreLossGuard } from './store-loss.js';
import { detectRestart, GracefulRestart } from './graceful-restart.js';
import { NodeSpeaker, speakerSettings } from './node-speaker.js';
import { desiredPeers } from './peers.js';
import { PolicyFeed } from './policy-feed.js';
import { FlowLog, type FlowLogSettings } from './flow-log.js';
import { ServiceFeed } from './service-feed.js';
import { ServiceController } from '../services/controller.js';
import { ensureDefaultPool, registerNode, type DefaultPool } from './registration.js';
import { SessionReconciler } from './sessions.js';
import { agentStatus, peerStatusRows, type AgentStatus } from './status.js';
import { VtepAllocator } from './vtep.js';
import { DRAIN_ANNOTATION, type BGPConfiguration, type BGPPeer, type Node } from '../resources/index.js';
import { WireguardKeeper } from './wireguard.js';
import { WireguardPeers } from './wireguard-peers.js';

export interface NodeAgentOptions {
  nodeName: string;
  datastore: BackendDatastore;
  /** Where felix programs routes: LinuxDataplane on a host, MemoryDataplane in tests. */
  dataplane: Dataplane;
  /** The node's IPv4 address with prefix length; autodetected when absent; 'none': an IPv6-only node (Calico's IP=none). */
  ipv4Address?: string;
  /**
   * BGP router ID (Calico's CALICO_ROUTER_ID): a dotted IPv4 value, or 'hash' (from the node
   * name). Default: the IPv4 address, or 'hash' on an IPv6-only node.
   */
  routerId?: string;
  /** first-found (default) or interface=<regex>. */
  ipAutodetectionMethod?: string;
  /**
   * The node's IPv6 address with prefix length (Calico's IP6), or 'autodetect'; absent: the
   * Node's spec.bgp.ipv6Address if it has one, else the node has no IPv6 sessions.
   */
  ipv6Address?: string;
  /** How 'autodetect' finds the IPv6 address (IP6_AUTODETECTION_METHOD): first-found or interface=<regex>. */
  ip6AutodetectionMethod?: string;
  /** Interface that reaches the node's subnet; default the one holding the address, else eth0. */
  uplink?: string;
  /** The node's own AS (Node spec.bgp.asNumber); default BGPConfiguration's, then 64512. */
  asNumber?: number;
  labels?: Record<string, string>;
  /** Makes this node a route reflector with this cluster ID. */
  routeReflectorClusterId?: string;
  /** BGP port; default BGPConfiguration.listenPort, then 179. Peers are dialled on the same port. */
  bgpPort?: number;
  /** Address to listen on; default the node address. */
  listenAddress?: string;
  holdTime?: number;
  connectRetryTime?: number;
  /** Graceful restart time we advertise (s). Default 120. */
  restartTime?: number;
  /** After a restart, longest wait for every peer's End-of-RIB before felix's first resync. Default 30 s. */
  gracefulRestartWaitMs?: number;
  /** After a drain's GRACEFUL_SHUTDOWN routes were sent, how long the peers get to move (ms). Default 5000. */
  drainSettleMs?: number;
  felix?: FelixOptions;
  /**
   * FelixConfiguration's wireguardEnabled / wireguardEnabledV6: this node makes a key pair per
   * family, publishes the public key and its device address, and felix encrypts pod traffic to
   * every node that did the same (felix.wireguardDataplane programs it). Default off.
   */
  wireguard?: { v4: boolean; v6: boolean };
  /** Where the node keeps its WireGuard private keys (0600 files). Default: $PODROUTE_STATE_DIR, else /var/lib/podroute (root). */
  stateDir?: string;
  /**
   * Where network policy and NAT-outgoing are enforced: the nftables table podroute owns
   * (NftablesDataplane on a host, MemoryNftDataplane in tests). Absent: not enforced.
   */
  policyDataplane?: NftDataplane;
  policy?: PolicyProgrammerOptions & { compile?: CompileOptions };
  /**
   * Flow logs (needs policyDataplane on a kernel): conntrack's connections and the packets the
   * policy rules log, as records per window, served on the control socket (`GET /flows`). Absent: off.
   */
  flowLogs?: FlowLogSettings;
  /**
   * Deletes the UDP conntrack entries a services change leaves pointing at removed endpoints
   * (NetlinkConntrackCleaner on a host). Absent: they live out their timeout.
   */
  serviceConntrack?: ConntrackCleaner;
  /**
   * Run the service controller (default true): cluster IPs and NodePorts for Services without
   * them, selector Services' EndpointSlices in line with the pods. Every agent may: each write
   * is a compare-and-set of the same computed objects, so one lands.
   */
  serviceController?: boolean;
  /** Created when the datastore has no pool at all (calico/node's CALICO_IPV4POOL_CIDR). false: none. */
  defaultIpv4Pool?: DefaultPool | false;
  /**
   * Run V8's young-generation collection in the quiet after the dataplane's work (default true),
   * so that no change pays for one (idle-scavenge.ts). false: V8 runs it when it must.
   */
  idleScavenge?: boolean;
  log?: (event: string, fields: Record<string, unknown>) => void;
}

export interface NodeAgentEvents {
  ready: [];
  programmed: [ApplyReport];
  error: [Error];
}

export class NodeAgent extends EventEmitter<NodeAgentEvents> {
  readonly felix: Felix;
  readonly ipam: Ipam;
  readonly metrics: AgentMetrics;
  /** The node's IPv4 address with prefix length; '' on an IPv6-only node. */
  address = '';
  routerId = '';
  /** The node's IPv6 address with prefix length; '' when it has none. */
  addressV6 = '';
  /** The Node's spec.bgp.ipv6Address `addressV6` was taken from: followed live. */
  private v6FromNode: string | undefined;
  uplink = 'eth0';
  restarting = false;
  ready = false;

  private readonly cache: ClusterCache;
  private readonly feed: FelixFeed;
  private readonly storeLoss: StoreLossGuard;
  private readonly vtep: VtepAllocator;
  private readonly wireguard: WireguardKeeper;
  /** The other nodes as WireGuard peers, kept between reconciles. */
  private readonly wireguardPeers = new WireguardPeers();
  /** The WireGuard input felix was last given (null: none, WireGuard off; undefined: nothing yet). */
  private wireguardGiven: WireguardInput | null | undefined;
  private readonly policy: PolicyFeed | undefined;
  /** The node's flow log, when flow logs are on. */
  readonly flows: FlowLog | undefined;
  /** Services into the policy programmer's table: present when policy is. */
  private readonly services: ServiceFeed | undefined;
  private readonly serviceController: ServiceController | undefined;
  private readonly idleScavenger: IdleScavenger | undefined;
  /** The nftables table's one programmer, policy's and services'. */
  private readonly programmer: PolicyProgrammer | undefined;
  // Made in start(), once the address and the restart are known.
  private bgp: NodeSpeaker | undefined;
  private gracefulRestart: GracefulRestart | undefined;
  // One of each per speaker: a new speaker starts with no sessions and nothing originated.
  private sessions: SessionReconciler | undefined;
  private advertiser: Advertiser | undefined;
  private watcher: Watcher | undefined;
  private firstSync: (() => void) | undefined;
  private reconcileScheduled = false;
  private stopped = false;
  /** The drain under way or done (RFC 8326), while the Node asks for it or is gone. */
  private drainRun: Promise<void> | undefined;
  /** This node's Node was seen in the store: its absence later means it was deleted. */
  private selfSeen = false;

  constructor(readonly options: NodeAgentOptions) {
    super();
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(options.nodeName)) {
      throw new Error(`nodeName: ${JSON.stringify(options.nodeName)} must be lower-case letters, digits, '-' and '.'`);
    }
    this.felix = new Felix(options.dataplane, options.felix);
    // Guarded by default: the store seen at this agent's first allocation, kept in memory for its
    // life, and a store emptied or replaced since refused.
    this.ipam = new Ipam(options.datastore);
    this.metrics = new AgentMetrics(this);
    this.cache = new ClusterCache(options.nodeName);
    this.feed = new FelixFeed(this.felix, (e, f) => this.log(e, f));
    this.storeLoss = new StoreLossGuard({
      datastore: options.datastore,
      owned: () => ({ self: this.cache.self, workloads: this.cache.workloads.values(), pools: this.cache.pools.values() }),
      resume: (waited) => {
        for (const e of waited) this.onEvent(e);
      },
      log: (e, f) => this.log(e, f),
    });
    this.vtep = new VtepAllocator({
      nodeName: options.nodeName,
      datastore: options.datastore,
      ipam: this.ipam,
      log: (e, f) => this.log(e, f),
      onDatastoreError: () => this.metrics.datastoreErrors.inc(),
    });
    this.wireguard = new WireguardKeeper({
      nodeName: options.nodeName,
      datastore: options.datastore,
      ipam: this.ipam,
      stateDir: options.stateDir ?? dirname(defaultDatastoreFile()),
      enabled: options.wireguard ?? { v4: false, v6: false },
      log: (e, f) => this.log(e, f),
      onDatastoreError: () => this.metrics.datastoreErrors.inc(),
      reconcile: () => this.scheduleReconcile(),
    });
    this.idleScavenger = options.idleScavenge === false ? undefined : new IdleScavenger({ busy: () => this.policyBusy() });
    this.felix.on('report', (r) => {
      this.metrics.onReport(r);
      this.emit('programmed', r);
      this.idleScavenger?.workDone();
    });
    this.felix.on('error', (e) => this.log('felix-error', { error: e.message }));
    if (options.policyDataplane) {
      // One programmer, one table: policy sets its base, services their part of it.
      const programmer = new PolicyProgrammer(options.policyDataplane, options.policy);
      programmer.on('report', () => this.idleScavenger?.workDone());
      this.programmer = programmer;
      if (options.flowLogs)
        this.flows = new FlowLog(options.flowLogs, {
          nodeName: options.nodeName,
          workloads: () => this.cache.workloads,
          services: () => this.services?.input,
          log: (e, f) => this.log(e, f),
        });
      const flows = this.flows;
      this.policy = new PolicyFeed({
        nodeName: options.nodeName,
        programmer,
        compile: flows ? { ...options.policy?.compile, flowLogs: flows.rules } : options.policy?.compile,
        onInput: flows ? (input) => flows.policyInput(input) : undefined,
        log: (e, f) => this.log(e, f),
      });
      this.services = new ServiceFeed({
        nodeName: options.nodeName,
        programmer,
        nodeAddresses: () => [this.address, this.addressV6],
        conntrack: options.serviceConntrack,
        log: (e, f) => this.log(e, f),
      });
    }
    if (options.serviceController !== false)
      this.serviceController = new ServiceController(options.datastore, { log: (e, f) => this.log(e, f) });
  }

  get nodeName(): string {
    return this.options.nodeName;
  }

  get ds(): BackendDatastore {
    return this.options.datastore;
  }

  get speaker(): BgpSpeaker | undefined {
    return this.bgp?.speaker;
  }

  private get advertised(): Advertisements {
    return this.advertiser?.advertised ?? NOTHING_ADVERTISED;
  }

  /**
   * A store that can lose acknowledged writes comes back and hands out addresses twice: say so
   * loudly. The store says how it keeps them (a memory store is for tests and demos: no warning).
   */
  private async warnIfStoreMayForget(): Promise<void> {
    let d: Durability;
    try {
      d = await this.ds.durability();
    } catch (e) {
      // Redis's CONFIG may be renamed or forbidden (managed Redis), etcd may not answer: say that we could not tell.
      this.log('datastore-persistence-unknown', { error: (e as Error).message });
      return;
    }
    // One etcd member is one disk: losing it loses every allocation; two cannot lose either.
    if (d.store === 'etcd' && d.members < 3)
      this.log('datastore-no-failover', { members: d.members, advice: 'run etcd with three or more members' });
    if (d.store === 'redis' && d.persistence.risk) {
      const p = d.persistence;
      this.log('datastore-persistence-risk', { risk: p.risk, appendonly: p.appendonly, appendfsync: p.appendfsync, save: p.save });
    }
  }

  /** Whether the nftables table has a transaction queued or in flight: the idle scavenge waits for it. */
  private policyBusy(): boolean {
    return this.programmer?.busy ?? false;
  }

  private log(event: string, fields: Record<string, unknown> = {}): void {
    this.options.log?.(event, { node: this.nodeName, ...fields });
  }

  /** Registers the Node, follows the datastore, brings up BGP and felix. Resolves once in sync. */
  async start(): Promise<void> {
    const o = this.options;
    const v4None = o.ipv4Address === 'none';
    const detected = v4None
      ? { cidr: '', interface: undefined }
      : o.ipv4Address
        ? { cidr: o.ipv4Address, interface: o.uplink ?? interfaceOf(o.ipv4Address) }
        : autodetectIpv4(o.ipAutodetectionMethod);
    if (!v4None) checkNodeAddress(detected.cidr);
    this.address = detected.cidr;
    const v6 = o.ipv6Address === 'autodetect' ? autodetectIpv6(o.ip6AutodetectionMethod).cidr : o.ipv6Address;
    if (v6 !== undefined) checkNodeAddress(v6, 'ipv6Address', 6);
    // An IPv6-only node peers and forwards over its IPv6 address, so it must have one.
    if (v4None && v6 === undefined) throw new Error('ipv4Address: none needs an IPv6 address (ipv6Address)');
    this.routerId = routerIdFor(this.nodeName, this.address, o.routerId);
    this.uplink = o.uplink ?? detected.interface ?? (v4None && v6 ? interfaceOf(v6) : undefined) ?? 'eth0';
    const registeredV6 = await registerNode(this.ds, {
      nodeName: this.nodeName,
      address: this.address,
      addressV6: v6,
      asNumber: o.asNumber,
      routeReflectorClusterId: o.routeReflectorClusterId,
      labels: o.labels,
    });
    this.followNodeV6(registeredV6);
    await ensureDefaultPool(this.ds, o.defaultIpv4Pool);
    this.restarting = await detectRestart(o.dataplane, o.felix?.protocol ?? PODROUTE_PROTOCOL);
    this.log('starting', {
      address: this.address,
      addressV6: this.addressV6 || undefined,
      uplink: this.uplink,
      restarting: this.restarting,
    });
    await this.warnIfStoreMayForget();
    await this.storeLoss.start();
    // Before policy is programmed, so the first connections it decides are read. Flow logs
    // failing (an old addon, the log group taken) leave the agent running without them.
    await this.flows?.start().catch((e: Error) => this.log('flow-logs-error', { error: e.message }));

    const log = (e: string, f: Record<string, unknown>) => this.log(e, f);
    this.gracefulRestart = new GracefulRestart({
      restarting: this.restarting,
      waitMs: o.gracefulRestartWaitMs ?? 30_000,
      peers: () => this.sessions?.peers.keys() ?? [],
      release: () => this.startFelix(),
      log,
    });
    this.bgp = new NodeSpeaker({
      hostname: this.nodeName,
      listenAddress: o.listenAddress,
      restarting: this.restarting,
      restartTime: o.restartTime,
      // One wait for the peers' End-of-RIBs after a restart: felix's first resync and our own
      // advertisements (the kernel kept our routes, so the peers keep theirs to us meanwhile).
      selectDeferTime: (o.gracefulRestartWaitMs ?? 30_000) / 1000,
      log,
    });
    this.bgp.on('bestPaths', (changes) => this.onBestPaths(changes));
    this.bgp.on('endOfRib', (address) => {
      this.gracefulRestart?.markEndOfRib(address);
      this.maybeStartFelix();
    });
    this.bgp.on('error', (e) => this.emit('error', e));

    const synced = new Promise<void>((resolve) => (this.firstSync = resolve));
    this.watcher = this.ds.watch({
      kinds: [...new Set([...CLUSTER_KINDS, ...(this.policy ? PolicyFeed.kinds : []), ...(this.services ? ServiceFeed.kinds : [])])],
    });
    this.serviceController?.start().catch((e: Error) => this.log('service-controller-error', { error: e.message }));
    this.watcher.on('event', (e) => this.onEvent(e));
    this.watcher.on('status', (s) => {
      if (s === 'replaced') this.storeLoss.suspect();
    });
    this.watcher.on('error', (e) => {
      this.metrics.datastoreErrors.inc();
      this.log('datastore-error', { error: e.message });
    });
    await synced;
  }

  /**
   * Stops the agent. `graceful` (a restart: what SIGTERM means to `podroute node run`): BGP
   * sessions close without a Cease, so peers keep this node's routes while it is away, and the
   * kernel's routes and rules stay as they are; the agent that starts next takes them over.
   */
  async stop(message = 'node agent stopping', options: { graceful?: boolean } = {}): Promise<void> {
    if (this.stopped) return;
    // A node leaving for good (its Node annotated for drain, or deleted) does not restart: its
    // peers are led away from it first, then get a Cease, instead of keeping its routes.
    if (options.graceful && (this.drainRun !== undefined || (this.selfSeen && this.cache.self === undefined))) {
      await (this.drainRun ??= this.drainBgp('node leaving'));
      options = { ...options, graceful: false };
    }
    this.stopped = true;
    this.gracefulRestart?.stop();
    this.storeLoss.stop();
    this.wireguard.close();
    await this.watcher?.close();
    await this.bgp?.stop(message, options);
    this.felix.stop();
    await this.serviceController?.stop();
    this.policy?.stop();
    this.flows?.stop();
    this.idleScavenger?.close();
  }

  private onEvent(e: WatchEvent): void {
    if (this.storeLoss.offer(e)) return; // held: the store was replaced under us
    if (e.type === 'synced') {
      // Policy does not wait for BGP: a pod's rules hold from the first sync on.
      this.policy?.start();
      this.services?.start();
      this.scheduleReconcile();
      const first = this.firstSync;
      this.firstSync = undefined;
      if (first)
        void this.reconcile().then(first, (err: Error) => {
          this.emit('error', err);
          first();
        });
      return;
    }
    this.policy?.apply(e);
    this.services?.apply(e);
    if (this.cache.apply(e) && !this.firstSync) this.scheduleReconcile();
  }

  private scheduleReconcile(): void {
    if (this.reconcileScheduled || this.firstSync) return;
    this.reconcileScheduled = true;
    setImmediate(() => {
      this.reconcileScheduled = false;
      if (this.stopped) return;
      this.reconcile().catch((e: Error) => {
        this.log('reconcile-error', { error: e.message });
        this.emit('error', e);
      });
    });
  }

  /**
   * Takes the Node's IPv6 address (set by --ip6 or by the user on the Node, live). One the agent
   * cannot use (bare, and no interface holds it) leaves the node without IPv6 and says why:
   * its IPv4 sessions and routes are not held hostage to it.
   */
  private followNodeV6(text: string | undefined): void {
    if (text === this.v6FromNode) return;
    this.v6FromNode = text;
    let cidr = '';
    if (text !== undefined) {
      const full = withPrefixLength(text);
      try {
        if (full === undefined) throw new Error(`no prefix length, and no interface of this host holds ${text}`);
        checkNodeAddress(full, 'spec.bgp.ipv6Address', 6);
        cidr = full;
      } catch (e) {
        this.log('node-ipv6-address-unusable', { addressV6: text, error: (e as Error).message });
      }
    }
    if (cidr !== this.addressV6) this.log('node-ipv6-address', { addressV6: cidr || undefined });
    // NodePorts listen on the node's addresses: a new one is a new frontend.
    if (cidr !== this.addressV6) this.services?.refresh();
    this.addressV6 = cidr;
  }

  /** Brings sessions, announcements and felix's input in line with the cached cluster state. */
  private async reconcile(): Promise<void> {
    const self = this.cache.self;
    if (!self || this.stopped || !this.bgp) return;
    const o = this.options;
    this.followNodeV6(self.spec.bgp?.ipv6Address);
    const settings = speakerSettings(self, this.cache.config, this.address, o.bgpPort, this.addressV6, this.routerId);
    this.selfSeen = true;
    if (self.metadata.annotations?.[DRAIN_ANNOTATION] !== undefined) this.drainRun ??= this.drainBgp('podroute node drain');
    else this.drainRun = undefined; // undrained: a new speaker, its sessions and announcements
    if (this.drainRun === undefined) this.reconcileBgp(self, settings);
    this.pushFelix();
    this.maybeStartFelix();
    void this.vtep.ensure(self, this.cache.pools.values());
    void this.wireguard.ensure(self, this.cache.pools.values());
    this.pushWireguard(self);
  }

  /**
   * RFC 8326: this node's routes again with GRACEFUL_SHUTDOWN, a wait for the peers to move to
   * other paths (bounded), then every session closed with a Cease. The kernel's routes stay.
   */
  private async drainBgp(why: string): Promise<void> {
    const speaker = this.bgp?.speaker;
    this.log('drain-started', { why });
    await speaker?.drain({ settleMs: this.options.drainSettleMs ?? 5000, timeoutMs: 60_000, message: why });
    this.log('drained', { why });
  }

  private reconcileBgp(self: Node, settings: ReturnType<typeof speakerSettings>): void {
    const o = this.options;
    const speaker = this.bgp!.ensure(settings);
    let { sessions, advertiser } = this;
    if (!sessions || !advertiser || sessions.speaker !== speaker) {
      sessions = this.sessions = new SessionReconciler(speaker, (e, f) => this.log(e, f));
      advertiser = this.advertiser = new Advertiser(speaker);
    }
    const peers = desiredPeers(this.cache.peerView(self));
    this.feed.peers(peers);
    sessions.reconcile(peers, {
      port: settings.port,
      localAddress: settings.address,
      localAddressV6: settings.addressV6,
      holdTime: o.holdTime,
      connectRetryTime: o.connectRetryTime,
      restartTime: o.restartTime,
      localAs: settings.asn,
      ebgpExportPolicy: serviceExportPolicy(this.cache),
      bgpFilters: this.cache.bgpFilters,
    });
    advertiser.reconcile(this.nodeName, [...this.cache.blocks.values()], this.cache.config, {
      // What felix does not program is not announced either (a refused Service's cluster IP may be another's).
      services: this.services?.admitted() ?? this.cache.services.values(),
      slices: this.cache.endpointSlices.values(),
      nodeLabels: self.metadata.labels,
    });
  }

  /**
   * Felix's WireGuard input when it changed: keys, and the other nodes' keys, addresses and
   * blocks. Compared by fields: the peers by WireguardPeers, this node's side here.
   */
  private pushWireguard(self: Node): void {
    if (!this.wireguard.enabled) {
      if (this.wireguardGiven !== null) this.felix.setWireguard(undefined);
      this.wireguardGiven = null;
      return;
    }
    const peersChanged = this.wireguardPeers.update(this.cache, self.metadata.name);
    const given = this.wireguardGiven;
    const v4 = this.wireguard.local(self, 4),
      v6 = this.wireguard.local(self, 6);
    if (!peersChanged && given && sameLocal(given.v4, v4) && sameLocal(given.v6, v6)) return;
    const input = this.wireguard.inputWith(self, this.wireguardPeers.peers);
    this.wireguardGiven = input ?? null;
    this.felix.setWireguard(input);
  }

  private onBestPaths(changes: BestPathChange[]): void {
    this.metrics.markRoutesChanged();
    // Learned routes reach felix as deltas; the cache's parts did not change, so they are not
    // pushed again (that cost a pass over every Node per UPDATE: 65 % of the agent's CPU in a
    // mesh of 4,000).
    this.feed.learn(changes, [this.address, this.addressV6]);
  }

  private pushFelix(): void {
    const self = this.cache.self;
    if (self)
      this.feed.push(
        this.cache,
        self,
        { address: this.address, addressV6: this.addressV6 || undefined, uplink: this.uplink },
        this.advertised.blocks,
      );
  }

  private maybeStartFelix(): void {
    if (this.stopped || !this.cache.self) return;
    this.gracefulRestart?.check();
  }

  private startFelix(): void {
    this.felix.start().then(
      (r) => {
        this.log('felix-started', {
          routes: r.routesCreated + r.routesReplaced + r.routesUnchanged,
          deleted: r.routesDeleted,
          failures: r.failures.length,
        });
        this.ready = true;
        this.emit('ready');
      },
      (e: Error) => this.emit('error', e),
    );
  }

  /** What `podroute node status` shows. */
  status(): AgentStatus {
    return agentStatus({
      nodeName: this.nodeName,
      address: this.address,
      addressV6: this.addressV6,
      self: this.cache.self,
      config: this.cache.config,
      routerId: this.speaker?.routerId ?? '',
      ready: this.ready,
      restarting: this.restarting,
      peers: peerStatusRows(this.sessions?.peers.values() ?? [], this.speaker?.peerStatus() ?? [], this.sessions?.refused),
      advertised: this.advertised,
      learned: this.feed.learnedCount,
      desiredRoutes: this.felix.desiredRouteCount,
      failures: this.felix.failures.size,
      unresolved: this.felix.unresolved,
      failed: this.felix.failures,
      datastoreHeld: this.storeLoss.hold,
      services: this.services?.status(),
    });
  }

  /** Packets and bytes per policy rule id, read from the kernel; empty when policy is not enforced. */
  policyCounters(): Promise<Map<string, RuleCounter>> {
    return this.policy?.counters() ?? Promise.resolve(new Map());
  }

  /** What felix was last given about Services on this node; undefined when policy (and so services) is off. */
  serviceInput(): ServiceInput | undefined {
    return this.services?.input;
  }

  /** Resolves once the last service change is in the kernel. */
  servicesSettled(): Promise<void> {
    return this.services?.settled() ?? Promise.resolve();
  }

  /** The policy table in nft syntax (felix's, or with `kernel` the kernel's marked against it); undefined when policy is off. */
  policyDump(kernel: boolean): Promise<TableDump | undefined> {
    return this.policy?.dump(kernel) ?? Promise.resolve(undefined);
  }

  /** Resources the policy calculation refused, with why. */
  policyRefused(): ReadonlyMap<string, string> {
    return this.policy?.refused ?? new Map();
  }

  /** The Nodes, BGPPeers and BGPConfiguration `default` the agent follows, as its watch last gave them. */
  clusterResources(): { nodes: Node[]; bgpPeers: BGPPeer[]; config: BGPConfiguration | undefined } {
    return { nodes: [...this.cache.nodes.values()], bgpPeers: [...this.cache.bgpPeers.values()], config: this.cache.config };
  }

  /** Learned routes as felix is given them (prefix → next hops). */
  learnedRoutes(): RemoteRoute[] {
    return this.feed.learnedRoutes();
  }
}

function sameLocal(a: WireguardLocal | undefined, b: WireguardLocal | undefined): boolean {
  return a?.privateKey === b?.privateKey && a?.interfaceAddress === b?.interfaceAddress;
}
