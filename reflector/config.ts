// The configuration file of `podroute reflector`: the bgpd file's fields (asn, routerId,
// listen, networks, timers per peer, ...) with the reflector's own words for the peers:
// `clients`, `clientRanges` and `nonClients`. It is checked by the bgpd parser, so a mistake
// is reported with its path in this file (`clients[1].address: ...`).
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { ConfigError, parseBgpdConfig, type BgpdConfig } from '../lib/bgpd/config.js';
import { routeReflectorRibOptions } from './rules.js';

export interface ReflectorConfig extends BgpdConfig {
  clusterId: string;
  /** Addresses of the statically configured clients. */
  clients: string[];
}

type Obj = Record<string, unknown>;

function list(v: unknown, path: string): Obj[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new ConfigError(`${path}: a list`);
  return v.map((x, i) => {
    if (typeof x !== 'object' || x === null || Array.isArray(x)) throw new ConfigError(`${path}[${i}]: a peer is a mapping`);
    if ('routeReflectorClient' in x) throw new ConfigError(`${path}[${i}].routeReflectorClient: unknown field (the list says what the peer is)`);
    return x as Obj;
  });
}

export function parseReflectorConfig(text: string, source = 'config'): ReflectorConfig {
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch (e) {
    throw new ConfigError(`${source}: not YAML or JSON: ${(e as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new ConfigError(`${source}: the configuration is a mapping (asn, routerId, clusterId, clients, ...)`);
  const { clients, clientRanges, nonClients, ...rest } = doc as Obj;
  for (const k of ['peers', 'dynamicNeighbors']) if (k in rest) throw new ConfigError(`${k}: unknown field (a reflector has clients, clientRanges and nonClients)`);
  const c = list(clients, 'clients');
  const n = list(nonClients, 'nonClients');
  const r = list(clientRanges, 'clientRanges');
  // A client is iBGP by definition: its AS may be left out.
  const ours = rest.asn;
  const bgpd = {
    ...rest,
    peers: [...c.map((p) => ({ asn: ours, ...p, routeReflectorClient: true })), ...n.map((p) => ({ ...p, routeReflectorClient: false }))],
    dynamicNeighbors: r.map((p) => ({ asn: ours, ...p, routeReflectorClient: true })),
  };
  let parsed: BgpdConfig;
  try {
    parsed = parseBgpdConfig(JSON.stringify(bgpd), source);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    // Name the field as it is written in this file.
    throw new ConfigError(
      e.message
        .replace(/^peers\[(\d+)\]/, (_m, i: string) => (Number(i) < c.length ? `clients[${i}]` : `nonClients[${Number(i) - c.length}]`))
        .replace(/^dynamicNeighbors\[(\d+)\]/, 'clientRanges[$1]'),
    );
  }
  const asn = parsed.speaker.asn;
  parsed.peers.forEach((p, i) => {
    if (i < c.length && p.asn !== asn) throw new ConfigError(`clients[${i}].asn: ${p.asn} is not ours (${asn}); clients are iBGP peers`);
  });
  parsed.dynamicNeighbors.forEach((d, i) => {
    for (const a of Array.isArray(d.asn) ? d.asn : [d.asn]) if (a !== asn) throw new ConfigError(`clientRanges[${i}].asn: ${a} is not ours (${asn}); clients are iBGP peers`);
  });
  const clusterId = parsed.speaker.rib?.clusterId ?? parsed.speaker.routerId;
  parsed.speaker.rib = { ...parsed.speaker.rib, ...routeReflectorRibOptions(clusterId) };
  return { ...parsed, clusterId, clients: parsed.peers.slice(0, c.length).map((p) => p.address) };
}

export function readReflectorConfig(file: string): ReflectorConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`${file}: ${(e as Error).message}`);
  }
  return parseReflectorConfig(text, file);
}
