// What `podroute node run` is told, from its three sources: a YAML file (--config), the
// environment (calico/node's names) and flags, flags over the environment over the file. Each
// setting is declared once below with its flag, its environment names and its help. Every
// mistake in all three is collected and reported in one error, before anything listens.
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parse as parseYaml } from 'yaml';
import { checkNodeAddress, checkRouterId, type NodeAgentOptions } from '../agent/index.js';
import { cniSocketPath } from '../agent/cni-server.js';
import { datastoreConfigFromEnv, datastoreFromFlag, type DatastoreConfig } from '../datastore/index.js';
import { logFormat, logLevel } from '../log/index.js';
import { closestName } from '../resources/index.js';
import { parseFor, type OptionSpec, type Parsed } from './args.js';
import { DEFAULT_CONTROL } from './flags.js';
import { datastoreFields } from './datastore-fields.js';

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

/**
 * How a setting is written: text; a whole number; a number of seconds (or milliseconds); labels
 * (k=v,... on the command line, a mapping in the file); the default pool; the datastore.
 */
type Kind = 'text' | 'whole' | 'duration' | 'labels' | 'pool' | 'datastore';

interface Setting {
  kind: Kind;
  /** The flag's name without its dashes; none: the file only. */
  flag?: string;
  /** How help names the flag's value. */
  value?: string;
  help: string;
  /** Environment variables, the first set wins. */
  env?: readonly string[];
}

