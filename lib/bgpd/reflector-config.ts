// The configuration file of `podroute reflector`: the speaker's fields of the bgpd file (asn,
// routerId, listen, networks, ...) and per-peer fields, with the reflector's own words for the
// peers: `clients`, `clientRanges` and `nonClients`. A mistake is reported with its path in
// this file (`clients[1].address: ...`).
import { routeReflectorRibOptions } from '../../reflector/index.js';
import { distinctPeers, dynamicNeighbors, neighbor, parseDocument, readConfigFile, speakerFields, type BgpdConfig } from './config.js';
import { ConfigError, isObj, list, type Obj } from './fields.js';

export interface ReflectorConfig extends BgpdConfig {
  clusterId: string;
  /** Addresses of the statically configured clients. */
  clients: string[];
}

function peers(v: unknown, path: string): Obj[] {
  return list(v, path).map((x, i) => {
    if (!isObj(x)) throw new ConfigError(`${path}[${i}]: a peer is a mapping`);
    if ('routeReflectorClient' in x)
      throw new ConfigError(`${path}[${i}].routeReflectorClient: unknown field (the list says what the peer is)`);
    return x;
  });
}

export function parseReflectorConfig(text: string, source = 'config'): ReflectorConfig {
  const doc = parseDocument(text, source, 'asn, routerId, clusterId, clients, ...');
  const { clients, clientRanges, nonClients, ...rest } = doc;
  for (const k of ['peers', 'dynamicNeighbors'])
    if (k in rest) throw new ConfigError(`${k}: unknown field (a reflector has clients, clientRanges and nonClients)`);
  const c = peers(clients, 'clients');
  const n = peers(nonClients, 'nonClients');
  const r = peers(clientRanges, 'clientRanges');
  const { speaker, networks, control, gracefulRestart, log, metrics } = speakerFields(rest, []);
  // A client is iBGP by definition: its AS may be left out.
  const asn = speaker.asn;
  const parsed: BgpdConfig = {
    speaker,
    networks,
    gracefulRestart,
    ...(control && { control }),
    ...(log && { log }),
    ...(metrics && { metrics }),
    peers: [
      ...c.map((p, i) => neighbor({ asn, ...p, routeReflectorClient: true }, `clients[${i}]`)),
      ...n.map((p, i) => neighbor({ ...p, routeReflectorClient: false }, `nonClients[${i}]`)),
    ],
    dynamicNeighbors: r.map((p, i) => dynamicNeighbors({ asn, ...p, routeReflectorClient: true }, `clientRanges[${i}]`)),
    peerPaths: [...c.map((_, i) => `clients[${i}]`), ...n.map((_, i) => `nonClients[${i}]`)],
    dynamicPaths: r.map((_, i) => `clientRanges[${i}]`),
  };
  distinctPeers(parsed.peers, parsed.peerPaths);
  parsed.peers.forEach((p, i) => {
    if (i < c.length && p.asn !== asn) throw new ConfigError(`clients[${i}].asn: ${p.asn} is not ours (${asn}); clients are iBGP peers`);
  });
  parsed.dynamicNeighbors.forEach((d, i) => {
    for (const a of Array.isArray(d.asn) ? d.asn : [d.asn])
      if (a !== asn) throw new ConfigError(`clientRanges[${i}].asn: ${a} is not ours (${asn}); clients are iBGP peers`);
  });
  const clusterId = speaker.rib?.clusterId ?? speaker.routerId;
  speaker.rib = { ...speaker.rib, ...routeReflectorRibOptions(clusterId) };
  return { ...parsed, clusterId, clients: parsed.peers.slice(0, c.length).map((p) => p.address) };
}

export function readReflectorConfig(file: string): ReflectorConfig {
  return readConfigFile(file, parseReflectorConfig);
}
