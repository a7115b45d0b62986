// WireGuard through the kernel's own netlink families, in this process: rtnetlink for the device,
// its address, the table's routes and the rule, generic netlink "wireguard" for the key, port,
// mark and peers, all through the netlink addon felix already uses. A peer change is one
// sendmsg; wireguard-tools' `wg` costs a process per change (WgToolDataplane, the fallback
// when the addon is not built). The private key goes from memory to the kernel, nowhere else.
import type { DeviceStatus, WriteOutcome } from '../dataplane.js';
import { EEXIST, EOPNOTSUPP, errnoText } from '../errno.js';
import { RTM_NEWADDR, RTM_NEWLINK, RTM_NEWROUTE } from '../netlink/constants.js';
import {
  readAddress,
  readLink,
  writeAddress,
  writeAddressDump,
  writeLinkDelete,
  writeLinkDump,
  writeLinkSet,
  type LinkInfo,
} from '../netlink/link.js';
import { readRoute, UnknownDeviceError, writeRoute, writeRouteDump } from '../netlink/route.js';
import { NetlinkSocket, type BatchResult } from '../netlink/socket.js';
import type { MessageWriter } from '../netlink/writer.js';
import {
  NETLINK_GENERIC,
  readDevice,
  readFamilyId,
  readRule,
  writeFamilyLookup,
  writeGetDevice,
  writeRule,
  writeRuleDump,
  writeSetDevice,
  writeSetPeers,
  writeWireguardCreate,
  type DeviceState,
} from './codec.js';
import type { InstalledPeer, WireguardDataplane, WireguardRouteWrite } from './dataplane.js';
import type { WireguardDeviceSpec, WireguardFamily, WireguardPeerSpec, WireguardRoute, WireguardRule } from './desired.js';

export interface NetlinkWireguardDataplaneOptions {
  /** Path of a network namespace (e.g. /var/run/netns/x); default: the process's own. */
  readonly netns?: string;
}

const RTM_NEWRULE = 32;

export class NetlinkWireguardDataplane implements WireguardDataplane {
  readonly description: string;
  private readonly rt: NetlinkSocket;
  private gen?: NetlinkSocket;
  private familyId?: number;

  constructor(private readonly opts: NetlinkWireguardDataplaneOptions = {}) {
    this.rt = NetlinkSocket.open({ netns: opts.netns, bufferBytes: 8 << 20 });
    this.description = `WireGuard over netlink${opts.netns ? ` in ${opts.netns}` : ''}`;
  }

  private links(): Map<string, LinkInfo> {
    const w = this.rt.writer(64);
    writeLinkDump(w);
    const out = new Map<string, LinkInfo>();
    this.rt.dump(w, (type, buf, s, e) => {
      if (type === RTM_NEWLINK) {
        const l = readLink(buf, s, e);
        out.set(l.name, l);
      }
    });
    return out;
  }

  private async one(sock: NetlinkSocket, build: (w: MessageWriter) => void): Promise<WriteOutcome> {
    const w = sock.writer(1024);
    build(w);
    return outcome(await sock.execute(w), 0);
  }

  /** The generic netlink socket and WireGuard's family id, once the kernel has the module. */
  private wireguard(): { sock: NetlinkSocket; family: number } {
    this.gen ??= NetlinkSocket.open({ netns: this.opts.netns, protocol: NETLINK_GENERIC, bufferBytes: 8 << 20 });
    if (this.familyId === undefined) {
      const w = this.gen.writer(128);
      writeFamilyLookup(w, 'wireguard');
      this.gen.dump(w, (_type, buf, s, e) => {
        this.familyId ??= readFamilyId(buf, s, e);
      });
      if (this.familyId === undefined) throw new Error('the kernel has no WireGuard netlink family (modprobe wireguard)');
    }
    return { sock: this.gen, family: this.familyId };
  }

  private device(name: string): DeviceState | undefined {
    const { sock, family } = this.wireguard();
    const w = sock.writer(128);
    writeGetDevice(w, family, name);
    const state: DeviceState = { listenPort: 0, fwmark: 0, peers: [] };
    try {
      sock.dump(w, (type, buf, s, e) => {
        if (type === family) readDevice(buf, s, e, state);
      });
    } catch {
      return undefined; // no such device
    }
    return state;
  }

  async ensureDevice(spec: WireguardDeviceSpec): Promise<DeviceStatus> {
    const done: string[] = [];
    const fail = (why: string): DeviceStatus => ({ name: spec.name, ok: false, detail: why });
    let link = this.links().get(spec.name);
    if (link && link.kind !== 'wireguard') return fail(`a ${link.kind ?? 'non-WireGuard'} device holds the name ${spec.name}; left alone`);
    if (!link) {
      const r = await this.one(this.rt, (w) => writeWireguardCreate(w, spec.name, spec.mtu));
      if (!r.ok && r.errno !== EEXIST)
        return fail(r.errno === EOPNOTSUPP ? `the kernel has no wireguard driver (${r.error})` : `creating ${spec.name}: ${r.error}`);
      done.push('created');
      link = this.links().get(spec.name);
      if (!link) return fail(`${spec.name} did not appear after creation`);
    }
    try {
      const dev = this.device(spec.name);
      if (!dev || dev.privateKey !== spec.privateKey || dev.listenPort !== spec.port || dev.fwmark !== spec.fwmark) {
        const { sock, family } = this.wireguard();
        const r = await this.one(sock, (w) => writeSetDevice(w, family, spec.name, spec.privateKey, spec.port, spec.fwmark));
        if (!r.ok) return fail(`setting the key, port ${spec.port} and mark: ${r.error}`);
        if (dev?.privateKey !== spec.privateKey && !done.includes('created')) done.push('key changed');
      }
    } catch (e) {
      return fail((e as Error).message);
    }
    const have = this.addresses(link.index, spec.family);
    for (const other of have.filter((a) => a !== spec.address)) {
      const r = await this.one(this.rt, (w) => writeAddress(w, 'delete', link.index, other));
      if (!r.ok) return fail(`removing ${other}: ${r.error}`);
    }
    if (spec.address && !have.includes(spec.address)) {
      const r = await this.one(this.rt, (w) => writeAddress(w, 'replace', link.index, spec.address ?? ''));
      if (!r.ok) return fail(`adding ${spec.address}: ${r.error}`);
      done.push(`address ${spec.address}`);
    }
    if (!link.up || link.mtu !== spec.mtu) {
      const r = await this.one(this.rt, (w) => writeLinkSet(w, link.index, { up: true, mtu: spec.mtu }));
      if (!r.ok) return fail(`setting ${spec.name} up, mtu ${spec.mtu}: ${r.error}`);
      if (link.mtu !== spec.mtu && !done.includes('created')) done.push(`mtu ${link.mtu} -> ${spec.mtu}`);
    }
    return { name: spec.name, ok: true, detail: done.join(', ') || 'unchanged' };
  }

