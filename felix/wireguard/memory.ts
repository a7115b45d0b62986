// WireGuard state in maps, with the kernel's answers where felix depends on them: a peer set
// replaces its allowed IPs, a prefix moves to the last peer given it, a second equal rule is
// refused. For unit tests and in-process simulations.
import type { DeviceStatus, WriteOutcome } from '../dataplane.js';
import type { InstalledPeer, WireguardDataplane, WireguardRouteWrite } from './dataplane.js';
import type { WireguardDeviceSpec, WireguardFamily, WireguardPeerSpec, WireguardRoute, WireguardRule } from './desired.js';

export interface MemoryWireguardDevice {
  spec: WireguardDeviceSpec;
  peers: Map<string, InstalledPeer>;
}

export class MemoryWireguardDataplane implements WireguardDataplane {
  readonly description = 'in-memory WireGuard';
  readonly devices = new Map<string, MemoryWireguardDevice>();
  /** "family|table" → dst → route (with its protocol). */
  readonly tables = new Map<string, Map<string, WireguardRoute & { protocol: number }>>();
  readonly rules: WireguardRule[] = [];
  /** Names held by devices of another kind. */
  readonly foreignLinks = new Set<string>();
  /** Every peer write, for tests that count them. */
  readonly peerWrites: { name: string; set: readonly WireguardPeerSpec[]; remove: readonly string[] }[] = [];

  async ensureDevice(spec: WireguardDeviceSpec): Promise<DeviceStatus> {
    if (this.foreignLinks.has(spec.name)) return { name: spec.name, ok: false, detail: `another device holds the name ${spec.name}` };
    const d = this.devices.get(spec.name);
    if (!d) {
      this.devices.set(spec.name, { spec, peers: new Map() });
      return { name: spec.name, ok: true, detail: 'created' };
    }
    const changed = JSON.stringify(d.spec) !== JSON.stringify(spec);
    d.spec = spec;
    return { name: spec.name, ok: true, detail: changed ? 'changed' : 'unchanged' };
  }

  async removeDevice(name: string): Promise<boolean> {
    for (const [k, t] of this.tables) for (const [dst, r] of t) if (r.dev === name) this.tables.get(k)?.delete(dst);
    return this.devices.delete(name);
  }

  async listPeers(name: string): Promise<InstalledPeer[] | undefined> {
    const d = this.devices.get(name);
    return d && [...d.peers.values()];
  }

  async writePeers(name: string, set: readonly WireguardPeerSpec[], remove: readonly string[]): Promise<WriteOutcome> {
    const d = this.devices.get(name);
    if (!d) return { ok: false, error: `no device ${name}` };
    this.peerWrites.push({ name, set, remove });
    for (const k of remove) d.peers.delete(k);
    for (const p of set) {
      // WireGuard gives a prefix to one peer: the last one set with it.
      for (const [k, other] of d.peers)
        if (k !== p.publicKey && other.allowedIps.some((a) => p.allowedIps.includes(a)))
          d.peers.set(k, { ...other, allowedIps: other.allowedIps.filter((a) => !p.allowedIps.includes(a)) });
      d.peers.set(p.publicKey, {
        publicKey: p.publicKey,
        endpoint: p.endpoint,
        allowedIps: [...p.allowedIps],
        keepAliveSeconds: p.keepAliveSeconds,
        latestHandshake: 0,
      });
    }
    return { ok: true };
  }

  async listTableRoutes(family: WireguardFamily, table: number, protocol: number): Promise<WireguardRoute[]> {
    return [...(this.tables.get(`${family}|${table}`)?.values() ?? [])]
      .filter((r) => r.protocol === protocol)
      .map((r) => ({ dst: r.dst, dev: r.dev }));
  }

  async writeTableRoutes(
    family: WireguardFamily,
    table: number,
    protocol: number,
    writes: readonly WireguardRouteWrite[],
  ): Promise<WriteOutcome[]> {
    const key = `${family}|${table}`;
    const t = this.tables.get(key) ?? new Map<string, WireguardRoute & { protocol: number }>();
    this.tables.set(key, t);
    return writes.map((w) => {
      if (w.op === 'replace') {
        if (![...this.devices.keys()].includes(w.route.dev)) return { ok: false, error: `Cannot find device "${w.route.dev}"` };
        t.set(w.route.dst, { ...w.route, protocol });
        return { ok: true };
      }
      const had = t.get(w.route.dst);
      if (!had || had.protocol !== protocol) return { ok: false, error: 'No such process' };
      t.delete(w.route.dst);
      return { ok: true };
    });
  }

  async listRules(family: WireguardFamily): Promise<WireguardRule[]> {
    return this.rules.filter((r) => r.family === family);
  }

  async writeRule(op: 'add' | 'delete', rule: WireguardRule): Promise<WriteOutcome> {
    const at = this.rules.findIndex((r) => JSON.stringify(r) === JSON.stringify(rule));
    if (op === 'add') {
      if (at >= 0) return { ok: false, error: 'File exists' };
      this.rules.push(rule);
    } else {
      if (at < 0) return { ok: false, error: 'No such file or directory' };
      this.rules.splice(at, 1);
    }
    return { ok: true };
  }
}
