// One service port compiled on its own: its chains and sets, the elements it gives the frontend
// maps, the endpoints it gives the endpoint maps, its hairpins (see compile.ts for the shape).
// A port compiled again after a change gives back the very objects it gave before for whatever
// did not change, so the table's change is what changed and no more.
//
// A load compiles every port and an endpoint change compiles one, and what a compile allocates
// is what the young generation's collections copy: so no closure per port, no text made twice
// (an endpoint's `address . port` once for every map it goes in, a rule's text once per shape),
// a field's name for an error made only for the error, and a dotted quad taken as it is written.
import { formatAddress, type IpFamily, ipv4NumberAt, parseAddress } from '../../ip/index.js';
import type { NftChain, NftMapElement, NftRule, NftSet } from '../policy/nft-model.js';
import { ServiceCompileError } from './compile-error.js';
import type { ServicePort } from './input.js';
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
const PROTOCOLS = ['tcp', 'udp', 'sctp'];
/** Kubernetes' bound on sessionAffinityConfig.clientIP.timeoutSeconds. */
const MAX_AFFINITY_SECONDS = 86_400;

export const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
export const ipOf = (f: Family): string => (f === 4 ? 'ip' : 'ip6');

export function readAddress(text: unknown, field: string): { family: IpFamily; text: string } {
  // A dotted quad is read only in its canonical form (no leading zero): its text is its formatted text.
  if (typeof text === 'string' && ipv4NumberAt(text) >= 0) return { family: 4, text };
  if (typeof text !== 'string') throw new ServiceCompileError(field, `${JSON.stringify(text)} is not an address`);
  try {
    const a = parseAddress(text, field);
    return { family: a.family, text: formatAddress(a) };
  } catch (e) {
    throw new ServiceCompileError(field, e instanceof Error ? e.message : String(e));
  }
}

const isPort = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 65535;
const notAPort = (field: string, n: unknown) => new ServiceCompileError(field, `${JSON.stringify(n)} is not a port (1-65535)`);

export interface Frontend {
  /** The map and its key: a conflict is two ports claiming one. */
  readonly map: string;
  readonly key: string;
  readonly verdict: string;
  /** The frontend (family, address or NodePort, protocol, port): what two ports may not both hold. */
  readonly claim: string;
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
  readonly picks: readonly Pick[];
  /** `a . a` for each endpoint on this node, per family. */
  readonly hairpins: Readonly<Record<Family, readonly string[]>>;
  /**
   * Its share of the maps while no other port holds one of its frontends, when no frontend and
   * no endpoint map's frontend comes twice in it (else undefined: sharePort works it out).
   */
  readonly share: PortShare | undefined;
}

