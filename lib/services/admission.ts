// Which Services may hold the addresses and ports they name, beyond their own fields: what the
// API server's allocators and Calico's service ranges decide. A cluster IP lies inside the
// default BGPConfiguration's serviceClusterIPs (Kubernetes' 10.96.0.0/12 when it names no
// IPv4 range), is not a range's network (or IPv4 broadcast) address, and no other Service
// holds it; a NodePort no other Service holds for the same protocol; an external IP lies
// inside serviceExternalIPs and a load-balancer IP inside serviceLoadBalancerIPs, and neither
// is taken while those are not configured. `podroute apply` checks a file against the store
// before writing anything (checkServicesBeforeWrite); each node agent checks every Service it
// is given (admitServices) and programs only those that pass, since a store can hold what no
// apply checked (another tool, a race between two applies, a range narrowed since).
import {
  type Address,
  addressValue,
  type Cidr,
  cidrContains,
  cidrNetwork,
  cidrSize,
  formatCidr,
  parseAddress,
  parseCidr,
} from '../../ip/index.js';
import type { Datastore } from '../datastore/index.js';
import {
  type BGPConfiguration,
  HEADLESS,
  type Resource,
  resourceKey,
  type Service,
  ValidationError,
  validateResource,
} from '../resources/index.js';
import { claimsOf, DEFAULT_SERVICE_CLUSTER_IP_RANGE, holders } from './allocate.js';

/** The ranges a Service's addresses must lie in, read from the default BGPConfiguration. */
export interface ServiceAddressRanges {
  /** Every serviceClusterIPs range (the allocator takes from the first of each family). */
  readonly cluster: readonly Cidr[];
  /** True when IPv4 cluster IPs come from Kubernetes' default range, none being configured. */
  readonly clusterDefaulted: boolean;
  readonly external: readonly Cidr[];
  readonly loadBalancer: readonly Cidr[];
}

/** Per configuration object: the agent asks at every change of any Service. */
const rangesMemo = new WeakMap<BGPConfiguration, ServiceAddressRanges>();
let rangesWithoutConfig: ServiceAddressRanges | undefined;

export function serviceAddressRanges(config: BGPConfiguration | undefined): ServiceAddressRanges {
  const had = config ? rangesMemo.get(config) : rangesWithoutConfig;
  if (had) return had;
  const parse = (list: { cidr: string }[] | undefined) => (list ?? []).map((c) => cidrNetwork(parseCidr(c.cidr, 'cidr', false)));
  const cluster = parse(config?.spec.serviceClusterIPs);
  const clusterDefaulted = !cluster.some((c) => c.family === 4);
  if (clusterDefaulted) cluster.push(parseCidr(DEFAULT_SERVICE_CLUSTER_IP_RANGE));
  const out = {
    cluster,
    clusterDefaulted,
    external: parse(config?.spec.serviceExternalIPs),
    loadBalancer: parse(config?.spec.serviceLoadBalancerIPs),
  };
  if (config) rangesMemo.set(config, out);
  else rangesWithoutConfig = out;
  return out;
}

const CONFIG = 'BGPConfiguration default';
const listed = (ranges: readonly Cidr[]) => ranges.map(formatCidr).join(', ');

function address(text: string): Address | undefined {
  try {
    return parseAddress(text);
  } catch {
    return undefined;
  }
}

/** Where a cluster IP falls short of its range, or undefined when the allocator could have handed it out. */
function clusterIPProblem(ip: string, r: ServiceAddressRanges): string | undefined {
  const a = address(ip);
  if (!a) return `${JSON.stringify(ip)} is not an IP address`;
  const family = r.cluster.filter((c) => c.family === a.family);
  if (family.length === 0) return `${ip} is an IPv6 address and ${CONFIG} names no IPv6 serviceClusterIPs`;
  const range = family.find((c) => cidrContains(c, a));
  const source = r.clusterDefaulted && a.family === 4 ? `Kubernetes' default, as ${CONFIG} names no IPv4 serviceClusterIPs` : CONFIG;
  if (!range) return `${ip} is outside the service cluster IP range (${listed(family)}, ${source})`;
  // The allocator never hands these out, nor does the API server take them.
  const offset = addressValue(a.bytes) - addressValue(range.bytes);
  if (offset === 0n) return `${ip} is the network address of the service cluster IP range ${formatCidr(range)}`;
  if (a.family === 4 && offset === cidrSize(range) - 1n)
    return `${ip} is the broadcast address of the service cluster IP range ${formatCidr(range)}`;
  return undefined;
}

