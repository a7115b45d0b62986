// Felix: holds the agent's view (FelixInput), computes the desired state, and keeps the
// dataplane equal to it: incremental applies on every change, a full resync at start and
// on a timer, per-route failures retried with backoff and reported.

import { EventEmitter } from 'node:events';
import { cidrAddress } from '../ip/index.js';
import { defaultMetric, type Dataplane, type DeviceStatus, type SysctlOutcome } from './dataplane.js';
import type { DesiredState } from './desired.js';
import { DesiredTable, type RemoteRouteChange } from './desired-table.js';
import { EEXIST, ESRCH, errnoText } from './errno.js';
import {
  DEFAULT_DEVICE_NAMES,
  DEFAULT_TUNNEL_MTU,
  type FelixInput,
  type LocalWorkload,
  type NodeInfo,
  type PoolConfig,
  type RemoteRoute,
  type RemoteVtep,
} from './input.js';
import { describeRoute, MAIN_TABLE, PODROUTE_PROTOCOL, type InstalledRoute, type Neighbor, type Route } from './model.js';
import { kernelRoutesKey, type KernelRoute } from './resolve.js';
import { indexInstalled, planChanged, planNeighbors, planRoutes, type InstalledIndex, type RouteConflict } from './reconcile.js';
import type { WireguardDataplane } from './wireguard/dataplane.js';
import type { WireguardInput, WireguardSettings } from './wireguard/input.js';
import type { WireguardState } from './wireguard/desired.js';
import { WireguardProgrammer, type WireguardReport } from './wireguard/programmer.js';

export interface FelixOptions {
  /** rtm_protocol of the routes felix owns. Default PODROUTE_PROTOCOL (81). */
  readonly protocol?: number;
  /** Full resync period; 0 turns the timer off. Default 90 s (Calico's route refresh). */
  readonly resyncIntervalMs?: number;
  /** First retry delay after a failed write; doubles up to 30 s. Default 1 s. */
  readonly retryDelayMs?: number;
  readonly vxlan?: { readonly vni?: number; readonly port?: number; readonly mtu?: number; readonly mtuV6?: number };
  readonly ipip?: { readonly mtu?: number };
  /** Set IP forwarding and proxy-ARP on workload interfaces. Default true. */
  readonly sysctls?: boolean;
  /**
   * Take the node's routing table (FelixInput.kernelRoutes, which learned next hops off the
   * node's subnet resolve through) from each dump of the dataplane, and resync when the
   * dataplane reports that a route of another program changed. Default true; false leaves
   * kernelRoutes to the input.
   */
  readonly resolveThroughKernel?: boolean;
  /** WireGuard's knobs (FelixConfiguration's wireguard* fields). */
  readonly wireguard?: WireguardSettings;
  /** Where WireGuard is programmed (WgToolDataplane on a host); absent: felix leaves WireGuard alone. */
  readonly wireguardDataplane?: WireguardDataplane;
}

export interface RouteFailure {
  readonly dst: string;
  readonly op: 'create' | 'replace' | 'delete';
  readonly route: string;
  readonly error: string;
}

export interface ApplyReport {
  readonly kind: 'resync' | 'incremental';
  readonly routesCreated: number;
  readonly routesReplaced: number;
  readonly routesDeleted: number;
  readonly routesUnchanged: number;
  readonly neighborsWritten: number;
  readonly failures: readonly RouteFailure[];
  readonly conflicts: readonly RouteConflict[];
  readonly problems: readonly string[];
  /** Learned and static routes not programmed for want of a usable next hop (none has a route to write). */
  readonly unresolved: number;
  readonly devices: readonly DeviceStatus[];
  readonly sysctlFailures: readonly SysctlOutcome[];
  /** What the WireGuard sync did, when it ran (its devices, failures and problems are in the lists above too). */
  readonly wireguard?: WireguardReport;
  readonly durationMs: number;
}

export interface FelixEvents {
  report: [ApplyReport];
  error: [Error];
}

/** A route as felix wrote it: a class, so 100k of them stay one cheap shape. */
class Programmed implements InstalledRoute {
  readonly dst: string;
  readonly type: Route['type'];
  readonly nextHops: Route['nextHops'];
  readonly table = MAIN_TABLE;
  constructor(
    r: Route,
    readonly protocol: number,
    readonly metric: number,
  ) {
    this.dst = r.dst;
    this.type = r.type;
    this.nextHops = r.nextHops;
  }
}

