// The dataplane over rtnetlink, in the network namespace given (or the process's own).
// All writes of one call go out in as few sendmsg calls as fit, each request acked and its
// outcome matched back by sequence number.

import { readFileSync, writeFileSync } from 'node:fs';
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
import { EEXIST, EINVAL, ENODEV, EOPNOTSUPP, errnoText } from './errno.js';
import { MAIN_TABLE, type InstalledRoute, type Neighbor } from './model.js';
import {
  readAddress,
  readLink,
  writeAddress,
  writeAddressDump,
  writeIpipCreate,
  writeLinkDelete,
  writeLinkDump,
  writeLinkSet,
  writeVxlanCreate,
  type LinkInfo,
} from './netlink/link.js';
import { inNetns } from './netlink/native.js';
import { readNeighbor, writeNeighbor, writeNeighborDump } from './netlink/neigh.js';
import { readRoute, writeRoute, writeRouteDump, UnknownDeviceError } from './netlink/route.js';
import { NetlinkSocket, type BatchResult, type NetlinkSocketOptions } from './netlink/socket.js';
import { watchRoutes } from './netlink/watch.js';
import { RTM_NEWADDR, RTM_NEWLINK, RTM_NEWNEIGH, RTM_NEWROUTE } from './netlink/constants.js';
import { parseInterfaceAddress } from '../ip/index.js';
import { retryOnlinkReplaces } from './onlink-replace.js';

export interface LinuxDataplaneOptions extends NetlinkSocketOptions {
  /** Families to dump and manage. Default both. */
  readonly families?: readonly (4 | 6)[];
}

export class LinuxDataplane implements Dataplane {
  readonly description: string;
  private readonly sock: NetlinkSocket;
  private byName = new Map<string, LinkInfo>();
  private byIndex = new Map<number, string>();
  private readonly families: readonly (4 | 6)[];

  constructor(private readonly opts: LinuxDataplaneOptions = {}) {
    this.sock = NetlinkSocket.open(opts);
    this.families = opts.families ?? [4, 6];
    this.description = `linux rtnetlink dataplane${opts.netns ? ` in ${opts.netns}` : ''}`;
  }

  /** Re-reads the device list (names <-> indexes). */
  refreshLinks(): LinkInfo[] {
    const w = this.sock.writer(64);
    writeLinkDump(w);
    const links: LinkInfo[] = [];
    this.sock.dump(w, (type, buf, s, e) => {
      if (type === RTM_NEWLINK) links.push(readLink(buf, s, e));
    });
    this.byName = new Map(links.map((l) => [l.name, l]));
    this.byIndex = new Map(links.map((l) => [l.index, l.name]));
    return links;
  }

  private ifname = (index: number): string => this.byIndex.get(index) ?? `if${index}`;

  async listRoutes(): Promise<InstalledRoute[]> {
    this.refreshLinks();
    const out: InstalledRoute[] = [];
    for (const f of this.families) {
      const w = this.sock.writer(64);
      writeRouteDump(w, f);
      this.sock.dump(w, (type, buf, s, e) => {
        if (type !== RTM_NEWROUTE) return;
        const r = readRoute(buf, s, e, this.ifname, undefined, MAIN_TABLE);
        if (r) out.push(r);
      });
    }
    return out;
  }

  /** Writes routes; an IPv6 onlink replace the kernel refuses is written as delete, then create (onlink-replace.ts). */
  async writeRoutes(writes: readonly RouteWrite[], protocol: number): Promise<WriteOutcome[]> {
    const outcomes = await this.writeOnce(writes, protocol);
    // EINVAL, with the kernel's extended ack (after the errno, in brackets) when it gives one:
    // "Nexthop has invalid gateway" (or device mismatch, in later kernels' words).
    const refused = (o: WriteOutcome) => {
      const ack = /\((.*)\)$/.exec(o.error ?? '')?.[1];
      return o.errno === EINVAL && (ack === undefined || ack.startsWith('Nexthop has invalid gateway'));
    };
    return retryOnlinkReplaces(writes, outcomes, refused, (again) => this.writeOnce(again, protocol));
  }

