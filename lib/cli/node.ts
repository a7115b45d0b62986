// `podroute node run|status` and `podroute bgp summary|routes`: the node agent as a daemon,
// and the commands that ask a running one through its control socket.
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { spawnSync } from 'node:child_process';
import {
  createLinuxDataplane,
  IpBatchDataplane,
  MemoryDataplane,
  MemoryNftDataplane,
  ConntrackTool,
  NftablesDataplane,
  type Dataplane,
  type NftDataplane,
} from '../../felix/index.js';
import {
  checkNodeAddress,
  checkRouterId,
  NodeAgent,
  serveAgentControl,
  serveHealth,
  type AgentStatus,
  type NodeAgentOptions,
} from '../agent/index.js';
import { felixSettings } from '../agent/felix-configuration.js';
import { cniSocketPath, serveCni } from '../agent/cni-server.js';
import { callControl } from '../bgpd/control.js';
import { createLogger, logFormat, logLevel, type Logger } from '../log/index.js';
import {
  datastoreConfigFromEnv,
  datastoreFromFlag,
  openDatastore,
  type BackendDatastore,
  type DatastoreConfig,
} from '../datastore/index.js';

export const DEFAULT_CONTROL = '/var/run/podroute/node.sock';

/** Everything `node run` can be told, from a file, the environment or flags (flags win). */
export interface NodeRunConfig {
  nodeName?: string;
  ipv4Address?: string;
  ipAutodetectionMethod?: string;
  /** Calico's IP6: an IPv6 address with prefix length, autodetect, or none (the default: no IPv6 sessions). */
  ipv6Address?: string;
  ip6AutodetectionMethod?: string;
  /** Calico's CALICO_ROUTER_ID: a dotted IPv4 router ID, or hash (from the node name). Default: the IPv4 address, else hash. */
  routerId?: string;
  uplink?: string;
  asNumber?: number;
  labels?: Record<string, string>;
  routeReflectorClusterId?: string;
  bgpPort?: number;
  holdTime?: number;
  connectRetryTime?: number;
  restartTime?: number;
  gracefulRestartWaitMs?: number;
  dataplane?: 'linux' | 'memory';
  /** Network policy and NAT-outgoing in nftables: on (default) or off. */
  policy?: 'on' | 'off';
  /** Cluster IPs, NodePorts and EndpointSlices for Services, written by this agent too: on (default) or off. */
  serviceController?: 'on' | 'off';
  datastore?: DatastoreConfig;
  control?: string;
  /** The socket the CNI shim calls the agent on: a path, or off. Default /run/podroute/cni.sock as root, else off. */
  cniSocket?: string;
  /** Port for /metrics, /liveness, /readiness; 0 turns it off. Default 9099. */
  healthPort?: number;
  /** The address that port listens on (Felix's healthHost). Default 127.0.0.1: this host only. */
  healthHost?: string;
  defaultIpv4Pool?: NodeAgentOptions['defaultIpv4Pool'];
  /** Seconds between felix's full resyncs. Default 90. */
  resyncInterval?: number;
  /** Calico's name: Debug, Info (default), Warning, Error, or none. */
  logSeverityScreen?: string;
  /** json (default, one object a line) or text. */
  logFormat?: string;
}

const FLAGS: Record<string, { key: keyof NodeRunConfig; type: 'string' | 'number' | 'labels' | 'pool' | 'datastore' }> = {
  '--name': { key: 'nodeName', type: 'string' },
  '--ip': { key: 'ipv4Address', type: 'string' },
  '--ip-autodetection-method': { key: 'ipAutodetectionMethod', type: 'string' },
  '--ip6': { key: 'ipv6Address', type: 'string' },
  '--ip6-autodetection-method': { key: 'ip6AutodetectionMethod', type: 'string' },
  '--router-id': { key: 'routerId', type: 'string' },
  '--uplink': { key: 'uplink', type: 'string' },
  '--as': { key: 'asNumber', type: 'number' },
  '--labels': { key: 'labels', type: 'labels' },
  '--cluster-id': { key: 'routeReflectorClusterId', type: 'string' },
  '--bgp-port': { key: 'bgpPort', type: 'number' },
  '--hold-time': { key: 'holdTime', type: 'number' },
  '--connect-retry': { key: 'connectRetryTime', type: 'number' },
  '--restart-time': { key: 'restartTime', type: 'number' },
  '--dataplane': { key: 'dataplane', type: 'string' },
  '--policy': { key: 'policy', type: 'string' },
  '--service-controller': { key: 'serviceController', type: 'string' },
  '--datastore': { key: 'datastore', type: 'datastore' },
  '--control': { key: 'control', type: 'string' },
  '--cni-socket': { key: 'cniSocket', type: 'string' },
  '--health-port': { key: 'healthPort', type: 'number' },
  '--health-host': { key: 'healthHost', type: 'string' },
  '--default-pool': { key: 'defaultIpv4Pool', type: 'pool' },
  '--log-level': { key: 'logSeverityScreen', type: 'string' },
  '--log-format': { key: 'logFormat', type: 'string' },
};