function insideProblem(ip: string, ranges: readonly Cidr[], kind: 'serviceExternalIPs' | 'serviceLoadBalancerIPs'): string | undefined {
  const a = address(ip);
  if (!a) return `${JSON.stringify(ip)} is not an IP address`;
  if (ranges.length === 0) return `${ip} is refused: ${CONFIG} names no ${kind}, so no address of this kind may be used`;
  if (!ranges.some((c) => cidrContains(c, a))) return `${ip} is outside ${kind} (${listed(ranges)}, ${CONFIG})`;
  return undefined;
}

const clusterField = (i: number) => (i === 0 ? 'spec.clusterIP' : `spec.clusterIPs[${i}]`);
const where = (svc: Service) => `Service/${resourceKey(svc)}`;
const exposesNodePorts = (svc: Service) => svc.spec.type === 'NodePort' || svc.spec.type === 'LoadBalancer';

/** The first of a Service's addresses that lies outside the range of its kind. */
export function rangeProblem(svc: Service, r: ServiceAddressRanges): ValidationError | undefined {
  const spec = svc.spec;
  for (const [i, ip] of (spec.clusterIPs ?? []).entries()) {
    if (ip === HEADLESS || ip === '') continue;
    const why = clusterIPProblem(ip, r);
    if (why) return new ValidationError(clusterField(i), why, where(svc));
  }
  for (const [i, ip] of (spec.externalIPs ?? []).entries()) {
    const why = insideProblem(ip, r.external, 'serviceExternalIPs');
    if (why) return new ValidationError(`spec.externalIPs[${i}]`, why, where(svc));
  }
  if (spec.loadBalancerIP) {
    const why = insideProblem(spec.loadBalancerIP, r.loadBalancer, 'serviceLoadBalancerIPs');
    if (why) return new ValidationError('spec.loadBalancerIP', why, where(svc));
  }
  // The ingress addresses are what felix programs for a LoadBalancer service (and only for one).
  if (spec.type === 'LoadBalancer')
    for (const [i, ingress] of (spec.status?.loadBalancer?.ingress ?? []).entries()) {
      if (!ingress.ip) continue;
      const why = insideProblem(ingress.ip, r.loadBalancer, 'serviceLoadBalancerIPs');
      if (why) return new ValidationError(`status.loadBalancer.ingress[${i}].ip`, why, where(svc));
    }
  return undefined;
}

/** Who holds each cluster IP and NodePort; contested: what two or more Services wrote by hand. */
interface Taken {
  clusterIPs: Map<string, string>;
  nodePorts: Map<string, string>;
  contestedIPs?: Map<string, string[]>;
  contestedNodePorts?: Map<string, string[]>;
}

const others = (keys: readonly string[], key: string) =>
  keys
    .filter((k) => k !== key)
    .map((k) => `Service ${k}`)
    .join(', ');

/** The first cluster IP or NodePort of `svc` that `taken` gives to another Service, or that others claim as well. */
function clashProblem(svc: Service, taken: Taken): ValidationError | undefined {
  const { key, clusterIPs, nodePorts } = claimsOf(svc);
  // Two written by hand: neither is the right one, whatever their names (a newcomer must not take an address by its name).
  const contested = (what: string, claims: Map<string, string[]> | undefined) => {
    const keys = claims?.get(what);
    return keys?.includes(key)
      ? `is written by hand by ${others(keys, key)} as well: neither is programmed while both claim it`
      : undefined;
  };
  for (const { what, index } of clusterIPs) {
    const ip = svc.spec.clusterIPs![index]!;
    const both = contested(what, taken.contestedIPs);
    if (both) return new ValidationError(clusterField(index), `${ip} ${both}`, where(svc));
    const holder = taken.clusterIPs.get(what);
    if (holder !== undefined && holder !== key)
      return new ValidationError(clusterField(index), `${ip} is already the cluster IP of Service ${holder}`, where(svc));
  }
  if (!exposesNodePorts(svc)) return undefined;
  for (const { what, index } of nodePorts) {
    const field = `spec.ports[${index}].nodePort`;
    const both = contested(what, taken.contestedNodePorts);
    if (both) return new ValidationError(field, `${what} ${both}`, where(svc));
    const holder = taken.nodePorts.get(what);
    if (holder !== undefined && holder !== key)
      return new ValidationError(field, `${what} is already a NodePort of Service ${holder}`, where(svc));
  }
  return undefined;
}

