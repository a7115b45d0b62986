// One service port compiled on its own: its chains and sets, the elements it gives the frontend
// maps, the endpoints it gives the endpoint maps, its hairpins (see compile.ts for the shape).
// A port compiled again after a change gives back the very objects it gave before for whatever
// did not change, so the table's change is what changed and no more.
import { formatAddress, type IpFamily, parseAddress } from '../../ip/index.js';
import type { NftChain, NftMapElement, NftRule, NftSet } from '../policy/nft-model.js';
import { ServiceCompileError } from './compile-error.js';
import type { ServiceEndpoint, ServicePort } from './input.js';
import {
  affinitySet,
  clusterChain,
  clusterSet,
  endpointChain,
  endpointsMap,
  externalChain,
  type Family,
  ipsMap,
  localChain,
  localEndpointsMap,
  MARK_MASQUERADE,
  noEndpointIpsMap,
  noEndpointNodePortsMap,
  nodePortChain,
  nodePortEndpointsMap,
  nodePortLocalEndpointsMap,
  nodePortsMap,
  REJECT,
} from './names.js';

/**
 * Endpoint maps per kind, family and protocol: a port's endpoints are in one of them (by its id),
 * so a changed endpoint rebuilds and compares one map of about 1/64 of the table's endpoints.
 */
export const ENDPOINT_SHARDS = 64;

export const FAMILIES = [4, 6] as const;
const PROTOCOLS = new Set(['tcp', 'udp', 'sctp']);
/** Kubernetes' bound on sessionAffinityConfig.clientIP.timeoutSeconds. */
const MAX_AFFINITY_SECONDS = 86_400;

export const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
export const ipOf = (f: Family): string => (f === 4 ? 'ip' : 'ip6');

export function readAddress(text: unknown, field: string): { family: IpFamily; text: string } {
  if (typeof text !== 'string') throw new ServiceCompileError(field, `${JSON.stringify(text)} is not an address`);
  try {
    const a = parseAddress(text, field);
    return { family: a.family, text: formatAddress(a) };
  } catch (e) {
    throw new ServiceCompileError(field, e instanceof Error ? e.message : String(e));
  }
}

function readPort(n: unknown, field: string): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 65535)
    throw new ServiceCompileError(field, `${JSON.stringify(n)} is not a port (1-65535)`);
  return n;
}

export interface Frontend {
  /** The map and its key: a conflict is two ports claiming one. */
  readonly map: string;
  readonly key: string;
  readonly verdict: string;
  /** The frontend (family, address or NodePort, protocol, port): what two ports may not both hold. */
  readonly claim: string;
  /** `map key`: what one map holds once. */
  readonly slot: string;
  /** The element as the map takes it, one object while the port is unchanged. */
  readonly element: NftMapElement;
}

/** The endpoints of one frontend in one endpoint map (`frontend . i` → endpoint i). */
interface Pick {
  readonly map: string;
  /** The frontend's claim: the elements go in only while the port holds it. */
  readonly claim: string;
  /** One array while the port is unchanged, so a map whose chunks are all the same is reused. */
  readonly elements: readonly NftMapElement[];
}

/** One service port, compiled: its own chains and sets, and the map elements that lead to them. */
export interface CompiledPort {
  readonly id: string;
  readonly chains: readonly NftChain[];
  readonly sets: readonly NftSet[];
  readonly elements: readonly Frontend[];
  /** The elements by map, as the port gives them when it keeps every frontend (one array per map while unchanged). */
  readonly frontends: ReadonlyMap<string, readonly NftMapElement[]>;
  readonly picks: readonly Pick[];
  /** `a . a` for each endpoint on this node, per family. */
  readonly hairpins: Readonly<Record<Family, readonly string[]>>;
}

interface Endpoint {
  readonly address: string;
  readonly port: number;
  readonly local: boolean;
}

/** A port as compiled: what it gave, under the options it was compiled with. */
export interface Kept {
  readonly variant: string;
  readonly compiled: CompiledPort;
}

/** The endpoint map a port's endpoints go in: one of ENDPOINT_SHARDS, by a hash of its id, so a change rebuilds one small map. */
function endpointShard(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return (h >>> 0) % ENDPOINT_SHARDS;
}

/** The value of `make`, made on the first call. */
function once<T>(make: () => T): () => T {
  let made = false;
  let value: T;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value;
  };
}