function parseLabels(s: string, field: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of s.split(',').filter(Boolean)) {
    const i = kv.indexOf('=');
    if (i <= 0) throw new Error(`${field}: ${JSON.stringify(kv)} is not key=value`);
    out[kv.slice(0, i).trim()] = kv.slice(i + 1).trim();
  }
  return out;
}

/** "10.65.0.0/16" or "10.65.0.0/16,vxlan=CrossSubnet,blockSize=26,natOutgoing=false". */
function parsePool(s: string, field: string): NodeAgentOptions['defaultIpv4Pool'] {
  if (s === 'none' || s === 'false') return false;
  const [cidr, ...opts] = s.split(',');
  const pool: NonNullable<Exclude<NodeAgentOptions['defaultIpv4Pool'], false>> = { cidr: cidr! };
  for (const o of opts) {
    const [k, v] = o.split('=');
    if (k === 'vxlan' && (v === 'Never' || v === 'Always' || v === 'CrossSubnet')) pool.vxlanMode = v;
    else if (k === 'blockSize' && Number.isInteger(Number(v))) pool.blockSize = Number(v);
    else if (k === 'natOutgoing' && (v === 'true' || v === 'false')) pool.natOutgoing = v === 'true';
    else
      throw new Error(
        `${field}: unknown option ${JSON.stringify(o)} (vxlan=Never|Always|CrossSubnet, blockSize=N, natOutgoing=true|false)`,
      );
  }
  return pool;
}

function convert(type: string, value: string, field: string): unknown {
  switch (type) {
    case 'number': {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0) throw new Error(`${field}: ${JSON.stringify(value)} is not a whole number`);
      return n;
    }
    case 'labels':
      return parseLabels(value, field);
    case 'pool':
      return parsePool(value, field);
    case 'datastore':
      return datastoreFromFlag(value, field);
    default:
      return value;
  }
}

