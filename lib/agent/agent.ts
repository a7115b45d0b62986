// The node agent: one per host. It registers the host's Node, keeps BGP sessions equal to
// what the cluster state asks for (mesh, reflectors, BGPPeers), announces the node's blocks
// and borrowed addresses, and feeds felix with local workloads, learned routes and the
// pools' encapsulation. Everything follows one datastore watch, live.
import { createHash } from 'node:crypto';
import { EventEmitter } from 'eventemitter3';
import { BgpSpeaker, type BestPathChange, type NeighborConfig } from '../../bgp/index.js';
import { Felix, type ApplyReport, type Dataplane, type FelixOptions, type LocalWorkload, type PoolConfig, type RemoteRoute, type RemoteVtep, PODROUTE_PROTOCOL } from '../../felix/index.js';
import type { BackendDatastore, WatchEvent, Watcher } from '../datastore/index.js';
import { AlreadyExistsError } from '../datastore/index.js';
import { Ipam } from '../ipam/index.js';
import { API_VERSION, BGP_DEFAULTS, type BGPConfiguration, type BGPPeer, type IPAMBlock, type IPPool, type Node, type Resource, type WorkloadEndpoint } from '../resources/types.js';
import { advertisements, allPrefixes, type Advertisements } from './advertise.js';
import { autodetectIpv4, interfaceOf } from './autodetect.js';
import { clusterIdOf, desiredPeers, nodeAsn, nodeIpv4, peerChanged, type DesiredPeer, type PeerType } from './peers.js';
import { routeReflectorRibOptions } from '../../reflector/index.js';
import { AgentMetrics } from './agent-metrics.js';

export const VXLAN_ADDRESS_ANNOTATION = 'podroute.io/vxlan-tunnel-address';
export const VXLAN_MAC_ANNOTATION = 'podroute.io/vxlan-tunnel-mac';

export interface NodeAgentOptions {
  nodeName: string;
  datastore: BackendDatastore;
  /** Where felix programs routes: LinuxDataplane on a host, MemoryDataplane in tests. */
  dataplane: Dataplane;
  /** The node's IPv4 address with prefix length; autodetected when absent. */
  ipv4Address?: string;
  /** first-found (default) or interface=<regex>. */
  ipAutodetectionMethod?: string;
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
  felix?: FelixOptions;
  /** Created when the datastore has no pool at all (calico/node's CALICO_IPV4POOL_CIDR). false: none. */
  defaultIpv4Pool?: { cidr: string; blockSize?: number; vxlanMode?: IPPool['spec']['vxlanMode']; ipipMode?: IPPool['spec']['ipipMode'] } | false;
  log?: (event: string, fields: Record<string, unknown>) => void;
}

export interface AgentPeerStatus {
  address: string;
  asn: number;
  type: PeerType;
  source: string;
  state: string;
  since: number;
  info: string;
  prefixesReceived: number;
  prefixesSent: number;
}

export interface AgentStatus {
  node: string;
  address: string;
  asn: number;
  routerId: string;
  clusterId?: string;
  ready: boolean;
  restarting: boolean;
  peers: AgentPeerStatus[];
  advertised: Advertisements;
  routes: { learned: number; programmed: number; failures: number };
}

export interface NodeAgentEvents {
  ready: [];
  programmed: [ApplyReport];
  error: [Error];
}

const MAX_PATHS = 8;

export class NodeAgent extends EventEmitter<NodeAgentEvents> {
  readonly felix: Felix;
  readonly ipam: Ipam;
  readonly metrics: AgentMetrics;
  speaker: BgpSpeaker | undefined;
  address = '';
  uplink = 'eth0';
  restarting = false;
  ready = false;

  private readonly nodes = new Map<string, Node>();
  private readonly bgpPeers = new Map<string, BGPPeer>();
  private readonly pools = new Map<string, IPPool>();
  private readonly blocks = new Map<string, IPAMBlock>();
  private readonly weps = new Map<string, WorkloadEndpoint>();
  private config: BGPConfiguration | undefined;
  private watcher: Watcher | undefined;
  private readonly peers = new Map<string, DesiredPeer>();
  private originated = new Set<string>();
  private advertised: Advertisements = { blocks: [], borrowed: [], services: [] };
  private readonly remote = new Map<string, string[]>();
  private readonly endOfRib = new Set<string>();
  private speakerKey = '';
  private reconcileScheduled = false;
  private felixStarted = false;
  private grTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private vxlanPending = false;
  private firstSync: (() => void) | undefined;

