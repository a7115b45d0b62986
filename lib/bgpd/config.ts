// The configuration file of `podroute bgpd`: YAML or JSON, checked field by field so that a
// mistake is reported with its path (`peers[2].asn: ...`).
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import YAML from 'yaml';
import type { AddressFamily, NeighborConfig, PathAttributes, SpeakerOptions } from '../../bgp/index.js';

export interface NetworkConfig {
  prefix: string;
  med?: number;
  localPref?: number;
  /** "asn:value" or well-known names (no-export, no-advertise). */
  communities?: string[];
  /** "global:local1:local2". */
  largeCommunities?: string[];
}

export interface BgpdConfig {
  speaker: SpeakerOptions;
  peers: NeighborConfig[];
  dynamicNeighbors: (Omit<NeighborConfig, 'address' | 'asn'> & { range: string; asn: number | number[] })[];
  networks: NetworkConfig[];
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function num(v: unknown, path: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) throw new ConfigError(`${path}: ${JSON.stringify(v)} is not a number in ${min}..${max}`);
  return v;
}

function ip(v: unknown, path: string): string {
  if (typeof v !== 'string' || isIP(v) === 0) throw new ConfigError(`${path}: ${JSON.stringify(v)} is not an IP address`);
  return v;
}

function families(v: unknown, path: string): AddressFamily[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw new ConfigError(`${path}: a list of families (ipv4-unicast, ipv6-unicast)`);
  return v.map((f, i) => {
    if (f === 'ipv4' || f === 'ipv4-unicast') return 'ipv4-unicast';
    if (f === 'ipv6' || f === 'ipv6-unicast') return 'ipv6-unicast';
    throw new ConfigError(`${path}[${i}]: unknown family ${JSON.stringify(f)} (ipv4-unicast or ipv6-unicast)`);
  });
}

const PEER_KEYS = new Set(['address', 'asn', 'port', 'localAddress', 'localAddressV6', 'passive', 'holdTime', 'keepaliveTime', 'connectRetryTime', 'idleHoldTime', 'families', 'addPath', 'extendedMessage', 'gracefulRestart', 'description', 'nextHopSelf', 'routeReflectorClient', 'range']);

function neighbor(p: unknown, path: string, dynamic: boolean): Obj {
  if (!isObj(p)) throw new ConfigError(`${path}: a peer is a mapping`);
  for (const k of Object.keys(p)) if (!PEER_KEYS.has(k) || (k === 'range' && !dynamic)) throw new ConfigError(`${path}.${k}: unknown field`);
  const out: Obj = { ...p };
  if (!dynamic) out.address = ip(p.address, `${path}.address`);
  if (dynamic) {
    if (Array.isArray(p.asn)) out.asn = p.asn.map((a, i) => num(a, `${path}.asn[${i}]`, 1, 0xffffffff));
    else out.asn = num(p.asn, `${path}.asn`, 1, 0xffffffff);
  } else {
    out.asn = num(p.asn, `${path}.asn`, 1, 0xffffffff);
  }
  if (p.port !== undefined) num(p.port, `${path}.port`, 1, 65535);
  if (p.localAddress !== undefined) ip(p.localAddress, `${path}.localAddress`);
  if (p.localAddressV6 !== undefined) ip(p.localAddressV6, `${path}.localAddressV6`);
  if (p.holdTime !== undefined) {
    const h = num(p.holdTime, `${path}.holdTime`, 0, 65535);
    if (h === 1 || h === 2) throw new ConfigError(`${path}.holdTime: ${h} (0, or 3..65535 seconds)`);
  }
  for (const k of ['keepaliveTime', 'connectRetryTime', 'idleHoldTime']) if (p[k] !== undefined) num(p[k], `${path}.${k}`, 0.1, 65535);
  out.families = families(p.families, `${path}.families`);
  return out;
}