export function nodeRunConfig(args: readonly string[], env: NodeJS.ProcessEnv = process.env): NodeRunConfig {
  let file: NodeRunConfig = {};
  const flags: NodeRunConfig = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const [name, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = inline ?? args[++i];
    if (name === '--config') {
      if (!value || !existsSync(value)) throw new Error(`--config: ${value ?? '(missing)'} does not exist`);
      const parsed = parseYaml(readFileSync(value, 'utf8')) as unknown;
      if (typeof parsed !== 'object' || parsed === null) throw new Error(`--config ${value}: must be a YAML mapping`);
      file = parsed as NodeRunConfig;
      continue;
    }
    const f = FLAGS[name];
    if (!f) throw new Error(`node run: unknown flag ${name} (known: --config, ${Object.keys(FLAGS).join(', ')})`);
    if (value === undefined) throw new Error(`${name}: needs a value`);
    (flags as Record<string, unknown>)[f.key] = convert(f.type, value, name);
  }
  const fromEnv: NodeRunConfig = {};
  const e = (k: string) => (env[k] !== undefined && env[k] !== '' ? env[k] : undefined);
  const set = (key: keyof NodeRunConfig, type: string, ...names: string[]) => {
    for (const n of names) {
      const v = e(n);
      if (v !== undefined && !(n === 'IP' && v === 'autodetect')) {
        (fromEnv as Record<string, unknown>)[key] = convert(type, v, n);
        return;
      }
    }
  };
  set('nodeName', 'string', 'PODROUTE_NODENAME', 'NODENAME');
  set('ipv4Address', 'string', 'PODROUTE_IP', 'IP');
  set('ipAutodetectionMethod', 'string', 'PODROUTE_IP_AUTODETECTION_METHOD', 'IP_AUTODETECTION_METHOD');
  set('ipv6Address', 'string', 'PODROUTE_IP6', 'IP6');
  set('ip6AutodetectionMethod', 'string', 'PODROUTE_IP6_AUTODETECTION_METHOD', 'IP6_AUTODETECTION_METHOD');
  set('routerId', 'string', 'PODROUTE_ROUTER_ID', 'CALICO_ROUTER_ID');
  set('asNumber', 'number', 'PODROUTE_AS', 'AS');
  set('routeReflectorClusterId', 'string', 'PODROUTE_CLUSTER_ID');
  set('defaultIpv4Pool', 'pool', 'PODROUTE_IPV4POOL_CIDR', 'CALICO_IPV4POOL_CIDR');
  set('control', 'string', 'PODROUTE_CONTROL');
  set('cniSocket', 'string', 'PODROUTE_CNI_SOCKET');
  set('healthHost', 'string', 'PODROUTE_HEALTH_HOST', 'FELIX_HEALTHHOST');
  set('logSeverityScreen', 'string', 'PODROUTE_LOG_LEVEL', 'FELIX_LOGSEVERITYSCREEN');
  set('logFormat', 'string', 'PODROUTE_LOG_FORMAT');
  if (e('PODROUTE_REDIS_URL') || e('PODROUTE_DATASTORE') || e('PODROUTE_REDIS_SENTINELS') || e('PODROUTE_ETCD_ENDPOINTS'))
    fromEnv.datastore = datastoreConfigFromEnv(env);
  return { ...file, ...fromEnv, ...flags };
}

/** Events above info; the rest (the agent's own included) are info. */
const LEVELS: Record<string, 'warning' | 'error'> = {
  error: 'error',
  'programming-problems': 'warning',
  'policy-disabled': 'warning',
  'dataplane-fallback': 'warning',
  'cni-call-timeout': 'warning',
  'cni-request-refused': 'warning',
};

let logger: Logger = createLogger();

function log(event: string, fields: Record<string, unknown>): void {
  logger.log(LEVELS[event] ?? 'info', event, fields);
}

/**
 * What the agent would refuse at start(), refused before anything listens: a daemon that cannot
 * start must not leave its health port or control socket up for a supervisor to see.
 */
export function checkNodeRunConfig(c: NodeRunConfig): void {
  if (c.ipv4Address !== undefined && c.ipv4Address !== 'none') checkNodeAddress(c.ipv4Address);
  if (c.ipv4Address === 'none' && (c.ipv6Address === undefined || c.ipv6Address === 'none'))
    throw new Error('ipv4Address: none needs an IPv6 address (--ip6 fd00::1/64 or autodetect)');
  if (c.routerId !== undefined) checkRouterId(c.routerId);
  if (c.ipv6Address !== undefined && c.ipv6Address !== 'autodetect' && c.ipv6Address !== 'none')
    checkNodeAddress(c.ipv6Address, 'ipv6Address', 6);
  const whole = (key: keyof NodeRunConfig, min: number, max: number) => {
    const v = c[key];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max))
      throw new Error(`${key}: ${JSON.stringify(v)} is not a whole number in ${min}..${max}`);
  };
  whole('asNumber', 1, 0xffffffff);
  whole('bgpPort', 0, 65535);
  whole('healthPort', 0, 65535);
  // An address, not a name: "localhost" may be ::1 or 127.0.0.1 depending on the resolver.
  if (c.healthHost !== undefined && (typeof c.healthHost !== 'string' || isIP(c.healthHost) === 0))
    throw new Error(`healthHost: ${JSON.stringify(c.healthHost)} is not an IP address (0.0.0.0 or :: for every interface)`);
  if (c.dataplane !== undefined && c.dataplane !== 'linux' && c.dataplane !== 'memory')
    throw new Error(`dataplane: ${JSON.stringify(c.dataplane)} must be linux or memory`);
  if (c.policy !== undefined && c.policy !== 'on' && c.policy !== 'off')
    throw new Error(`policy: ${JSON.stringify(c.policy)} must be on or off`);
  if (c.serviceController !== undefined && c.serviceController !== 'on' && c.serviceController !== 'off')
    throw new Error(`serviceController: ${JSON.stringify(c.serviceController)} must be on or off`);
  if (c.logSeverityScreen !== undefined) logLevel(c.logSeverityScreen, 'logSeverityScreen');
  if (c.logFormat !== undefined) logFormat(c.logFormat, 'logFormat');
  if (c.cniSocket !== undefined && typeof c.cniSocket !== 'string') throw new Error('cniSocket: must be a path or off');
  cniSocketPath(c.cniSocket, true);
}