export class Felix extends EventEmitter<FelixEvents> {
  readonly protocol: number;
  private readonly table = new DesiredTable();
  /** Routes as last dumped, updated with every successful write since. */
  private installed: InstalledIndex = { ours: new Map(), extras: [], foreign: new Map() };
  private neighborsInstalled: Neighbor[] = [];
  private readonly failed = new Map<string, RouteFailure>();
  private readonly sysctlDone = new Set<string>();
  private chain: Promise<unknown> = Promise.resolve();
  private dirty = false;
  private needResync = true;
  private resyncTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private retryDelay: number;
  private running = false;
  private lastDevices: DeviceStatus[] = [];
  /** The node's table as last given to the desired table (kernelRoutesKey), to give it only when it changed. */
  private kernelKey: string | undefined;
  private unwatch?: () => void;
  /** The node's tunnel addresses the devices were last made with: one arriving later is applied at once. */
  private lastDeviceAddresses = '';
  private readonly wireguard?: WireguardProgrammer;
  private wireguardDirty = true;

  constructor(
    readonly dataplane: Dataplane,
    private readonly opts: FelixOptions = {},
  ) {
    super();
    this.protocol = opts.protocol ?? PODROUTE_PROTOCOL;
    if (!Number.isInteger(this.protocol) || this.protocol < 1 || this.protocol > 255)
      throw new RangeError(`protocol: ${opts.protocol} must be 1..255`);
    this.retryDelay = opts.retryDelayMs ?? 1000;
    if (opts.wireguardDataplane) this.wireguard = new WireguardProgrammer(opts.wireguardDataplane, opts.wireguard ?? {}, this.protocol);
  }

  /** The WireGuard state felix wants (pure, from the last setWireguard); undefined without a WireGuard dataplane. */
  get wireguardState(): WireguardState | undefined {
    return this.wireguard?.state;
  }

  /**
   * This node's keys and the other nodes' keys, addresses and blocks; undefined: no WireGuard
   * here (a device left from before is removed). Programmed with the next apply.
   */
  setWireguard(input: WireguardInput | undefined): void {
    if (!this.wireguard) return;
    this.wireguard.setInput(input);
    this.wireguardDirty = true;
    this.kick();
  }

  get input(): FelixInput {
    return this.table.input;
  }

  /** How many routes felix wants programmed (no sorting: for status and metrics). */
  get desiredRouteCount(): number {
    return this.table.routes.size;
  }

  /** The desired state as one value (sorted on demand: for status and tests, not the hot path). */
  get desired(): DesiredState {
    return this.table.state;
  }

  /** Failed writes still waiting for a retry, by destination. */
  get failures(): ReadonlyMap<string, RouteFailure> {
    return this.failed;
  }

  /**
   * Learned and static routes felix cannot program because none of their next hops is usable
   * (not on the node's subnet and no route of the node's table to it, say), by destination,
   * with why. Each is retried whenever the node's table changes.
   */
  get unresolved(): ReadonlyMap<string, string> {
    return this.table.unresolved;
  }

  /**
   * Replaces the given parts of the input. Throws FelixInputError (naming the field) on
   * bad input, and then nothing changes. Programming follows asynchronously; await
   * `settled()` to wait for it.
   */
  update(partial: Partial<FelixInput>): void {
    this.table.update(partial);
    this.kick();
  }

  /**
   * Learned routes that changed (no next hops: withdrawn). Only their destinations are
   * recomputed and written, so a stream of BGP changes costs what it changes, not the table.
   * Validated as a batch: on a FelixInputError nothing changes.
   */
  changeRemoteRoutes(changes: readonly RemoteRouteChange[]): void {
    if (changes.length === 0) return;
    this.table.changeRemoteRoutes(changes);
    this.kick();
  }

  setNode(node: NodeInfo): void {
    this.update({ node });
  }
  setLocalWorkloads(workloads: readonly LocalWorkload[]): void {
    this.update({ workloads });
  }
  setOwnBlocks(ownBlocks: readonly string[]): void {
    this.update({ ownBlocks });
  }
  setRemoteRoutes(remoteRoutes: readonly RemoteRoute[]): void {
    this.update({ remoteRoutes });
  }
  setPools(pools: readonly PoolConfig[]): void {
    this.update({ pools });
  }
  setRemoteVteps(remoteVteps: readonly RemoteVtep[]): void {
    this.update({ remoteVteps });
  }