  constructor(readonly options: NodeAgentOptions) {
    super();
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(options.nodeName)) {
      throw new Error(`nodeName: ${JSON.stringify(options.nodeName)} must be lower-case letters, digits, '-' and '.'`);
    }
    this.felix = new Felix(options.dataplane, options.felix);
    this.ipam = new Ipam(options.datastore);
    this.metrics = new AgentMetrics(this);
    this.felix.on('report', (r) => {
      this.metrics.onReport(r);
      this.emit('programmed', r);
    });
    this.felix.on('error', (e) => this.log('felix-error', { error: e.message }));
  }

  get nodeName(): string {
    return this.options.nodeName;
  }

  get ds(): BackendDatastore {
    return this.options.datastore;
  }

  private log(event: string, fields: Record<string, unknown> = {}): void {
    this.options.log?.(event, { node: this.nodeName, ...fields });
  }

  /** Registers the Node, follows the datastore, brings up BGP and felix. Resolves once in sync. */
  async start(): Promise<void> {
    const detected = this.options.ipv4Address
      ? { cidr: this.options.ipv4Address, interface: this.options.uplink ?? interfaceOf(this.options.ipv4Address) }
      : autodetectIpv4(this.options.ipAutodetectionMethod);
    if (!detected.cidr.includes('/')) throw new Error(`ipv4Address: ${detected.cidr} needs a prefix length (e.g. 10.0.0.1/24)`);
    this.address = detected.cidr;
    this.uplink = this.options.uplink ?? detected.interface ?? 'eth0';
    await this.registerNode();
    await this.ensureDefaultPool();
    // Routes of ours already in the kernel: we restarted, and forwarding was kept.
    const installed = await this.options.dataplane.listRoutes();
    const protocol = this.options.felix?.protocol ?? PODROUTE_PROTOCOL;
    this.restarting = installed.some((r) => r.protocol === protocol);
    this.log('starting', { address: this.address, uplink: this.uplink, restarting: this.restarting });

    const synced = new Promise<void>((resolve) => (this.firstSync = resolve));
    this.watcher = this.ds.watch({ kinds: ['Node', 'BGPConfiguration', 'BGPPeer', 'IPPool', 'IPAMBlock', 'WorkloadEndpoint'] });
    this.watcher.on('event', (e) => this.onEvent(e));
    this.watcher.on('error', (e) => {
      this.metrics.datastoreErrors.inc();
      this.log('datastore-error', { error: e.message });
    });
    await synced;
  }

  async stop(message = 'node agent stopping'): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.grTimer);
    await this.watcher?.close();
    await this.speaker?.stop(message);
    this.felix.stop();
  }

  private async registerNode(): Promise<void> {
    const existing = await this.ds.get('Node', this.nodeName);
    const bgp: NonNullable<Node['spec']['bgp']> = { ...existing?.spec.bgp, ipv4Address: this.address };
    if (this.options.asNumber !== undefined) bgp.asNumber = this.options.asNumber;
    if (this.options.routeReflectorClusterId !== undefined) {
      if (this.options.routeReflectorClusterId) bgp.routeReflectorClusterID = this.options.routeReflectorClusterId;
      else delete bgp.routeReflectorClusterID;
    }
    const node: Node = {
      apiVersion: API_VERSION,
      kind: 'Node',
      metadata: {
        ...existing?.metadata,
        name: this.nodeName,
        labels: { ...existing?.metadata.labels, ...this.options.labels },
        resourceVersion: undefined,
      },
      spec: { ...existing?.spec, bgp },
    };
    await this.ds.apply(node);
  }

  private async ensureDefaultPool(): Promise<void> {
    const d = this.options.defaultIpv4Pool;
    if (!d) return;
    if ((await this.ds.list('IPPool')).items.length > 0) return;
    try {
      await this.ds.create({
        apiVersion: API_VERSION, kind: 'IPPool', metadata: { name: 'default-ipv4-ippool' },
        spec: { cidr: d.cidr, blockSize: d.blockSize ?? 26, ipipMode: d.ipipMode ?? 'Never', vxlanMode: d.vxlanMode ?? 'Never' },
      });
    } catch (e) {
      // Another node created it first.
      if (!(e instanceof AlreadyExistsError)) throw e;
    }
  }

  private onEvent(e: WatchEvent): void {
    if (e.type === 'synced') {
      this.scheduleReconcile();
      const first = this.firstSync;
      this.firstSync = undefined;
      if (first) void this.reconcile().then(first, (err: Error) => { this.emit('error', err); first(); });
      return;
    }
    const r: Resource | undefined = e.type === 'put' ? e.resource : undefined;
    switch (e.kind) {
      case 'Node': setOrDelete(this.nodes, e.key, r as Node | undefined); break;
      case 'BGPPeer': setOrDelete(this.bgpPeers, e.key, r as BGPPeer | undefined); break;
      case 'IPPool': setOrDelete(this.pools, e.key, r as IPPool | undefined); break;
      case 'IPAMBlock': setOrDelete(this.blocks, e.key, r as IPAMBlock | undefined); break;
      case 'WorkloadEndpoint': {
        const w = r as WorkloadEndpoint | undefined;
        if (w && w.spec.node !== this.nodeName) this.weps.delete(e.key);
        else setOrDelete(this.weps, e.key, w);
        break;
      }
      case 'BGPConfiguration':
        // Calico reads the cluster-wide defaults from the one named "default".
        if (e.key === 'default') this.config = r as BGPConfiguration | undefined;
        break;
      default:
        return;
    }
    if (!this.firstSync) this.scheduleReconcile();
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

  private get self(): Node | undefined {
    return this.nodes.get(this.nodeName);
  }

  /** Brings sessions, announcements and felix's input in line with the cached cluster state. */
  private async reconcile(): Promise<void> {
    const self = this.self;
    if (!self || this.stopped) return;
    this.ensureSpeaker(self);
    this.reconcilePeers(self);
    this.reconcileAdvertisements();
    this.updateFelix(self);
    this.maybeStartFelix();
    void this.ensureVxlanTunnel(self);
  }

  private ensureSpeaker(self: Node): void {
    const asn = nodeAsn(self, this.config);
    const port = this.options.bgpPort ?? this.config?.spec.listenPort ?? BGP_DEFAULTS.listenPort;
    const clusterId = clusterIdOf(self);
    const routerId = this.address.split('/')[0]!;
    const key = `${asn}|${port}|${clusterId ?? ''}|${routerId}`;
    if (this.speaker && key === this.speakerKey) return;
    if (this.speaker) {
      // AS, port or reflector role changed: a new speaker (every session restarts, as with BIRD).
      this.log('speaker-rebuild', { from: this.speakerKey, to: key });
      void this.speaker.stop('configuration changed');
      this.peers.clear();
      this.originated.clear();
    }
    this.speakerKey = key;
    const speaker = new BgpSpeaker({
      asn,
      routerId,
      hostname: this.nodeName,
      listen: { host: this.options.listenAddress ?? routerId, port },
      rib: { multipath: { maxPaths: MAX_PATHS }, ...(clusterId ? routeReflectorRibOptions(clusterId) : {}) },
      restarting: this.restarting,
      forwardingPreserved: true,
      restartTime: this.options.restartTime ?? 120,
    });
    this.speaker = speaker;
    speaker.on('bestPaths', (changes) => this.onBestPaths(changes));
    speaker.on('peerUp', (address) => this.log('peer-up', { peer: address }));
    speaker.on('peerDown', (address, d) => this.log('peer-down', { peer: address, reason: d.message, gracefulRestart: d.gracefulRestart !== undefined }));
    speaker.on('endOfRib', (address) => {
      this.endOfRib.add(address);
      this.maybeStartFelix();
    });
    speaker.start().catch((e: Error) => {
      this.log('listen-error', { error: e.message, port });
      this.emit('error', new Error(`BGP listen on ${routerId}:${port}: ${e.message}`));
    });
  }

  private reconcilePeers(self: Node): void {
    const speaker = this.speaker!;
    const want = new Map(desiredPeers({ self, nodes: [...this.nodes.values()], config: this.config, bgpPeers: [...this.bgpPeers.values()] }).map((p) => [p.address, p]));
    for (const [address, have] of this.peers) {
      const next = want.get(address);
      if (next && !peerChanged(have, next)) continue;
      speaker.removePeer(address);
      this.peers.delete(address);
      this.log('peer-removed', { peer: address, type: have.type });
    }
    const port = this.options.bgpPort ?? this.config?.spec.listenPort ?? BGP_DEFAULTS.listenPort;
    for (const [address, p] of want) {
      if (this.peers.has(address)) continue;
      const config: NeighborConfig = {
        address,
        asn: p.asn,
        port,
        localAddress: this.address.split('/')[0],
        holdTime: this.options.holdTime ?? 90,
        connectRetryTime: this.options.connectRetryTime ?? 3,
        idleHoldTime: 1,
        routeReflectorClient: p.routeReflectorClient,
        gracefulRestart: { restartTime: p.restartTime ?? this.options.restartTime ?? 120 },
        description: `${p.type} ${p.source}`,
      };
      try {
        speaker.addPeer(config);
        this.peers.set(address, p);
        this.log('peer-added', { peer: address, type: p.type, asn: p.asn, source: p.source });
      } catch (e) {
        this.log('peer-error', { peer: address, source: p.source, error: (e as Error).message });
      }
    }
  }

  private reconcileAdvertisements(): void {
    const speaker = this.speaker!;
    this.advertised = advertisements(this.nodeName, [...this.blocks.values()], this.config);
    const want = new Set(allPrefixes(this.advertised));
    for (const p of this.originated) if (!want.has(p)) speaker.withdraw(p);
    for (const p of want) if (!this.originated.has(p)) speaker.originate(p);
    this.originated = want;
  }

  private onBestPaths(changes: BestPathChange[]): void {
    this.metrics.markRoutesChanged();
    const self = nodeIpv4Self(this.address);
    for (const c of changes) {
      const hops = c.best ? [...new Set(c.multipath.filter((r) => r.peer && r.peer.type !== 'local').map((r) => r.nextHop))].filter((h) => h !== self && h !== '0.0.0.0' && h !== '::') : [];
      if (hops.length === 0) this.remote.delete(c.prefix);
      else this.remote.set(c.prefix, hops.sort());
    }
    if (this.self) this.updateFelix(this.self);
  }

  private updateFelix(self: Node): void {
    const workloads: LocalWorkload[] = [...this.weps.values()]
      .filter((w) => w.spec.ipNetworks.length > 0)
      .map((w) => ({ iface: w.spec.interfaceName, addresses: w.spec.ipNetworks }));
    const pools: PoolConfig[] = [...this.pools.values()].map((p) => ({ cidr: p.spec.cidr, ipipMode: p.spec.ipipMode, vxlanMode: p.spec.vxlanMode }));
    const remoteRoutes: RemoteRoute[] = [...this.remote].map(([prefix, nextHops]) => ({ prefix, nextHops }));
    const remoteVteps: RemoteVtep[] = [];
    for (const n of this.nodes.values()) {
      if (n.metadata.name === this.nodeName) continue;
      const vtepIp = n.metadata.annotations?.[VXLAN_ADDRESS_ANNOTATION];
      const vtepMac = n.metadata.annotations?.[VXLAN_MAC_ANNOTATION];
      const nodeIp = nodeIpv4(n);
      if (vtepIp && vtepMac && nodeIp) remoteVteps.push({ nodeIp, vtepIp, vtepMac });
    }
    const a = self.metadata.annotations ?? {};
    try {
      this.felix.update({
        node: {
          addressV4: this.address,
          uplink: this.uplink,
          vxlanTunnelAddressV4: a[VXLAN_ADDRESS_ANNOTATION],
          vxlanTunnelMacV4: a[VXLAN_MAC_ANNOTATION],
        },
        workloads,
        ownBlocks: this.advertised.blocks,
        remoteRoutes,
        pools,
        remoteVteps,
      });
    } catch (e) {
      this.log('felix-input-error', { error: (e as Error).message });
    }
  }

  /**
   * Felix's first resync replaces the kernel's routes with what we know. After a restart that
   * must wait until the peers have sent their routes again (End-of-RIB), or the resync would
   * delete the preserved remote routes: that wait is the graceful restart on our side.
   */
  private maybeStartFelix(): void {
    if (this.felixStarted || this.stopped || !this.self) return;
    if (this.restarting) {
      const waiting = [...this.peers.keys()].filter((a) => !this.endOfRib.has(a));
      if (waiting.length > 0) {
        this.grTimer ??= setTimeout(() => {
          this.log('graceful-restart-timeout', { waitingFor: [...this.peers.keys()].filter((a) => !this.endOfRib.has(a)) });
          this.startFelix();
        }, this.options.gracefulRestartWaitMs ?? 30_000);
        this.grTimer.unref?.();
        return;
      }
    }
    this.startFelix();
  }

  private startFelix(): void {
    if (this.felixStarted || this.stopped) return;
    this.felixStarted = true;
    clearTimeout(this.grTimer);
    this.felix.start().then(
      (r) => {
        this.log('felix-started', { routes: r.routesCreated + r.routesReplaced + r.routesUnchanged, deleted: r.routesDeleted, failures: r.failures.length });
        this.ready = true;
        this.emit('ready');
      },
      (e: Error) => this.emit('error', e),
    );
  }

  /** A VXLAN pool needs this node's VTEP: an address from its own block and a stable MAC. */
  private async ensureVxlanTunnel(self: Node): Promise<void> {
    const pool = [...this.pools.values()].find((p) => !p.spec.disabled && p.spec.vxlanMode !== 'Never');
    if (!pool || self.metadata.annotations?.[VXLAN_ADDRESS_ANNOTATION] || this.vxlanPending) return;
    this.vxlanPending = true;
    try {
      const got = await this.ipam.autoAssign({ handle: `vxlan-tunnel-addr-${this.nodeName}`, node: this.nodeName, pools: [pool.metadata.name], attrs: { type: 'vxlanTunnelAddress' } });
      const current = (await this.ds.get('Node', this.nodeName)) ?? self;
      await this.ds.apply({
        ...current,
        metadata: { ...current.metadata, resourceVersion: undefined, annotations: { ...current.metadata.annotations, [VXLAN_ADDRESS_ANNOTATION]: got.ip, [VXLAN_MAC_ANNOTATION]: vtepMac(this.nodeName) } },
      });
      this.log('vxlan-tunnel-address', { address: got.ip });
    } catch (e) {
      this.metrics.datastoreErrors.inc();
      this.log('vxlan-tunnel-error', { error: (e as Error).message });
    } finally {
      this.vxlanPending = false;
    }
  }

  /** What `podroute node status` shows. */
  status(): AgentStatus {
    const self = this.self;
    const byAddress = new Map((this.speaker?.peerStatus() ?? []).map((s) => [s.address, s]));
    const peers: AgentPeerStatus[] = [...this.peers.values()].map((p) => {
      const s = byAddress.get(p.address);
      const state = s?.state ?? 'Idle';
      return {
        address: p.address, asn: p.asn, type: p.type, source: p.source, state, since: s?.since ?? 0,
        info: state === 'Established' ? 'Established' : s?.lastError ? `${state} ${s.lastError}` : state,
        prefixesReceived: s?.prefixesReceived ?? 0, prefixesSent: s?.prefixesSent ?? 0,
      };
    });
    return {
      node: this.nodeName,
      address: this.address,
      asn: self ? nodeAsn(self, this.config) : BGP_DEFAULTS.asNumber,
      routerId: this.speaker?.routerId ?? '',
      clusterId: self ? clusterIdOf(self) : undefined,
      ready: this.ready,
      restarting: this.restarting,
      peers,
      advertised: this.advertised,
      routes: { learned: this.remote.size, programmed: this.felix.desired.routes.length - this.felix.failures.size, failures: this.felix.failures.size },
    };
  }

  /** Learned routes as felix is given them (prefix → next hops). */
  learnedRoutes(): RemoteRoute[] {
    return [...this.remote].map(([prefix, nextHops]) => ({ prefix, nextHops }));
  }
}

function setOrDelete<T>(m: Map<string, T>, key: string, value: T | undefined): void {
  if (value === undefined) m.delete(key);
  else m.set(key, value);
}

function nodeIpv4Self(cidr: string): string {
  return cidr.split('/')[0]!;
}

/** A locally administered unicast MAC derived from the node name (stable across restarts). */
export function vtepMac(node: string): string {
  const h = createHash('sha256').update(node).digest();
  return ['66', ...[...h.subarray(0, 5)].map((b) => b.toString(16).padStart(2, '0'))].join(':');
}
