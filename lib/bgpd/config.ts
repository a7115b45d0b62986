// The configuration file of `podroute bgpd`: YAML or JSON, checked field by field so that a
// mistake is reported with its path (`peers[2].asn: ...`). The speaker's own fields are shared
// with the reflector's file (`reflector-config.ts`), which names its peers differently.
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import type { DynamicNeighbors, NeighborConfig, SpeakerOptions } from '../../bgp/index.js';
import { ConfigError, identifier, ip, isObj, list, Mistakes, num, onlyKeys, peer, quotedNumber, type Obj } from './fields.js';
import { network, type NetworkConfig } from './network.js';
import { gracefulRestartField, type GracefulRestartConfig } from './graceful-restart.js';
import { controlSocketField, type ControlSocketConfig } from './control-socket.js';
import { maxRoutes } from './max-prefixes.js';
import { checkedPath } from './paths.js';
import { logFormat, logLevel, type LogFormat, type LogLevel } from '../log/index.js';

export interface BgpdConfig {
  speaker: SpeakerOptions;
  peers: NeighborConfig[];
  dynamicNeighbors: DynamicNeighbors[];
  networks: NetworkConfig[];
  /** Graceful restart, our side: the speaker's R and F bits come from it and the run marker. */
  gracefulRestart?: GracefulRestartConfig;
  /** The control socket: its path (the --control flag wins), mode and group. */
  control?: ControlSocketConfig;
  /** logSeverityScreen (Calico's name) and logFormat; the flags win. */
  log?: { level?: LogLevel; format?: LogFormat };
  /** Prometheus /metrics: its port and address (default 127.0.0.1); --metrics-port wins. */
  metrics?: { port: number; host?: string };
  /** Where each of `peers` and `dynamicNeighbors` was written (`peers[1]`), for errors found later. */
  peerPaths: string[];
  dynamicPaths: string[];
}

/** The text of a configuration file as a mapping; `fields` says what the mapping holds. */
export function parseDocument(text: string, source: string, fields: string): Obj {
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch (e) {
    throw new ConfigError(`${source}: not YAML or JSON: ${(e as Error).message}`);
  }
  if (!isObj(doc)) throw new ConfigError(`${source}: the configuration is a mapping (${fields})`);
  return doc;
}

export function readConfigFile<T>(file: string, parse: (text: string, source: string) => T): T {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`${file}: ${(e as Error).message}`);
  }
  return parse(text, file);
}

const SPEAKER_KEYS = [
  'asn',
  'routerId',
  'listen',
  'hostname',
  'networks',
  'multipath',
  'clusterId',
  'stalePathTime',
  'defaultLocalPref',
  'alwaysCompareMed',
  'gracefulRestart',
  'control',
  'maxRoutes',
  'logSeverityScreen',
  'logFormat',
  'metrics',
];

/** The log and metrics fields of either daemon's file. */
function daemonFields(doc: Obj, m: Mistakes): Pick<BgpdConfig, 'log' | 'metrics'> {
  const out: Pick<BgpdConfig, 'log' | 'metrics'> = {};
  if (doc.logSeverityScreen !== undefined || doc.logFormat !== undefined) {
    const { logSeverityScreen: l, logFormat: f } = doc;
    const level = l === undefined ? undefined : m.take(() => logField(() => logLevel(l, 'logSeverityScreen')), undefined);
    const format = f === undefined ? undefined : m.take(() => logField(() => logFormat(f, 'logFormat')), undefined);
    out.log = { ...(level === undefined ? {} : { level }), ...(format === undefined ? {} : { format }) };
  }
  if (doc.metrics !== undefined) out.metrics = m.take(() => metricsField(doc.metrics), undefined);
  return out;
}