  /** Full resync now, then on the timer. Resolves with the first report. */
  async start(): Promise<ApplyReport> {
    this.running = true;
    const every = this.opts.resyncIntervalMs ?? 90_000;
    if (every > 0 && !this.resyncTimer) {
      this.resyncTimer = setInterval(() => this.background(this.resync()), every);
      this.resyncTimer.unref();
    }
    if (this.opts.resolveThroughKernel !== false && !this.unwatch && this.dataplane.watchRoutes) {
      // A route under a resolved next hop changed: read the table again and resolve anew.
      this.unwatch = this.dataplane.watchRoutes(this.protocol, () => {
        this.needResync = true;
        this.kick();
      });
    }
    try {
      return await this.resync();
    } catch (e) {
      // The caller hears of it; felix keeps trying on its own.
      this.needResync = true;
      this.scheduleRetry();
      throw e;
    }
  }

  stop(): void {
    this.running = false;
    this.unwatch?.();
    this.unwatch = undefined;
    clearInterval(this.resyncTimer);
    clearTimeout(this.retryTimer);
    this.resyncTimer = this.retryTimer = undefined;
  }

  /** Re-reads the dataplane and repairs every difference. */
  resync(): Promise<ApplyReport> {
    this.needResync = true;
    return this.enqueue();
  }

  /** Applies what changed since the last apply, from felix's own record of the dataplane. */
  apply(): Promise<ApplyReport> {
    return this.enqueue();
  }

  /** Resolves when every change made so far has been applied (or has failed and been reported). */
  async settled(): Promise<void> {
    while (this.dirty) await this.enqueue();
    await this.chain;
  }

  private kick(): void {
    this.dirty = true;
    if (!this.running) return;
    setImmediate(() => {
      if (this.dirty && this.running) this.background(this.enqueue());
    });
  }

  /**
   * Runs started by felix itself (timer, retry, update) must never take the process down: a
   * dataplane that throws (socket closed, dump refused) is reported as 'error' when someone
   * listens, else on stderr, and the next attempt re-reads everything.
   */
  private background(p: Promise<unknown>): void {
    p.catch((e: unknown) => {
      const err = e instanceof Error ? e : new Error(String(e));
      this.needResync = true;
      this.dirty = true;
      if (this.listenerCount('error') > 0) this.emit('error', err);
      else process.stderr.write(`felix: ${this.dataplane.description}: ${err.message}\n`);
      this.scheduleRetry();
    });
  }

