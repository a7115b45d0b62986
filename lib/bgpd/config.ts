// The configuration file of `podroute bgpd`: YAML or JSON, checked field by field so that a
// mistake is reported with its path (`peers[2].asn: ...`). The speaker's own fields are shared
// with the reflector's file (`reflector-config.ts`), which names its peers differently.
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import type { DynamicNeighbors, NeighborConfig, SpeakerOptions } from '../../bgp/index.js';
import { ConfigError, identifier, ip, isObj, list, num, onlyKeys, peer, prefix, type Obj } from './fields.js';
import { network, type NetworkConfig } from './network.js';
import { gracefulRestartField, type GracefulRestartConfig } from './graceful-restart.js';
import { controlSocketField, type ControlSocketConfig } from './control-socket.js';
import { maxRoutes } from './max-prefixes.js';
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
function daemonFields(doc: Obj): Pick<BgpdConfig, 'log' | 'metrics'> {
  const out: Pick<BgpdConfig, 'log' | 'metrics'> = {};
  const field = <T>(read: () => T): T => {
    try {
      return read();
    } catch (e) {
      throw new ConfigError((e as Error).message);
    }
  };
  if (doc.logSeverityScreen !== undefined || doc.logFormat !== undefined)
    out.log = {
      ...(doc.logSeverityScreen === undefined ? {} : { level: field(() => logLevel(doc.logSeverityScreen, 'logSeverityScreen')) }),
      ...(doc.logFormat === undefined ? {} : { format: field(() => logFormat(doc.logFormat, 'logFormat')) }),
    };
  if (doc.metrics !== undefined) {
    if (!isObj(doc.metrics)) throw new ConfigError('metrics: a mapping { port, host }');
    onlyKeys(doc.metrics, new Set(['port', 'host']), 'metrics');
    out.metrics = { port: num(doc.metrics.port, 'metrics.port', 0, 65535) };
    if (doc.metrics.host !== undefined) out.metrics.host = ip(doc.metrics.host, 'metrics.host');
  }
  return out;
}

/**
 * The fields of the speaker itself (asn, routerId, listen, ...) and the networks it
 * originates: the part both files share. `peerKeys` names the file's own fields for its peers.
 */
export function speakerFields(
  doc: Obj,
  peerKeys: string[],
): {
  speaker: SpeakerOptions;
  networks: NetworkConfig[];
  control?: ControlSocketConfig;
  gracefulRestart: GracefulRestartConfig;
} & Pick<BgpdConfig, 'log' | 'metrics'> {
  onlyKeys(doc, new Set([...SPEAKER_KEYS, ...peerKeys]), '');
  const asn = num(doc.asn, 'asn', 1, 0xffffffff);
  const routerId = identifier(doc.routerId, 'routerId');
  let listen: SpeakerOptions['listen'];
  if (doc.listen === false || typeof doc.listen === 'number') listen = doc.listen;
  else if (isObj(doc.listen))
    listen = {
      host: doc.listen.host === undefined ? undefined : ip(doc.listen.host, 'listen.host'),
      port: num(doc.listen.port ?? 179, 'listen.port', 0, 65535),
    };
  else if (doc.listen !== undefined) throw new ConfigError('listen: false, a port, or { host, port }');
  const networks = list(doc.networks, 'networks').map((n, i) => network(typeof n === 'string' ? { prefix: n } : n, `networks[${i}]`));
  const multipath = doc.multipath === undefined ? undefined : { maxPaths: num(doc.multipath, 'multipath', 1, 63) };
  const gracefulRestart = gracefulRestartField(doc.gracefulRestart, 'gracefulRestart');
  return {
    speaker: {
      asn,
      routerId,
      listen,
      hostname: typeof doc.hostname === 'string' ? doc.hostname : undefined,
      stalePathTime: doc.stalePathTime === undefined ? undefined : num(doc.stalePathTime, 'stalePathTime', 1, 65535),
      ...(doc.maxRoutes === undefined ? {} : { maxRoutes: maxRoutes(doc.maxRoutes, 'maxRoutes') }),
      forwardingPreserved: gracefulRestart.forwardingPreserved,
      ...(gracefulRestart.restartTime === undefined ? {} : { restartTime: gracefulRestart.restartTime }),
      ...(gracefulRestart.selectDeferTime === undefined ? {} : { selectDeferTime: gracefulRestart.selectDeferTime }),
      rib: {
        multipath,
        clusterId: doc.clusterId === undefined ? undefined : identifier(doc.clusterId, 'clusterId'),
        defaultLocalPref: doc.defaultLocalPref === undefined ? undefined : num(doc.defaultLocalPref, 'defaultLocalPref', 0, 0xffffffff),
        alwaysCompareMed: doc.alwaysCompareMed === true,
      },
    },
    networks,
    gracefulRestart,
    ...(doc.control === undefined ? {} : { control: controlSocketField(doc.control, 'control') }),
    ...daemonFields(doc),
  };
}

export function neighbor(p: unknown, path: string): NeighborConfig {
  return peer(p, path, false) as unknown as NeighborConfig;
}

export function dynamicNeighbors(p: unknown, path: string): DynamicNeighbors {
  const d = peer(p, path, true);
  prefix(d.range, `${path}.range`);
  return d as unknown as DynamicNeighbors;
}

/**
 * Refuses a peer address given twice: the speaker would refuse the second at addPeer, after the
 * daemon is already listening. Compared as node:net reads them, so 10.0.0.2 and ::ffff:... differ
 * as they do on the wire, and fe80::1 and FE80::1 do not.
 */
export function distinctPeers(peers: NeighborConfig[], paths: string[]): void {
  const seen = new Map<string, number>();
  peers.forEach((p, i) => {
    const key = p.address.toLowerCase();
    const first = seen.get(key);
    if (first !== undefined) throw new ConfigError(`${paths[i]}.address: ${p.address} is configured twice (${paths[first]})`);
    seen.set(key, i);
  });
}

export function parseBgpdConfig(text: string, source = 'config'): BgpdConfig {
  const doc = parseDocument(text, source, 'asn, routerId, peers, ...');
  const peers = list(doc.peers, 'peers').map((p, i) => neighbor(p, `peers[${i}]`));
  const peerPaths = peers.map((_, i) => `peers[${i}]`);
  distinctPeers(peers, peerPaths);
  const dynamic = list(doc.dynamicNeighbors, 'dynamicNeighbors').map((p, i) => dynamicNeighbors(p, `dynamicNeighbors[${i}]`));
  return {
    ...speakerFields(doc, ['peers', 'dynamicNeighbors']),
    peers,
    dynamicNeighbors: dynamic,
    peerPaths,
    dynamicPaths: dynamic.map((_, i) => `dynamicNeighbors[${i}]`),
  };
}

export function readBgpdConfig(file: string): BgpdConfig {
  return readConfigFile(file, parseBgpdConfig);
}
