// WireGuard through the kernel's own tools, the fallback where the netlink addon is not built:
// iproute2 for the device, its address, the table's routes and the rule; wireguard-tools' `wg`
// (Debian: wireguard-tools) for keys and peers. Every step is a process, which costs far more
// than a netlink request (README.md has the measurements). The private key reaches `wg` on its
// standard input, never through a file or its arguments.
import { spawn } from 'node:child_process';
import type { DeviceStatus, WriteOutcome } from '../dataplane.js';
import type { InstalledPeer, WireguardDataplane, WireguardRouteWrite } from './dataplane.js';
import type { WireguardDeviceSpec, WireguardFamily, WireguardPeerSpec, WireguardRoute, WireguardRule } from './desired.js';

export interface WgToolDataplaneOptions {
  /** Path of a network namespace (e.g. /var/run/netns/x); default: the process's own. */
  readonly netns?: string;
}

interface Run {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

interface IpLink {
  ifname: string;
  mtu?: number;
  flags?: string[];
  linkinfo?: { info_kind?: string };
}

interface IpAddr {
  addr_info?: { family: string; local: string; prefixlen: number; scope?: string }[];
}

interface IpRule {
  priority: number;
  not?: null;
  fwmark?: string;
  fwmask?: string;
  table?: string;
}

export class WgToolDataplane implements WireguardDataplane {
  readonly description: string;

  constructor(private readonly opts: WgToolDataplaneOptions = {}) {
    this.description = `wg and ip tools${opts.netns ? ` in ${opts.netns}` : ''}`;
  }