export function parseBgpdConfig(text: string, source = 'config'): BgpdConfig {
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch (e) {
    throw new ConfigError(`${source}: not YAML or JSON: ${(e as Error).message}`);
  }
  if (!isObj(doc)) throw new ConfigError(`${source}: the configuration is a mapping (asn, routerId, peers, ...)`);
  const known = new Set(['asn', 'routerId', 'listen', 'hostname', 'peers', 'dynamicNeighbors', 'networks', 'multipath', 'clusterId', 'stalePathTime', 'defaultLocalPref', 'alwaysCompareMed']);
  for (const k of Object.keys(doc)) if (!known.has(k)) throw new ConfigError(`${k}: unknown field`);
  const asn = num(doc.asn, 'asn', 1, 0xffffffff);
  const routerId = doc.routerId;
  if (typeof routerId !== 'string' || isIP(routerId) !== 4) throw new ConfigError(`routerId: ${JSON.stringify(routerId)} is not a dotted-quad BGP identifier`);
  let listen: SpeakerOptions['listen'];
  if (doc.listen === false || typeof doc.listen === 'number') listen = doc.listen;
  else if (isObj(doc.listen)) listen = { host: doc.listen.host === undefined ? undefined : ip(doc.listen.host, 'listen.host'), port: num(doc.listen.port ?? 179, 'listen.port', 0, 65535) };
  else if (doc.listen !== undefined) throw new ConfigError('listen: false, a port, or { host, port }');
  const list = (v: unknown, path: string): unknown[] => {
    if (v === undefined) return [];
    if (!Array.isArray(v)) throw new ConfigError(`${path}: a list`);
    return v;
  };
  const networks = list(doc.networks, 'networks').map((n, i): NetworkConfig => {
    const path = `networks[${i}]`;
    const x = typeof n === 'string' ? { prefix: n } : n;
    if (!isObj(x) || typeof x.prefix !== 'string' || !/^[0-9a-fA-F:.]+\/\d+$/.test(x.prefix)) throw new ConfigError(`${path}.prefix: a prefix like 10.0.0.0/24`);
    return x as unknown as NetworkConfig;
  });
  const multipath = doc.multipath === undefined ? undefined : { maxPaths: num(doc.multipath, 'multipath', 1, 63) };
  return {
    speaker: {
      asn,
      routerId,
      listen,
      hostname: typeof doc.hostname === 'string' ? doc.hostname : undefined,
      stalePathTime: doc.stalePathTime === undefined ? undefined : num(doc.stalePathTime, 'stalePathTime', 1, 65535),
      rib: {
        multipath,
        clusterId: doc.clusterId === undefined ? undefined : ip(doc.clusterId, 'clusterId'),
        defaultLocalPref: doc.defaultLocalPref === undefined ? undefined : num(doc.defaultLocalPref, 'defaultLocalPref', 0, 0xffffffff),
        alwaysCompareMed: doc.alwaysCompareMed === true,
      },
    },
    peers: list(doc.peers, 'peers').map((p, i) => neighbor(p, `peers[${i}]`, false) as unknown as NeighborConfig),
    dynamicNeighbors: list(doc.dynamicNeighbors, 'dynamicNeighbors').map((p, i) => {
      const d = neighbor(p, `dynamicNeighbors[${i}]`, true);
      if (typeof d.range !== 'string') throw new ConfigError(`dynamicNeighbors[${i}].range: a prefix like 10.0.0.0/24`);
      return d as unknown as BgpdConfig['dynamicNeighbors'][number];
    }),
    networks,
  };
}

export function readBgpdConfig(file: string): BgpdConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`${file}: ${(e as Error).message}`);
  }
  return parseBgpdConfig(text, file);
}

const WELL_KNOWN: Record<string, number> = { 'no-export': 0xffffff01, 'no-advertise': 0xffffff02, 'no-export-subconfed': 0xffffff03 };

/** A network's attributes as the speaker originates them. */
export function networkAttributes(n: NetworkConfig): PathAttributes {
  const a: PathAttributes = {};
  if (n.med !== undefined) a.med = n.med;
  if (n.localPref !== undefined) a.localPref = n.localPref;
  if (n.communities?.length) {
    a.communities = n.communities.map((c) => {
      if (WELL_KNOWN[c] !== undefined) return WELL_KNOWN[c];
      const m = /^(\d+):(\d+)$/.exec(c);
      if (!m || Number(m[1]) > 0xffff || Number(m[2]) > 0xffff) throw new ConfigError(`networks ${n.prefix}: community "${c}" is not asn:value`);
      return ((Number(m[1]) << 16) | Number(m[2])) >>> 0;
    });
  }
  if (n.largeCommunities?.length) {
    a.largeCommunities = n.largeCommunities.map((c) => {
      const parts = c.split(':').map(Number);
      if (parts.length !== 3 || parts.some((x) => !Number.isInteger(x) || x < 0 || x > 0xffffffff)) throw new ConfigError(`networks ${n.prefix}: large community "${c}" is not g:l1:l2`);
      return parts as [number, number, number];
    });
  }
  return a;
}