/** An endpoint of one family, each once. */
interface Endpoint {
  readonly address: string;
  readonly port: number;
  local: boolean;
  /** `address . port`, what an endpoint map holds for it (without affinity). */
  value: string;
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

/** The names and texts of one family that every port uses. */
interface FamilyTexts {
  readonly f: Family;
  readonly ip: string;
  readonly ips: string;
  readonly nodePorts: string;
  readonly noEndpointIps: string;
  readonly noEndpointNodePorts: string;
  /** A frontend's claim is its lookup map's name, a space and its key. */
  readonly ipsClaim: string;
  readonly nodePortsClaim: string;
  /** A rule's text after the cluster IP, the rule that marks a client from outside the pools. */
  readonly offClusterTail: string;
  /** What a source inside the pools matches, before the rest of its rule. */
  readonly fromCluster: string;
}

const familyTexts = (f: Family): FamilyTexts => {
  const ip = ipOf(f);
  return {
    f,
    ip,
    ips: ipsMap(f),
    nodePorts: nodePortsMap(f),
    noEndpointIps: noEndpointIpsMap(f),
    noEndpointNodePorts: noEndpointNodePortsMap(f),
    ipsClaim: `${ipsMap(f)} `,
    nodePortsClaim: `${nodePortsMap(f)} `,
    offClusterTail: ` ${ip} saddr != @${clusterSet(f)} jump ${MARK_MASQUERADE}`,
    fromCluster: `${ip} saddr @${clusterSet(f)} `,
  };
};
const TEXTS: Record<Family, FamilyTexts> = { 4: familyTexts(4), 6: familyTexts(6) };

const MAP_KINDS = [endpointsMap, localEndpointsMap, nodePortEndpointsMap, nodePortLocalEndpointsMap] as const;
const EPS = 0;
const LOCAL_EPS = 1;
const NP_EPS = 2;
const NP_LOCAL_EPS = 3;
/** The endpoint maps' names, made once each: kind, family, protocol, shard. */
const mapNames: (string | undefined)[] = [];
function endpointMap(kind: number, f: Family, protocol: number, shard: number): string {
  const i = ((kind * 2 + (f === 4 ? 0 : 1)) * PROTOCOLS.length + protocol) * ENDPOINT_SHARDS + shard;
  return (mapNames[i] ??= MAP_KINDS[kind]!(f, PROTOCOLS[protocol]!, shard));
}

/** ` . i`, what follows a frontend in the key of its i-th endpoint. */
const indexTexts: string[] = [];
const indexText = (i: number): string => (indexTexts[i] ??= ` . ${i}`);
/** ` . port`, what follows an endpoint's address in its value. */
const portTexts: string[] = [];
const portText = (port: number): string => (portTexts[port] ??= ` . ${port}`);

/** The DNAT rule that picks one of `n` endpoints from `map`, one object per map and n (up to 64). */
const dnatRules = new Map<string, NftRule[]>();
function dnatRule(map: string, protocol: string, t: FamilyTexts, byNodePort: boolean, n: number): NftRule {
  let rules = dnatRules.get(map);
  if (!rules) dnatRules.set(map, (rules = []));
  const had = rules[n];
  if (had) return had;
  const rule = {
    expr: `meta l4proto ${protocol} dnat ${t.ip} to ${byNodePort ? '' : `${t.ip} daddr . `}meta l4proto . th dport . numgen random mod ${n} map @${map}`,
  };
  if (n <= 64) rules[n] = rule;
  return rule;
}

/** What a port's compile gathers, family after family. */
interface Work {
  readonly p: ServicePort;
  readonly protocol: number;
  /** ` . protocol . port`: a frontend's key after its address. */
  readonly protoPort: string;
  readonly nodePort: number | undefined;
  readonly shard: number;
  readonly chains: NftChain[];
  readonly sets: NftSet[];
  readonly elements: Frontend[];
  readonly picks: Pick[];
}

function frontend(w: Work, map: string, claimPrefix: string, key: string, verdict: string): void {
  w.elements.push({ map, key, verdict, claim: claimPrefix + key, element: { key, verdict } });
}

function pick(w: Work, map: string, claim: string, key: string, over: readonly Endpoint[]): void {
  const elements: NftMapElement[] = [];
  for (let i = 0; i < over.length; i++) elements.push({ key: key + indexText(i), verdict: over[i]!.value });
  w.picks.push({ map, claim, elements });
}

const NONE: readonly Endpoint[] = [];
const NO_TEXT: readonly string[] = [];

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
  const protocol = PROTOCOLS.indexOf(p.protocol);
  if (protocol < 0) throw new ServiceCompileError(`services[${index}].protocol`, `${JSON.stringify(p.protocol)} is not tcp, udp or sctp`);
  const port = p.port;
  if (!isPort(port)) throw notAPort(`services[${index}].port`, port);
  const nodePort = p.nodePort;
  if (nodePort !== undefined && !isPort(nodePort)) throw notAPort(`services[${index}].nodePort`, nodePort);
  const affinity = p.affinityTimeoutSeconds;
  if (affinity !== undefined && (!Number.isInteger(affinity) || affinity < 1 || affinity > MAX_AFFINITY_SECONDS))
    throw new ServiceCompileError(`services[${index}].affinityTimeoutSeconds`, `${affinity} is not 1-${MAX_AFFINITY_SECONDS} seconds`);
  const clusterIPs = addresses(p, index, 'clusterIPs');
  const external = addresses(p, index, 'externalIPs').concat(addresses(p, index, 'loadBalancerIPs'));
  const endpoints = p.endpoints;
  if (!Array.isArray(endpoints)) throw new ServiceCompileError(`services[${index}].endpoints`, 'is not a list');
  const byFamily: Record<Family, Endpoint[]> = { 4: [], 6: [] };
  for (let i = 0; i < endpoints.length; i++) {
    const e = endpoints[i];
    const text = e?.address;
    let address: string;
    let family: Family;
    if (typeof text === 'string' && ipv4NumberAt(text) >= 0) {
      address = text;
      family = 4;
    } else {
      const a = readAddress(text, `services[${index}].endpoints[${i}].address`);
      address = a.text;
      family = a.family;
    }
    if (!isPort(e.port)) throw notAPort(`services[${index}].endpoints[${i}].port`, e.port);
    byFamily[family].push({ address, port: e.port, local: e.local === true, value: '' });
  }