/** lib/log's readers throw plain Errors: here, each is a mistake in the file. */
function logField<T>(read: () => T): T {
  try {
    return read();
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
}

function metricsField(v: unknown): { port: number; host?: string } {
  if (!isObj(v)) throw new ConfigError('metrics: a mapping { port, host }');
  const m = new Mistakes();
  m.check(() => onlyKeys(v, new Set(['port', 'host']), 'metrics'));
  const out: { port: number; host?: string } = { port: m.take(() => num(v.port, 'metrics.port', 0, 65535), 0) };
  if (v.host !== undefined) out.host = m.take(() => ip(v.host, 'metrics.host'), '');
  m.throwIfAny();
  return out;
}

function listenField(v: unknown): SpeakerOptions['listen'] {
  if (v === undefined || v === false || typeof v === 'number') return v;
  if (!isObj(v))
    throw new ConfigError(`listen: ${quotedNumber(v) ? `${JSON.stringify(v)} is a string; ` : ''}false, a port, or { host, port }`);
  const m = new Mistakes();
  const listen = {
    host: v.host === undefined ? undefined : m.take(() => ip(v.host, 'listen.host'), undefined),
    port: m.take(() => num(v.port ?? 179, 'listen.port', 0, 65535), 179),
  };
  m.throwIfAny();
  return listen;
}

/**
 * The fields of the speaker itself (asn, routerId, listen, ...) and the networks it
 * originates: the part both files share. `peerKeys` names the file's own fields for its peers.
 * Each mistake is noted in `m`; what is returned holds stand-ins for the fields refused, so the
 * caller throws `m`'s error before using it.
 */
export function speakerFields(
  doc: Obj,
  peerKeys: string[],
  m: Mistakes,
): {
  speaker: SpeakerOptions;
  networks: NetworkConfig[];
  control?: ControlSocketConfig;
  gracefulRestart: GracefulRestartConfig;
} & Pick<BgpdConfig, 'log' | 'metrics'> {
  m.check(() => onlyKeys(doc, new Set([...SPEAKER_KEYS, ...peerKeys]), ''));
  const asn = m.take(() => num(doc.asn, 'asn', 1, 0xffffffff), 0);
  const routerId = m.take(() => identifier(doc.routerId, 'routerId'), '');
  const listen = m.take(() => listenField(doc.listen), undefined);
  const networks = m
    .take(() => list(doc.networks, 'networks'), [])
    .map((n, i) => m.take(() => network(typeof n === 'string' ? { prefix: n } : n, `networks[${i}]`), undefined))
    .filter((n) => n !== undefined);
  const multipath = doc.multipath === undefined ? undefined : { maxPaths: m.take(() => num(doc.multipath, 'multipath', 1, 63), 1) };
  const gracefulRestart = m.take(() => gracefulRestartField(doc.gracefulRestart, 'gracefulRestart'), { forwardingPreserved: true });
  const stalePathTime =
    doc.stalePathTime === undefined ? undefined : m.take(() => num(doc.stalePathTime, 'stalePathTime', 1, 65535), undefined);
  const maxRoutesField = doc.maxRoutes === undefined ? undefined : m.take(() => maxRoutes(doc.maxRoutes, 'maxRoutes'), undefined);
  const clusterId = doc.clusterId === undefined ? undefined : m.take(() => identifier(doc.clusterId, 'clusterId'), undefined);
  const defaultLocalPref =
    doc.defaultLocalPref === undefined ? undefined : m.take(() => num(doc.defaultLocalPref, 'defaultLocalPref', 0, 0xffffffff), undefined);
  const control = doc.control === undefined ? undefined : m.take(() => controlSocketField(doc.control, 'control'), undefined);
  if (control?.path !== undefined) {
    const field = typeof doc.control === 'string' ? 'control' : 'control.path';
    m.check(() => checkedPath(control.path, field, 'a socket path'));
  }
  return {
    speaker: {
      asn,
      routerId,
      listen,
      hostname: typeof doc.hostname === 'string' ? doc.hostname : undefined,
      stalePathTime,
      ...(maxRoutesField === undefined ? {} : { maxRoutes: maxRoutesField }),
      forwardingPreserved: gracefulRestart.forwardingPreserved,
      ...(gracefulRestart.restartTime === undefined ? {} : { restartTime: gracefulRestart.restartTime }),
      ...(gracefulRestart.selectDeferTime === undefined ? {} : { selectDeferTime: gracefulRestart.selectDeferTime }),
      rib: {
        multipath,
        clusterId,
        defaultLocalPref,
        alwaysCompareMed: doc.alwaysCompareMed === true,
      },
    },
    networks,
    gracefulRestart,
    ...(control === undefined ? {} : { control }),
    ...daemonFields(doc, m),
  };
}

export function neighbor(p: unknown, path: string): NeighborConfig {
  return peer(p, path, false) as unknown as NeighborConfig;
}

export function dynamicNeighbors(p: unknown, path: string): DynamicNeighbors {
  return peer(p, path, true) as unknown as DynamicNeighbors;
}

/**
 * The peers of a list, each checked on its own: those refused are noted in `m` and left out,
 * with the paths of those kept beside them.
 */
export function peerList<T>(v: unknown, path: string, m: Mistakes, read: (p: unknown, path: string) => T): { peers: T[]; paths: string[] } {
  const peers: T[] = [];
  const paths: string[] = [];
  m.take(() => list(v, path), []).forEach((p, i) => {
    const at = `${path}[${i}]`;
    const checked = m.take(() => read(p, at), undefined);
    if (checked === undefined) return;
    peers.push(checked);
    paths.push(at);
  });
  return { peers, paths };
}

/**
 * Refuses a peer address given twice: the speaker would refuse the second at addPeer, after the
 * daemon is already listening. Compared as node:net reads them, so 10.0.0.2 and ::ffff:... differ
 * as they do on the wire, and fe80::1 and FE80::1 do not.
 */
export function distinctPeers(peers: NeighborConfig[], paths: string[], m: Mistakes): void {
  const seen = new Map<string, number>();
  peers.forEach((p, i) => {
    const key = p.address.toLowerCase();
    const first = seen.get(key);
    if (first !== undefined) m.note(`${paths[i]}.address: ${p.address} is configured twice (${paths[first]})`);
    else seen.set(key, i);
  });
}

export function parseBgpdConfig(text: string, source = 'config'): BgpdConfig {
  const doc = parseDocument(text, source, 'asn, routerId, peers, ...');
  const m = new Mistakes();
  const speaker = speakerFields(doc, ['peers', 'dynamicNeighbors'], m);
  const peers = peerList(doc.peers, 'peers', m, neighbor);
  distinctPeers(peers.peers, peers.paths, m);
  const dynamic = peerList(doc.dynamicNeighbors, 'dynamicNeighbors', m, dynamicNeighbors);
  m.throwIfAny();
  return {
    ...speaker,
    peers: peers.peers,
    dynamicNeighbors: dynamic.peers,
    peerPaths: peers.paths,
    dynamicPaths: dynamic.paths,
  };
}

export function readBgpdConfig(file: string): BgpdConfig {
  return readConfigFile(file, parseBgpdConfig);
}
