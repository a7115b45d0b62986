// The configuration file of `podroute bgpd`: YAML or JSON, checked field by field so that a
// mistake is reported with its path (`peers[2].asn: ...`). The speaker's own fields are shared
// with the reflector's file (`reflector-config.ts`), which names its peers differently.
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import type { DynamicNeighbors, NeighborConfig, SpeakerOptions } from '../../bgp/index.js';
import { ConfigError, identifier, ip, isDottedQuad, isObj, list, num, onlyKeys, peer, prefix, type Obj } from './fields.js';
import { network, type NetworkConfig } from './network.js';

export interface BgpdConfig {
  speaker: SpeakerOptions;
  peers: NeighborConfig[];
  dynamicNeighbors: DynamicNeighbors[];
  networks: NetworkConfig[];
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
];

/**
 * The fields of the speaker itself (asn, routerId, listen, ...) and the networks it
 * originates: the part both files share. `peerKeys` names the file's own fields for its peers.
 */
export function speakerFields(doc: Obj, peerKeys: string[]): { speaker: SpeakerOptions; networks: NetworkConfig[] } {
  onlyKeys(doc, new Set([...SPEAKER_KEYS, ...peerKeys]), '');
  const asn = num(doc.asn, 'asn', 1, 0xffffffff);
  const routerId = doc.routerId;
  if (!isDottedQuad(routerId)) throw new ConfigError(`routerId: ${JSON.stringify(routerId)} is not a dotted-quad BGP identifier`);
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
  return {
    speaker: {
      asn,
      routerId,
      listen,
      hostname: typeof doc.hostname === 'string' ? doc.hostname : undefined,
      stalePathTime: doc.stalePathTime === undefined ? undefined : num(doc.stalePathTime, 'stalePathTime', 1, 65535),
      rib: {
        multipath,
        clusterId: doc.clusterId === undefined ? undefined : identifier(doc.clusterId, 'clusterId'),
        defaultLocalPref: doc.defaultLocalPref === undefined ? undefined : num(doc.defaultLocalPref, 'defaultLocalPref', 0, 0xffffffff),
        alwaysCompareMed: doc.alwaysCompareMed === true,
      },
    },
    networks,
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

export function parseBgpdConfig(text: string, source = 'config'): BgpdConfig {
  const doc = parseDocument(text, source, 'asn, routerId, peers, ...');
  return {
    ...speakerFields(doc, ['peers', 'dynamicNeighbors']),
    peers: list(doc.peers, 'peers').map((p, i) => neighbor(p, `peers[${i}]`)),
    dynamicNeighbors: list(doc.dynamicNeighbors, 'dynamicNeighbors').map((p, i) => dynamicNeighbors(p, `dynamicNeighbors[${i}]`)),
  };
}

export function readBgpdConfig(file: string): BgpdConfig {
  return readConfigFile(file, parseBgpdConfig);
}
