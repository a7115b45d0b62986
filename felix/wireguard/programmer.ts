// Keeps the kernel's WireGuard equal to the desired state: per family the device, then the
// peers added or changed, then the table's routes, then the peers gone, then the rule; a family
// turned off loses its rule first, then its routes and device. The order means a route never
// points at a device without the peer that carries it, and nothing is sent to the table before
// the table can carry it. Each sync reads the kernel back (a few small dumps), so whatever
// changed behind felix's back is repaired by the next one.
import type { DeviceStatus } from '../dataplane.js';
import type { WireguardDataplane } from './dataplane.js';
import {
  computeWireguardState,
  type WireguardFamily,
  type WireguardFamilyState,
  type WireguardRoute,
  type WireguardState,
} from './desired.js';
import { resolveWireguardSettings, type ResolvedWireguardSettings, type WireguardInput, type WireguardSettings } from './input.js';
import { planPeers, planRules, planTableRoutes } from './plan.js';

export interface WireguardFailure {
  /** What was being written: "peers of wireguard.cali", "route 10.65.0.64/26 table 1", ... */
  readonly what: string;
  readonly error: string;
}

export interface WireguardReport {
  readonly devices: readonly DeviceStatus[];
  readonly peersSet: number;
  readonly peersRemoved: number;
  readonly routesWritten: number;
  readonly failures: readonly WireguardFailure[];
  readonly problems: readonly string[];
}

export class WireguardProgrammer {
  readonly settings: ResolvedWireguardSettings;
  private input: WireguardInput | undefined;
  private stateCache?: WireguardState;
  /** Families felix has had a device for (so one turned off is cleaned up even between resyncs). */
  private readonly had = new Set<WireguardFamily>();
  /**
   * The table's routes as last read and written since, per family: read again only at a resync,
   * since reading them is a dump of the family's every route (the main table's too).
   */
  private readonly routesHeld = new Map<WireguardFamily, Map<string, WireguardRoute>>();

  constructor(
    private readonly dataplane: WireguardDataplane,
    settings: WireguardSettings,
    private readonly protocol: number,
  ) {
    this.settings = resolveWireguardSettings(settings);
  }

  setInput(input: WireguardInput | undefined): void {
    this.input = input;
    this.stateCache = undefined;
  }

  get state(): WireguardState {
    this.stateCache ??= computeWireguardState(this.input, this.settings);
    return this.stateCache;
  }

  /** Device names by family (for what felix leaves out of its own device lists). */
  deviceName(family: WireguardFamily): string {
    return family === 4 ? this.settings.interfaceName : this.settings.interfaceNameV6;
  }

  async sync(cleanUpAll: boolean): Promise<WireguardReport> {
    const state = this.state;
    const report = { devices: [] as DeviceStatus[], peersSet: 0, peersRemoved: 0, routesWritten: 0, failures: [] as WireguardFailure[] };
    for (const family of [4, 6] as const) {
      const want = family === 4 ? state.v4 : state.v6;
      if (want) await this.syncFamily(want, report, cleanUpAll);
      else if (cleanUpAll || this.had.has(family)) await this.remove(family, report);
    }
    return { ...report, problems: state.problems };
  }

  private async heldRoutes(family: WireguardFamily, reread: boolean): Promise<Map<string, WireguardRoute>> {
    let held = this.routesHeld.get(family);
    if (!held || reread) {
      held = new Map((await this.dataplane.listTableRoutes(family, this.settings.table, this.protocol)).map((r) => [r.dst, r]));
      this.routesHeld.set(family, held);
    }
    return held;
  }

  private async writeRoutes(
    family: WireguardFamily,
    want: readonly WireguardRoute[],
    failures: WireguardFailure[],
    reread: boolean,
  ): Promise<number> {
    const held = await this.heldRoutes(family, reread);
    const writes = planTableRoutes(want, [...held.values()]);
    const outcomes = await this.dataplane.writeTableRoutes(family, this.settings.table, this.protocol, writes);
    let written = 0;
    writes.forEach((w, i) => {
      if (outcomes[i]?.ok) {
        written++;
        if (w.op === 'delete') held.delete(w.route.dst);
        else held.set(w.route.dst, w.route);
      } else {
        failures.push({
          what: `${w.op} ${w.route.dst} dev ${w.route.dev} table ${this.settings.table}`,
          error: outcomes[i]?.error ?? 'failed',
        });
        // What the kernel holds is uncertain now: read it again next time.
        this.routesHeld.delete(family);
      }
    });
    return written;
  }

  private async syncFamily(
    want: WireguardFamilyState,
    report: { devices: DeviceStatus[]; peersSet: number; peersRemoved: number; routesWritten: number; failures: WireguardFailure[] },
    reread: boolean,
  ): Promise<void> {
    const dp = this.dataplane;
    const { device, rule } = want;
    const status = await dp.ensureDevice(device);
    report.devices.push(status);
    if (!status.ok) return;
    this.had.add(device.family);
    const have = (await dp.listPeers(device.name)) ?? [];
    const peers = planPeers(want.peers, have);
    if (peers.set.length > 0) {
      const o = await dp.writePeers(device.name, peers.set, []);
      if (o.ok) report.peersSet += peers.set.length;
      else report.failures.push({ what: `peers of ${device.name}`, error: o.error ?? 'failed' });
    }
    report.routesWritten += await this.writeRoutes(device.family, want.routes, report.failures, reread);
    if (peers.remove.length > 0) {
      const o = await dp.writePeers(device.name, [], peers.remove);
      if (o.ok) report.peersRemoved += peers.remove.length;
      else report.failures.push({ what: `peers of ${device.name}`, error: o.error ?? 'failed' });
    }
    const rules = planRules(rule, await dp.listRules(device.family), this.settings.fwmark);
    for (const r of rules.remove) await this.writeRule('delete', r, report.failures);
    if (rules.add) await this.writeRule('add', rules.add, report.failures);
  }

  /**
   * A family with no device wanted: its rule, routes and device go. On a node that never had
   * one (no rule of ours, no device), nothing more is read: the table's routes are only looked
   * for where WireGuard was.
   */
  private async remove(family: WireguardFamily, report: { failures: WireguardFailure[] }): Promise<void> {
    const dp = this.dataplane;
    const rules = planRules(undefined, await dp.listRules(family), this.settings.fwmark);
    const device = (await dp.listPeers(this.deviceName(family))) !== undefined;
    if (!this.had.has(family) && rules.remove.length === 0 && !device) return;
    const before = report.failures.length;
    for (const r of rules.remove) await this.writeRule('delete', r, report.failures);
    await this.writeRoutes(family, [], report.failures, true);
    await dp.removeDevice(this.deviceName(family));
    if (report.failures.length === before) {
      this.had.delete(family);
      this.routesHeld.delete(family);
    }
  }

  private async writeRule(op: 'add' | 'delete', r: WireguardFamilyState['rule'], failures: WireguardFailure[]): Promise<void> {
    const o = await this.dataplane.writeRule(op, r);
    if (!o.ok)
      failures.push({
        what: `${op} rule not fwmark 0x${r.fwmark.toString(16)} lookup ${r.table} priority ${r.priority} (IPv${r.family})`,
        error: o.error ?? 'failed',
      });
  }
}