  private run(cmd: string, args: readonly string[], input?: string): Promise<Run> {
    const file = this.opts.netns ? 'nsenter' : cmd;
    const argv = this.opts.netns ? [`--net=${this.opts.netns}`, cmd, ...args] : [...args];
    return new Promise((resolve) => {
      const p = spawn(file, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '',
        stderr = '';
      p.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      // A missing tool is an answer like any failure, so the device's status can say what to install.
      p.on('error', (e) =>
        resolve({ status: 127, stdout: '', stderr: `${cmd}: ${e.message}${cmd === 'wg' ? ' (install wireguard-tools)' : ''}` }),
      );
      p.on('close', (code) => resolve({ status: code ?? 1, stdout, stderr }));
      p.stdin.on('error', () => undefined);
      p.stdin.end(input ?? '');
    });
  }

  private async ip(args: readonly string[]): Promise<Run> {
    return this.run('ip', args);
  }

  private async link(name: string): Promise<IpLink | undefined> {
    const r = await this.ip(['-j', '-d', 'link', 'show', 'dev', name]);
    if (r.status !== 0) return undefined;
    return (JSON.parse(r.stdout) as IpLink[])[0];
  }

  async ensureDevice(spec: WireguardDeviceSpec): Promise<DeviceStatus> {
    const done: string[] = [];
    const fail = (why: string): DeviceStatus => ({ name: spec.name, ok: false, detail: why });
    let link = await this.link(spec.name);
    if (link && link.linkinfo?.info_kind !== 'wireguard')
      return fail(`a ${link.linkinfo?.info_kind ?? 'non-WireGuard'} device holds the name ${spec.name}; left alone`);
    if (!link) {
      const r = await this.ip(['link', 'add', spec.name, 'type', 'wireguard']);
      if (r.status !== 0)
        return fail(
          /Unknown device type|not supported/i.test(r.stderr)
            ? `the kernel has no wireguard driver (modprobe wireguard): ${r.stderr.trim()}`
            : r.stderr.trim(),
        );
      done.push('created');
      link = await this.link(spec.name);
    }
    if (link?.mtu !== spec.mtu) {
      const r = await this.ip(['link', 'set', 'dev', spec.name, 'mtu', String(spec.mtu)]);
      if (r.status !== 0) return fail(`mtu ${spec.mtu}: ${r.stderr.trim()}`);
      if (!done.includes('created')) done.push(`mtu ${link?.mtu} -> ${spec.mtu}`);
    }
    // Key, port and mark: set when they differ (the private key is compared through its dump line).
    const dump = await this.run('wg', ['show', spec.name, 'dump']);
    const [shown, , port, mark] = dump.status === 0 ? (dump.stdout.split('\n')[0] ?? '').split('\t') : [];
    const priv = shown === '(none)' ? undefined : shown;
    const markNow = mark === undefined || mark === 'off' ? 0 : Number(mark);
    if (priv !== spec.privateKey || Number(port) !== spec.port || markNow !== spec.fwmark) {
      // wg reads the key from a path; Node's child stdin is a socket, which /proc/self/fd/0 cannot
      // open, so a shell's `cat` turns it into a pipe on the way.
      const r = await this.run(
        'sh',
        [
          '-c',
          'cat | wg "$@"',
          'wg',
          'set',
          spec.name,
          'private-key',
          '/proc/self/fd/0',
          'listen-port',
          String(spec.port),
          'fwmark',
          `0x${spec.fwmark.toString(16)}`,
        ],
        `${spec.privateKey}\n`,
      );
      if (r.status !== 0) return fail(`wg set: ${r.stderr.trim()}`);
      if (priv !== spec.privateKey) done.push(priv ? 'key changed' : 'key set');
    }
    const family = spec.family === 4 ? 'inet' : 'inet6';
    const a = await this.ip(['-j', 'addr', 'show', 'dev', spec.name]);
    const have = ((JSON.parse(a.stdout || '[]') as IpAddr[])[0]?.addr_info ?? [])
      .filter((x) => x.family === family && x.scope !== 'link')
      .map((x) => `${x.local}/${x.prefixlen}`);
    for (const extra of have.filter((x) => x !== spec.address)) {
      await this.ip(['addr', 'del', extra, 'dev', spec.name]);
      done.push(`address ${extra} removed`);
    }
    if (spec.address && !have.includes(spec.address)) {
      const r = await this.ip(['addr', 'add', spec.address, 'dev', spec.name, ...(spec.family === 6 ? ['nodad'] : [])]);
      if (r.status !== 0) return fail(`address ${spec.address}: ${r.stderr.trim()}`);
      done.push(`address ${spec.address}`);
    }
    if (!link?.flags?.includes('UP')) {
      const r = await this.ip(['link', 'set', 'dev', spec.name, 'up']);
      if (r.status !== 0) return fail(`up: ${r.stderr.trim()}`);
    }
    return { name: spec.name, ok: true, detail: done.length ? done.join(', ') : 'unchanged' };
  }

  async removeDevice(name: string): Promise<boolean> {
    const link = await this.link(name);
    if (link?.linkinfo?.info_kind !== 'wireguard') return false;
    return (await this.ip(['link', 'del', 'dev', name])).status === 0;
  }

  async listPeers(name: string): Promise<InstalledPeer[] | undefined> {
    const r = await this.run('wg', ['show', name, 'dump']);
    if (r.status !== 0) return undefined;
    return r.stdout
      .split('\n')
      .slice(1)
      .filter((l) => l.trim() !== '')
      .map((l) => {
        const [publicKey, , endpoint, allowed, handshake, , , keepalive] = l.split('\t');
        return {
          publicKey,
          ...(endpoint && endpoint !== '(none)' ? { endpoint } : {}),
          allowedIps: allowed && allowed !== '(none)' ? allowed.split(',') : [],
          keepAliveSeconds: keepalive === 'off' || keepalive === undefined ? 0 : Number(keepalive),
          latestHandshake: Number(handshake) || 0,
        };
      });
  }

  async writePeers(name: string, set: readonly WireguardPeerSpec[], remove: readonly string[]): Promise<WriteOutcome> {
    if (set.length === 0 && remove.length === 0) return { ok: true };
    const args = ['set', name];
    for (const key of remove) args.push('peer', key, 'remove');
    for (const p of set)
      args.push(
        'peer',
        p.publicKey,
        'endpoint',
        p.endpoint,
        'persistent-keepalive',
        p.keepAliveSeconds > 0 ? String(p.keepAliveSeconds) : 'off',
        'allowed-ips',
        p.allowedIps.join(','),
      );
    const r = await this.run('wg', args);
    return r.status === 0 ? { ok: true } : { ok: false, error: `wg set ${name}: ${r.stderr.trim()}` };
  }

  async listTableRoutes(family: WireguardFamily, table: number, protocol: number): Promise<WireguardRoute[]> {
    const r = await this.ip([`-${family}`, '-j', 'route', 'show', 'table', String(table)]);
    if (r.status !== 0) {
      // A table that holds nothing yet is not an error.
      if (/table.*(does not exist|not found)|No such/i.test(r.stderr)) return [];
      throw new Error(`ip route show table ${table}: ${r.stderr.trim()}`);
    }
    const rows = JSON.parse(r.stdout || '[]') as { dst: string; dev?: string; protocol?: string }[];
    return rows
      .filter((x) => x.dev !== undefined && x.protocol === String(protocol))
      .map((x) => ({ dst: x.dst.includes('/') ? x.dst : `${x.dst}/${family === 4 ? 32 : 128}`, dev: x.dev as string }));
  }

  async writeTableRoutes(
    family: WireguardFamily,
    table: number,
    protocol: number,
    writes: readonly WireguardRouteWrite[],
  ): Promise<WriteOutcome[]> {
    if (writes.length === 0) return [];
    const lines = writes.map((w) =>
      w.op === 'replace'
        ? `route replace ${w.route.dst} dev ${w.route.dev} table ${table} proto ${protocol} scope link`
        : `route del ${w.route.dst} table ${table} proto ${protocol}`,
    );
    // One process for the lot; iproute2 names each failed line ("Command failed -:N") after its error.
    const r = await this.run('ip', ['-force', `-${family}`, '-batch', '-'], `${lines.join('\n')}\n`);
    const out: WriteOutcome[] = writes.map(() => ({ ok: true }));
    let text: string[] = [];
    for (const line of r.stderr.split('\n')) {
      const m = /^Command failed -:(\d+)$/.exec(line.trim());
      if (!m) {
        if (line.trim()) text.push(line.trim());
        continue;
      }
      const i = Number(m[1]) - 1;
      if (i >= 0 && i < out.length) out[i] = { ok: false, error: text.join('; ') || 'failed' };
      text = [];
    }
    if (r.status !== 0 && out.every((o) => o.ok)) return writes.map(() => ({ ok: false, error: r.stderr.trim() || 'ip -batch failed' }));
    return out;
  }

  async listRules(family: WireguardFamily): Promise<WireguardRule[]> {
    const r = await this.ip([`-${family}`, '-j', 'rule', 'show']);
    if (r.status !== 0) throw new Error(`ip rule show: ${r.stderr.trim()}`);
    return (JSON.parse(r.stdout || '[]') as IpRule[])
      .filter((x) => 'not' in x && x.fwmark !== undefined && x.fwmark === x.fwmask && /^\d+$/.test(x.table ?? ''))
      .map((x) => ({ family, priority: x.priority, table: Number(x.table), fwmark: Number(x.fwmark) }));
  }

  async writeRule(op: 'add' | 'delete', rule: WireguardRule): Promise<WriteOutcome> {
    const mark = `0x${rule.fwmark.toString(16)}`;
    const r = await this.ip([
      `-${rule.family}`,
      'rule',
      op === 'add' ? 'add' : 'del',
      'not',
      'fwmark',
      `${mark}/${mark}`,
      'table',
      String(rule.table),
      'priority',
      String(rule.priority),
    ]);
    return r.status === 0 ? { ok: true } : { ok: false, error: `ip rule ${op}: ${r.stderr.trim()}` };
  }
}