  private async writeOnce(writes: readonly RouteWrite[], protocol: number): Promise<WriteOutcome[]> {
    this.refreshLinks();
    const outcomes: WriteOutcome[] = new Array(writes.length);
    const w = this.sock.writer(Math.max(1 << 16, writes.length * 64));
    const sent: number[] = [];
    const ifindex = (dev: string): number => {
      const l = this.byName.get(dev);
      if (!l) throw new UnknownDeviceError(dev);
      return l.index;
    };
    writes.forEach((wr, i) => {
      try {
        writeRoute(w, wr.op, wr.route, {
          protocol,
          table: MAIN_TABLE,
          metric: wr.op === 'create' ? undefined : (wr.metric ?? defaultMetric(wr.route.dst)),
          ifindex,
        });
        sent.push(i);
      } catch (e) {
        // No such device: the route is reported and not sent; the next apply tries again, by
        // which time the pod's veth or the tunnel may exist (or the route is no longer wanted).
        outcomes[i] = {
          ok: false,
          errno: ENODEV,
          error: e instanceof UnknownDeviceError ? errnoText(ENODEV, e.message) : (e as Error).message,
        };
      }
    });
    fill(outcomes, sent, await this.sock.execute(w));
    return outcomes;
  }

  watchRoutes(protocol: number, changed: () => void): (() => void) | undefined {
    return watchRoutes({ netns: this.opts.netns, protocol }, changed);
  }

  async listNeighbors(devs: readonly string[]): Promise<Neighbor[]> {
    this.refreshLinks();
    const want = new Set(devs);
    const out: Neighbor[] = [];
    for (const kind of ['arp4', 'arp6', 'fdb'] as const) {
      const w = this.sock.writer(64);
      writeNeighborDump(w, kind);
      this.sock.dump(w, (type, buf, s, e) => {
        if (type !== RTM_NEWNEIGH) return;
        const n = readNeighbor(buf, s, e, this.ifname);
        if (n && want.has(n.dev)) out.push(n);
      });
    }
    return out;
  }

  async writeNeighbors(writes: readonly NeighborWrite[]): Promise<WriteOutcome[]> {
    this.refreshLinks();
    const outcomes: WriteOutcome[] = new Array(writes.length);
    const w = this.sock.writer();
    const sent: number[] = [];
    for (const [i, { op, neighbor }] of writes.entries()) {
      const l = this.byName.get(neighbor.dev);
      if (!l) {
        outcomes[i] = { ok: false, errno: ENODEV, error: errnoText(ENODEV, `device ${neighbor.dev} does not exist`) };
        continue;
      }
      writeNeighbor(w, op, neighbor, l.index);
      sent.push(i);
    }
    fill(outcomes, sent, await this.sock.execute(w));
    return outcomes;
  }

  async linkNames(): Promise<string[]> {
    return this.refreshLinks().map((l) => l.name);
  }

  private async one(build: (w: ReturnType<NetlinkSocket['writer']>) => void): Promise<WriteOutcome> {
    const w = this.sock.writer(1024);
    build(w);
    const out: WriteOutcome[] = [];
    fill(out, [0], await this.sock.execute(w));
    return out[0];
  }

  private addresses(index: number, family: 4 | 6): string[] {
    const w = this.sock.writer(64);
    writeAddressDump(w, family);
    const out: string[] = [];
    this.sock.dump(w, (type, buf, s, e) => {
      if (type !== RTM_NEWADDR) return;
      const a = readAddress(buf, s, e);
      if (a && a.index === index && !a.cidr.startsWith('fe80:')) out.push(a.cidr);
    });
    return out;
  }

  /** Puts exactly `cidr` (of its family) on the device: adds it, removes any other. */
  private async ensureAddress(l: LinkInfo, cidr: string): Promise<string | null> {
    const fam = parseInterfaceAddress(cidr, 'address').family;
    const have = this.addresses(l.index, fam);
    for (const other of have.filter((a) => a !== cidr)) {
      const r = await this.one((w) => writeAddress(w, 'delete', l.index, other));
      if (!r.ok) return `removing ${other} from ${l.name}: ${r.error}`;
    }
    if (!have.includes(cidr)) {
      const r = await this.one((w) => writeAddress(w, 'replace', l.index, cidr));
      if (!r.ok) return `adding ${cidr} to ${l.name}: ${r.error}`;
    }
    return null;
  }

