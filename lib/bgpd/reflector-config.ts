// The configuration file of `podroute reflector`: the speaker's fields of the bgpd file (asn,
// routerId, listen, networks, ...) and per-peer fields, with the reflector's own words for the
// peers: `clients`, `clientRanges` and `nonClients`. A mistake is reported with its path in
// this file (`clients[1].address: ...`).
import { routeReflectorRibOptions } from '../../reflector/index.js';
import { distinctPeers, dynamicNeighbors, neighbor, parseDocument, readConfigFile, speakerFields, type BgpdConfig } from './config.js';
import { isObj, list, Mistakes, type Obj } from './fields.js';

export interface ReflectorConfig extends BgpdConfig {
  clusterId: string;
  /** Addresses of the statically configured clients. */
  clients: string[];
}

/** The file's list at `path`: each peer a mapping that leaves its role to the list it is in. */
function peers(v: unknown, path: string, m: Mistakes): { peer: Obj; path: string }[] {
  const out: { peer: Obj; path: string }[] = [];
  m.take(() => list(v, path), []).forEach((x, i) => {
    const at = `${path}[${i}]`;
    if (!isObj(x)) m.note(`${at}: a peer is a mapping`);
    else if ('routeReflectorClient' in x) m.note(`${at}.routeReflectorClient: unknown field (the list says what the peer is)`);
    else out.push({ peer: x, path: at });
  });
  return out;
}

export function parseReflectorConfig(text: string, source = 'config'): ReflectorConfig {
  const doc = parseDocument(text, source, 'asn, routerId, clusterId, clients, ...');
  const m = new Mistakes();
  const { clients, clientRanges, nonClients, peers: _peers, dynamicNeighbors: _dynamic, ...rest } = doc;
  for (const k of ['peers', 'dynamicNeighbors'])
    if (k in doc) m.note(`${k}: unknown field (a reflector has clients, clientRanges and nonClients)`);
  const { speaker, networks, control, gracefulRestart, log, metrics } = speakerFields(rest, [], m);
  // A client is iBGP by definition: its AS may be left out. While our AS is refused (the
  // speaker's stand-in for it is 0, no AS), another stand-in lets each client's other fields be
  // checked, and whether its AS is ours is not asked.
  const asnTaken = speaker.asn !== 0;
  const asn = asnTaken ? speaker.asn : 1;
  const c = peers(clients, 'clients', m);
  const n = peers(nonClients, 'nonClients', m);
  const r = peers(clientRanges, 'clientRanges', m);
  const checked = <T>(entries: { peer: Obj; path: string }[], read: (p: Obj, path: string) => T) =>
    entries.flatMap(({ peer, path }) => {
      const p = m.take(() => read(peer, path), undefined);
      return p === undefined ? [] : [{ p, path }];
    });
  const cs = checked(c, (p, at) => neighbor({ asn, ...p, routeReflectorClient: true }, at));
  const ns = checked(n, (p, at) => neighbor({ ...p, routeReflectorClient: false }, at));
  const rs = checked(r, (p, at) => dynamicNeighbors({ asn, ...p, routeReflectorClient: true }, at));
  const parsed: BgpdConfig = {
    speaker,
    networks,
    gracefulRestart,
    ...(control && { control }),
    ...(log && { log }),
    ...(metrics && { metrics }),
    peers: [...cs, ...ns].map((x) => x.p),
    dynamicNeighbors: rs.map((x) => x.p),
    peerPaths: [...cs, ...ns].map((x) => x.path),
    dynamicPaths: rs.map((x) => x.path),
  };
  distinctPeers(parsed.peers, parsed.peerPaths, m);
  if (asnTaken) {
    for (const { p, path } of cs) if (p.asn !== asn) m.note(`${path}.asn: ${p.asn} is not ours (${asn}); clients are iBGP peers`);
    for (const { p, path } of rs)
      for (const a of Array.isArray(p.asn) ? p.asn : [p.asn])
        if (a !== asn) m.note(`${path}.asn: ${a} is not ours (${asn}); clients are iBGP peers`);
  }
  m.throwIfAny();
  const clusterId = speaker.rib?.clusterId ?? speaker.routerId;
  speaker.rib = { ...speaker.rib, ...routeReflectorRibOptions(clusterId) };
  return { ...parsed, clusterId, clients: cs.map(({ p }) => p.address) };
}

export function readReflectorConfig(file: string): ReflectorConfig {
  return readConfigFile(file, parseReflectorConfig);
}
