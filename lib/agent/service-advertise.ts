// Which service addresses a node announces, as Calico decides them (pure). The configured
// ranges come from every node, so a top-of-rack router spreads them over the nodes by ECMP;
// a service that needs more than the range gets host routes (/32, /128) of its own:
// - externalTrafficPolicy Local: from the nodes that hold a ready endpoint of it, so outside
//   traffic lands only where kube-proxy's rules keep it (and the client's address with it);
//   withdrawn when the last such endpoint goes;
// - externalTrafficPolicy Cluster, with an external or load-balancer IP that the configuration
//   lists as a single address: from every node, since a /32 in the ranges is not announced
//   as a range (it would draw a Local service's traffic to nodes without an endpoint).
// A host route is only ever made for an address inside a configured range of its kind.
// Towards a peer in another AS a node passes on no service route it learned from another node:
// eBGP rewrites the next hop to this node, which would draw a Local service's traffic here,
// where it has no endpoint (BIRD in Calico keeps a third-party next hop on a shared subnet
// instead; podroute's speaker always sets itself, so the route is not passed on at all).
import type { PolicyFunction } from '../../bgp/index.js';
import { cidrContains, familyBits, formatAddress, parseAddress, parseCidr, type Address, type Cidr } from '../../ip/index.js';
import {
  type BGPConfiguration,
  SERVICE_NAME_LABEL,
  type EndpointSliceBody,
  type ServiceSpec,
  type ServiceStatus,
} from '../resources/index.js';

/** Kubernetes' well-known label that takes a node out of external load balancing (and Calico out of announcing services from it). */
export const EXCLUDE_FROM_LOAD_BALANCERS_LABEL = 'node.kubernetes.io/exclude-from-external-load-balancers';

interface Meta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
}

/** A Service as the store holds it (its status rides in spec). */
export interface ServiceObject {
  metadata: Meta;
  spec: ServiceSpec & { status?: ServiceStatus };
}

export interface EndpointSliceObject {
  metadata: Meta;
  spec: EndpointSliceBody;
}

export interface ServiceAdvertisementInput {
  services: Iterable<ServiceObject>;
  slices: Iterable<EndpointSliceObject>;
  /** This node's labels (Node.metadata.labels), for the exclusion label. */
  nodeLabels?: Record<string, string>;
}

export interface ServiceRoutes {
  /** Configured ranges announced by every node: cluster IPs, and the external and LB ranges wider than one address. */
  ranges: string[];
  /** Host routes of single services this node announces. */
  addresses: string[];
}

interface Ranges {
  cluster: Cidr[];
  external: Cidr[];
  loadBalancer: Cidr[];
}

const isSingle = (c: Cidr) => c.prefixLength === familyBits(c.family);

export function serviceRoutes(node: string, config: BGPConfiguration | undefined, input?: ServiceAdvertisementInput): ServiceRoutes {
  const spec = config?.spec;
  if (input?.nodeLabels?.[EXCLUDE_FROM_LOAD_BALANCERS_LABEL] === 'true') return { ranges: [], addresses: [] };
  const parse = (list: { cidr: string }[] | undefined) => (list ?? []).map((c) => parseCidr(c.cidr, 'cidr', false));
  const r: Ranges = {
    cluster: parse(spec?.serviceClusterIPs),
    external: parse(spec?.serviceExternalIPs),
    loadBalancer: parse(spec?.serviceLoadBalancerIPs),
  };
  const written = (list: { cidr: string }[] | undefined, keepSingle: boolean) =>
    (list ?? []).filter((c) => keepSingle || !isSingle(parseCidr(c.cidr, 'cidr', false))).map((c) => c.cidr);
  const ranges = [
    ...new Set([
      ...written(spec?.serviceClusterIPs, true),
      ...written(spec?.serviceExternalIPs, false),
      ...written(spec?.serviceLoadBalancerIPs, false),
    ]),
  ];
  if (!input || (r.cluster.length === 0 && r.external.length === 0 && r.loadBalancer.length === 0)) return { ranges, addresses: [] };

  const slicesByService = new Map<string, EndpointSliceObject[]>();
  for (const s of input.slices) {
    const service = s.metadata.labels?.[SERVICE_NAME_LABEL];
    if (!service) continue;
    const key = `${s.metadata.namespace ?? ''}/${service}`;
    const list = slicesByService.get(key);
    if (list) list.push(s);
    else slicesByService.set(key, [s]);
  }
  const addresses = new Set<string>();
  for (const svc of input.services) {
    const key = `${svc.metadata.namespace ?? ''}/${svc.metadata.name}`;
    const slices = slicesByService.get(key) ?? NO_SLICES;
    // The agent reconciles on every cluster event: a service whose objects are the ones seen last time costs a lookup.
    let memo = remembered.get(svc);
    if (!memo || memo.node !== node || memo.spec !== spec || !sameObjects(memo.slices, slices)) {
      memo = { node, spec, slices, addresses: announcedHere(node, svc, slices, r) ? serviceAddresses(svc, r) : [] };
      remembered.set(svc, memo);
    }
    for (const a of memo.addresses) addresses.add(a);
  }
  return { ranges, addresses: [...addresses].sort() };
}