  /** The device's own addresses of a family (link-local ones are the kernel's, not felix's). */
  private addresses(index: number, family: WireguardFamily): string[] {
    const w = this.rt.writer(64);
    writeAddressDump(w, family);
    const out: string[] = [];
    this.rt.dump(w, (type, buf, s, e) => {
      if (type !== RTM_NEWADDR) return;
      const a = readAddress(buf, s, e);
      if (a && a.index === index && !a.cidr.startsWith('fe80:')) out.push(a.cidr);
    });
    return out;
  }

  async removeDevice(name: string): Promise<boolean> {
    const link = this.links().get(name);
    if (link?.kind !== 'wireguard') return false;
    return (await this.one(this.rt, (w) => writeLinkDelete(w, link.index))).ok;
  }

  async listPeers(name: string): Promise<InstalledPeer[] | undefined> {
    if (this.links().get(name)?.kind !== 'wireguard') return undefined;
    return this.device(name)?.peers;
  }

  async writePeers(name: string, set: readonly WireguardPeerSpec[], remove: readonly string[]): Promise<WriteOutcome> {
    if (set.length === 0 && remove.length === 0) return { ok: true };
    try {
      const { sock, family } = this.wireguard();
      const w = sock.writer(4096 + set.length * 256);
      writeSetPeers(w, family, name, set, remove);
      const r = outcome(await sock.execute(w), 0);
      return r.ok ? r : { ok: false, errno: r.errno, error: `peers of ${name}: ${r.error}` };
    } catch (e) {
      return { ok: false, error: (e as Error).message };
    }
  }

  async listTableRoutes(family: WireguardFamily, table: number, protocol: number): Promise<WireguardRoute[]> {
    const byIndex = new Map([...this.links().values()].map((l) => [l.index, l.name]));
    const w = this.rt.writer(64);
    writeRouteDump(w, family);
    const out: WireguardRoute[] = [];
    this.rt.dump(w, (type, buf, s, e) => {
      if (type !== RTM_NEWROUTE) return;
      const r = readRoute(buf, s, e, (i) => byIndex.get(i) ?? `if${i}`, protocol, table);
      const dev = r?.nextHops[0]?.dev;
      if (r && dev && r.nextHops.length === 1 && !r.nextHops[0]?.gateway) out.push({ dst: r.dst, dev });
    });
    return out;
  }

  async writeTableRoutes(
    _family: WireguardFamily,
    table: number,
    protocol: number,
    writes: readonly WireguardRouteWrite[],
  ): Promise<WriteOutcome[]> {
    if (writes.length === 0) return [];
    const links = this.links();
    const ifindex = (dev: string): number => {
      const l = links.get(dev);
      if (!l) throw new UnknownDeviceError(dev);
      return l.index;
    };
    const outcomes: WriteOutcome[] = new Array(writes.length);
    const sent: number[] = [];
    const w = this.rt.writer(Math.max(1 << 12, writes.length * 64));
    writes.forEach((wr, i) => {
      try {
        writeRoute(w, wr.op, { dst: wr.route.dst, type: 'unicast', nextHops: [{ dev: wr.route.dev }] }, { protocol, table, ifindex });
        sent.push(i);
      } catch (e) {
        outcomes[i] = { ok: false, error: (e as Error).message };
      }
    });
    const r = await this.rt.execute(w);
    sent.forEach((i, k) => {
      outcomes[i] = outcome(r, k);
    });
    return outcomes;
  }

  async listRules(family: WireguardFamily): Promise<WireguardRule[]> {
    const w = this.rt.writer(64);
    writeRuleDump(w, family);
    const out: WireguardRule[] = [];
    this.rt.dump(w, (type, buf, s, e) => {
      if (type !== RTM_NEWRULE) return;
      const r = readRule(buf, s, e, family);
      if (r) out.push(r);
    });
    return out;
  }

  async writeRule(op: 'add' | 'delete', rule: WireguardRule): Promise<WriteOutcome> {
    return this.one(this.rt, (w) => writeRule(w, op, rule));
  }

  close(): void {
    this.rt.close();
    this.gen?.close();
  }
}

function outcome(r: BatchResult, k: number): WriteOutcome {
  const errno = r.errors[k] ?? 0;
  return errno === 0
    ? { ok: true }
    : { ok: false, errno, error: `${errnoText(errno)}${r.messages.has(k) ? ` (${r.messages.get(k)})` : ''}` };
}