function record(svc: Service, taken: Taken): void {
  const { key, clusterIPs, nodePorts } = claimsOf(svc);
  for (const { what } of clusterIPs) taken.clusterIPs.set(what, key);
  if (exposesNodePorts(svc)) for (const { what } of nodePorts) taken.nodePorts.set(what, key);
}

/**
 * The first Service of a batch (one file) that may not be written, as the API server would
 * refuse it: an address outside its range, or a cluster IP or NodePort another Service holds,
 * in the store (one the batch replaces excepted) or earlier in the batch.
 */
export function checkServiceWrites(
  batch: readonly Service[],
  stored: readonly Service[],
  config: BGPConfiguration | undefined,
): ValidationError | undefined {
  const ranges = serviceAddressRanges(config);
  const replaced = new Set(batch.map(resourceKey));
  const taken: Taken = { clusterIPs: new Map(), nodePorts: new Map() };
  for (const s of stored) if (!replaced.has(resourceKey(s))) record(s, taken);
  for (const s of batch) {
    const bad = rangeProblem(s, ranges) ?? clashProblem(s, taken);
    if (bad) return bad;
    record(s, taken);
  }
  return undefined;
}

/**
 * Checks the Services among `resources` against the store before any is written; throws the
 * first refusal. The ranges are those of the batch's default BGPConfiguration when it writes
 * one, else the stored one's. Two applies racing each other can both pass: the agents then
 * program only the Service that keeps the address (admitServices).
 */
export async function checkServicesBeforeWrite(ds: Pick<Datastore, 'get' | 'list'>, resources: readonly Resource[]): Promise<void> {
  const batch = resources.filter((r): r is Service => r.kind === 'Service');
  if (batch.length === 0) return;
  const given = resources.find((r): r is BGPConfiguration => r.kind === 'BGPConfiguration' && r.metadata.name === 'default');
  const config = given ?? (await ds.get('BGPConfiguration', 'default'));
  const bad = checkServiceWrites(batch, (await ds.list('Service')).items, config);
  if (bad) throw bad;
}

export interface ServiceVerdict {
  /** The Services that pass, in the order given. */
  admitted: Service[];
  /** The others by key, each with the first field that fails and why. */
  refused: Map<string, ValidationError>;
}

const rangeVerdicts = new WeakMap<Service, { ranges: ServiceAddressRanges; bad: ValidationError | undefined }>();
function rangeProblemOnce(svc: Service, ranges: ServiceAddressRanges): ValidationError | undefined {
  const had = rangeVerdicts.get(svc);
  if (had?.ranges === ranges) return had.bad;
  const bad = rangeProblem(svc, ranges);
  rangeVerdicts.set(svc, { ranges, bad });
  return bad;
}

/** A stored Service read as apply would: what another tool wrote may not be a Service at all. */
const fieldVerdicts = new WeakMap<Service, ValidationError | undefined>();
function fieldProblem(svc: Service): ValidationError | undefined {
  if (fieldVerdicts.has(svc)) return fieldVerdicts.get(svc);
  let bad: ValidationError | undefined;
  try {
    validateResource(svc);
  } catch (e) {
    bad = e instanceof ValidationError ? e : new ValidationError('spec', (e as Error).message);
    if (bad.resource === undefined) bad = new ValidationError(bad.field, bad.reason, where(svc));
  }
  fieldVerdicts.set(svc, bad);
  return bad;
}

/**
 * What a node may program of the Services a store holds: those whose fields validate, whose
 * addresses lie in their ranges, and that hold their cluster IPs and NodePorts by the
 * allocator's records: one written by hand keeps it over an allocated one (the controller
 * moves that), of two allocated the first by key keeps it, and of two written by hand neither
 * does. Every node decides alike from the same Services.
 */
export function admitServices(services: Iterable<Service>, config: BGPConfiguration | undefined): ServiceVerdict {
  const ranges = serviceAddressRanges(config);
  const all = [...services];
  const refused = new Map<string, ValidationError>();
  const wellFormed = all.filter((s) => {
    const bad = fieldProblem(s);
    if (bad) refused.set(resourceKey(s), bad);
    return !bad;
  });
  const held = holders(wellFormed);
  const admitted: Service[] = [];
  for (const s of wellFormed) {
    const bad = rangeProblemOnce(s, ranges) ?? clashProblem(s, held);
    if (bad) refused.set(resourceKey(s), bad);
    else admitted.push(s);
  }
  return { admitted, refused };
}