  private enqueue(): Promise<ApplyReport> {
    const run = this.chain.then(
      () => this.run(),
      () => this.run(),
    );
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async run(): Promise<ApplyReport> {
    const t0 = performance.now();
    const resync = this.needResync;
    this.needResync = false;
    this.dirty = false;
    const table = this.table;
    const devices = await this.ensureDevices(table.devices, resync);
    const sysctlFailures = this.opts.sysctls === false ? [] : await this.ensureSysctls(resync);

    if (resync) {
      const dump = await this.dataplane.listRoutes();
      this.installed = indexInstalled(dump, this.protocol);
      if (this.opts.resolveThroughKernel !== false) this.takeKernelRoutes(dump);
    }
    const changed = table.takeChanged();
    // Changes that arrived during the awaits above are in the table already, and marked for
    // the next run too: writing them now as well is harmless.
    const plan =
      resync || changed.all
        ? planRoutes([...table.routes.values()], this.installed, this.protocol)
        : planChanged(new Set([...changed.dsts, ...this.failed.keys()]), table.routes, this.installed);
    const outcomes = await this.dataplane.writeRoutes(plan.writes, this.protocol);
    let created = 0,
      replaced = 0,
      deleted = 0;
    const failures: RouteFailure[] = [];
    const { ours, extras } = this.installed;
    for (let i = 0; i < plan.writes.length; i++) {
      const w = plan.writes[i],
        o = outcomes[i];
      // ESRCH on a delete: gone already. Trusted after an incremental apply (our record may
      // be old), not after a resync that has just seen the route.
      if (o.ok || (w.op === 'delete' && o.errno === ESRCH && !resync)) {
        if (w.op === 'delete') {
          if (ours.get(w.route.dst) === w.route) ours.delete(w.route.dst);
          else {
            const at = extras.indexOf(w.route as InstalledRoute);
            if (at >= 0) extras.splice(at, 1);
          }
          deleted++;
        } else {
          ours.set(w.route.dst, new Programmed(w.route, this.protocol, w.metric ?? defaultMetric(w.route.dst)));
          if (w.op === 'create') created++;
          else replaced++;
        }
        if (this.failed.size) this.failed.delete(w.route.dst);
        continue;
      }
      // EEXIST on create: our record was stale or another program got there first: look again.
      if (w.op === 'create' && o.errno === EEXIST) this.needResync = true;
      const f: RouteFailure = {
        dst: w.route.dst,
        op: w.op,
        route: describeRoute(w.route),
        error: o.error ?? (o.errno === undefined ? 'failed' : errnoText(o.errno)),
      };
      this.failed.set(w.route.dst, f);
      failures.push(f);
    }
    // Forget failures of routes no longer wanted (a failed delete stays until it succeeds).
    if (this.failed.size) {
      for (const [dst, f] of this.failed) if (f.op !== 'delete' && !table.routes.has(dst)) this.failed.delete(dst);
    }

    const neighborsWritten = await this.syncNeighbors(table.neighbors, resync, failures);
    const wireguard = await this.syncWireguard(resync, failures);

    if (failures.length || this.needResync) this.scheduleRetry();
    else this.retryDelay = this.opts.retryDelayMs ?? 1000;

    const report: ApplyReport = {
      kind: resync ? 'resync' : 'incremental',
      routesCreated: created,
      routesReplaced: replaced,
      routesDeleted: deleted,
      routesUnchanged: plan.unchanged,
      neighborsWritten,
      failures,
      conflicts: plan.conflicts,
      problems: wireguard ? [...table.problems(), ...wireguard.problems] : table.problems(),
      unresolved: table.unresolved.size,
      devices: wireguard ? [...devices, ...wireguard.devices] : devices,
      sysctlFailures,
      ...(wireguard ? { wireguard } : {}),
      durationMs: performance.now() - t0,
    };
    this.emit('report', report);
    return report;
  }

  /** The dump's routes of other programs become the table learned next hops resolve through. */
  private takeKernelRoutes(dump: readonly InstalledRoute[]): void {
    const kernelRoutes: KernelRoute[] = [];
    for (const r of dump)
      if (r.protocol !== this.protocol && r.table === MAIN_TABLE)
        kernelRoutes.push({ dst: r.dst, type: r.type, nextHops: r.nextHops, metric: r.metric });
    const key = kernelRoutesKey(kernelRoutes);
    if (key === this.kernelKey) return;
    this.kernelKey = key;
    this.table.update({ kernelRoutes });
  }

  /** WireGuard after the routes: runs when its input changed, at a resync, and until it succeeds. */
  private async syncWireguard(resync: boolean, failures: RouteFailure[]): Promise<WireguardReport | undefined> {
    if (!this.wireguard || (!resync && !this.wireguardDirty)) return undefined;
    this.wireguardDirty = false;
    const r = await this.wireguard.sync(resync);
    for (const f of r.failures) failures.push({ dst: f.what, op: 'replace', route: f.what, error: f.error });
    if (r.failures.length > 0 || r.devices.some((d) => !d.ok)) {
      this.wireguardDirty = true;
      this.scheduleRetry();
    }
    return r;
  }

  private scheduleRetry(): void {
    if (!this.running || this.retryTimer) return;
    const delay = this.retryDelay;
    this.retryDelay = Math.min(delay * 2, 30_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.background(this.enqueue());
    }, delay);
    this.retryTimer.unref();
  }

  private names() {
    return { ...DEFAULT_DEVICE_NAMES, ...(this.table.deviceNames ?? {}) };
  }

  private async ensureDevices(devices: DesiredState['devices'], resync: boolean): Promise<DeviceStatus[]> {
    const d = { devices };
    const failedBefore = this.lastDevices.some((s) => !s.ok);
    const node = this.table.node;
    const addresses = `${node.ipipTunnelAddress}|${node.vxlanTunnelAddressV4}|${node.vxlanTunnelAddressV6}`;
    if (
      !resync &&
      !failedBefore &&
      addresses === this.lastDeviceAddresses &&
      this.lastDevices.length === Number(d.devices.ipip) + Number(d.devices.vxlanV4) + Number(d.devices.vxlanV6)
    )
      return this.lastDevices;
    const n = this.names();
    const out: DeviceStatus[] = [];
    const vx = this.opts.vxlan ?? {};
    if (d.devices.vxlanV4) {
      if (!node.vxlanTunnelAddressV4)
        out.push({ name: n.vxlanV4, ok: false, detail: 'a pool uses VXLAN but node.vxlanTunnelAddressV4 is not set' });
      else
        out.push(
          await this.dataplane.ensureVxlan({
            name: n.vxlanV4,
            vni: vx.vni ?? 4096,
            port: vx.port ?? 4789,
            mtu: vx.mtu ?? DEFAULT_TUNNEL_MTU.vxlanV4,
            vtepIp: node.vxlanTunnelAddressV4,
            vtepMac: node.vxlanTunnelMacV4,
            localIp: node.addressV4 === undefined ? undefined : cidrAddress(node.addressV4, 'node.addressV4'),
            parent: node.uplink,
          }),
        );
    }
    if (d.devices.vxlanV6) {
      if (!node.vxlanTunnelAddressV6)
        out.push({ name: n.vxlanV6, ok: false, detail: 'an IPv6 pool uses VXLAN but node.vxlanTunnelAddressV6 is not set' });
      else
        out.push(
          await this.dataplane.ensureVxlan({
            name: n.vxlanV6,
            vni: vx.vni ?? 6096,
            port: vx.port ?? 4789,
            mtu: vx.mtuV6 ?? DEFAULT_TUNNEL_MTU.vxlanV6,
            vtepIp: node.vxlanTunnelAddressV6,
            vtepMac: node.vxlanTunnelMacV6,
            localIp: node.addressV6 === undefined ? undefined : cidrAddress(node.addressV6, 'node.addressV6'),
            parent: node.uplink,
          }),
        );
    }
    if (d.devices.ipip)
      out.push(
        await this.dataplane.ensureIpip({
          name: n.ipip,
          mtu: this.opts.ipip?.mtu ?? DEFAULT_TUNNEL_MTU.ipip,
          address: node.ipipTunnelAddress,
        }),
      );
    this.lastDevices = out;
    this.lastDeviceAddresses = addresses;
    return out;
  }

