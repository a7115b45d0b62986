// FALLBACK dataplane: drives iproute2 (`ip -force -batch -`, `bridge`) instead of rtnetlink,
// for hosts where the netlink addon could not be built. Same interface and the same
// per-route outcomes (parsed from "Command failed -:N"), about half the speed of
// LinuxDataplane at scale. Prefer LinuxDataplane; createDataplane() picks for you.

import { spawnSync } from 'node:child_process';
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
import { EEXIST, EINVAL, ENETUNREACH, ENODEV, EOPNOTSUPP, EPERM, ESRCH, errnoText } from './errno.js';
import { MAIN_TABLE, type InstalledRoute, type Neighbor, type NextHop, type Route } from './model.js';
import { canonicalCidr, formatAddress, parseAddress } from '../ip/index.js';
import { retryOnlinkReplaces } from './onlink-replace.js';

export interface IpBatchDataplaneOptions {
  /** Path of a network namespace (e.g. /var/run/netns/x); default: the process's own. */
  readonly netns?: string;
}

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

// ip prints the kernel's words, not its number: read the errno back from them (EINVAL when none match).
const ERRNO: [RegExp, number][] = [
  [/File exists/, EEXIST],
  [/No such process/, ESRCH],
  [/Cannot find device|No such device/, ENODEV],
  [/Network is unreachable|invalid gateway/, ENETUNREACH],
  [/Operation not permitted/, EPERM],
  [/Unknown device type|not supported/i, EOPNOTSUPP],
];

interface IpRoute {
  dst: string;
  type?: string;
  gateway?: string;
  dev?: string;
  protocol?: string;
  metric?: number;
  flags?: string[];
  nexthops?: { gateway?: string; dev: string; flags?: string[] }[];
}

export class IpBatchDataplane implements Dataplane {
  readonly description: string;

  constructor(
    private readonly opts: IpBatchDataplaneOptions = {},
    why = '',
  ) {
    this.description = `ip -batch FALLBACK dataplane${opts.netns ? ` in ${opts.netns}` : ''}${why ? ` (${why})` : ''}`;
  }

  private run(cmd: string, args: string[], input?: string): Run {
    const argv = this.opts.netns ? ['--net=' + this.opts.netns, cmd, ...args] : args;
    const r = spawnSync(this.opts.netns ? 'nsenter' : cmd, argv, { input, encoding: 'utf8', maxBuffer: 1 << 30 });
    if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
    return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
  }

  /** Runs a batch; returns an outcome per line from iproute2's "Command failed -:N" reports. */
  private batch(cmd: 'ip' | 'bridge', lines: string[]): WriteOutcome[] {
    const out: WriteOutcome[] = lines.map(() => ({ ok: true }));
    if (!lines.length) return out;
    const r = this.run(cmd, ['-force', '-batch', '-'], lines.join('\n') + '\n');
    let text: string[] = [];
    for (const line of r.stderr.split('\n')) {
      const m = /^Command failed -:(\d+)$/.exec(line.trim());
      if (!m) {
        if (line.trim()) text.push(line.trim());
        continue;
      }
      const msg = text.join('; ') || 'failed';
      const errno = ERRNO.find(([re]) => re.test(msg))?.[1] ?? EINVAL;
      out[Number(m[1]) - 1] = { ok: false, errno, error: `${errnoText(errno)}: ${msg} [${cmd} -batch]` };
      text = [];
    }
    return out;
  }

  async listRoutes(): Promise<InstalledRoute[]> {
    const out: InstalledRoute[] = [];
    for (const fam of ['-4', '-6']) {
      const r = this.run('ip', [fam, '-N', '-j', 'route', 'show', 'table', 'main']);
      if (r.status !== 0) throw new Error(`ip route show: ${r.stderr.trim()}`);
      for (const x of JSON.parse(r.stdout || '[]') as IpRoute[]) {
        if (x.type && x.type !== '6' && x.type !== '1') continue;
        const six = fam === '-6';
        // The default route too: learned next hops may resolve through it (resolve.ts).
        const text = x.dst === 'default' ? (six ? '::/0' : '0.0.0.0/0') : x.dst;
        const dst = canonicalCidr(text.includes('/') ? text : `${text}/${six ? 128 : 32}`);
        const hop = (h: { gateway?: string; dev?: string; flags?: string[] }): NextHop => {
          const n: { dev: string; gateway?: string; onlink?: boolean } = { dev: h.dev ?? '' };
          if (h.gateway) n.gateway = formatAddress(parseAddress(h.gateway).bytes);
          if (h.flags?.includes('onlink')) n.onlink = true;
          return n;
        };
        const blackhole = x.type === '6';
        out.push({
          dst,
          type: blackhole ? 'blackhole' : 'unicast',
          nextHops: blackhole ? [] : x.nexthops ? x.nexthops.map(hop) : [hop(x)],
          protocol: Number(x.protocol ?? 0),
          table: MAIN_TABLE,
          metric: x.metric ?? (six ? 1024 : 0),
        });
      }
    }
    return out;
  }

