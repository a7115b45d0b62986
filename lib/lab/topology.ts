// A containerlab topology file (`*.clab.yml`), read and checked before anything is built.
// Only the part of containerlab's format this runner can build is accepted; anything else is
// refused with the key that names it, so a lab never comes up half-understood.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

/** What a node becomes in the namespace runner, decided from its kind and image. */
export type NodeRole = 'bridge' | 'frr' | 'bird' | 'podroute' | 'redis' | 'linux';

export interface Bind {
  /** Absolute path on this host. */
  source: string;
  /** Path inside the container (containerlab mounts it there). */
  target: string;
  readOnly: boolean;
}

export interface TopologyNode {
  name: string;
  kind: 'linux' | 'bridge';
  role: NodeRole;
  image?: string;
  binds: Bind[];
  exec: string[];
  env: Record<string, string>;
}

export interface Endpoint {
  node: string;
  iface: string;
}

export interface TopologyLink {
  endpoints: [Endpoint, Endpoint];
}

export interface Topology {
  name: string;
  /** The file it came from (absolute); binds are relative to its folder. */
  file: string;
  nodes: TopologyNode[];
  links: TopologyLink[];
}

export class TopologyError extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`${key}: ${message}`);
    this.name = 'TopologyError';
  }
}

const NODE_KEYS = ['kind', 'image', 'binds', 'exec', 'env', 'labels', 'cmd', 'group', 'mgmt-ipv4'];
const NAME_RE = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const IFNAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$/;

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function roleOf(kind: 'linux' | 'bridge', image: string | undefined): NodeRole {
  if (kind === 'bridge') return 'bridge';
  const repo = (image ?? '').split(':')[0]!.toLowerCase();
  if (/(^|\/)frr$|frrouting/.test(repo)) return 'frr';
  if (/(^|\/)bird2?$/.test(repo)) return 'bird';
  if (/(^|\/)podroute(\/node|-node)?$/.test(repo)) return 'podroute';
  if (/(^|\/)redis$/.test(repo)) return 'redis';
  return 'linux';
}

function stringList(v: unknown, key: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new TopologyError(key, 'must be a list of strings');
  return v.map((x, i) => {
    if (typeof x !== 'string' || x.trim() === '') throw new TopologyError(`${key}[${i}]`, 'must be a non-empty string');
    return x;
  });
}

function parseBind(spec: string, base: string, key: string): Bind {
  const parts = spec.split(':');
  if (parts.length < 2 || parts.length > 3 || !parts[0] || !parts[1]) {
    throw new TopologyError(key, `${JSON.stringify(spec)} is not source:target[:ro]`);
  }
  if (parts[2] !== undefined && parts[2] !== 'ro' && parts[2] !== 'rw')
    throw new TopologyError(key, `mode ${JSON.stringify(parts[2])} must be ro or rw`);
  if (!isAbsolute(parts[1])) throw new TopologyError(key, `target ${JSON.stringify(parts[1])} must be an absolute path`);
  const source = resolve(base, parts[0]);
  if (!existsSync(source)) throw new TopologyError(key, `${parts[0]} does not exist (looked for ${source})`);
  return { source, target: parts[1], readOnly: parts[2] === 'ro' };
}

function parseNode(name: string, raw: unknown, base: string): TopologyNode {
  const key = `topology.nodes.${name}`;
  if (!NAME_RE.test(name) || name.length > 40)
    throw new TopologyError(key, 'a node name is lowercase letters, digits and "-" (at most 40)');
  if (!isMapping(raw)) throw new TopologyError(key, 'must be a mapping');
  for (const k of Object.keys(raw)) {
    if (!NODE_KEYS.includes(k))
      throw new TopologyError(`${key}.${k}`, `is not a key this runner can build (known: ${NODE_KEYS.join(', ')})`);
  }
  const kind = raw.kind;
  if (kind !== 'linux' && kind !== 'bridge') {
    throw new TopologyError(`${key}.kind`, `${JSON.stringify(kind ?? null)} cannot be built with network namespaces (linux or bridge)`);
  }
  const image = raw.image;
  if (image !== undefined && (typeof image !== 'string' || image === ''))
    throw new TopologyError(`${key}.image`, 'must be a non-empty string');
  if (kind === 'linux' && image === undefined) throw new TopologyError(`${key}.image`, 'is required for kind linux');
  const binds = stringList(raw.binds, `${key}.binds`).map((b, i) => parseBind(b, base, `${key}.binds[${i}]`));
  const exec = stringList(raw.exec, `${key}.exec`);
  const env: Record<string, string> = {};
  if (raw.env !== undefined) {
    if (!isMapping(raw.env)) throw new TopologyError(`${key}.env`, 'must be a mapping of NAME: value');
    for (const [k, v] of Object.entries(raw.env)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new TopologyError(`${key}.env.${k}`, 'is not an environment variable name');
      if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
        throw new TopologyError(`${key}.env.${k}`, 'must be a string');
      env[k] = String(v);
    }
  }
  if (kind === 'bridge' && (binds.length || exec.length)) throw new TopologyError(`${key}`, 'a bridge takes no binds or exec');
  return { name, kind, role: roleOf(kind, image), image, binds, exec, env };
}