export function compilePort(
  p: ServicePort,
  index: number,
  hasCluster: Record<Family, boolean>,
  variant: string,
  kept: WeakMap<ServicePort, Kept>,
  old?: CompiledPort,
): CompiledPort {
  const had = kept.get(p);
  if (had && had.variant === variant) return had.compiled;
  const field = `services[${index}]`;
  if (!PROTOCOLS.has(p.protocol))
    throw new ServiceCompileError(`${field}.protocol`, `${JSON.stringify(p.protocol)} is not tcp, udp or sctp`);
  const port = readPort(p.port, `${field}.port`);
  const nodePort = p.nodePort === undefined ? undefined : readPort(p.nodePort, `${field}.nodePort`);
  const affinity = p.affinityTimeoutSeconds;
  if (affinity !== undefined && (!Number.isInteger(affinity) || affinity < 1 || affinity > MAX_AFFINITY_SECONDS))
    throw new ServiceCompileError(`${field}.affinityTimeoutSeconds`, `${affinity} is not 1-${MAX_AFFINITY_SECONDS} seconds`);
  const list = (name: 'clusterIPs' | 'externalIPs' | 'loadBalancerIPs') => {
    const v = p[name] ?? [];
    if (!Array.isArray(v)) throw new ServiceCompileError(`${field}.${name}`, 'is not a list');
    return v.map((a, i) => readAddress(a, `${field}.${name}[${i}]`));
  };
  const clusterIPs = list('clusterIPs');
  const external = [...list('externalIPs'), ...list('loadBalancerIPs')];
  if (!Array.isArray(p.endpoints)) throw new ServiceCompileError(`${field}.endpoints`, 'is not a list');
  const endpoints = p.endpoints.map((e: ServiceEndpoint, i) => {
    const a = readAddress(e?.address, `${field}.endpoints[${i}].address`);
    return { family: a.family, address: a.text, port: readPort(e.port, `${field}.endpoints[${i}].port`), local: e.local === true };
  });

  const chains: NftChain[] = [];
  const sets: NftSet[] = [];
  const elements: Frontend[] = [];
  const picks: Pick[] = [];
  const shard = endpointShard(p.id);
  const frontend = (map: string, key: string, verdict: string) =>
    elements.push({ map, key, verdict, claim: `${map.replace('-noep', '')} ${key}`, slot: `${map} ${key}`, element: { key, verdict } });
  const hairpins: Record<Family, string[]> = { 4: [], 6: [] };
  for (const f of FAMILIES) {
    const hairpin = hairpins[f];
    const cips = clusterIPs.filter((a) => a.family === f);
    // A family the service has no cluster IP of is not served (kube-proxy's per-family proxiers).
    if (cips.length === 0) continue;
    if (cips.length > 1) throw new ServiceCompileError(`${field}.clusterIPs`, `has ${cips.length} IPv${f} addresses (one per family)`);
    const cip = cips[0]!.text;
    // Each endpoint once (EndpointSlices may repeat one), in one order whatever the input's.
    const seen = new Map<string, Endpoint>();
    for (const e of endpoints) {
      if (e.family !== f) continue;
      const k = `${e.address} ${e.port}`;
      const had = seen.get(k);
      seen.set(k, { address: e.address, port: e.port, local: e.local || (had?.local ?? false) });
    }
    const eps = [...seen.values()].sort((a, b) => byText(a.address, b.address) || a.port - b.port);
    const local = eps.filter((e) => e.local);
    const externalIPs = [...new Set(external.filter((a) => a.family === f).map((a) => a.text))].sort(byText);
    const hasExternal = externalIPs.length > 0 || nodePort !== undefined;
    const hasEndpoints = eps.length > 0;
    const internalLocal = p.internalLocal === true;
    const externalLocal = p.externalLocal === true;
    const hasInternalEndpoints = internalLocal ? local.length > 0 : hasEndpoints;
    const hasExternalEndpoints = externalLocal ? local.length > 0 : hasEndpoints;
    const usesCluster = hasEndpoints && (!internalLocal || hasExternal);
    const usesLocal = local.length > 0 && (internalLocal || (externalLocal && hasExternal));
    const usesExternal = hasEndpoints && hasExternal;
    // Named when used: a name that needs a hash costs a digest, and most ports use one or two of these.
    const cluster = once(() => clusterChain(p.id, f));
    const localName = once(() => localChain(p.id, f));
    const ext = once(() => externalChain(p.id, f));
    const nodePortName = once(() => nodePortChain(p.id, f));
    const ip = ipOf(f);
    const noEndpointVerdict = hasEndpoints ? 'drop' : `goto ${REJECT}`;
    const key = (address: string) => `${address} . ${p.protocol} . ${port}`;
    // A pod of this node may reach its own service and land on itself: masqueraded at postrouting.
    for (const e of local) hairpin.push(`${e.address} . ${e.address}`);
    // A client from outside the pools reaching the cluster IP is masqueraded: its reply may have
    // to come back through this node (kube-proxy does so when it knows the cluster's CIDR).
    const offCluster: NftRule[] = hasCluster[f]
      ? [{ expr: `${ip} daddr ${cip} ${ip} saddr != @${clusterSet(f)} jump ${MARK_MASQUERADE}` }]
      : [];

    if (affinity === undefined) {
      // The endpoint is chosen by element: `frontend . i` → endpoint i in the port's maps, so a
      // replaced endpoint is a few elements and no rule; the rules hold only the number of endpoints.
      const np = nodePort === undefined ? undefined : `${p.protocol} . ${nodePort}`;
      const value = (e: Endpoint) => `${e.address} . ${e.port}`;
      const pick = (map: string, frontendKey: string, claimMap: string, over: readonly Endpoint[]) =>
        picks.push({
          map,
          claim: `${claimMap} ${frontendKey}`,
          elements: over.map((e, i) => ({ key: `${frontendKey} . ${i}`, verdict: value(e) })),
        });
      const dnatFrom = (map: string, byNodePort: boolean, n: number): string =>
        `meta l4proto ${p.protocol} dnat ${ip} to ${byNodePort ? '' : `${ip} daddr . `}meta l4proto . th dport . numgen random mod ${n} map @${map}`;
      const toCluster = !internalLocal && hasEndpoints;
      const toLocal = internalLocal && local.length > 0;
      if (toCluster || toLocal) {
        frontend(ipsMap(f), key(cip), `goto ${toLocal ? localName() : cluster()}`);
        const map = toLocal ? localEndpointsMap(f, p.protocol, shard) : endpointsMap(f, p.protocol, shard);
        pick(map, key(cip), ipsMap(f), toLocal ? local : eps);
        chains.push({
          name: toLocal ? localName() : cluster(),
          rules: [...offCluster, { expr: dnatFrom(map, false, toLocal ? local.length : eps.length) }],
        });
      } else frontend(noEndpointIpsMap(f), key(cip), noEndpointVerdict);
      // External traffic: Cluster policy masquerades and takes any endpoint; Local keeps the
      // client's address and takes this node's, but pods and the node itself take any (as
      // through a load balancer), the node's own traffic masqueraded.
      const externalRules = (byNodePort: boolean): NftRule[] => {
        const all = dnatFrom(
          byNodePort ? nodePortEndpointsMap(f, p.protocol, shard) : endpointsMap(f, p.protocol, shard),
          byNodePort,
          eps.length,
        );
        if (!externalLocal) return [{ expr: `jump ${MARK_MASQUERADE}` }, { expr: all }];
        const rules: NftRule[] = [];
        if (hasCluster[f]) rules.push({ expr: `${ip} saddr @${clusterSet(f)} ${all}` });
        rules.push({ expr: `fib saddr type local jump ${MARK_MASQUERADE}` }, { expr: `fib saddr type local ${all}` });
        if (local.length > 0)
          rules.push({
            expr: dnatFrom(
              byNodePort ? nodePortLocalEndpointsMap(f, p.protocol, shard) : localEndpointsMap(f, p.protocol, shard),
              byNodePort,
              local.length,
            ),
          });
        return rules;
      };
      for (const a of externalIPs) {
        if (hasEndpoints) {
          frontend(ipsMap(f), key(a), `goto ${ext()}`);
          pick(endpointsMap(f, p.protocol, shard), key(a), ipsMap(f), eps);
          if (externalLocal) pick(localEndpointsMap(f, p.protocol, shard), key(a), ipsMap(f), local);
        }
        if (!hasExternalEndpoints) frontend(noEndpointIpsMap(f), key(a), noEndpointVerdict);
      }
      if (hasEndpoints && externalIPs.length > 0) chains.push({ name: ext(), rules: externalRules(false) });
      if (np !== undefined) {
        if (hasEndpoints) {
          frontend(nodePortsMap(f), np, `goto ${nodePortName()}`);
          pick(nodePortEndpointsMap(f, p.protocol, shard), np, nodePortsMap(f), eps);
          if (externalLocal) pick(nodePortLocalEndpointsMap(f, p.protocol, shard), np, nodePortsMap(f), local);
          chains.push({ name: nodePortName(), rules: externalRules(true) });
        }
        if (!hasExternalEndpoints) frontend(noEndpointNodePortsMap(f), np, noEndpointVerdict);
      }
      continue;
    }

    // Session affinity: kube-proxy's shape, a chain and a set of recent clients per endpoint.
    if (hasInternalEndpoints) frontend(ipsMap(f), key(cip), `goto ${internalLocal ? localName() : cluster()}`);
    else frontend(noEndpointIpsMap(f), key(cip), noEndpointVerdict);
    const externalKeys: [string, string, string][] = externalIPs.map((a) => [ipsMap(f), noEndpointIpsMap(f), key(a)]);
    if (nodePort !== undefined) externalKeys.push([nodePortsMap(f), noEndpointNodePortsMap(f), `${p.protocol} . ${nodePort}`]);
    for (const [map, noEndpoints, k] of externalKeys) {
      if (hasEndpoints) frontend(map, k, `goto ${ext()}`);
      if (!hasExternalEndpoints) frontend(noEndpoints, k, noEndpointVerdict);
    }

    const dnat = (e: Endpoint) =>
      `meta l4proto ${p.protocol} dnat ${ip} to ${f === 4 ? `${e.address}:${e.port}` : `[${e.address}]:${e.port}`}`;
    const epChain = (e: Endpoint) => endpointChain(p.id, e.address, e.port, f);
    const affSet = (e: Endpoint) => affinitySet(p.id, e.address, e.port, f);
    const reachable = new Map<string, Endpoint>();
    for (const e of [...(usesCluster ? eps : []), ...(usesLocal ? local : [])]) reachable.set(`${e.address} ${e.port}`, e);
    for (const e of [...reachable.values()].sort((a, b) => byText(a.address, b.address) || a.port - b.port)) {
      sets.push({ name: affSet(e), type: f === 4 ? 'ipv4_addr' : 'ipv6_addr', interval: false, elements: [], timeout: affinity });
      chains.push({ name: epChain(e), rules: [{ expr: `update @${affSet(e)} { ${ip} saddr }` }, { expr: dnat(e) }] });
    }
    // A client seen lately goes back to its endpoint, else `numgen random mod N vmap` picks one, uniformly.
    const balance = (over: readonly Endpoint[]): NftRule[] => [
      ...over.map((e) => ({ expr: `${ip} saddr @${affSet(e)} goto ${epChain(e)}` })),
      { expr: `numgen random mod ${over.length} vmap { ${over.map((e, i) => `${i} : goto ${epChain(e)}`).join(', ')} }` },
    ];
    if (usesCluster) chains.push({ name: cluster(), rules: [...(internalLocal ? [] : offCluster), ...balance(eps)] });
    if (usesLocal) chains.push({ name: localName(), rules: [...(internalLocal ? offCluster : []), ...balance(local)] });
    if (usesExternal) {
      const rules: NftRule[] = [];
      if (!externalLocal) rules.push({ expr: `jump ${MARK_MASQUERADE}` }, { expr: `goto ${cluster()}` });
      else {
        // Pods and the node itself are not "external": they go to any endpoint, as they would
        // through a load balancer; the node's own traffic is masqueraded (its source is the frontend's node).
        if (hasCluster[f]) rules.push({ expr: `${ip} saddr @${clusterSet(f)} goto ${cluster()}` });
        rules.push({ expr: `fib saddr type local jump ${MARK_MASQUERADE}` }, { expr: `fib saddr type local goto ${cluster()}` });
        if (local.length > 0) rules.push({ expr: `goto ${localName()}` });
      }
      chains.push({ name: ext(), rules });
    }
  }
  const frontends = new Map<string, NftMapElement[]>();
  const slots = new Set<string>();
  for (const e of elements) {
    if (slots.has(e.slot)) continue;
    slots.add(e.slot);
    let list = frontends.get(e.map);
    if (!list) frontends.set(e.map, (list = []));
    list.push(e.element);
  }
  const compiled = old
    ? keepUnchanged({ id: p.id, chains, sets, elements, frontends, picks, hairpins }, old)
    : { id: p.id, chains, sets, elements, frontends, picks, hairpins };
  kept.set(p, { variant, compiled });
  return compiled;
}