  const w: Work = {
    p,
    protocol,
    protoPort: ` . ${p.protocol} . ${port}`,
    nodePort,
    shard: endpointShard(p.id),
    chains: [],
    sets: [],
    elements: [],
    picks: [],
  };
  const hairpins: Record<Family, readonly string[]> = { 4: NO_TEXT, 6: NO_TEXT };
  for (let fi = 0; fi < FAMILIES.length; fi++) {
    const f = FAMILIES[fi]!;
    let cip: string | undefined;
    let cips = 0;
    for (let i = 0; i < clusterIPs.length; i++) {
      if (clusterIPs[i]!.family !== f) continue;
      cips++;
      cip ??= clusterIPs[i]!.text;
    }
    // A family the service has no cluster IP of is not served (kube-proxy's per-family proxiers).
    if (cip === undefined) continue;
    if (cips > 1) throw new ServiceCompileError(`services[${index}].clusterIPs`, `has ${cips} IPv${f} addresses (one per family)`);
    // Each endpoint once (EndpointSlices may repeat one), in one order whatever the input's.
    const eps = uniqueSorted(byFamily[f]);
    let local = NONE;
    for (let i = 0; i < eps.length; i++) {
      if (!eps[i]!.local) continue;
      if (local === NONE) local = [];
      (local as Endpoint[]).push(eps[i]!);
    }
    const externalIPs = external.length === 0 ? NO_TEXT : externalOf(external, f);
    // A pod of this node may reach its own service and land on itself: masqueraded at postrouting.
    if (local.length) {
      const hairpin: string[] = [];
      for (let i = 0; i < local.length; i++) hairpin.push(`${local[i]!.address} . ${local[i]!.address}`);
      hairpins[f] = hairpin;
    }
    if (affinity === undefined) {
      for (let i = 0; i < eps.length; i++) eps[i]!.value = eps[i]!.address + portText(eps[i]!.port);
      compileFamily(w, TEXTS[f], cip, eps, local, externalIPs, hasCluster[f]);
    } else compileAffinityFamily(w, TEXTS[f], cip, eps, local, externalIPs, hasCluster[f], affinity);
  }
  const made = { id: p.id, chains: w.chains, sets: w.sets, elements: w.elements, picks: w.picks, hairpins };
  const compiled = old ? keepUnchanged(made, old) : { ...made, share: ownShare(made) };
  kept.set(p, { variant, compiled });
  return compiled;
}

/** The port's addresses in one of its lists, read. */
function addresses(
  p: ServicePort,
  index: number,
  name: 'clusterIPs' | 'externalIPs' | 'loadBalancerIPs',
): { family: IpFamily; text: string }[] {
  const v = p[name] ?? [];
  if (!Array.isArray(v)) throw new ServiceCompileError(`services[${index}].${name}`, 'is not a list');
  const out: { family: IpFamily; text: string }[] = [];
  for (let i = 0; i < v.length; i++) out.push(readAddress(v[i], `services[${index}].${name}[${i}]`));
  return out;
}

