// A node with pods wired as Calico wires them, for the compiler's packet tests: a "node"
// namespace that forwards, pods behind veths whose host ends are cali<name> (the pod's /32
// routed to that veth on the node; in the pod a default route via 169.254.1.1, answered by
// proxy-ARP on the host end), and an "internet" namespace on the node's eth0, its default
// gateway, that has no route to the pods, so only a masqueraded packet gets an answer. Every pod and the internet run a
// small server that answers with the source address it saw; probes run from inside a pod, all
// at once, each bounded by a timeout.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import type { PolicyInput } from '../../../felix/policy/input.js';
import type { NftTable } from '../../../felix/policy/nft-model.js';
import { renderNftScript } from '../../../felix/policy/render.js';
import type { Lab, Netns } from '../../support/netns.js';
import type { ManagedProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';
import { loadScript } from './compile-nft.js';

export const NODE_ADDRESS = '192.168.50.1';
export const INTERNET_ADDRESS = '192.168.50.2';
export const NODE_ADDRESS6 = 'fd00:50::1';
export const INTERNET_ADDRESS6 = 'fd00:50::2';
/** The IPv6 gateway a pod routes through: one link-local on every cali host end, as Calico gives them one MAC. */
const GATEWAY6 = 'fe80::1';
export const TCP_PORTS = [80, 81, 8050, 8080, 8081, 8101];
export const UDP_PORTS = [80, 8050];

// Answers each TCP connection with the peer's address and a newline, then echoes; answers each
// UDP datagram with the peer's address. IPv4 and IPv6 on separate sockets, so an IPv4 peer is
// not printed as ::ffff:a.b.c.d.
const SERVER = `
const net = require('node:net'), dgram = require('node:dgram');
const [tcp, udp] = process.argv.slice(1).map((s) => s.split(',').filter(Boolean).map(Number));
let pending = 2 * (tcp.length + udp.length);
const up = () => { if (--pending === 0) console.log('ready'); };
for (const [host, ipv6Only] of [['0.0.0.0', false], ['::', true]]) {
  for (const port of tcp) {
    net.createServer((s) => { s.on('error', () => {}); s.write(s.remoteAddress + '\\n'); s.pipe(s); }).listen({ port, host, ipv6Only }, up);
  }
  for (const port of udp) {
    const u = dgram.createSocket({ type: ipv6Only ? 'udp6' : 'udp4', ipv6Only });
    u.on('message', (m, r) => u.send(r.address, r.port, r.address));
    u.bind(port, host, up);
  }
}`;

// Runs every probe of argv[1] (JSON) at once; prints one JSON result list.
const CLIENT = `
const net = require('node:net'), dgram = require('node:dgram');
const { probes, timeoutMs, attempts } = JSON.parse(process.argv[1]);
function once(p) {
  return new Promise((resolve) => {
    let done = false;
    const finish = (r) => { if (done) return; done = true; clearTimeout(timer); try { sock.close ? sock.close() : sock.destroy(); } catch {} resolve(r); };
    const timer = setTimeout(() => finish({ ok: false, error: 'timeout' }), timeoutMs);
    let sock;
    if (p.protocol === 'tcp') {
      sock = net.connect({ host: p.host, port: p.port, localAddress: p.source });
      let data = '';
      sock.setEncoding('utf8');
      sock.on('data', (d) => { data += d; if (data.includes('\\n')) finish({ ok: true, seen: data.trim() }); });
      sock.on('error', (e) => finish({ ok: false, error: e.code || e.message }));
    } else {
      sock = dgram.createSocket(p.host.includes(':') ? 'udp6' : 'udp4');
      sock.on('message', (m) => finish({ ok: true, seen: m.toString() }));
      sock.on('error', (e) => finish({ ok: false, error: e.code || e.message }));
      sock.send('probe', p.port, p.host);
    }
  });
}
(async () => {
  const results = await Promise.all(probes.map(async (p) => {
    let r;
    for (let i = 0; i < attempts; i++) { r = await once(p); if (r.ok) break; }
    return r;
  }));
  console.log(JSON.stringify(results));
})();`;

// Holds one TCP connection open and sends a numbered line every 100 ms; prints each echo.
const LONG_CLIENT = `
const net = require('node:net');
const [host, port] = process.argv.slice(1);
const s = net.connect({ host, port: Number(port) });
let n = 0, buf = '';
s.setEncoding('utf8');
s.on('connect', () => { console.log('connected'); setInterval(() => s.write('line ' + ++n + '\\n'), 100); });
s.on('data', (d) => { buf += d; let i; while ((i = buf.indexOf('\\n')) >= 0) { console.log('echo ' + buf.slice(0, i)); buf = buf.slice(i + 1); } });
s.on('error', (e) => { console.log('error ' + e.code); process.exit(1); });
s.on('close', () => { console.log('closed'); process.exit(0); });`;

function serve(ns: Netns, name: string): ManagedProcess {
  return ns.spawn(['node', '-e', SERVER, TCP_PORTS.join(','), UDP_PORTS.join(',')], { name });
}

function ready(server: ManagedProcess): Promise<unknown> {
  return waitFor(() => server.tail().includes('ready'), { what: `${server.name} listening`, timeoutMs: 15_000, intervalMs: 50 });
}

export interface PodSpec {
  /** Short name: the pod's namespace is `<name>` and its veth's host end `cali<name>`. */
  readonly name: string;
  readonly address: string;
  readonly address6: string;
}

export interface Probe {
  readonly protocol: 'tcp' | 'udp';
  readonly host: string;
  readonly port: number;
  /** A source address other than the pod's own (it must be on the pod's eth0). */
  readonly source?: string;
}

export interface ProbeResult {
  readonly ok: boolean;
  /** The source address the far side saw. */
  readonly seen?: string;
  readonly error?: string;
}

interface Pod {
  readonly ns: Netns;
  readonly spec: PodSpec;
  readonly iface: string;
  readonly server: ManagedProcess;
}

export class PolicyNode {
  private readonly pods = new Map<string, Pod>();
  /** Namespaces of removed pods (the lab deletes namespaces only at its end): a pod made again by that name reuses its own. */
  private readonly emptied = new Map<string, Netns>();

  private constructor(
    private readonly lab: Lab,
    readonly node: Netns,
    readonly internet: Netns,
  ) {}

  static async create(lab: Lab, specs: readonly PodSpec[]): Promise<PolicyNode> {
    const node = await lab.namespace('node');
    const internet = await lab.namespace('inet');
    await node.run(['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    await lab.link(node, { ifname: 'eth0', v4: `${NODE_ADDRESS}/24` }, internet, { ifname: 'eth0', v4: `${INTERNET_ADDRESS}/24` });
    // The node's way out. Proxy-ARP answers for 169.254.1.1 only because the node routes it (here, by default) elsewhere.
    await node.ip('route', 'add', 'default', 'via', INTERNET_ADDRESS);
    await node.run(['sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1']);
    await node.ip('-6', 'addr', 'add', `${NODE_ADDRESS6}/64`, 'dev', 'eth0', 'nodad');
    await internet.ip('-6', 'addr', 'add', `${INTERNET_ADDRESS6}/64`, 'dev', 'eth0', 'nodad');
    await node.ip('-6', 'route', 'add', 'default', 'via', INTERNET_ADDRESS6);
    const self = new PolicyNode(lab, node, internet);
    const wired = [];
    for (const spec of specs) wired.push(await self.wire(spec));
    const servers = [serve(internet, 'server'), ...wired.map((w) => w.server)];
    await Promise.all(servers.map(ready));
    for (const w of wired) self.pods.set(w.spec.name, w);
    return self;
  }

  /** A pod made now, as a CNI ADD makes one: its namespace, veth, routes and a server answering. */
  async addPod(spec: PodSpec): Promise<void> {
    assert.ok(!this.pods.has(spec.name), `pod ${spec.name} exists`);
    const pod = await this.wire(spec);
    await ready(pod.server);
    this.pods.set(spec.name, pod);
  }

  /** A pod gone, as a CNI DEL leaves it: its server stopped and its veth deleted (the namespace goes with the lab). */
  async removePod(name: string): Promise<void> {
    const pod = this.pod(name);
    await pod.server.stop(1000);
    await this.node.ip('link', 'del', pod.iface);
    this.pods.delete(name);
    this.emptied.set(name, pod.ns);
  }

  private async wire(spec: PodSpec): Promise<Pod> {
    const ns = this.emptied.get(spec.name) ?? (await this.lab.namespace(spec.name));
    this.emptied.delete(spec.name);
    const iface = `cali${spec.name}`;
    const node = this.node;
    await this.lab.link(node, { ifname: iface, v6: `${GATEWAY6}/64` }, ns, {
      ifname: 'eth0',
      v4: `${spec.address}/32`,
      v6: `${spec.address6}/128`,
    });
    await node.ip('route', 'add', `${spec.address}/32`, 'dev', iface);
    await node.ip('-6', 'route', 'add', `${spec.address6}/128`, 'dev', iface);
    await node.run(['sysctl', '-qw', `net.ipv4.conf.${iface}.proxy_arp=1`, `net.ipv4.neigh.${iface}.proxy_delay=0`]);
    await ns.ip('route', 'add', '169.254.1.1', 'dev', 'eth0', 'scope', 'link');
    await ns.ip('route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0');
    await ns.ip('-6', 'route', 'add', 'default', 'via', GATEWAY6, 'dev', 'eth0');
    return { ns, spec, iface, server: serve(ns, 'server') };
  }

  pod(name: string): Pod {
    const p = this.pods.get(name);
    assert.ok(p, `no pod ${name}`);
    return p;
  }

  address(name: string): string {
    return this.pod(name).spec.address;
  }

  address6(name: string): string {
    return this.pod(name).spec.address6;
  }

  /** Compiles, then loads the table into the node's kernel as one transaction replacing the last one. */
  async apply(input: PolicyInput): Promise<NftTable> {
    const table = compilePolicy(input);
    await loadScript(this.node, renderNftScript(table, { replace: true }));
    return table;
  }

  /** Runs the probes from inside pod `from`, all at once: a failed one is tried once more. */
  async probe(from: string, probes: readonly Probe[], timeoutMs = 500): Promise<ProbeResult[]> {
    const arg = JSON.stringify({ probes, timeoutMs, attempts: 2 });
    const out = await this.pod(from).ns.run(['node', '-e', CLIENT, arg], { timeoutMs: 10_000 + 2 * timeoutMs });
    return JSON.parse(out) as ProbeResult[];
  }

  /** `ping` once (and once more if lost), bounded. */
  async ping(from: string, to: string): Promise<boolean> {
    const r = await this.pod(from).ns.exec(['ping', '-c', '1', '-W', '0.5', to]);
    if (r.code === 0) return true;
    const again = await this.pod(from).ns.exec(['ping', '-c', '1', '-W', '0.5', to]);
    return again.code === 0;
  }

  /** A TCP connection from pod `from` held open, echoing a line every 100 ms. */
  async longConnection(from: string, host: string, port: number): Promise<LongConnection> {
    const p = this.pod(from).ns.spawn(['node', '-e', LONG_CLIENT, host, String(port)], { name: `long-${host}-${port}` });
    await waitFor(() => p.tail().includes('echo line 1'), {
      what: `a connection from ${from} to ${host}:${port} echoing`,
      timeoutMs: 5000,
      intervalMs: 50,
    });
    return new LongConnection(p);
  }
}

export class LongConnection {
  constructor(readonly process: ManagedProcess) {}

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
