// What `podroute node run` is told, from its three sources: a YAML file (--config), the
// environment (calico/node's names) and flags, flags over the environment over the file (the
// settings and their sources are declared in node-settings.ts). Every mistake in all three is
// collected and reported in one error, before anything listens.
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parse as parseYaml } from 'yaml';
import { checkNodeAddress, checkRouterId } from '../agent/index.js';
import { quotedNumber } from '../bgpd/fields.js';
import { checkedPath } from '../bgpd/paths.js';
import { cniSocketPath } from '../agent/cni-server.js';
import { datastoreConfigFromEnv, datastoreFromFlag } from '../datastore/index.js';
import { logFormat, logLevel } from '../log/index.js';
import { closestName } from '../resources/index.js';
import { parseFor, type Parsed } from './args.js';
import { datastoreFields } from './datastore-fields.js';
import { KEYS, NODE_RUN_OPTIONS, SETTINGS, type Kind, type NodeRunConfig } from './node-settings.js';

/** Every mistake found in the node's settings; one mistake reads as itself. */
export class NodeConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.length === 1 ? problems[0] : `${problems.length} mistakes in the settings of node run:\n  ${problems.join('\n  ')}`);
  }
}

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
    problems.push(
      `${path}.blockSize: ${JSON.stringify(v.blockSize)} is ${quotedNumber(v.blockSize) ? 'a string, ' : ''}not a whole number`,
    );
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
    // A quoted number is refused as the string it is, as calicoctl's strict decoding does.
    case 'whole':
      if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
      problems.push(`${path}: ${JSON.stringify(v)} is ${quotedNumber(v) ? 'a string, ' : ''}not a whole number`);
      return undefined;
    case 'duration':
      if (typeof v === 'number' && Number.isFinite(v) && v >= 0) return v;
      problems.push(
        `${path}: ${JSON.stringify(v)} is ${quotedNumber(v) ? 'a string, ' : ''}not a number of ${path === 'gracefulRestartWaitMs' ? 'milliseconds' : 'seconds'}`,
      );
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
  whole('webPort', 0, 65535);
  if (c.webHost !== undefined && (typeof c.webHost !== 'string' || isIP(c.webHost) === 0))
    problems.push(`webHost: ${JSON.stringify(c.webHost)} is not an IP address (0.0.0.0 or :: for every interface)`);
  if (typeof c.webPort === 'number' && c.webPort !== 0 && c.webPort === (c.healthPort ?? 9099))
    problems.push(`webPort: ${c.webPort} is the health port too (healthPort); give the web page a port of its own`);
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
  // The sockets the agent makes, with the folders above them: not in the kernel's own trees.
  if (c.control !== undefined) check(() => checkedPath(c.control, 'control', 'a socket path'));
  if (typeof c.cniSocket === 'string' && c.cniSocket !== 'off' && c.cniSocket !== '')
    check(() => checkedPath(c.cniSocket, 'cniSocket', 'a socket path'));
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
