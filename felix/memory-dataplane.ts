// The dataplane in maps, following the kernel's rules that matter to felix: one route per
// (destination, metric) in the main table, EEXIST on an exclusive create, deletes that only
// match the caller's protocol, ENODEV for a device that does not exist.

import {
  defaultMetric,
  type Dataplane,
  type DeviceStatus,
  type IpipDeviceSpec,
  type NeighborWrite,
  type RouteWrite,
  type SysctlOutcome,
  type VxlanDeviceSpec,
  type WriteOutcome,
} from './dataplane.js';
import { EEXIST, ENOBUFS, ENODEV, ENOENT, ESRCH, errnoText } from './errno.js';
import { MAIN_TABLE, neighborKey, type InstalledRoute, type Neighbor } from './model.js';

export interface MemoryDataplaneOptions {
  /** Devices that exist at start (an uplink, cali* veths). */
  readonly links?: readonly string[];
  /** Whether the simulated kernel has the ipip driver. Default true. */
  readonly ipipDriver?: boolean;
}

export class MemoryDataplane implements Dataplane {
  readonly description = 'in-memory dataplane';
  readonly routes = new Map<string, InstalledRoute>();
  readonly neighbors = new Map<string, Neighbor>();
  readonly links = new Map<string, { mtu: number; up: boolean; kind: string; mac: string; addresses: string[] }>();
  readonly sysctls = new Map<string, string>();
  /** Counts of writes, for tests that check only the difference was applied. */
  writes = 0;
  /** Make the next writes to these destinations fail (fault injection for retry tests). */
  readonly failNext = new Map<string, number>();
  private readonly ipipDriver: boolean;
  private macSeq = 1;

  constructor(opts: MemoryDataplaneOptions = {}) {
    for (const l of opts.links ?? []) this.addLink(l);
    this.ipipDriver = opts.ipipDriver ?? true;
  }

  addLink(name: string, kind = 'veth'): void {
    const n = this.macSeq++;
    this.links.set(name, {
      mtu: 1500,
      up: true,
      kind,
      mac: `02:00:00:00:${(n >> 8).toString(16).padStart(2, '0')}:${(n & 255).toString(16).padStart(2, '0')}`,
      addresses: [],
    });
  }

  /** Adds a route as another program would (a foreign route, or one of ours "from a previous run"). */
  inject(r: InstalledRoute): void {
    this.routes.set(`${r.dst}|${r.metric}`, r);
  }

  async listRoutes(): Promise<InstalledRoute[]> {
    return [...this.routes.values()];
  }

  async writeRoutes(writes: readonly RouteWrite[], protocol: number): Promise<WriteOutcome[]> {
    return writes.map((w) => {
      this.writes++;
      const fail = this.failNext.get(w.route.dst);
      if (fail) {
        this.failNext.set(w.route.dst, fail - 1);
        return { ok: false, errno: ENOBUFS, error: errnoText(ENOBUFS, 'injected failure') };
      }
      const metric = w.metric ?? defaultMetric(w.route.dst);
      const key = `${w.route.dst}|${metric}`;
      const had = this.routes.get(key);
      if (w.op === 'delete') {
        if (!had || had.protocol !== protocol) return { ok: false, errno: ESRCH, error: errnoText(ESRCH) };
        this.routes.delete(key);
        return { ok: true };
      }
      if (w.op === 'create' && had) return { ok: false, errno: EEXIST, error: errnoText(EEXIST) };
      for (const h of w.route.nextHops) if (!this.links.has(h.dev)) return noDevice(h.dev);
      this.routes.set(key, {
        dst: w.route.dst,
        type: w.route.type,
        nextHops: w.route.nextHops.map((h) => ({ ...h })),
        protocol,
        table: MAIN_TABLE,
        metric,
      });
      return { ok: true };
    });
  }

  async listNeighbors(devs: readonly string[]): Promise<Neighbor[]> {
    return [...this.neighbors.values()].filter((n) => devs.includes(n.dev));
  }

  async writeNeighbors(writes: readonly NeighborWrite[]): Promise<WriteOutcome[]> {
    return writes.map(({ op, neighbor }) => {
      this.writes++;
      if (!this.links.has(neighbor.dev)) return noDevice(neighbor.dev);
      const key = neighborKey(neighbor);
      if (op === 'delete') return this.neighbors.delete(key) ? { ok: true } : { ok: false, errno: ENOENT, error: errnoText(ENOENT) };
      this.neighbors.set(key, { ...neighbor });
      return { ok: true };
    });
  }

  async linkNames(): Promise<string[]> {
    return [...this.links.keys()];
  }

  async ensureVxlan(s: VxlanDeviceSpec): Promise<DeviceStatus> {
    if (!this.links.has(s.name)) this.addLink(s.name, 'vxlan');
    const l = this.links.get(s.name)!;
    if (s.vtepMac) l.mac = s.vtepMac;
    l.mtu = s.mtu;
    l.up = true;
    l.addresses = [s.vtepIp.includes('/') ? s.vtepIp : `${s.vtepIp}/${s.vtepIp.includes(':') ? 128 : 32}`];
    return { name: s.name, ok: true, detail: 'ready', mac: l.mac };
  }

  async ensureIpip(s: IpipDeviceSpec): Promise<DeviceStatus> {
    if (!this.ipipDriver) return { name: s.name, ok: false, detail: 'the kernel has no ipip driver (simulated)' };
    if (!this.links.has(s.name)) this.addLink(s.name, 'ipip');
    const l = this.links.get(s.name)!;
    l.mtu = s.mtu;
    l.up = true;
    l.addresses = s.address ? [s.address.includes('/') ? s.address : `${s.address}/32`] : [];
    return { name: s.name, ok: true, detail: 'ready' };
  }

  async setSysctl(key: string, value: string): Promise<SysctlOutcome> {
    this.sysctls.set(key, value);
    return { key, ok: true, value };
  }

  close(): void {}
}

function noDevice(dev: string): WriteOutcome {
  return { ok: false, errno: ENODEV, error: errnoText(ENODEV, `device ${dev} does not exist`) };
}