  async ensureVxlan(s: VxlanDeviceSpec): Promise<DeviceStatus> {
    this.refreshLinks();
    const done: string[] = [];
    let l = this.byName.get(s.name);
    if (
      l &&
      (l.kind !== 'vxlan' || l.vxlan?.vni !== s.vni || l.vxlan?.port !== s.port || (s.vtepMac && l.mac !== s.vtepMac.toLowerCase()))
    ) {
      if (l.kind !== 'vxlan')
        return {
          name: s.name,
          ok: false,
          detail: `a ${l.kind ?? 'non-VXLAN'} device named ${s.name} exists; felix will not replace a device it did not make`,
        };
      const r = await this.one((w) => writeLinkDelete(w, l!.index));
      if (!r.ok) return { name: s.name, ok: false, detail: `deleting mismatched ${s.name}: ${r.error}` };
      done.push(`recreated (had vni ${l.vxlan?.vni}, port ${l.vxlan?.port})`);
      l = undefined;
    }
    if (!l) {
      const parent = s.parent ? this.byName.get(s.parent)?.index : undefined;
      const r = await this.one((w) =>
        writeVxlanCreate(w, {
          name: s.name,
          vni: s.vni,
          port: s.port,
          mtu: s.mtu,
          localIp: s.localIp,
          parentIndex: parent,
          mac: s.vtepMac,
        }),
      );
      if (!r.ok) return { name: s.name, ok: false, detail: `creating VXLAN device ${s.name}: ${r.error}` };
      if (!done.length) done.push('created');
      this.refreshLinks();
      l = this.byName.get(s.name)!;
    }
    if (!l.up || l.mtu !== s.mtu) {
      const r = await this.one((w) => writeLinkSet(w, l!.index, { up: true, mtu: s.mtu }));
      if (!r.ok) return { name: s.name, ok: false, detail: `setting ${s.name} up, mtu ${s.mtu}: ${r.error}` };
      if (l.mtu !== s.mtu) done.push(`mtu ${l.mtu} -> ${s.mtu}`);
    }
    const fam = s.vtepIp.includes(':') ? 128 : 32;
    const err = await this.ensureAddress(l, s.vtepIp.includes('/') ? s.vtepIp : `${s.vtepIp}/${fam}`);
    if (err) return { name: s.name, ok: false, detail: err };
    return { name: s.name, ok: true, detail: done.join(', ') || 'ready', mac: l.mac };
  }

  async ensureIpip(s: IpipDeviceSpec): Promise<DeviceStatus> {
    this.refreshLinks();
    let l = this.byName.get(s.name);
    if (!l) {
      const r = await this.one((w) => writeIpipCreate(w, s.name, s.mtu));
      // EEXIST: tunl0 appeared since the device list was read (loading the ipip module makes
      // one in every namespace): take it as made. EOPNOTSUPP: there is no ipip driver at all.
      if (!r.ok && r.errno !== EEXIST) {
        const why =
          r.errno === EOPNOTSUPP
            ? 'the kernel has no ipip driver ("Unknown device type"); IPIP routes cannot be programmed on this host: use VXLAN'
            : r.error;
        return { name: s.name, ok: false, detail: `creating ${s.name}: ${why}` };
      }
      this.refreshLinks();
      l = this.byName.get(s.name);
      if (!l) return { name: s.name, ok: false, detail: `${s.name} did not appear after creation` };
    }
    if (!l.up || l.mtu !== s.mtu) {
      const r = await this.one((w) => writeLinkSet(w, l!.index, { up: true, mtu: s.mtu }));
      if (!r.ok) return { name: s.name, ok: false, detail: `setting ${s.name} up, mtu ${s.mtu}: ${r.error}` };
    }
    if (s.address) {
      const err = await this.ensureAddress(l, s.address.includes('/') ? s.address : `${s.address}/32`);
      if (err) return { name: s.name, ok: false, detail: err };
    }
    return { name: s.name, ok: true, detail: 'ready' };
  }

  async setSysctl(path: string, value: string): Promise<SysctlOutcome> {
    const file = `/proc/sys/${path}`;
    try {
      // /proc/sys/net belongs to the namespace of the thread that opens it.
      return inNetns(this.opts.netns, () => {
        const now = readFileSync(file, 'utf8').trim();
        if (now !== value) writeFileSync(file, value);
        const after = readFileSync(file, 'utf8').trim();
        return after === value
          ? { key: path, ok: true, value: after }
          : { key: path, ok: false, value: after, error: `${file} reads ${after} after writing ${value}` };
      });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const hint =
        code === 'EACCES' || code === 'EROFS' || code === 'EPERM'
          ? ' (felix needs root/CAP_NET_ADMIN and a writable /proc/sys)'
          : code === 'ENOENT'
            ? ' (no such sysctl: device missing?)'
            : '';
      return { key: path, ok: false, error: `cannot set ${file} to ${value}: ${(e as Error).message}${hint}` };
    }
  }

  close(): void {
    this.sock.close();
  }
}

function fill(outcomes: WriteOutcome[], sent: readonly number[], r: BatchResult): void {
  sent.forEach((i, k) => {
    const errno = r.errors[k];
    outcomes[i] =
      errno === 0 ? { ok: true } : { ok: false, errno, error: `${errnoText(errno)}${r.messages.has(k) ? ` (${r.messages.get(k)})` : ''}` };
  });
}