export async function nodeRun(args: readonly string[]): Promise<number> {
  const c = nodeRunConfig(args);
  checkNodeRunConfig(c);
  logger = createLogger({
    level: c.logSeverityScreen === undefined ? 'info' : logLevel(c.logSeverityScreen, 'logSeverityScreen'),
    format: c.logFormat === undefined ? 'json' : logFormat(c.logFormat, 'logFormat'),
  });
  const cniPath = cniSocketPath(c.cniSocket, process.getuid?.() === 0);
  const ds = await openDatastore(c.datastore ?? { type: 'memory' });
  try {
    return await runAgent(c, ds, cniPath);
  } catch (e) {
    // Whatever failed before the agent ran, its datastore connection, sockets or port would
    // keep a process up that a supervisor takes for a running agent.
    process.stderr.write(`podroute: ${(e as Error).message}\n`);
    await Promise.race([ds.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
    process.exit(1);
  }
}

async function runAgent(c: NodeRunConfig, ds: BackendDatastore, cniPath: string | undefined): Promise<number> {
  const nodeName = c.nodeName ?? hostname().toLowerCase();
  // FelixConfiguration (default, then node.<name>) under the flags and the environment, as Felix.
  const fromStore = felixSettings((await ds.list('FelixConfiguration')).items, nodeName);
  let dataplane: Dataplane;
  if (c.dataplane === 'memory') dataplane = new MemoryDataplane({ links: [c.uplink ?? 'eth0'] });
  else {
    // rtnetlink through the addon, or the ip -batch fallback when it did not build.
    dataplane = createLinuxDataplane();
    if (dataplane instanceof IpBatchDataplane) log('dataplane-fallback', { dataplane: dataplane.description });
  }
  let policyDataplane: NftDataplane | undefined;
  if (c.policy !== 'off') {
    if (c.dataplane === 'memory') policyDataplane = new MemoryNftDataplane();
    else if (spawnSync('nft', ['--version'], { stdio: 'ignore' }).status === 0) policyDataplane = new NftablesDataplane();
    // Said loudly: without nft every pod reaches every pod whatever the policies say.
    else
      log('policy-disabled', {
        reason: 'the nft command was not found (Debian package nftables); network policy and natOutgoing are NOT enforced',
      });
  }
  const agent = new NodeAgent({
    nodeName,
    datastore: ds,
    dataplane,
    policyDataplane,
    serviceController: c.serviceController !== 'off',
    // The kernel's dataplane deletes stale UDP service entries with the conntrack tool, if there is one.
    serviceConntrack:
      policyDataplane instanceof NftablesDataplane
        ? new ConntrackTool({ onError: (error) => log('conntrack-error', { error }) })
        : undefined,
    ipv4Address: c.ipv4Address,
    ipAutodetectionMethod: c.ipAutodetectionMethod,
    ipv6Address: c.ipv6Address === 'none' ? undefined : c.ipv6Address,
    ip6AutodetectionMethod: c.ip6AutodetectionMethod,
    routerId: c.routerId,
    uplink: c.uplink,
    asNumber: c.asNumber,
    labels: c.labels,
    routeReflectorClusterId: c.routeReflectorClusterId,
    bgpPort: c.bgpPort,
    holdTime: c.holdTime,
    connectRetryTime: c.connectRetryTime,
    restartTime: c.restartTime,
    gracefulRestartWaitMs: c.gracefulRestartWaitMs,
    defaultIpv4Pool: c.defaultIpv4Pool,
    felix: {
      ...fromStore.felix,
      resyncIntervalMs: c.resyncInterval !== undefined ? c.resyncInterval * 1000 : (fromStore.felix.resyncIntervalMs ?? 90_000),
    },
    log,
  });
  agent.on('error', (e) => log('error', { error: e.message }));
  agent.on('programmed', (r) => {
    if (r.failures.length || r.conflicts.length || r.problems.length)
      log('programming-problems', { failures: r.failures, conflicts: r.conflicts.map((x) => x.dst), problems: r.problems });
  });
  let stopping = false;
  // SIGTERM is what a container engine, a supervisor or a rolling update sends before starting
  // the agent again: stop as for a graceful restart (peers keep this node's routes, the kernel
  // keeps its own). SIGINT and the control socket's /stop are a person ending it: every peer gets a Cease.
  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    const graceful = why === 'SIGTERM';
    log('stopping', { why, graceful });
    control.close();
    health?.close();
    void Promise.all([agent.stop(why, { graceful }), cni?.close()]).finally(() => ds.close().finally(() => process.exit(0)));
  };
  // The CNI socket first: a path it cannot take or bind fails the start before anything listens.
  const cni = cniPath === undefined ? undefined : await serveCni(cniPath, { log });
  // A socket or port that fails closes what is already open, so no socket file is left behind.
  const control = await serveAgentControl(agent, c.control ?? DEFAULT_CONTROL, () => stop('control')).catch(async (e) => {
    await cni?.close(0);
    throw e;
  });
  const healthPort = c.healthPort ?? fromStore.healthPort ?? 9099;
  const health =
    healthPort === 0
      ? undefined
      : await serveHealth(agent, healthPort, c.healthHost ?? fromStore.healthHost).catch(async (e) => {
          await new Promise((resolve) => control.close(resolve));
          await cni?.close(0);
          throw e;
        });
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    await agent.start();
  } catch (e) {
    // Nothing may stay up for a supervisor to mistake for a running agent.
    stopping = true;
    process.stderr.write(`podroute: ${(e as Error).message}\n`);
    control.close();
    health?.close();
    await cni?.close(0);
    const bounded = (p: Promise<unknown>) =>
      Promise.race([p.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
    await bounded(agent.stop('start failed'));
    await bounded(ds.close());
    process.exit(1);
  }
  log('started', {
    node: agent.nodeName,
    address: agent.address,
    uplink: agent.uplink,
    restarting: agent.restarting,
    control: c.control ?? DEFAULT_CONTROL,
    cniSocket: cniPath ?? 'off',
  });
  return new Promise<number>(() => undefined);
}

const TYPE_TEXT: Record<string, string> = {
  mesh: 'node-to-node mesh',
  rr: 'route reflector',
  'rr-client': 'rr client',
  global: 'global',
  node: 'node specific',
};

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = '+' + widths.map((w) => '-'.repeat(w + 2)).join('+') + '+';
  const row = (cells: string[]) => '|' + cells.map((c, i) => ` ${c.padEnd(widths[i]!)} `).join('|') + '|';
  return [line, row(headers), line, ...rows.map(row), line].join('\n') + '\n';
}

function since(ms: number): string {
  if (!ms) return '-';
  const d = new Date(ms);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toTimeString().slice(0, 8) : d.toISOString().slice(0, 10);
}

/** `calicoctl node status`, from a running agent's status; wide adds each peer's AS, source and prefixes. */
export function formatNodeStatus(s: AgentStatus, wide = false): string {
  const headers = ['PEER ADDRESS', 'PEER TYPE', 'STATE', 'SINCE', 'INFO', ...(wide ? ['AS', 'SOURCE', 'RECEIVED', 'SENT'] : [])];
  const row = (p: AgentStatus['peers'][number]) => [
    p.address,
    TYPE_TEXT[p.type] ?? p.type,
    p.state === 'Established' ? 'up' : 'start',
    since(p.since),
    p.info,
    ...(wide ? [String(p.asn), String(p.source ?? ''), String(p.prefixesReceived), String(p.prefixesSent)] : []),
  ];
  let out = `podroute process is running.\n\nIPv4 BGP status\n`;
  const v4 = s.peers.filter((p) => !p.address.includes(':'));
  if (v4.length === 0) out += 'No IPv4 peers found.\n';
  else {
    out += table(headers, v4.map(row));
  }
  const v6 = s.peers.filter((p) => p.address.includes(':'));
  out += `\nIPv6 BGP status\n`;
  out += v6.length === 0 ? 'No IPv6 peers found.\n' : table(headers, v6.map(row));
  return out;
}

function controlPath(args: string[]): string {
  const i = args.indexOf('--control');
  return i >= 0 && args[i + 1] ? args[i + 1]! : (process.env.PODROUTE_CONTROL ?? DEFAULT_CONTROL);
}

function outputFormat(args: string[]): 'table' | 'wide' | 'json' | 'yaml' {
  const i = args.findIndex((a) => a === '-o' || a === '--output');
  const v = i >= 0 ? args[i + 1] : undefined;
  if (v === undefined) return 'table';
  if (v === 'json' || v === 'yaml' || v === 'table' || v === 'wide') return v;
  throw new Error(`-o: ${v} must be table, wide, json or yaml`);
}

function emit(value: unknown, format: 'json' | 'yaml'): string {
  return format === 'json' ? JSON.stringify(value, null, 2) + '\n' : stringifyYaml(value);
}

export async function nodeCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'run' && (rest.includes('--help') || rest.includes('-h'))) {
    process.stdout.write(
      `usage: podroute node run [--config file.yaml] [flags]\nflags (each also a key of the config file): ${Object.entries(FLAGS)
        .map(([f, d]) => `${f} (${d.key})`)
        .join(
          ', ',
        )}\nenvironment: NODENAME, IP, IP_AUTODETECTION_METHOD, IP6, IP6_AUTODETECTION_METHOD, AS, CALICO_IPV4POOL_CIDR, PODROUTE_REDIS_URL, PODROUTE_ETCD_ENDPOINTS, PODROUTE_CONTROL, PODROUTE_CNI_SOCKET, PODROUTE_LOG_LEVEL (FELIX_LOGSEVERITYSCREEN), PODROUTE_LOG_FORMAT\n`,
    );
    return 0;
  }
  if (sub === 'run') return nodeRun(rest);
  if (sub === 'status') {
    const path = controlPath(rest);
    let status: AgentStatus;
    try {
      status = await callControl<AgentStatus>(path, 'GET', '/status');
    } catch (e) {
      process.stdout.write(`podroute process is not running (${(e as Error).message}).\n`);
      return 1;
    }
    const f = outputFormat(rest);
    process.stdout.write(f === 'table' || f === 'wide' ? formatNodeStatus(status, f === 'wide') : emit(status, f));
    return 0;
  }
  process.stderr.write('usage: podroute node run [--config file] [flags] | podroute node status [--control sock] [-o json|yaml]\n');
  return 2;
}