const sameElements = (a: readonly NftMapElement[], b: readonly NftMapElement[]): boolean =>
  a.length === b.length && a.every((e, i) => e.key === b[i]!.key && e.verdict === b[i]!.verdict);
const sameStrings = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((e, i) => e === b[i]);
const sameChain = (a: NftChain, b: NftChain): boolean =>
  a.name === b.name &&
  a.base === undefined &&
  b.base === undefined &&
  a.rules.length === b.rules.length &&
  a.rules.every((r, i) => r.expr === b.rules[i]!.expr && r.id === b.rules[i]!.id);
const sameSet = (a: NftSet, b: NftSet): boolean =>
  a.name === b.name && a.type === b.type && a.interval === b.interval && a.timeout === b.timeout && sameStrings(a.elements, b.elements);

/** One list of the same things as `had`: `had` itself. */
function keepList<T>(now: T[], had: readonly T[], same: (a: T, b: T) => boolean, key: (x: T) => string): readonly T[] {
  const before = new Map(had.map((x) => [key(x), x]));
  let all = now.length === had.length;
  now.forEach((x, i) => {
    const h = before.get(key(x));
    if (h !== undefined && same(x, h)) now[i] = h;
    if (now[i] !== had[i]) all = false;
  });
  return all ? had : now;
}