/** One family's external and load-balancer IPs, each once, sorted. */
function externalOf(external: readonly { family: IpFamily; text: string }[], f: Family): readonly string[] {
  const out = new Set<string>();
  for (const a of external) if (a.family === f) out.add(a.text);
  return out.size ? [...out].sort(byText) : NO_TEXT;
}

const endpointOrder = (a: Endpoint, b: Endpoint): number => byText(a.address, b.address) || a.port - b.port;

/** `eps` sorted by address and port, each endpoint once (on this node if any of its copies is), in place. */
function uniqueSorted(eps: Endpoint[]): Endpoint[] {
  // Insertion sort: a port's endpoints are few, and Array.prototype.sort allocates its work space.
  for (let i = 1; i < eps.length; i++) {
    const e = eps[i]!;
    let j = i - 1;
    while (j >= 0 && endpointOrder(eps[j]!, e) > 0) {
      eps[j + 1] = eps[j]!;
      j--;
    }
    eps[j + 1] = e;
  }
  let n = 0;
  for (let i = 0; i < eps.length; i++) {
    const e = eps[i]!;
    const last = n > 0 ? eps[n - 1]! : undefined;
    if (last && last.address === e.address && last.port === e.port) last.local ||= e.local;
    else eps[n++] = e;
  }
  eps.length = n;
  return eps;
}

/** A family of a port without session affinity: the endpoint is chosen by element (`frontend . i` → endpoint i). */
function compileFamily(
  w: Work,
  t: FamilyTexts,
  cip: string,
  eps: readonly Endpoint[],
  local: readonly Endpoint[],
  externalIPs: readonly string[],
  hasCluster: boolean,
): void {
  const { p, protocol, shard } = w;
  const f = t.f;
  const internalLocal = p.internalLocal === true;
  const externalLocal = p.externalLocal === true;
  const hasEndpoints = eps.length > 0;
  const hasExternalEndpoints = externalLocal ? local.length > 0 : hasEndpoints;
  const noEndpointVerdict = hasEndpoints ? 'drop' : `goto ${REJECT}`;
  const clusterKey = cip + w.protoPort;
  // A replaced endpoint is a few elements and no rule; the rules hold only the number of endpoints.
  const toCluster = !internalLocal && hasEndpoints;
  const toLocal = internalLocal && local.length > 0;
  if (toCluster || toLocal) {
    const name = toLocal ? localChain(p.id, f) : clusterChain(p.id, f);
    frontend(w, t.ips, t.ipsClaim, clusterKey, `goto ${name}`);
    const map = endpointMap(toLocal ? LOCAL_EPS : EPS, f, protocol, shard);
    pick(w, map, t.ipsClaim + clusterKey, clusterKey, toLocal ? local : eps);
    const dnat = dnatRule(map, p.protocol, t, false, toLocal ? local.length : eps.length);
    // A client from outside the pools reaching the cluster IP is masqueraded: its reply may have
    // to come back through this node (kube-proxy does so when it knows the cluster's CIDR).
    w.chains.push({ name, rules: hasCluster ? [{ expr: `${t.ip} daddr ${cip}${t.offClusterTail}` }, dnat] : [dnat] });
  } else frontend(w, t.noEndpointIps, t.ipsClaim, clusterKey, noEndpointVerdict);
  // External traffic: Cluster policy masquerades and takes any endpoint; Local keeps the
  // client's address and takes this node's, but pods and the node itself take any (as
  // through a load balancer), the node's own traffic masqueraded.
  if (externalIPs.length) {
    let name: string | undefined;
    for (const a of externalIPs) {
      const key = a + w.protoPort;
      if (hasEndpoints) {
        name ??= externalChain(p.id, f);
        frontend(w, t.ips, t.ipsClaim, key, `goto ${name}`);
        pick(w, endpointMap(EPS, f, protocol, shard), t.ipsClaim + key, key, eps);
        if (externalLocal) pick(w, endpointMap(LOCAL_EPS, f, protocol, shard), t.ipsClaim + key, key, local);
      }
      if (!hasExternalEndpoints) frontend(w, t.noEndpointIps, t.ipsClaim, key, noEndpointVerdict);
    }
    if (name !== undefined) w.chains.push({ name, rules: externalRules(w, t, false, eps, local, hasCluster) });
  }
  if (w.nodePort !== undefined) {
    const np = `${p.protocol} . ${w.nodePort}`;
    if (hasEndpoints) {
      const name = nodePortChain(p.id, f);
      frontend(w, t.nodePorts, t.nodePortsClaim, np, `goto ${name}`);
      pick(w, endpointMap(NP_EPS, f, protocol, shard), t.nodePortsClaim + np, np, eps);
      if (externalLocal) pick(w, endpointMap(NP_LOCAL_EPS, f, protocol, shard), t.nodePortsClaim + np, np, local);
      w.chains.push({ name, rules: externalRules(w, t, true, eps, local, hasCluster) });
    }
    if (!hasExternalEndpoints) frontend(w, t.noEndpointNodePorts, t.nodePortsClaim, np, noEndpointVerdict);
  }
}

