// The one interface felix programs WireGuard through: the device, its peers, the routes of the
// WireGuard table and the rule in front of it. WgToolDataplane drives the kernel with iproute2
// and wireguard-tools; MemoryWireguardDataplane keeps the same state in maps for tests.
import type { DeviceStatus, WriteOutcome } from '../dataplane.js';
import type { WireguardDeviceSpec, WireguardFamily, WireguardPeerSpec, WireguardRoute, WireguardRule } from './desired.js';

/** A peer as the kernel holds it. */
export interface InstalledPeer {
  readonly publicKey: string;
  /** As WireGuard prints it ("10.0.0.2:51820", "[fd00::2]:51821"); absent before one is known. */
  readonly endpoint?: string;
  readonly allowedIps: readonly string[];
  readonly keepAliveSeconds: number;
  /** Seconds since the epoch of the last handshake; 0: none yet. */
  readonly latestHandshake: number;
}

export interface WireguardRouteWrite {
  readonly op: 'replace' | 'delete';
  readonly route: WireguardRoute;
}

export interface WireguardDataplane {
  readonly description: string;
  /** Makes the device if it is missing (kind wireguard), sets MTU, address, key, port and mark, and brings it up. */
  ensureDevice(spec: WireguardDeviceSpec): Promise<DeviceStatus>;
  /** Deletes the device when it is a WireGuard one; true when one was deleted. */
  removeDevice(name: string): Promise<boolean>;
  /** Its peers as the kernel holds them; undefined when there is no such device. */
  listPeers(name: string): Promise<InstalledPeer[] | undefined>;
  /** One request: these peers added or changed (allowed IPs replaced), those public keys removed. */
  writePeers(name: string, set: readonly WireguardPeerSpec[], remove: readonly string[]): Promise<WriteOutcome>;
  /** The routes of `table` in one family that carry `protocol`. */
  listTableRoutes(family: WireguardFamily, table: number, protocol: number): Promise<WireguardRoute[]>;
  writeTableRoutes(
    family: WireguardFamily,
    table: number,
    protocol: number,
    writes: readonly WireguardRouteWrite[],
  ): Promise<WriteOutcome[]>;
  /** The family's `not fwmark M/M lookup T` rules (others are no concern of felix's). */
  listRules(family: WireguardFamily): Promise<WireguardRule[]>;
  writeRule(op: 'add' | 'delete', rule: WireguardRule): Promise<WriteOutcome>;
}