const SETTINGS: { readonly [K in keyof Required<NodeRunConfig>]: Setting } = {
  nodeName: {
    kind: 'text',
    flag: 'name',
    value: '<name>',
    help: "this node's name (default: the host name)",
    env: ['PODROUTE_NODENAME', 'NODENAME'],
  },
  ipv4Address: {
    kind: 'text',
    flag: 'ip',
    value: '<address/len|autodetect|none>',
    help: "the node's IPv4 address with its prefix length; autodetect (default), or none for IPv6 only",
    env: ['PODROUTE_IP', 'IP'],
  },
  ipAutodetectionMethod: {
    kind: 'text',
    flag: 'ip-autodetection-method',
    value: '<method>',
    help: 'how autodetect finds it: first-found (default) or interface=<regex>',
    env: ['PODROUTE_IP_AUTODETECTION_METHOD', 'IP_AUTODETECTION_METHOD'],
  },
  ipv6Address: {
    kind: 'text',
    flag: 'ip6',
    value: '<address/len|autodetect|none>',
    help: "the node's IPv6 address with its prefix length, or autodetect; none (default): no IPv6 sessions",
    env: ['PODROUTE_IP6', 'IP6'],
  },
  ip6AutodetectionMethod: {
    kind: 'text',
    flag: 'ip6-autodetection-method',
    value: '<method>',
    help: 'how IPv6 autodetect finds it: first-found (default) or interface=<regex>',
    env: ['PODROUTE_IP6_AUTODETECTION_METHOD', 'IP6_AUTODETECTION_METHOD'],
  },
  routerId: {
    kind: 'text',
    flag: 'router-id',
    value: '<a.b.c.d|hash>',
    help: 'the BGP router ID, or hash (from the node name); default: the IPv4 address, else hash',
    env: ['PODROUTE_ROUTER_ID', 'CALICO_ROUTER_ID'],
  },
  uplink: {
    kind: 'text',
    flag: 'uplink',
    value: '<interface>',
    help: "the interface toward the other nodes (default: the address's, else eth0)",
  },
  asNumber: {
    kind: 'whole',
    flag: 'as',
    value: '<asn>',
    help: "this node's AS number (default: the BGPConfiguration's, else 64512)",
    env: ['PODROUTE_AS', 'AS'],
  },
  labels: { kind: 'labels', flag: 'labels', value: '<k=v,...>', help: "labels of this node's Node (peer selectors match them)" },
  routeReflectorClusterId: {
    kind: 'text',
    flag: 'cluster-id',
    value: '<a.b.c.d>',
    help: 'be a route reflector with this cluster ID',
    env: ['PODROUTE_CLUSTER_ID'],
  },
  bgpPort: { kind: 'whole', flag: 'bgp-port', value: '<port>', help: 'the port BGP listens on and dials (default 179)' },
  holdTime: { kind: 'duration', flag: 'hold-time', value: '<seconds>', help: 'the hold time offered to peers (default 90)' },
  connectRetryTime: {
    kind: 'duration',
    flag: 'connect-retry',
    value: '<seconds>',
    help: 'seconds between attempts to reach a peer (default 3)',
  },
  restartTime: {
    kind: 'duration',
    flag: 'restart-time',
    value: '<seconds>',
    help: "how long peers keep this node's routes while it restarts (graceful restart, default 120)",
  },
  gracefulRestartWaitMs: { kind: 'duration', help: 'ms a restarting agent waits for its peers before it programs (default 30000)' },
  dataplane: {
    kind: 'text',
    flag: 'dataplane',
    value: 'linux|memory',
    help: 'linux programs the kernel (default); memory programs nothing (tests and demos)',
  },
  policy: { kind: 'text', flag: 'policy', value: 'on|off', help: 'network policy and natOutgoing in nftables (default on)' },
  serviceController: {
    kind: 'text',
    flag: 'service-controller',
    value: 'on|off',
    help: "write Services' cluster IPs, NodePorts and EndpointSlices too (default on)",
  },
  datastore: {
    kind: 'datastore',
    flag: 'datastore',
    value: 'redis://host:port|etcd://host:2379[,...]|memory',
    help: 'where the cluster lives (default memory, or PODROUTE_REDIS_URL, PODROUTE_ETCD_ENDPOINTS, PODROUTE_DATASTORE)',
  },
  control: {
    kind: 'text',
    flag: 'control',
    value: '<socket>',
    help: `serve the control API on this socket (default ${DEFAULT_CONTROL})`,
    env: ['PODROUTE_CONTROL'],
  },
  cniSocket: {
    kind: 'text',
    flag: 'cni-socket',
    value: '<path|off>',
    help: 'where the CNI shim calls the agent (default /run/podroute/cni.sock as root, else off)',
    env: ['PODROUTE_CNI_SOCKET'],
  },
  healthPort: {
    kind: 'whole',
    flag: 'health-port',
    value: '<port>',
    help: 'port of /metrics, /liveness, /readiness; 0 turns it off (default 9099)',
  },
  healthHost: {
    kind: 'text',
    flag: 'health-host',
    value: '<address>',
    help: 'the address that port listens on (default 127.0.0.1; 0.0.0.0 or :: for every interface)',
    env: ['PODROUTE_HEALTH_HOST', 'FELIX_HEALTHHOST'],
  },
  defaultIpv4Pool: {
    kind: 'pool',
    flag: 'default-pool',
    value: '<cidr[,option...]|none>',
    help: 'the IPv4 pool made when there is none; options vxlan=Never|Always|CrossSubnet, blockSize=N, natOutgoing=true|false',
    env: ['PODROUTE_IPV4POOL_CIDR', 'CALICO_IPV4POOL_CIDR'],
  },
  resyncInterval: { kind: 'duration', help: "seconds between felix's full resyncs (default 90)" },
  logSeverityScreen: {
    kind: 'text',
    flag: 'log-level',
    value: 'debug|info|warning|error|none',
    help: 'the least severe line logged (default info)',
    env: ['PODROUTE_LOG_LEVEL', 'FELIX_LOGSEVERITYSCREEN'],
  },
  logFormat: {
    kind: 'text',
    flag: 'log-format',
    value: 'json|text',
    help: 'json lines (default) or text for people',
    env: ['PODROUTE_LOG_FORMAT'],
  },
};

const KEYS = Object.keys(SETTINGS) as (keyof NodeRunConfig)[];

/** Every mistake found in the node's settings; one mistake reads as itself. */
export class NodeConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.length === 1 ? problems[0] : `${problems.length} mistakes in the settings of node run:\n  ${problems.join('\n  ')}`);
  }
}