/** The port as compiled again, with whatever equals what `old` gave being `old`'s own object. */
function keepUnchanged(
  c: {
    id: string;
    chains: NftChain[];
    sets: NftSet[];
    elements: Frontend[];
    frontends: Map<string, NftMapElement[]>;
    picks: Pick[];
    hairpins: Record<Family, string[]>;
  },
  old: CompiledPort,
): CompiledPort {
  const frontends = new Map<string, readonly NftMapElement[]>();
  for (const [map, list] of c.frontends) {
    const had = old.frontends.get(map);
    frontends.set(map, had && sameElements(had, list) ? had : list);
  }
  const oldPicks = new Map(old.picks.map((pk) => [`${pk.map} ${pk.claim}`, pk]));
  const picks = c.picks.map((pk) => {
    const had = oldPicks.get(`${pk.map} ${pk.claim}`);
    return had && sameElements(had.elements, pk.elements) ? had : pk;
  });
  return {
    id: c.id,
    chains: keepList(c.chains, old.chains, sameChain, (x) => x.name),
    sets: keepList(c.sets, old.sets, sameSet, (x) => x.name),
    elements: c.elements,
    frontends,
    picks,
    hairpins: {
      4: sameStrings(c.hairpins[4], old.hairpins[4]) ? old.hairpins[4] : c.hairpins[4],
      6: sameStrings(c.hairpins[6], old.hairpins[6]) ? old.hairpins[6] : c.hairpins[6],
    },
  };
}

