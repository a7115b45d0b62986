// The services compiler: ServiceInput (resolved for this node) → the services' part of the one
// table podroute owns (`inet podroute`), with kube-proxy's nftables-mode semantics. Pure and
// deterministic: the same input, in any order, gives the same part. See README.md for the shape.
//
// Per service port and family (a dual-stack service is two of everything, its IPv4 cluster IP
// going to its IPv4 endpoints):
//   svc-ips-vF          `cluster IP . proto . port` → goto its cluster (or local) chain, and each
//                       external and load-balancer IP → goto its external chain;
//   svc-nodeports-vF    `proto . nodePort` → goto its nodeport (with affinity: external) chain;
//   svc-eps-vF, svc-local-eps-vF, svc-np-eps-vF, svc-np-local-eps-vF
//                       `frontend . i` → endpoint i (`address . port`), over every endpoint or this
//                       node's, the frontend being `address . proto . port` or a NodePort's
//                       `proto . port`: a replaced endpoint is elements here, never a rule;
//   cluster<F>-<id>     masquerade a client from outside the pools; then one rule picks an
//                       endpoint uniformly, `dnat … to ip daddr . meta l4proto . th dport .
//                       numgen random mod N map @svc-eps-vF` (only N is in the rule);
//   local<F>-<id>       the same over this node's endpoints (internal traffic policy Local);
//   external<F>-<id>,   external IPs and load-balancer IPs, and the NodePort: Cluster policy marks
//   nodeport<F>-<id>    for masquerade and picks any endpoint; Local lets pods and the node
//                       itself pick any (the node masqueraded), others keep their address and
//                       pick one of this node's;
//   with session affinity instead kube-proxy's shape: cluster, local and external chains, a
//   client seen lately goes to its endpoint chain, else `numgen random mod N vmap`;
//   endpoint<F>-<…>     (affinity only) record the client in the endpoint's set, DNAT;
//   svc-hairpin-vF      `a . a` per endpoint on this node: a connection DNATed back to its own
//                       source is masqueraded at postrouting;
//   svc-noep-*          frontends with no endpoint → reject (none at all) or drop (none for
//                       its traffic policy), checked by filter chains on new connections.
import { type Cidr, formatAddress, type IpFamily, parseAddress, parseCidr } from '../../ip/index.js';
import type { NftChain, NftMap, NftMapElement, NftRule, NftSet } from '../policy/nft-model.js';
import type { NftTablePart } from '../policy/table-parts.js';
import { ServiceCompileError } from './compile-error.js';
import type { ServiceEndpoint, ServiceInput, ServicePort } from './input.js';
import {
  affinitySet,
  CHECK,
  clusterChain,
  clusterSet,
  DISPATCH,
  endpointChain,
  endpointsMap,
  externalChain,
  type Family,
  FILTER_FORWARD,
  FILTER_INPUT,
  FILTER_OUTPUT,
  HAIRPIN_ID,
  hairpinSet,
  ipsMap,
  localChain,
  localEndpointsMap,
  MARK_MASQUERADE,
  MASQUERADE_ID,
  NAT_OUTPUT,
  NAT_POSTROUTING,
  NAT_PREROUTING,
  noEndpointIpsMap,
  noEndpointNodePortsMap,
  nodePortChain,
  nodePortEndpointsMap,
  nodePortIpsSet,
  nodePortLocalEndpointsMap,
  nodePortsMap,
  REJECT,
  REJECT_ID,
} from './names.js';

export interface ServiceCompileOptions {
  /** The packet mark bit that asks for masquerade at postrouting (one bit; default 0x00200000, beside policy's Pass bit). */
  readonly masqueradeMark?: number;
  /**
   * Kept for compatibility, checked and otherwise unused: every port without session affinity
   * now picks its endpoint with one rule and named maps, whatever its number of endpoints.
   */
  readonly endpointMapOver?: number;
}

export const DEFAULT_ENDPOINT_MAP_OVER = 32;