const NO_SLICES: readonly EndpointSliceObject[] = [];

/** Per Service object (a watch delivers a new object for every change): what it gave, and from what. */
const remembered = new WeakMap<
  ServiceObject,
  { node: string; spec: BGPConfiguration['spec'] | undefined; slices: readonly EndpointSliceObject[]; addresses: string[] }
>();

function sameObjects<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function clusterIPs(spec: ServiceSpec): string[] {
  const ips = spec.clusterIPs?.length ? spec.clusterIPs : spec.clusterIP ? [spec.clusterIP] : [];
  return ips.filter((ip) => ip !== 'None' && ip !== '');
}

function loadBalancerIPs(svc: ServiceObject): string[] {
  return (svc.spec.status?.loadBalancer?.ingress ?? []).flatMap((i) => (i.ip ? [i.ip] : []));
}

/** The address parsed, or undefined for one that does not read (never announced, never fatal). */
function address(text: string): Address | undefined {
  try {
    return parseAddress(text);
  } catch {
    return undefined;
  }
}

const inside = (ranges: readonly Cidr[], ip: string, single = false) => {
  const a = address(ip);
  return a !== undefined && ranges.some((c) => (!single || isSingle(c)) && cidrContains(c, a));
};

/** Calico's per-service decision: does this node announce the service's own addresses? */
function announcedHere(node: string, svc: ServiceObject, slices: readonly EndpointSliceObject[], r: Ranges): boolean {
  const spec = svc.spec;
  // A headless service has nothing to route to.
  if (clusterIPs(spec).length === 0) return false;
  const local = spec.externalTrafficPolicy === 'Local';
  if (!local) {
    // A single address listed in the configuration is announced from every node for a Cluster service.
    const lbCandidates = [...(spec.loadBalancerIP ? [spec.loadBalancerIP] : []), ...loadBalancerIPs(svc)];
    if (spec.type === 'LoadBalancer' && lbCandidates.some((ip) => inside(r.loadBalancer, ip, true))) return true;
    return (spec.externalIPs ?? []).some((ip) => inside(r.external, ip, true));
  }
  const families = new Set(spec.ipFamilies?.length ? spec.ipFamilies : clusterIPs(spec).map((ip) => (ip.includes(':') ? 'IPv6' : 'IPv4')));
  // Absent `ready` means ready (Kubernetes' rule for consumers); a terminating endpoint is not ready.
  return slices.some(
    (s) => families.has(s.spec.addressType) && s.spec.endpoints.some((e) => e.nodeName === node && e.conditions?.ready !== false),
  );
}

/** The host routes of a service: its cluster, external and LB IPs that lie inside a configured range of their kind. */
function serviceAddresses(svc: ServiceObject, r: Ranges): string[] {
  const out: string[] = [];
  const add = (ranges: readonly Cidr[], ips: readonly string[]) => {
    for (const ip of ips) {
      const a = address(ip);
      if (a && ranges.some((c) => cidrContains(c, a))) out.push(`${formatAddress(a)}/${familyBits(a.family)}`);
    }
  };
  add(r.cluster, clusterIPs(svc.spec));
  add(r.external, svc.spec.externalIPs ?? []);
  add(r.loadBalancer, loadBalancerIPs(svc));
  return out;
}

/**
 * The export policy of sessions to peers in another AS: a route inside a configured service
 * range (cluster, external or LB, whatever its length) goes out only as this node originates
 * it, never as learned from another node. `source.config` is read when a route is exported.
 * One function per source, so the speaker keeps such peers in one update group.
 */
export function serviceExportPolicy(source: { readonly config: BGPConfiguration | undefined }): PolicyFunction {
  let policy = exportPolicies.get(source);
  if (!policy) exportPolicies.set(source, (policy = makeExportPolicy(() => source.config)));
  return policy;
}

const exportPolicies = new WeakMap<object, PolicyFunction>();

function makeExportPolicy(config: () => BGPConfiguration | undefined): PolicyFunction {
  let seen: BGPConfiguration['spec'] | undefined;
  let ranges: Cidr[] = [];
  return (route) => {
    if (route.neighbor === undefined) return true;
    const spec = config()?.spec;
    if (spec !== seen) {
      seen = spec;
      ranges = [...(spec?.serviceClusterIPs ?? []), ...(spec?.serviceExternalIPs ?? []), ...(spec?.serviceLoadBalancerIPs ?? [])].map((c) =>
        parseCidr(c.cidr, 'cidr', false),
      );
    }
    if (ranges.length === 0) return true;
    const prefix = parseCidr(route.prefix, 'prefix', false);
    return !ranges.some((r) => cidrContains(r, prefix));
  };
}