  /** Writes routes; an IPv6 onlink replace the kernel refuses is written as delete, then create (onlink-replace.ts). */
  async writeRoutes(writes: readonly RouteWrite[], protocol: number): Promise<WriteOutcome[]> {
    const outcomes = this.writeOnce(writes, protocol);
    // What ip prints for the kernel's EINVAL: its extended ack, or without one the errno's text.
    const refused = (o: WriteOutcome) => /Nexthop has invalid gateway|RTNETLINK answers: Invalid argument/.test(o.error ?? '');
    return retryOnlinkReplaces(writes, outcomes, refused, async (again) => this.writeOnce(again, protocol));
  }

  private writeOnce(writes: readonly RouteWrite[], protocol: number): WriteOutcome[] {
    const lines = writes.map((w) => {
      const metric = w.op === 'create' ? '' : ` metric ${w.metric ?? defaultMetric(w.route.dst)}`;
      if (w.op === 'delete') return `route del ${w.route.dst} proto ${protocol}${metric}`;
      // Options before the next hops: ip reads everything after "nexthop" as part of one.
      const r = w.route;
      const head = `route ${w.op === 'create' ? 'add' : 'replace'} ${r.type === 'blackhole' ? 'blackhole ' : ''}${r.dst} proto ${protocol}${metric}`;
      return r.type === 'blackhole' ? head : `${head} ${hopsSpec(r)}`;
    });
    return this.batch('ip', lines);
  }

  async listNeighbors(devs: readonly string[]): Promise<Neighbor[]> {
    const names = new Set(await this.linkNames());
    const out: Neighbor[] = [];
    for (const dev of devs) {
      if (!names.has(dev)) continue;
      for (const fam of ['-4', '-6']) {
        const r = this.run('ip', [fam, '-j', 'neigh', 'show', 'dev', dev, 'nud', 'permanent']);
        for (const n of JSON.parse(r.stdout || '[]') as { dst: string; lladdr?: string }[])
          if (n.lladdr) out.push({ kind: 'arp', dev, address: n.dst, mac: n.lladdr });
      }
      const f = this.run('bridge', ['-j', 'fdb', 'show', 'dev', dev]);
      for (const n of JSON.parse(f.stdout || '[]') as { mac: string; dst?: string; flags?: string[]; state?: string }[])
        if (n.dst && n.flags?.includes('self') && n.state === 'permanent') out.push({ kind: 'fdb', dev, address: n.dst, mac: n.mac });
    }
    return out;
  }

  async writeNeighbors(writes: readonly NeighborWrite[]): Promise<WriteOutcome[]> {
    const out: WriteOutcome[] = new Array(writes.length);
    const arp = writes.map((w, i) => [w, i] as const).filter(([w]) => w.neighbor.kind === 'arp');
    const fdb = writes.map((w, i) => [w, i] as const).filter(([w]) => w.neighbor.kind === 'fdb');
    this.batch(
      'ip',
      arp.map(([{ op, neighbor: n }]) =>
        op === 'delete' ? `neigh del ${n.address} dev ${n.dev}` : `neigh replace ${n.address} lladdr ${n.mac} dev ${n.dev} nud permanent`,
      ),
    ).forEach((o, k) => {
      out[arp[k][1]] = o;
    });
    this.batch(
      'bridge',
      fdb.map(([{ op, neighbor: n }]) =>
        op === 'delete' ? `fdb del ${n.mac} dev ${n.dev} self` : `fdb replace ${n.mac} dev ${n.dev} dst ${n.address} self permanent`,
      ),
    ).forEach((o, k) => {
      out[fdb[k][1]] = o;
    });
    return out;
  }

  async linkNames(): Promise<string[]> {
    return this.links().map((l) => l.ifname);
  }

  private links(): {
    ifname: string;
    mtu: number;
    address?: string;
    flags: string[];
    linkinfo?: { info_kind?: string; info_data?: { id?: number; port?: number } };
  }[] {
    const r = this.run('ip', ['-d', '-j', 'link', 'show']);
    if (r.status !== 0) throw new Error(`ip link show: ${r.stderr.trim()}`);
    return JSON.parse(r.stdout || '[]');
  }

  private one(args: string[]): string | null {
    const r = this.run('ip', args);
    return r.status === 0 ? null : r.stderr.trim() || `ip ${args.join(' ')} failed`;
  }

  private ensureAddress(dev: string, cidr: string): string | null {
    const six = cidr.includes(':');
    const r = this.run('ip', [six ? '-6' : '-4', '-j', 'addr', 'show', 'dev', dev]);
    const have = (JSON.parse(r.stdout || '[]') as { addr_info?: { local: string; prefixlen: number; scope?: string }[] }[])
      .flatMap((l) => l.addr_info ?? [])
      .filter((a) => a.scope !== 'link')
      .map((a) => `${a.local}/${a.prefixlen}`);
    for (const other of have.filter((a) => a !== cidr)) {
      const e = this.one(['addr', 'del', other, 'dev', dev]);
      if (e) return e;
    }
    return have.includes(cidr) ? null : this.one(['addr', 'replace', cidr, 'dev', dev]);
  }