function parseEndpoint(v: unknown, nodes: Map<string, TopologyNode>, key: string): Endpoint {
  if (typeof v !== 'string') throw new TopologyError(key, 'must be "node:interface"');
  const i = v.indexOf(':');
  if (i <= 0 || i === v.length - 1) throw new TopologyError(key, `${JSON.stringify(v)} is not "node:interface"`);
  const node = v.slice(0, i);
  const iface = v.slice(i + 1);
  if (!nodes.has(node)) throw new TopologyError(key, `node ${JSON.stringify(node)} is not defined`);
  if (!IFNAME_RE.test(iface))
    throw new TopologyError(key, `${JSON.stringify(iface)} is not a Linux interface name (letters, digits, _ . -; at most 15)`);
  if (iface === 'lo' || iface === 'eth0')
    throw new TopologyError(key, `${iface} is reserved (eth0 is containerlab's management interface)`);
  return { node, iface };
}

/** Checks a parsed YAML document; `file` is where it came from (binds are relative to it). */
export function parseTopology(doc: unknown, file: string): Topology {
  if (!isMapping(doc)) throw new TopologyError('(top level)', 'must be a mapping with name and topology');
  const name = doc.name;
  if (typeof name !== 'string' || !NAME_RE.test(name) || name.length > 30) {
    throw new TopologyError('name', `${JSON.stringify(name ?? null)} must be lowercase letters, digits and "-" (at most 30)`);
  }
  const topo = doc.topology;
  if (!isMapping(topo)) throw new TopologyError('topology', 'must be a mapping with nodes and links');
  for (const k of Object.keys(topo)) {
    if (k !== 'nodes' && k !== 'links') throw new TopologyError(`topology.${k}`, 'is not a key this runner can build (nodes, links)');
  }
  if (!isMapping(topo.nodes) || Object.keys(topo.nodes).length === 0)
    throw new TopologyError('topology.nodes', 'must be a mapping with at least one node');
  const base = dirname(resolve(file));
  const nodes = new Map<string, TopologyNode>();
  for (const [n, raw] of Object.entries(topo.nodes)) nodes.set(n, parseNode(n, raw, base));
  const redis = [...nodes.values()].filter((n) => n.role === 'redis');
  if ([...nodes.values()].some((n) => n.role === 'podroute') && redis.length !== 1) {
    throw new TopologyError('topology.nodes', `podroute nodes need exactly one datastore node (image redis), found ${redis.length}`);
  }
  const links: TopologyLink[] = [];
  const rawLinks = topo.links ?? [];
  if (!Array.isArray(rawLinks)) throw new TopologyError('topology.links', 'must be a list');
  const used = new Map<string, string>();
  rawLinks.forEach((l, i) => {
    const key = `topology.links[${i}]`;
    if (!isMapping(l)) throw new TopologyError(key, 'must be a mapping with endpoints');
    const eps = l.endpoints;
    if (!Array.isArray(eps) || eps.length !== 2) throw new TopologyError(`${key}.endpoints`, 'must be a list of two "node:interface"');
    const pair = [parseEndpoint(eps[0], nodes, `${key}.endpoints[0]`), parseEndpoint(eps[1], nodes, `${key}.endpoints[1]`)] as [
      Endpoint,
      Endpoint,
    ];
    if (pair[0].node === pair[1].node) throw new TopologyError(`${key}.endpoints`, `both ends are on node ${pair[0].node}`);
    if (nodes.get(pair[0].node)!.role === 'bridge' && nodes.get(pair[1].node)!.role === 'bridge')
      throw new TopologyError(`${key}.endpoints`, 'joins two bridges');
    pair.forEach((e, j) => {
      const id = `${e.node}:${e.iface}`;
      const first = used.get(id);
      if (first) throw new TopologyError(`${key}.endpoints[${j}]`, `${id} is already used by ${first}`);
      used.set(id, key);
    });
    links.push({ endpoints: pair });
  });
  return { name, file: resolve(file), nodes: [...nodes.values()], links };
}

/** Reads and checks a `*.clab.yml` file. */
export function loadTopology(file: string): Topology {
  if (!existsSync(file)) throw new TopologyError(file, 'no such topology file');
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new TopologyError(file, `is not YAML: ${(e as Error).message}`);
  }
  return parseTopology(doc, file);
}

/** The host path behind a container path, through the node's binds (exact file or a folder bind). */
export function hostPath(node: TopologyNode, target: string): string | undefined {
  for (const b of node.binds) {
    if (b.target === target) return b.source;
    if (target.startsWith(b.target.endsWith('/') ? b.target : `${b.target}/`))
      return b.source + target.slice(b.target.replace(/\/$/, '').length);
  }
  return undefined;
}

/** An exec line with every bound container path replaced by its host path (no mount namespace here). */
export function hostExecLine(node: TopologyNode, line: string): string {
  let out = line;
  // Longest targets first so /etc/podroute/node.yaml wins over /etc/podroute.
  for (const b of [...node.binds].sort((a, b2) => b2.target.length - a.target.length)) out = out.split(b.target).join(b.source);
  return out;
}