/** What a port gives the maps every port shares, once its frontends are settled against the others'. */
export interface PortShare {
  /** The frontends it holds (another port claiming one is a conflict). */
  readonly claims: readonly string[];
  /** Its elements in each frontend and endpoint map it has any in (an endpoint map may get none). */
  readonly maps: ReadonlyMap<string, readonly NftMapElement[]>;
}

/**
 * A port's share of the maps: its frontends that no port before it (by id) holds, each once,
 * and the endpoints of those. `claimed` (frontend → port id) gets the ones it takes; each
 * frontend another port holds is a line of `conflicts`.
 */
export function sharePort(compiled: CompiledPort, claimed: Map<string, string>, conflicts: string[]): PortShare {
  const id = compiled.id;
  const filled = new Set<string>();
  const claims: string[] = [];
  const kept = new Map<string, NftMapElement[]>();
  let all = true;
  for (const e of compiled.elements) {
    // A frontend is one port's, in the lookup and in the no-endpoint check alike; within a port
    // the first use of a key wins (an external IP that is also its cluster IP).
    const owner = claimed.get(e.claim);
    if (owner !== undefined && owner !== id) {
      conflicts.push(`${e.key} (${e.map}): ${JSON.stringify(owner)} keeps it, ${JSON.stringify(id)} is left out`);
      all = false;
      continue;
    }
    if (filled.has(e.slot)) {
      all = false;
      continue;
    }
    filled.add(e.slot);
    if (owner === undefined) {
      claimed.set(e.claim, id);
      claims.push(e.claim);
    }
    let list = kept.get(e.map);
    if (!list) kept.set(e.map, (list = []));
    list.push(e.element);
  }
  const maps = new Map<string, readonly NftMapElement[]>(all ? compiled.frontends : kept);
  // A frontend's endpoints follow it: none for a frontend another port keeps.
  for (const pk of compiled.picks) {
    const slot = `${pk.map} ${pk.claim}`;
    if (claimed.get(pk.claim) !== id || filled.has(slot)) {
      // The port's rules still name the map: it must exist, if only empty.
      if (!maps.has(pk.map)) maps.set(pk.map, []);
      continue;
    }
    filled.add(slot);
    const had = maps.get(pk.map);
    maps.set(pk.map, had ? [...had, ...pk.elements] : pk.elements);
  }
  return { claims, maps };
}
