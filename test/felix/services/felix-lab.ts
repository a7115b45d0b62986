// One node with pods wired as Calico wires them (cali veths, /32 and /128 routes, proxy-ARP, a
// link-local IPv6 gateway), a namespace outside the cluster on the node's eth0, and felix's
// services programmed into the node's kernel through the policy programmer and real nft.
// Every pod runs a server that answers a connection or a datagram with its own name and the
// address it saw, so a probe tells which endpoint it reached and whether it was masqueraded.
import assert from 'node:assert/strict';
import { NftablesDataplane } from '../../../felix/policy/nft-dataplane.js';
import { PolicyProgrammer } from '../../../felix/policy/programmer.js';
import { programServices } from '../../../felix/services/program.js';
import { type ServiceCompileOptions, ServiceCompiler } from '../../../felix/services/compile.js';
import type { ServiceInput } from '../../../felix/services/input.js';
import type { PolicyApplyReport } from '../../../felix/policy/programmer.js';
import type { Lab, Netns } from '../../support/netns.js';
import type { ManagedProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';

export const NODE = { v4: '192.168.71.1', v6: 'fd00:71::1' };
export const OUTSIDE = { v4: '192.168.71.2', v6: 'fd00:71::2' };
const GATEWAY6 = 'fe80::1';
/** The port every pod's server listens on, TCP and UDP, both families. */
export const SERVER_PORT = 8080;

// `<name> <peer address>\n` on each TCP connection, then echoes; `<name> <peer address>` for each datagram.
const SERVER = `
const net = require('node:net'), dgram = require('node:dgram');
const [name, port] = [process.argv[1], Number(process.argv[2])];
let pending = 4;
const up = () => { if (--pending === 0) console.log('ready'); };
for (const [host, v6] of [['0.0.0.0', false], ['::', true]]) {
  net.createServer((s) => { s.on('error', () => {}); s.write(name + ' ' + s.remoteAddress + '\\n'); s.pipe(s); }).listen({ port, host, ipv6Only: v6 }, up);
  const u = dgram.createSocket({ type: v6 ? 'udp6' : 'udp4', ipv6Only: v6 });
  u.on('message', (m, r) => u.send(name + ' ' + r.address, r.port, r.address));
  u.bind(port, host, up);
}`;

// Makes `count` connections (or datagram exchanges), `parallel` at a time, each bounded; prints the results as JSON.
const CLIENT = `
const net = require('node:net'), dgram = require('node:dgram');
const { host, port, protocol, count, parallel, timeoutMs } = JSON.parse(process.argv[1]);
function once() {
  return new Promise((resolve) => {
    const t0 = Date.now();
    let done = false, sock;
    const finish = (r) => { if (done) return; done = true; clearTimeout(timer); try { protocol === 'tcp' ? sock.destroy() : sock.close(); } catch {} resolve({ ...r, ms: Date.now() - t0 }); };
    const timer = setTimeout(() => finish({ ok: false, error: 'timeout' }), timeoutMs);
    const answer = (text) => { const [name, seen] = text.trim().split(' '); finish({ ok: true, name, seen }); };
    if (protocol === 'tcp') {
      sock = net.connect({ host, port });
      let data = '';
      sock.setEncoding('utf8');
      sock.on('data', (d) => { data += d; if (data.includes('\\n')) answer(data); });
      sock.on('error', (e) => finish({ ok: false, error: e.code || e.message }));
    } else {
      sock = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
      sock.on('message', (m) => answer(m.toString()));
      sock.on('error', (e) => finish({ ok: false, error: e.code || e.message }));
      sock.connect(port, host, () => sock.send('probe'));
    }
  });
}
(async () => {
  const results = [];
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, async () => { while (next < count) { next++; results.push(await once()); } }));
  console.log(JSON.stringify(results));
})();`;

// Holds one TCP connection, prints the endpoint's greeting, then a line every 100 ms and each echo.
const LONG_CLIENT = `
const net = require('node:net');
const [host, port] = process.argv.slice(1);
const s = net.connect({ host, port: Number(port) });
let n = 0, buf = '', greeted = false;
s.setEncoding('utf8');
s.on('data', (d) => { buf += d; let i; while ((i = buf.indexOf('\\n')) >= 0) { const line = buf.slice(0, i); buf = buf.slice(i + 1);
  if (!greeted) { greeted = true; console.log('greeting ' + line); setInterval(() => s.write('line ' + ++n + '\\n'), 100); } else console.log('echo ' + line); } });
s.on('error', (e) => { console.log('error ' + e.code); process.exit(1); });
s.on('close', () => { console.log('closed'); process.exit(0); });`;

export interface PodSpec {
  readonly name: string;
  readonly v4: string;
  readonly v6: string;
}

export interface Result {
  readonly ok: boolean;
  /** The endpoint that answered. */
  readonly name?: string;
  /** The client address it saw. */
  readonly seen?: string;
  readonly error?: string;
  readonly ms: number;
}

export interface Probe {
  readonly host: string;
  readonly port: number;
  readonly protocol?: 'tcp' | 'udp';
  readonly count?: number;
  readonly parallel?: number;
  readonly timeoutMs?: number;
}

export class ServiceNode {
  readonly pods = new Map<string, { ns: Netns; spec: PodSpec; server: ManagedProcess }>();
  readonly programmer: PolicyProgrammer;
  /** The node's, as an agent keeps one beside its programmer. */
  readonly compiler = new ServiceCompiler();

  private constructor(
    readonly lab: Lab,
    readonly node: Netns,
    readonly outside: Netns,
  ) {
    this.programmer = new PolicyProgrammer(new NftablesDataplane({ netns: node.name }), { resyncIntervalMs: 0, retryDelayMs: 0 });
  }

  static async create(lab: Lab, pods: readonly PodSpec[]): Promise<ServiceNode> {
    const node = await lab.namespace('node');
    const outside = await lab.namespace('outside');
    await node.run(['sysctl', '-qw', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1']);
    await lab.link(node, { ifname: 'eth0', v4: `${NODE.v4}/24`, v6: `${NODE.v6}/64` }, outside, {
      ifname: 'eth0',
      v4: `${OUTSIDE.v4}/24`,
      v6: `${OUTSIDE.v6}/64`,
    });
    // The node's way out; the outside knows no pod and no service address.
    await node.ip('route', 'add', 'default', 'via', OUTSIDE.v4);
    await node.ip('-6', 'route', 'add', 'default', 'via', OUTSIDE.v6);
    const self = new ServiceNode(lab, node, outside);
    for (const spec of pods) await self.wire(spec);
    await Promise.all(
      [...self.pods.values()].map((p) =>
        waitFor(() => p.server.tail().includes('ready'), { what: `${p.spec.name} listening`, timeoutMs: 15_000, intervalMs: 50 }),
      ),
    );
    await self.programmer.start();
    return self;
  }

  private async wire(spec: PodSpec): Promise<void> {
    const ns = await this.lab.namespace(spec.name);
    const iface = `cali${spec.name}`;
    await this.lab.link(this.node, { ifname: iface, v6: `${GATEWAY6}/64` }, ns, {
      ifname: 'eth0',
      v4: `${spec.v4}/32`,
      v6: `${spec.v6}/128`,
    });
    await this.node.ip('route', 'add', `${spec.v4}/32`, 'dev', iface);
    await this.node.ip('-6', 'route', 'add', `${spec.v6}/128`, 'dev', iface);
    await this.node.run(['sysctl', '-qw', `net.ipv4.conf.${iface}.proxy_arp=1`, `net.ipv4.neigh.${iface}.proxy_delay=0`]);
    await ns.ip('route', 'add', '169.254.1.1', 'dev', 'eth0', 'scope', 'link');
    await ns.ip('route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0');
    await ns.ip('-6', 'route', 'add', 'default', 'via', GATEWAY6, 'dev', 'eth0');
    const server = ns.spawn(['node', '-e', SERVER, spec.name, String(SERVER_PORT)], { name: 'server' });
    this.pods.set(spec.name, { ns, spec, server });
  }

  ns(name: string): Netns {
    if (name === 'node') return this.node;
    if (name === 'outside') return this.outside;
    const p = this.pods.get(name);
    assert.ok(p, `no pod ${name}`);
    return p.ns;
  }

  /** Compiles and applies the services (beside the empty policy); fails the test if nft refused it. Options other than the defaults take a compiler of their own. */
  async program(input: ServiceInput, options?: ServiceCompileOptions): Promise<PolicyApplyReport> {
    const compiler = options ? new ServiceCompiler(options) : this.compiler;
    const report = await programServices(this.programmer, input, compiler).applied;
    assert.ok(report.ok, `apply failed: ${report.error}\n${report.script.slice(0, 4000)}`);
    return report;
  }

  /** Runs the probe from inside `from` (a pod, `node` or `outside`). */
  async probe(from: string, p: Probe): Promise<Result[]> {
    const arg = JSON.stringify({ protocol: 'tcp', count: 1, parallel: 1, timeoutMs: 2000, ...p });
    const count = p.count ?? 1;
    const out = await this.ns(from).run(['node', '-e', CLIENT, arg], {
      timeoutMs: 20_000 + (count * (p.timeoutMs ?? 2000)) / (p.parallel ?? 1),
    });
    return JSON.parse(out) as Result[];
  }

  /** A TCP connection from `from` held open, echoing a line every 100 ms; resolves with the endpoint it reached. */
  async longConnection(from: string, host: string, port: number): Promise<LongConnection> {
    const p = this.ns(from).spawn(['node', '-e', LONG_CLIENT, host, String(port)], { name: `long-${port}` });
    await waitFor(() => /echo line 1\b/.test(p.tail()), {
      what: `a connection from ${from} to ${host}:${port} echoing`,
      timeoutMs: 5000,
      intervalMs: 50,
    });
    const m = /greeting (\S+)/.exec(p.tail());
    assert.ok(m, p.tail());
    return new LongConnection(p, m[1]!);
  }

  /** `nft` in the node, as an operator would run it behind felix's back. */
  nft(...args: string[]): Promise<string> {
    return this.node.run(['nft', ...args]);
  }
}

export class LongConnection {
  constructor(
    readonly process: ManagedProcess,
    /** The endpoint it reached. */
    readonly endpoint: string,
  ) {}

  /** The echo count went up by `n` within the bound: the connection still carries data both ways. */
  async flows(n = 3, timeoutMs = 3000): Promise<void> {
    const start = this.lastEcho();
    await waitFor(() => this.lastEcho() >= start + n, { what: `${n} more echoes on ${this.process.name}`, timeoutMs, intervalMs: 50 });
  }

  private lastEcho(): number {
    const all = [...this.process.tail().matchAll(/echo line (\d+)/g)];
    return all.length === 0 ? 0 : Number(all[all.length - 1]![1]);
  }

  stop(): Promise<void> {
    return this.process.stop(1000);
  }
}

/** Connections per endpoint name (failures under `!error`). */
export function tally(results: readonly Result[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of results) {
    const k = r.ok ? r.name! : `!${r.error}`;
    out.set(k, (out.get(k) ?? 0) + 1);
  }
  return out;
}