export const DEFAULT_MASQUERADE_MARK = 0x00200000;

/**
 * Endpoint maps per kind, family and protocol: a port's endpoints are in one of them (by its id),
 * so a changed endpoint rebuilds and compares one map of about 1/64 of the table's endpoints.
 */
export const ENDPOINT_SHARDS = 64;

/** The services' part of the table, for PolicyProgrammer.updatePart('services', …). */
export interface ServiceTable extends NftTablePart {
  /**
   * Frontends (address, protocol and port, or a NodePort) that more than one service port
   * claims: the one whose id sorts first keeps it, as one of them must; each line names both.
   */
  readonly conflicts: readonly string[];
}

const FAMILIES = [4, 6] as const;
const PROTOCOLS = new Set(['tcp', 'udp', 'sctp']);
/** Kubernetes' bound on sessionAffinityConfig.clientIP.timeoutSeconds. */
const MAX_AFFINITY_SECONDS = 86_400;

const hex32 = (n: number): string => `0x${(n >>> 0).toString(16).padStart(8, '0')}`;
const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const ipOf = (f: Family): string => (f === 4 ? 'ip' : 'ip6');

function readAddress(text: unknown, field: string): { family: IpFamily; text: string } {
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

interface Frontend {
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
interface CompiledPort {
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
interface Kept {
  readonly variant: string;
  readonly compiled: CompiledPort;
}

/**
 * Compiles services for one programmer of them (a node agent's feed): it remembers each port
 * it compiled, so a recompile after one endpoint changed compiles that port alone, and every
 * other port's chains and sets are the very objects they were (which the plan skips without
 * reading them). A port is remembered by its object, so ports are values: a changed port is a
 * new object, as ServiceInputBuilder hands them over (it compares each port's content once, where
 * it builds them); one edited in place would be served from memory.
 */
export class ServiceCompiler {
  private readonly memory = newMemory();

  constructor(readonly options: ServiceCompileOptions = {}) {}

  compile(input: ServiceInput): ServiceTable {
    return compileWith(input, this.options, this.memory);
  }
}

/** One compile from nothing remembered (a ServiceCompiler remembers ports across compiles). */
export function compileServices(input: ServiceInput, options: ServiceCompileOptions = {}): ServiceTable {
  return compileWith(input, options, newMemory());
}

/**
 * What a compiler keeps from one compile to the next: its ports. The maps and sets made of every
 * port's elements (frontends, hairpins) are built anew each time; the programmer's table state
 * keys them by content (policy/table-state.ts), so unchanged ones are still skipped by the plan.
 */
interface Memory {
  readonly ports: WeakMap<ServicePort, Kept>;
  /**
   * Each map and set made of the ports' parts (frontends, endpoints, hairpins) as last built,
   * with the parts it was made of: the very same parts give the very same object, which the
   * table state and the plan then skip without reading it.
   */
  made: Map<string, { readonly chunks: readonly unknown[]; readonly value: unknown }>;
  /** The ids in input order and the order they sort in, as last seen: the same ids, the same order. */
  order?: { readonly ids: readonly string[]; readonly sorted: readonly number[] };
}
const newMemory = (): Memory => ({ ports: new WeakMap(), made: new Map() });

/** The object `build` makes of `chunks`, or the one it made last time of the very same chunks. */
function reuse<T>(memory: Memory, next: Memory['made'], name: string, chunks: readonly unknown[], build: () => T): T {
  const had = memory.made.get(name);
  const same = had !== undefined && had.chunks.length === chunks.length && had.chunks.every((c, i) => c === chunks[i]);
  const entry = same ? had : { chunks, value: build() };
  next.set(name, entry);
  return entry.value as T;
}

function compileWith(input: ServiceInput, options: ServiceCompileOptions, memory: Memory): ServiceTable {
  const mark = options.masqueradeMark ?? DEFAULT_MASQUERADE_MARK;
  if (!Number.isInteger(mark) || mark <= 0 || mark > 0xffffffff || (mark & (mark - 1)) !== 0) {
    throw new ServiceCompileError('options.masqueradeMark', `${mark} is not a single mark bit`);
  }
  if (!input || !Array.isArray(input.services)) throw new ServiceCompileError('services', 'is not a list');
  const mapOver = options.endpointMapOver ?? DEFAULT_ENDPOINT_MAP_OVER;
  if (!Number.isInteger(mapOver) || mapOver < 1)
    throw new ServiceCompileError('options.endpointMapOver', `${mapOver} is not a whole number of endpoints`);
  const cidrs = readCidrs(input.clusterCidrs ?? [], 'clusterCidrs');
  const nodeAddresses = (input.nodeAddresses ?? []).map((a, i) => readAddress(a, `nodeAddresses[${i}]`));
  const hasCluster: Record<Family, boolean> = { 4: cidrs[4].length > 0, 6: cidrs[6].length > 0 };
  const variant = `${hasCluster[4]} ${hasCluster[6]} ${mapOver}`;

  // The same ids as last time (an endpoint changed): checked and sorted then, in the same order now.
  const last = memory.order;
  let sorted: readonly number[];
  if (last && last.ids.length === input.services.length && input.services.every((s, i) => s?.id === last.ids[i])) sorted = last.sorted;
  else {
    const ids = new Map<string, number>();
    input.services.forEach((s, i) => {
      if (!s || typeof s.id !== 'string' || s.id === '') throw new ServiceCompileError(`services[${i}].id`, 'is empty');
      const had = ids.get(s.id);
      if (had !== undefined) throw new ServiceCompileError(`services[${i}].id`, `${JSON.stringify(s.id)} is services[${had}]'s too`);
      ids.set(s.id, i);
    });
    sorted = input.services.map((_, i) => i).sort((a, b) => byText(input.services[a]!.id, input.services[b]!.id));
    memory.order = { ids: input.services.map((s) => s.id), sorted };
  }
  const made: Memory['made'] = new Map();

  const sets: NftSet[] = [];
  const chains: NftChain[] = fixedChains(mark, nodeAddresses);
  // Per map, each port's elements: its own array when it kept them all.
  const elements = new Map<string, (readonly NftMapElement[])[]>();
  const claimed = new Map<string, string>();
  const filled = new Set<string>();
  const chunks = new Map<string, (readonly NftMapElement[])[]>();
  const conflicts: string[] = [];
  const hairpins: Record<Family, (readonly string[])[]> = { 4: [], 6: [] };
  for (const index of sorted) {
    const p = input.services[index]!;
    const compiled = compilePort(p, index, hasCluster, variant, memory.ports);
    for (const c of compiled.chains) chains.push(c);
    for (const x of compiled.sets) sets.push(x);
    for (const f of FAMILIES) if (compiled.hairpins[f].length) hairpins[f].push(compiled.hairpins[f]);
    const kept = new Map<string, NftMapElement[]>();
    let all = true;
    for (const e of compiled.elements) {
      // A frontend is one port's, in the lookup and in the no-endpoint check alike; within a port
      // the first use of a key wins (an external IP that is also its cluster IP).
      const owner = claimed.get(e.claim);
      if (owner !== undefined && owner !== p.id) {
        conflicts.push(`${e.key} (${e.map}): ${JSON.stringify(owner)} keeps it, ${JSON.stringify(p.id)} is left out`);
        all = false;
        continue;
      }
      if (filled.has(e.slot)) {
        all = false;
        continue;
      }
      filled.add(e.slot);
      claimed.set(e.claim, p.id);
      let list = kept.get(e.map);
      if (!list) kept.set(e.map, (list = []));
      list.push(e.element);
    }
    for (const [map, list] of all ? compiled.frontends : kept) {
      let chunks = elements.get(map);
      if (!chunks) elements.set(map, (chunks = []));
      chunks.push(list);
    }
    // A frontend's endpoints follow it: none for a frontend another port keeps.
    for (const pk of compiled.picks) {
      const slot = `${pk.map} ${pk.claim}`;
      if (claimed.get(pk.claim) !== p.id || filled.has(slot)) continue;
      filled.add(slot);
      let list = chunks.get(pk.map);
      if (!list) chunks.set(pk.map, (list = []));
      list.push(pk.elements);
    }
  }
  const endpointMaps = new Map<string, NftMap>();
  for (const [name, list] of chunks)
    endpointMaps.set(
      name,
      reuse(memory, made, name, list, () => endpointMap(name, list.flat())),
    );

  for (const f of FAMILIES) {
    const type = f === 4 ? 'ipv4_addr' : 'ipv6_addr';
    if (hasCluster[f]) sets.push({ name: clusterSet(f), type, interval: true, elements: cidrs[f] });
    sets.push(
      reuse(memory, made, hairpinSet(f), hairpins[f], () => ({
        name: hairpinSet(f),
        type: `${type} . ${type}`,
        interval: false,
        elements: [...new Set(hairpins[f].flat())].sort(byText),
      })),
    );
    const own = nodeAddresses.filter((a) => a.family === f).map((a) => a.text);
    if (own.length) sets.push({ name: nodePortIpsSet(f), type, interval: false, elements: [...new Set(own)].sort(byText) });
  }
  const maps: NftMap[] = FAMILIES.flatMap((f) => {
    const addr = f === 4 ? 'ipv4_addr' : 'ipv6_addr';
    const frontendMap = (name: string, type: string): NftMap => {
      const chunks = elements.get(name) ?? [];
      return reuse(memory, made, name, chunks, () => ({ name, type, elements: chunks.flat() }));
    };
    return [
      frontendMap(ipsMap(f), `${addr} . inet_proto . inet_service`),
      frontendMap(nodePortsMap(f), 'inet_proto . inet_service'),
      frontendMap(noEndpointIpsMap(f), `${addr} . inet_proto . inet_service`),
      frontendMap(noEndpointNodePortsMap(f), 'inet_proto . inet_service'),
    ];
  });
  memory.made = made;
  // The endpoint maps that hold elements (a rule uses one only while its port has an endpoint there), by name.
  maps.push(...[...endpointMaps.keys()].sort(byText).map((name) => endpointMaps.get(name)!));
  return { sets, maps, chains, conflicts };
}

function readCidrs(list: readonly string[], field: string): Record<Family, string[]> {
  const out: Record<Family, Cidr[]> = { 4: [], 6: [] };
  list.forEach((text, i) => {
    try {
      const c = parseCidr(text, `${field}[${i}]`, false);
      out[c.family].push(c);
    } catch (e) {
      throw new ServiceCompileError(`${field}[${i}]`, e instanceof Error ? e.message : String(e));
    }
  });
  // nft refuses overlapping elements in an interval set: a prefix inside another is left out.
  const text = (c: Cidr) => `${formatAddress(c)}/${c.prefixLength}`;
  const merged = (cs: Cidr[]) => {
    const sorted = [...cs].sort((a, b) => a.prefixLength - b.prefixLength);
    const kept: Cidr[] = [];
    for (const c of sorted) if (!kept.some((k) => inside(c, k))) kept.push(c);
    return kept.map(text).sort(byText);
  };
  return { 4: merged(out[4]), 6: merged(out[6]) };
}

function inside(c: Cidr, outer: Cidr): boolean {
  if (c.family !== outer.family || c.prefixLength < outer.prefixLength) return false;
  for (let bit = 0; bit < outer.prefixLength; bit++) {
    const byte = bit >> 3;
    const m = 0x80 >> (bit & 7);
    if ((c.bytes[byte]! & m) !== (outer.bytes[byte]! & m)) return false;
  }
  return true;
}

function fixedChains(mark: number, nodeAddresses: readonly { family: IpFamily }[]): NftChain[] {
  const nodePortMatch = (f: Family) =>
    nodeAddresses.some((a) => a.family === f)
      ? `${ipOf(f)} daddr @${nodePortIpsSet(f)}`
      : `fib daddr type local ${ipOf(f)} daddr != ${f === 4 ? '127.0.0.0/8' : '::1'}`;
  const lookups = (ips: (f: Family) => string, nodePorts: (f: Family) => string): NftRule[] =>
    FAMILIES.flatMap((f) => [
      { expr: `${ipOf(f)} daddr . meta l4proto . th dport vmap @${ips(f)}` },
      { expr: `${nodePortMatch(f)} meta l4proto . th dport vmap @${nodePorts(f)}` },
    ]);
  const nat = (hook: 'prerouting' | 'output' | 'postrouting', priority: number) => ({
    type: 'nat' as const,
    hook,
    priority,
    policy: 'accept' as const,
  });
  // Before DNAT (priority dstnat - 10, as kube-proxy's): the check sees the frontend, not the endpoint.
  const filter = (hook: 'input' | 'forward' | 'output') => ({ type: 'filter' as const, hook, priority: -110, policy: 'accept' as const });
  const check: NftRule[] = [{ expr: `ct state new jump ${CHECK}` }];
  return [
    { name: NAT_PREROUTING, base: nat('prerouting', -100), rules: [{ expr: `jump ${DISPATCH}` }] },
    { name: NAT_OUTPUT, base: nat('output', -100), rules: [{ expr: `jump ${DISPATCH}` }] },
    {
      name: NAT_POSTROUTING,
      base: nat('postrouting', 100),
      rules: [
        {
          expr: `meta mark & ${hex32(mark)} == ${hex32(mark)} meta mark set meta mark & ${hex32(~mark)} counter masquerade fully-random`,
          id: MASQUERADE_ID,
        },
        // Hairpin: DNATed to the very pod that sent it, which would answer itself and not the service.
        ...FAMILIES.map((f) => ({
          expr: `ct status dnat ${ipOf(f)} saddr . ${ipOf(f)} daddr @${hairpinSet(f)} counter masquerade fully-random`,
          id: HAIRPIN_ID,
        })),
      ],
    },
    { name: FILTER_INPUT, base: filter('input'), rules: check },
    { name: FILTER_FORWARD, base: filter('forward'), rules: check },
    { name: FILTER_OUTPUT, base: filter('output'), rules: check },
    { name: DISPATCH, rules: lookups(ipsMap, nodePortsMap) },
    { name: CHECK, rules: lookups(noEndpointIpsMap, noEndpointNodePortsMap) },
    // An ICMP port unreachable, which a TCP client reads as a refused connection (kube-proxy's `reject`).
    { name: REJECT, rules: [{ expr: 'counter reject', id: REJECT_ID }] },
    { name: MARK_MASQUERADE, rules: [{ expr: `meta mark set meta mark | ${hex32(mark)}` }] },
  ];
}

/** The endpoint map a port's endpoints go in: one of ENDPOINT_SHARDS, by a hash of its id, so a change rebuilds one small map. */
function endpointShard(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return (h >>> 0) % ENDPOINT_SHARDS;
}

/** An endpoint map (see names.ts) with its typeof declaration, from its name's kind, family and protocol. */
function endpointMap(name: string, elements: readonly NftMapElement[]): NftMap {
  const m = /^svc-(np-)?(?:local-)?eps-(tcp|udp|sctp)-v([46])-/.exec(name);
  if (!m) throw new Error(`${name} is not an endpoint map's name`);
  const ip = m[3] === '4' ? 'ip' : 'ip6';
  const addr = m[3] === '4' ? 'ipv4_addr' : 'ipv6_addr';
  const byNodePort = m[1] !== undefined;
  const key = byNodePort ? 'meta l4proto . th dport' : `${ip} daddr . meta l4proto . th dport`;
  return {
    name,
    type: byNodePort ? 'inet_proto . inet_service . integer' : `${addr} . inet_proto . inet_service . integer`,
    data: `${addr} . inet_service`,
    typeof: `${key} . numgen random mod 1 : ${ip} daddr . ${m[2]} dport`,
    elements,
  };
}

function compilePort(
  p: ServicePort,
  index: number,
  hasCluster: Record<Family, boolean>,
  variant: string,
  kept: WeakMap<ServicePort, Kept>,
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
    const cluster = clusterChain(p.id, f);
    const localName = localChain(p.id, f);
    const ext = externalChain(p.id, f);
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
        frontend(ipsMap(f), key(cip), `goto ${toLocal ? localName : cluster}`);
        const map = toLocal ? localEndpointsMap(f, p.protocol, shard) : endpointsMap(f, p.protocol, shard);
        pick(map, key(cip), ipsMap(f), toLocal ? local : eps);
        chains.push({
          name: toLocal ? localName : cluster,
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
          frontend(ipsMap(f), key(a), `goto ${ext}`);
          pick(endpointsMap(f, p.protocol, shard), key(a), ipsMap(f), eps);
          if (externalLocal) pick(localEndpointsMap(f, p.protocol, shard), key(a), ipsMap(f), local);
        }
        if (!hasExternalEndpoints) frontend(noEndpointIpsMap(f), key(a), noEndpointVerdict);
      }
      if (hasEndpoints && externalIPs.length > 0) chains.push({ name: ext, rules: externalRules(false) });
      if (np !== undefined) {
        if (hasEndpoints) {
          frontend(nodePortsMap(f), np, `goto ${nodePortChain(p.id, f)}`);
          pick(nodePortEndpointsMap(f, p.protocol, shard), np, nodePortsMap(f), eps);
          if (externalLocal) pick(nodePortLocalEndpointsMap(f, p.protocol, shard), np, nodePortsMap(f), local);
          chains.push({ name: nodePortChain(p.id, f), rules: externalRules(true) });
        }
        if (!hasExternalEndpoints) frontend(noEndpointNodePortsMap(f), np, noEndpointVerdict);
      }
      continue;
    }

    // Session affinity: kube-proxy's shape, a chain and a set of recent clients per endpoint.
    if (hasInternalEndpoints) frontend(ipsMap(f), key(cip), `goto ${internalLocal ? localName : cluster}`);
    else frontend(noEndpointIpsMap(f), key(cip), noEndpointVerdict);
    const externalKeys: [string, string, string][] = externalIPs.map((a) => [ipsMap(f), noEndpointIpsMap(f), key(a)]);
    if (nodePort !== undefined) externalKeys.push([nodePortsMap(f), noEndpointNodePortsMap(f), `${p.protocol} . ${nodePort}`]);
    for (const [map, noEndpoints, k] of externalKeys) {
      if (hasEndpoints) frontend(map, k, `goto ${ext}`);
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
    if (usesCluster) chains.push({ name: cluster, rules: [...(internalLocal ? [] : offCluster), ...balance(eps)] });
    if (usesLocal) chains.push({ name: localName, rules: [...(internalLocal ? offCluster : []), ...balance(local)] });
    if (usesExternal) {
      const rules: NftRule[] = [];
      if (!externalLocal) rules.push({ expr: `jump ${MARK_MASQUERADE}` }, { expr: `goto ${cluster}` });
      else {
        // Pods and the node itself are not "external": they go to any endpoint, as they would
        // through a load balancer; the node's own traffic is masqueraded (its source is the frontend's node).
        if (hasCluster[f]) rules.push({ expr: `${ip} saddr @${clusterSet(f)} goto ${cluster}` });
        rules.push({ expr: `fib saddr type local jump ${MARK_MASQUERADE}` }, { expr: `fib saddr type local goto ${cluster}` });
        if (local.length > 0) rules.push({ expr: `goto ${localName}` });
      }
      chains.push({ name: ext, rules });
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
  const compiled = { id: p.id, chains, sets, elements, frontends, picks, hairpins };
  kept.set(p, { variant, compiled });
  return compiled;
}