  private async ensureSysctls(resync: boolean): Promise<SysctlOutcome[]> {
    const want: [string, string][] = [];
    let v4 = false,
      v6 = false;
    for (const dst of this.table.routes.keys()) {
      if (dst.includes(':')) v6 = true;
      else v4 = true;
      if (v4 && v6) break;
    }
    if (v4) want.push(['net/ipv4/ip_forward', '1']);
    if (v6) want.push(['net/ipv6/conf/all/forwarding', '1']);
    for (const w of this.table.workloads) {
      // The pod's default route points at 169.254.1.1, which nothing owns: the host end
      // answers ARP for it (proxy-ARP), at once rather than after the default random delay.
      want.push([`net/ipv4/conf/${w.iface}/proxy_arp`, '1'], [`net/ipv4/neigh/${w.iface}/proxy_delay`, '0']);
    }
    const failures: SysctlOutcome[] = [];
    const wanted = new Set<string>();
    for (const [path, value] of want) {
      const key = `${path}=${value}`;
      wanted.add(key);
      if (!resync && this.sysctlDone.has(key)) continue;
      const r = await this.dataplane.setSysctl(path, value);
      if (r.ok) this.sysctlDone.add(key);
      else {
        this.sysctlDone.delete(key);
        failures.push(r);
      }
    }
    // A gone workload's keys go with it: the set stays the size of what is wanted under pod
    // churn, and an interface that comes back under the same name is set again.
    for (const key of this.sysctlDone) if (!wanted.has(key)) this.sysctlDone.delete(key);
    return failures;
  }

  private async syncNeighbors(neighbors: DesiredState['neighbors'], resync: boolean, failures: RouteFailure[]): Promise<number> {
    const n = this.names();
    const devs = [n.vxlanV4, n.vxlanV6];
    if (resync) this.neighborsInstalled = await this.dataplane.listNeighbors(devs);
    const writes = planNeighbors(neighbors, this.neighborsInstalled);
    if (!writes.length) return 0;
    const outcomes = await this.dataplane.writeNeighbors(writes);
    let ok = 0;
    const next = new Map(this.neighborsInstalled.map((x) => [`${x.kind}|${x.dev}|${x.address}|${x.mac}`, x]));
    writes.forEach((w, i) => {
      const k = `${w.neighbor.kind}|${w.neighbor.dev}|${w.neighbor.address}|${w.neighbor.mac}`;
      if (outcomes[i].ok) {
        ok++;
        if (w.op === 'delete') next.delete(k);
        else {
          for (const [key, x] of next)
            if (
              x.kind === w.neighbor.kind &&
              x.dev === w.neighbor.dev &&
              (x.kind === 'arp' ? x.address === w.neighbor.address : x.mac === w.neighbor.mac)
            )
              next.delete(key);
          next.set(k, w.neighbor);
        }
      } else {
        failures.push({
          dst: `${w.neighbor.kind} ${w.neighbor.address}`,
          op: w.op === 'delete' ? 'delete' : 'replace',
          route: `${w.neighbor.kind} ${w.neighbor.address} lladdr ${w.neighbor.mac} dev ${w.neighbor.dev}`,
          error: outcomes[i].error ?? '',
        });
      }
    });
    this.neighborsInstalled = [...next.values()];
    return ok;
  }
}