export async function bgpCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const path = controlPath(rest);
  const f = outputFormat(rest);
  if (sub === 'summary') {
    const s = await callControl<AgentStatus>(path, 'GET', '/status');
    if (f === 'json' || f === 'yaml') {
      process.stdout.write(emit({ asn: s.asn, routerId: s.routerId, peers: s.peers }, f));
      return 0;
    }
    process.stdout.write(
      `BGP router identifier ${s.routerId}, local AS number ${s.asn}${s.clusterId ? `, cluster ID ${s.clusterId}` : ''}\n`,
    );
    process.stdout.write(
      table(
        ['NEIGHBOR', 'AS', 'TYPE', 'STATE', 'UP/DOWN', 'PFX RCD', 'PFX SNT'],
        s.peers.map((p) => [
          p.address,
          String(p.asn),
          TYPE_TEXT[p.type] ?? p.type,
          p.state,
          since(p.since),
          String(p.prefixesReceived),
          String(p.prefixesSent),
        ]),
      ),
    );
    return 0;
  }
  if (sub === 'routes') {
    const routes = await callControl<{ prefix: string; nextHop: string; from: string; stale: boolean }[]>(path, 'GET', '/bgp/routes');
    if (f === 'json' || f === 'yaml') {
      process.stdout.write(emit(routes, f));
      return 0;
    }
    process.stdout.write(
      table(
        ['PREFIX', 'NEXT HOP', 'FROM', 'STALE'],
        routes.map((r) => [r.prefix, r.nextHop, r.from, r.stale ? 'yes' : '']),
      ),
    );
    const programmed = await callControl<{ programmed: string[] }>(path, 'GET', '/routes');
    process.stdout.write(`\nProgrammed (ip route):\n${programmed.programmed.map((r) => `  ${r}`).join('\n')}\n`);
    return 0;
  }
  process.stderr.write('usage: podroute bgp summary|routes [--control sock] [-o json|yaml]\n');
  return 2;
}