/** The rules of an external or nodeport chain (by address or by NodePort). */
function externalRules(
  w: Work,
  t: FamilyTexts,
  byNodePort: boolean,
  eps: readonly Endpoint[],
  local: readonly Endpoint[],
  hasCluster: boolean,
): NftRule[] {
  const { p, protocol, shard } = w;
  const all = dnatRule(endpointMap(byNodePort ? NP_EPS : EPS, t.f, protocol, shard), p.protocol, t, byNodePort, eps.length);
  if (p.externalLocal !== true) return [{ expr: `jump ${MARK_MASQUERADE}` }, all];
  const rules: NftRule[] = [];
  if (hasCluster) rules.push({ expr: t.fromCluster + all.expr });
  rules.push({ expr: `fib saddr type local jump ${MARK_MASQUERADE}` }, { expr: `fib saddr type local ${all.expr}` });
  if (local.length > 0)
    rules.push(dnatRule(endpointMap(byNodePort ? NP_LOCAL_EPS : LOCAL_EPS, t.f, protocol, shard), p.protocol, t, byNodePort, local.length));
  return rules;
}

/** A family of a port with session affinity: kube-proxy's shape, a chain and a set of recent clients per endpoint. */
function compileAffinityFamily(
  w: Work,
  t: FamilyTexts,
  cip: string,
  eps: readonly Endpoint[],
  local: readonly Endpoint[],
  externalIPs: readonly string[],
  hasCluster: boolean,
  affinity: number,
): void {
  const { p, chains, sets } = w;
  const f = t.f;
  const ip = t.ip;
  const internalLocal = p.internalLocal === true;
  const externalLocal = p.externalLocal === true;
  const hasExternal = externalIPs.length > 0 || w.nodePort !== undefined;
  const hasEndpoints = eps.length > 0;
  const hasInternalEndpoints = internalLocal ? local.length > 0 : hasEndpoints;
  const hasExternalEndpoints = externalLocal ? local.length > 0 : hasEndpoints;
  const usesCluster = hasEndpoints && (!internalLocal || hasExternal);
  const usesLocal = local.length > 0 && (internalLocal || (externalLocal && hasExternal));
  const usesExternal = hasEndpoints && hasExternal;
  const cluster = () => clusterChain(p.id, f);
  const ext = () => externalChain(p.id, f);
  const noEndpointVerdict = hasEndpoints ? 'drop' : `goto ${REJECT}`;
  const offCluster: NftRule[] = hasCluster ? [{ expr: `${ip} daddr ${cip}${t.offClusterTail}` }] : [];
  const key = (address: string) => address + w.protoPort;
  if (hasInternalEndpoints) frontend(w, t.ips, t.ipsClaim, key(cip), `goto ${internalLocal ? localChain(p.id, f) : cluster()}`);
  else frontend(w, t.noEndpointIps, t.ipsClaim, key(cip), noEndpointVerdict);
  const externalKeys: [string, string, string, string][] = externalIPs.map((a) => [t.ips, t.noEndpointIps, t.ipsClaim, key(a)]);
  if (w.nodePort !== undefined) externalKeys.push([t.nodePorts, t.noEndpointNodePorts, t.nodePortsClaim, `${p.protocol} . ${w.nodePort}`]);
  for (const [map, noEndpoints, claim, k] of externalKeys) {
    if (hasEndpoints) frontend(w, map, claim, k, `goto ${ext()}`);
    if (!hasExternalEndpoints) frontend(w, noEndpoints, claim, k, noEndpointVerdict);
  }

  const dnat = (e: Endpoint) =>
    `meta l4proto ${p.protocol} dnat ${ip} to ${f === 4 ? `${e.address}:${e.port}` : `[${e.address}]:${e.port}`}`;
  const epChain = (e: Endpoint) => endpointChain(p.id, e.address, e.port, f);
  const affSet = (e: Endpoint) => affinitySet(p.id, e.address, e.port, f);
  const reachable = new Map<string, Endpoint>();
  for (const e of [...(usesCluster ? eps : []), ...(usesLocal ? local : [])]) reachable.set(`${e.address} ${e.port}`, e);
  for (const e of [...reachable.values()].sort(endpointOrder)) {
    sets.push({ name: affSet(e), type: f === 4 ? 'ipv4_addr' : 'ipv6_addr', interval: false, elements: [], timeout: affinity });
    chains.push({ name: epChain(e), rules: [{ expr: `update @${affSet(e)} { ${ip} saddr }` }, { expr: dnat(e) }] });
  }
  // A client seen lately goes back to its endpoint, else `numgen random mod N vmap` picks one, uniformly.
  const balance = (over: readonly Endpoint[]): NftRule[] => [
    ...over.map((e) => ({ expr: `${ip} saddr @${affSet(e)} goto ${epChain(e)}` })),
    { expr: `numgen random mod ${over.length} vmap { ${over.map((e, i) => `${i} : goto ${epChain(e)}`).join(', ')} }` },
  ];
  if (usesCluster) chains.push({ name: cluster(), rules: [...(internalLocal ? [] : offCluster), ...balance(eps)] });
  if (usesLocal) chains.push({ name: localChain(p.id, f), rules: [...(internalLocal ? offCluster : []), ...balance(local)] });
  if (usesExternal) {
    const rules: NftRule[] = [];
    if (!externalLocal) rules.push({ expr: `jump ${MARK_MASQUERADE}` }, { expr: `goto ${cluster()}` });
    else {
      // Pods and the node itself are not "external": they go to any endpoint, as they would
      // through a load balancer; the node's own traffic is masqueraded (its source is the frontend's node).
      if (hasCluster) rules.push({ expr: `${t.fromCluster}goto ${cluster()}` });
      rules.push({ expr: `fib saddr type local jump ${MARK_MASQUERADE}` }, { expr: `fib saddr type local goto ${cluster()}` });
      if (local.length > 0) rules.push({ expr: `goto ${localChain(p.id, f)}` });
    }
    chains.push({ name: ext(), rules });
  }
}