  async ensureVxlan(s: VxlanDeviceSpec): Promise<DeviceStatus> {
    let l = this.links().find((x) => x.ifname === s.name);
    const done: string[] = [];
    if (l && l.linkinfo?.info_kind !== 'vxlan')
      return {
        name: s.name,
        ok: false,
        detail: `a ${l.linkinfo?.info_kind ?? 'non-VXLAN'} device named ${s.name} exists; felix will not replace a device it did not make`,
      };
    if (l && (l.linkinfo?.info_data?.id !== s.vni || l.linkinfo?.info_data?.port !== s.port)) {
      const e = this.one(['link', 'del', s.name]);
      if (e) return { name: s.name, ok: false, detail: e };
      done.push('recreated');
      l = undefined;
    }
    if (!l) {
      const args = ['link', 'add', s.name, 'type', 'vxlan', 'id', String(s.vni), 'dstport', String(s.port), 'nolearning'];
      if (s.localIp) args.push('local', s.localIp);
      if (s.parent) args.push('dev', s.parent);
      const e = this.one(args);
      if (e) return { name: s.name, ok: false, detail: `creating VXLAN device ${s.name}: ${e}` };
      if (!done.length) done.push('created');
    }
    // Only what differs: setting even the same MAC again makes the kernel flush the FDB.
    const now = this.links().find((x) => x.ifname === s.name);
    const set = ['link', 'set', s.name];
    if (now?.mtu !== s.mtu) set.push('mtu', String(s.mtu));
    if (s.vtepMac && now?.address !== s.vtepMac.toLowerCase()) set.push('address', s.vtepMac);
    if (!now?.flags.includes('UP')) set.push('up');
    const e =
      (set.length > 3 ? this.one(set) : null) ??
      this.ensureAddress(s.name, s.vtepIp.includes('/') ? s.vtepIp : `${s.vtepIp}/${s.vtepIp.includes(':') ? 128 : 32}`);
    if (e) return { name: s.name, ok: false, detail: e };
    return { name: s.name, ok: true, detail: done.join(', ') || 'ready', mac: this.links().find((x) => x.ifname === s.name)?.address };
  }

  async ensureIpip(s: IpipDeviceSpec): Promise<DeviceStatus> {
    if (!this.links().some((x) => x.ifname === s.name)) {
      const e = this.one(['link', 'add', s.name, 'type', 'ipip']);
      if (e && !/File exists/.test(e)) {
        const why = /Unknown device type|not supported/i.test(e)
          ? 'the kernel has no ipip driver ("Unknown device type"); IPIP routes cannot be programmed on this host: use VXLAN'
          : e;
        return { name: s.name, ok: false, detail: `creating ${s.name}: ${why}` };
      }
    }
    const e =
      this.one(['link', 'set', s.name, 'mtu', String(s.mtu), 'up']) ??
      (s.address ? this.ensureAddress(s.name, s.address.includes('/') ? s.address : `${s.address}/32`) : null);
    return e ? { name: s.name, ok: false, detail: e } : { name: s.name, ok: true, detail: 'ready' };
  }

  async setSysctl(path: string, value: string): Promise<SysctlOutcome> {
    const file = `/proc/sys/${path}`;
    if (this.opts.netns) {
      // /proc/sys/net is per namespace: read and write it from inside.
      const r = this.run('sh', ['-c', `v=$(cat "$1") && { [ "$v" = "$2" ] || echo "$2" > "$1"; } && cat "$1"`, 'sh', file, value]);
      const now = r.stdout.trim();
      return r.status === 0 && now === value
        ? { key: path, ok: true, value }
        : { key: path, ok: false, value: now, error: `cannot set ${file} to ${value}: ${r.stderr.trim() || `reads ${now}`}` };
    }
    try {
      if (readFileSync(file, 'utf8').trim() !== value) writeFileSync(file, value);
      return { key: path, ok: true, value };
    } catch (e) {
      return { key: path, ok: false, error: `cannot set ${file} to ${value}: ${(e as Error).message}` };
    }
  }

  close(): void {}
}

function hopsSpec(r: Route): string {
  const hop = (h: NextHop) => `${h.gateway ? `via ${h.gateway} ` : ''}dev ${h.dev}${h.onlink ? ' onlink' : ''}`;
  if (r.nextHops.length === 1) return `${r.nextHops[0].gateway ? '' : 'scope link '}${hop(r.nextHops[0])}`;
  return r.nextHops.map((h) => `nexthop ${hop(h)}`).join(' ');
}
