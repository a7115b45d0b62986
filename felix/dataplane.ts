// The one interface felix programs through. LinuxDataplane speaks rtnetlink in a network
// namespace; MemoryDataplane holds the same state in maps with the kernel's rules, for
// unit tests and in-process simulation.

import type { InstalledRoute, Neighbor, Route } from './model.js';

export interface RouteWrite {
  /** create: fails (EEXIST) if any route holds the key; replace: overwrite ours; delete: ours only. */
  readonly op: 'create' | 'replace' | 'delete';
  readonly route: Route;
  /** For replace and delete: the metric of the installed route. */
  readonly metric?: number;
}

export interface NeighborWrite {
  readonly op: 'replace' | 'delete';
  readonly neighbor: Neighbor;
}

/** One write's result; `error` says what went wrong in words a person can act on. */
export interface WriteOutcome {
  readonly ok: boolean;
  readonly errno?: number;
  readonly error?: string;
}

export interface VxlanDeviceSpec {
  readonly name: string;
  readonly vni: number;
  readonly port: number;
  readonly mtu: number;
  /** The VTEP address put on the device ("10.0.0.1" or with a length). */
  readonly vtepIp: string;
  readonly vtepMac?: string;
  /** Underlay source address and device. */
  readonly localIp?: string;
  readonly parent?: string;
}

export interface IpipDeviceSpec {
  readonly name: string;
  readonly mtu: number;
  /** Address from one of this node's blocks, as Calico gives tunl0. */
  readonly address?: string;
}

export interface DeviceStatus {
  readonly name: string;
  readonly ok: boolean;
  /** What was done ("created", "mtu 1440 -> 1450", ...) or why it failed. */
  readonly detail: string;
  /** The device's MAC, once it exists (VXLAN needs it in its VTEP announcement). */
  readonly mac?: string;
}

export interface SysctlOutcome {
  readonly key: string;
  readonly ok: boolean;
  readonly value?: string;
  readonly error?: string;
}

export interface Dataplane {
  readonly description: string;
  /** Every unicast and blackhole route of the main table, of every protocol. */
  listRoutes(): Promise<InstalledRoute[]>;
  writeRoutes(writes: readonly RouteWrite[], protocol: number): Promise<WriteOutcome[]>;
  /** Permanent ARP/NDP and FDB entries on the named devices. */
  listNeighbors(devs: readonly string[]): Promise<Neighbor[]>;
  writeNeighbors(writes: readonly NeighborWrite[]): Promise<WriteOutcome[]>;
  linkNames(): Promise<string[]>;
  ensureVxlan(spec: VxlanDeviceSpec): Promise<DeviceStatus>;
  ensureIpip(spec: IpipDeviceSpec): Promise<DeviceStatus>;
  /**
   * Calls `changed` when a route of another program (not `protocol`) changes in the main table,
   * so next hops resolved through it are resolved again. Returns the function that stops it;
   * absent, or undefined returned, where the dataplane cannot watch (felix then re-reads the
   * table at each resync only).
   */
  watchRoutes?(protocol: number, changed: () => void): (() => void) | undefined;
  /** Writes a sysctl ("net.ipv4.ip_forward") unless it already has the value; reads back. */
  setSysctl(key: string, value: string): Promise<SysctlOutcome>;
  close(): void;
}

export function defaultMetric(dst: string): number {
  return dst.includes(':') ? 1024 : 0;
}