/** What a port compiled gives, before its share is settled and its unchanged parts kept. */
interface Made {
  readonly id: string;
  readonly chains: NftChain[];
  readonly sets: NftSet[];
  readonly elements: Frontend[];
  readonly picks: Pick[];
  readonly hairpins: Record<Family, readonly string[]>;
}

/**
 * The port's share while it holds all of its frontends: each claim once, its elements by map,
 * each endpoint map's frontends after them. Undefined when a frontend comes twice in one map
 * (the first use wins, which sharePort works out).
 */
function ownShare(c: Made): PortShare | undefined {
  const { elements, picks } = c;
  const claims: string[] = [];
  for (let i = 0; i < elements.length; i++) {
    const e = elements[i]!;
    for (let j = 0; j < i; j++) if (elements[j]!.map === e.map && elements[j]!.key === e.key) return undefined;
    if (!claims.includes(e.claim)) claims.push(e.claim);
  }
  for (let i = 0; i < picks.length; i++) {
    const pk = picks[i]!;
    if (!claims.includes(pk.claim)) return undefined;
    for (let j = 0; j < i; j++) if (picks[j]!.map === pk.map && picks[j]!.claim === pk.claim) return undefined;
  }
  const maps = new Map<string, readonly NftMapElement[]>();
  for (const e of elements) {
    const list = maps.get(e.map) as NftMapElement[] | undefined;
    if (list) list.push(e.element);
    else maps.set(e.map, [e.element]);
  }
  for (const pk of picks) {
    const had = maps.get(pk.map);
    maps.set(pk.map, had ? [...had, ...pk.elements] : pk.elements);
  }
  return { claims, maps };
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
function keepUnchanged(c: Made, old: CompiledPort): CompiledPort {
  const oldPicks = new Map(old.picks.map((pk) => [`${pk.map} ${pk.claim}`, pk]));
  const picks = c.picks.map((pk) => {
    const had = oldPicks.get(`${pk.map} ${pk.claim}`);
    return had && sameElements(had.elements, pk.elements) ? had : pk;
  });
  const share = ownShare({ ...c, picks });
  if (share && old.share) {
    const maps = share.maps as Map<string, readonly NftMapElement[]>;
    for (const [map, list] of maps) {
      const had = old.share.maps.get(map);
      if (had && had !== list && sameElements(had, list)) maps.set(map, had);
    }
  }
  return {
    id: c.id,
    chains: keepList(c.chains, old.chains, sameChain, (x) => x.name),
    sets: keepList(c.sets, old.sets, sameSet, (x) => x.name),
    elements: c.elements,
    picks,
    hairpins: {
      4: sameStrings(c.hairpins[4], old.hairpins[4]) ? old.hairpins[4] : c.hairpins[4],
      6: sameStrings(c.hairpins[6], old.hairpins[6]) ? old.hairpins[6] : c.hairpins[6],
    },
    share,
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
function anyHeld(claims: readonly string[], claimed: ReadonlyMap<string, string>): boolean {
  for (const c of claims) if (claimed.has(c)) return true;
  return false;
}

export function sharePort(compiled: CompiledPort, claimed: Map<string, string>, conflicts: string[]): PortShare {
  const id = compiled.id;
  // The usual case: no other port holds any of its frontends, and the share was made with the port.
  const own = compiled.share;
  if (own && !anyHeld(own.claims, claimed)) {
    for (const c of own.claims) claimed.set(c, id);
    return own;
  }
  const filled = new Set<string>();
  const claims: string[] = [];
  const maps = new Map<string, readonly NftMapElement[]>();
  for (const e of compiled.elements) {
    // A frontend is one port's, in the lookup and in the no-endpoint check alike; within a port
    // the first use of a key wins (an external IP that is also its cluster IP).
    const owner = claimed.get(e.claim);
    if (owner !== undefined && owner !== id) {
      conflicts.push(`${e.key} (${e.map}): ${JSON.stringify(owner)} keeps it, ${JSON.stringify(id)} is left out`);
      continue;
    }
    const slot = `${e.map} ${e.key}`;
    if (filled.has(slot)) continue;
    filled.add(slot);
    if (owner === undefined) {
      claimed.set(e.claim, id);
      claims.push(e.claim);
    }
    const list = maps.get(e.map) as NftMapElement[] | undefined;
    if (list) list.push(e.element);
    else maps.set(e.map, [e.element]);
  }
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