/** The flags of `node run`: --config and one per setting, each help naming its key in the file and its environment. */
export const NODE_RUN_OPTIONS: Record<string, OptionSpec> = {
  config: {
    type: 'string',
    value: '<file.yaml>',
    help: 'a YAML file of these settings by their keys (flags and the environment win over it)',
  },
  ...Object.fromEntries(
    KEYS.flatMap((key) => {
      const s = SETTINGS[key];
      if (!s.flag) return [];
      const env = s.env ? `, env ${s.env.join(' or ')}` : '';
      return [[s.flag, { type: 'string', value: s.value, help: `${s.help} [${key}${env}]` } satisfies OptionSpec]];
    }),
  ),
};

/** What help says beyond the flags: the precedence, and the settings only a file takes. */
export const NODE_RUN_DESCRIPTION = `Each flag's [key] is its name in the --config file. A flag wins over the environment (calico/node's
names), which wins over the file. Only in the file:
${KEYS.filter((k) => !SETTINGS[k].flag)
  .map((k) => `  ${k.padEnd(22)} ${SETTINGS[k].help}`)
  .join('\n')}`;

function parseLabels(s: string, field: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of s.split(',').filter(Boolean)) {
    const i = kv.indexOf('=');
    if (i <= 0) throw new Error(`${field}: ${JSON.stringify(kv)} is not key=value`);
    out[kv.slice(0, i).trim()] = kv.slice(i + 1).trim();
  }
  return out;
}

const ENCAP = ['Never', 'Always', 'CrossSubnet'] as const;
type Pool = Exclude<NonNullable<NodeRunConfig['defaultIpv4Pool']>, false>;

/** "10.65.0.0/16" or "10.65.0.0/16,vxlan=CrossSubnet,blockSize=26,natOutgoing=false". */
function parsePool(s: string, field: string): NodeRunConfig['defaultIpv4Pool'] {
  if (s === 'none' || s === 'false') return false;
  const [cidr, ...opts] = s.split(',');
  const pool: Pool = { cidr: cidr! };
  for (const o of opts) {
    const [k, v] = o.split('=');
    if (k === 'vxlan' && (ENCAP as readonly string[]).includes(v!)) pool.vxlanMode = v as Pool['vxlanMode'];
    else if (k === 'blockSize' && Number.isInteger(Number(v))) pool.blockSize = Number(v);
    else if (k === 'natOutgoing' && (v === 'true' || v === 'false')) pool.natOutgoing = v === 'true';
    else
      throw new Error(
        `${field}: unknown option ${JSON.stringify(o)} (vxlan=Never|Always|CrossSubnet, blockSize=N, natOutgoing=true|false)`,
      );
  }
  return pool;
}

/** A setting written as text (a flag, an environment variable) to its value; errors name `field`. */
function fromText(kind: Kind, value: string, field: string): unknown {
  switch (kind) {
    case 'whole':
    case 'duration': {
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

const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `path: unknown field`, with the known name it most likely stands for. */
export function unknownField(path: string, given: string, known: Iterable<string>): string {
  const near = closestName(given, known);
  return `${path}: unknown field${near ? ` (did you mean ${near}?)` : ''}`;
}

const POOL_KEYS = ['cidr', 'blockSize', 'vxlanMode', 'ipipMode', 'natOutgoing'];

function poolFromFile(v: unknown, path: string, problems: string[]): NodeRunConfig['defaultIpv4Pool'] | undefined {
  if (v === false) return false;
  if (!isMapping(v)) {
    problems.push(`${path}: ${JSON.stringify(v)} is neither false nor a mapping (cidr, blockSize, vxlanMode, ipipMode, natOutgoing)`);
    return undefined;
  }
  const before = problems.length;
  for (const k of Object.keys(v)) if (!POOL_KEYS.includes(k)) problems.push(unknownField(`${path}.${k}`, k, POOL_KEYS));
  if (typeof v.cidr !== 'string')
    problems.push(`${path}.cidr: ${v.cidr === undefined ? 'required' : `${JSON.stringify(v.cidr)} is not a CIDR`} (like 10.65.0.0/16)`);
  if (v.blockSize !== undefined && !Number.isInteger(v.blockSize))
    problems.push(`${path}.blockSize: ${JSON.stringify(v.blockSize)} is not a whole number`);
  for (const k of ['vxlanMode', 'ipipMode'])
    if (v[k] !== undefined && !(ENCAP as readonly unknown[]).includes(v[k]))
      problems.push(`${path}.${k}: ${JSON.stringify(v[k])} must be one of ${ENCAP.join(', ')}`);
  if (v.natOutgoing !== undefined && typeof v.natOutgoing !== 'boolean')
    problems.push(`${path}.natOutgoing: ${JSON.stringify(v.natOutgoing)} is not true or false`);
  return problems.length === before ? (v as unknown as Pool) : undefined;
}

/** One field of the file checked for its kind: its value, or undefined with the mistake added to problems. */
function fromFile(kind: Kind, v: unknown, path: string, problems: string[]): unknown {
  switch (kind) {
    case 'text':
      if (typeof v === 'string') return v;
      problems.push(
        `${path}: ${JSON.stringify(v)} is not a string${typeof v === 'number' || typeof v === 'boolean' ? ` (quote it: "${String(v)}")` : ''}`,
      );
      return undefined;
    case 'whole':
      if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
      problems.push(`${path}: ${JSON.stringify(v)} is not a whole number`);
      return undefined;
    case 'duration':
      if (typeof v === 'number' && Number.isFinite(v) && v >= 0) return v;
      problems.push(`${path}: ${JSON.stringify(v)} is not a number of ${path === 'gracefulRestartWaitMs' ? 'milliseconds' : 'seconds'}`);
      return undefined;
    case 'labels': {
      if (!isMapping(v)) {
        problems.push(`${path}: ${JSON.stringify(v)} is not a mapping of label to value`);
        return undefined;
      }
      const before = problems.length;
      for (const [k, x] of Object.entries(v))
        if (typeof x !== 'string') problems.push(`${path}.${k}: ${JSON.stringify(x)} is not a string (quote it: "${String(x)}")`);
      return problems.length === before ? v : undefined;
    }
    case 'pool':
      return poolFromFile(v, path, problems);
    case 'datastore':
      return datastoreFields(v, path, problems);
  }
}

/** The file's settings; mistakes (unknown fields, wrong types) go to problems, each with its path. */
function readFile(file: string, problems: string[]): NodeRunConfig {
  const refuse = (why: string) => {
    problems.push(`--config ${file}: ${why}`);
    return {};
  };
  if (!existsSync(file)) return refuse('does not exist');
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (e) {
    return refuse(`not YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (!isMapping(doc)) return refuse(`must be a YAML mapping (${KEYS.slice(0, 3).join(', ')}, ...)`);
  const out: Record<string, unknown> = {};
  const mine: string[] = [];
  for (const [k, v] of Object.entries(doc)) {
    if (!Object.hasOwn(SETTINGS, k)) {
      mine.push(unknownField(k, k, KEYS));
      continue;
    }
    const value = fromFile(SETTINGS[k as keyof NodeRunConfig].kind, v, k, mine);
    if (value !== undefined) out[k] = value;
  }
  problems.push(...mine.map((m) => `${file}: ${m}`));
  return out as NodeRunConfig;
}

/** Runs a check that throws, keeping its message. */
function collect(problems: string[], check: () => unknown): void {
  try {
    check();
  } catch (e) {
    problems.push((e as Error).message);
  }
}

/** The three sources merged, flags over the environment over the file; each mistake goes to problems. */
function readSources(values: Parsed['values'], env: NodeJS.ProcessEnv, problems: string[]): NodeRunConfig {
  const file = typeof values.config === 'string' ? readFile(values.config, problems) : {};
  const fromEnv: Record<string, unknown> = {};
  const flags: Record<string, unknown> = {};
  const set = (v: string | undefined) => (v !== undefined && v !== '' ? v : undefined);
  for (const key of KEYS) {
    const s = SETTINGS[key];
    const flag = s.flag ? values[s.flag] : undefined;
    if (typeof flag === 'string') collect(problems, () => (flags[key] = fromText(s.kind, flag, `--${s.flag}`)));
    // IP=autodetect is calico/node's default written out: it leaves the file's address in force.
    const name = s.env?.find((n) => set(env[n]) !== undefined && !(n === 'IP' && env[n] === 'autodetect'));
    if (name) collect(problems, () => (fromEnv[key] = fromText(s.kind, env[name]!, name)));
  }
  if (set(env.PODROUTE_REDIS_URL) || set(env.PODROUTE_DATASTORE) || set(env.PODROUTE_REDIS_SENTINELS) || set(env.PODROUTE_ETCD_ENDPOINTS))
    collect(problems, () => (fromEnv.datastore = datastoreConfigFromEnv(env)));
  return { ...file, ...fromEnv, ...flags };
}

/** What the agent would refuse at start(), each mistake to problems. */
function checkValues(c: NodeRunConfig, problems: string[]): void {
  const check = (f: () => unknown) => collect(problems, f);
  if (c.ipv4Address !== undefined && c.ipv4Address !== 'none') check(() => checkNodeAddress(c.ipv4Address!));
  if (c.ipv4Address === 'none' && (c.ipv6Address === undefined || c.ipv6Address === 'none'))
    problems.push('ipv4Address: none needs an IPv6 address (--ip6 fd00::1/64 or autodetect)');
  if (c.routerId !== undefined) check(() => checkRouterId(c.routerId!));
  if (c.ipv6Address !== undefined && c.ipv6Address !== 'autodetect' && c.ipv6Address !== 'none')
    check(() => checkNodeAddress(c.ipv6Address!, 'ipv6Address', 6));
  const whole = (key: keyof NodeRunConfig, min: number, max: number) => {
    const v = c[key];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max))
      problems.push(`${key}: ${JSON.stringify(v)} is not a whole number in ${min}..${max}`);
  };
  whole('asNumber', 1, 0xffffffff);
  whole('bgpPort', 0, 65535);
  whole('healthPort', 0, 65535);
  // An address, not a name: "localhost" may be ::1 or 127.0.0.1 depending on the resolver.
  if (c.healthHost !== undefined && (typeof c.healthHost !== 'string' || isIP(c.healthHost) === 0))
    problems.push(`healthHost: ${JSON.stringify(c.healthHost)} is not an IP address (0.0.0.0 or :: for every interface)`);
  if (c.dataplane !== undefined && c.dataplane !== 'linux' && c.dataplane !== 'memory')
    problems.push(`dataplane: ${JSON.stringify(c.dataplane)} must be linux or memory`);
  if (c.policy !== undefined && c.policy !== 'on' && c.policy !== 'off')
    problems.push(`policy: ${JSON.stringify(c.policy)} must be on or off`);
  if (c.serviceController !== undefined && c.serviceController !== 'on' && c.serviceController !== 'off')
    problems.push(`serviceController: ${JSON.stringify(c.serviceController)} must be on or off`);
  if (c.logSeverityScreen !== undefined) check(() => logLevel(c.logSeverityScreen, 'logSeverityScreen'));
  if (c.logFormat !== undefined) check(() => logFormat(c.logFormat, 'logFormat'));
  if (c.cniSocket !== undefined && typeof c.cniSocket !== 'string') problems.push('cniSocket: must be a path or off');
  else check(() => cniSocketPath(c.cniSocket, true));
}

function fail(problems: readonly string[]): void {
  if (problems.length) throw new NodeConfigError(problems);
}

/**
 * The settings of `node run` from its parsed flags (with --config, its file) and the
 * environment, checked: one NodeConfigError lists every mistake of every source.
 */
export function nodeRunSettings(values: Parsed['values'], env: NodeJS.ProcessEnv = process.env): NodeRunConfig {
  const problems: string[] = [];
  const c = readSources(values, env, problems);
  checkValues(c, problems);
  fail(problems);
  return c;
}

/** The settings `node run <args>` would read, before their values are checked (checkNodeRunConfig). */
export function nodeRunConfig(args: readonly string[], env: NodeJS.ProcessEnv = process.env): NodeRunConfig {
  const { values } = parseFor({ name: 'run', summary: '', options: NODE_RUN_OPTIONS }, ['podroute', 'node', 'run'], args);
  const problems: string[] = [];
  const c = readSources(values, env, problems);
  fail(problems);
  return c;
}

/**
 * What the agent would refuse at start(), refused before anything listens: a daemon that cannot
 * start must not leave its health port or control socket up for a supervisor to see.
 */
export function checkNodeRunConfig(c: NodeRunConfig): void {
  const problems: string[] = [];
  checkValues(c, problems);
  fail(problems);
}
