// From the cluster's Services and EndpointSlices to what felix programs on one node: one entry
// per (service, port, protocol) with its frontends and the endpoints kube-proxy would use.
// kube-proxy's rules: a slice belongs to its Service by the kubernetes.io/service-name label in
// the same namespace; a slice port serves the Service port of the same name and protocol and
// gives the endpoint's port; an endpoint is its first address; absent conditions mean ready
// (and serving = ready); the ready endpoints are used, and only when none is ready the
// serving-and-terminating ones, so connections drain instead of being refused during a
// rollout. Headless services (clusterIP None) are not load-balanced at all.
import {
  recordServiceInputChange,
  type ServiceEndpoint,
  type ServiceInput,
  type ServicePort,
  type ServiceProtocol,
} from '../../felix/index.js';
import { DEFAULT_AFFINITY_TIMEOUT_SECONDS, type EndpointSlice, HEADLESS, SERVICE_NAME_LABEL, type Service } from '../resources/index.js';

export interface ServiceSources {
  /** This node: endpoints on it are `local`. */
  nodeName: string;
  services: Iterable<Service>;
  slices: Iterable<EndpointSlice>;
  /** This node's addresses (no prefix length), where NodePorts listen. */
  nodeAddresses: readonly string[];
  /** Every IP pool's CIDR. */
  clusterCidrs: readonly string[];
}

interface Candidate extends ServiceEndpoint {
  ready: boolean;
  servingTerminating: boolean;
}

/** The endpoints of one Service port from its slices: ready ones, else serving-and-terminating ones. */
function endpointsFor(nodeName: string, slices: readonly EndpointSlice[], name: string, protocol: string): ServiceEndpoint[] {
  const seen = new Map<string, Candidate>();
  for (const s of slices) {
    const sp = (s.spec.ports ?? []).find((p) => (p.name ?? '') === name && (p.protocol ?? 'TCP') === protocol);
    if (sp?.port === undefined) continue;
    for (const e of s.spec.endpoints) {
      const address = e.addresses[0];
      if (address === undefined) continue;
      const ready = e.conditions?.ready ?? true;
      const serving = e.conditions?.serving ?? ready;
      const terminating = e.conditions?.terminating ?? false;
      const key = `${address} ${sp.port}`;
      const c: Candidate = { address, port: sp.port, local: e.nodeName === nodeName, ready, servingTerminating: serving && terminating };
      // The same endpoint in two slices (a slice being replaced): the more usable copy counts.
      const had = seen.get(key);
      if (!had || (!had.ready && c.ready)) seen.set(key, c);
    }
  }
  const all = [...seen.values()];
  const ready = all.filter((c) => c.ready);
  const chosen = ready.length > 0 ? ready : all.filter((c) => c.servingTerminating);
  return chosen
    .map(({ address, port, local }) => ({ address, port, local }))
    .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : a.port - b.port));
}

/** Slices by the "namespace/name" of the Service their kubernetes.io/service-name label names. */
export function slicesByService(slices: Iterable<EndpointSlice>): Map<string, EndpointSlice[]> {
  const out = new Map<string, EndpointSlice[]>();
  for (const s of slices) {
    const owner = s.metadata.labels?.[SERVICE_NAME_LABEL];
    if (!owner) continue;
    const key = `${s.metadata.namespace}/${owner}`;
    const list = out.get(key);
    if (list) list.push(s);
    else out.set(key, [s]);
  }
  return out;
}

/** One Service's entries, one per port and protocol, in the order of its ports; none for a headless one. */
export function servicePorts(nodeName: string, svc: Service, slices: readonly EndpointSlice[]): ServicePort[] {
  const spec = svc.spec;
  if (spec.clusterIP === HEADLESS) return [];
  const key = `${svc.metadata.namespace}/${svc.metadata.name}`;
  const external = spec.type === 'NodePort' || spec.type === 'LoadBalancer';
  const clusterIPs = (spec.clusterIPs ?? (spec.clusterIP ? [spec.clusterIP] : [])).filter((ip) => ip !== '' && ip !== HEADLESS);
  const externalIPs = spec.externalIPs ?? [];
  const loadBalancerIPs =
    spec.type === 'LoadBalancer' ? (spec.status?.loadBalancer?.ingress ?? []).flatMap((i) => (i.ip ? [i.ip] : [])) : [];
  const out: ServicePort[] = [];
  for (const p of spec.ports ?? []) {
    const protocol = p.protocol ?? 'TCP';
    const nodePort = external ? p.nodePort : undefined;
    // Nothing to reach it by yet (a cluster IP not allocated, no other frontend): nothing to program.
    if (clusterIPs.length === 0 && nodePort === undefined && externalIPs.length === 0 && loadBalancerIPs.length === 0) continue;
    const port: { -readonly [K in keyof ServicePort]: ServicePort[K] } = {
      id: `${key}/${p.name || p.port}/${protocol.toLowerCase()}`,
      protocol: protocol.toLowerCase() as ServiceProtocol,
      port: p.port,
      clusterIPs,
      externalIPs,
      loadBalancerIPs,
      endpoints: endpointsFor(nodeName, slices, p.name ?? '', protocol),
    };
    if (nodePort !== undefined) port.nodePort = nodePort;
    if (spec.sessionAffinity === 'ClientIP')
      port.affinityTimeoutSeconds = spec.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? DEFAULT_AFFINITY_TIMEOUT_SECONDS;
    if (spec.externalTrafficPolicy === 'Local') port.externalLocal = true;
    if (spec.internalTrafficPolicy === 'Local') port.internalLocal = true;
    out.push(port);
  }
  return out;
}

const byId = (a: ServicePort, b: ServicePort): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The ServiceInput for one node: pure, ordered by port id, so equal clusters give equal input. */
export function serviceInput(src: ServiceSources): ServiceInput {
  const slices = slicesByService(src.slices);
  const services: ServicePort[] = [];
  for (const svc of src.services)
    services.push(...servicePorts(src.nodeName, svc, slices.get(`${svc.metadata.namespace}/${svc.metadata.name}`) ?? []));
  services.sort(byId);
  return { services, nodeAddresses: [...src.nodeAddresses], clusterCidrs: [...src.clusterCidrs] };
}

/**
 * serviceInput() for a node that recomputes it at every change: a Service whose object and
 * slices are the very objects of the last call keeps its entries without recomputing them; a
 * port whose content did not change keeps its object (felix remembers compiled ports by object,
 * so it recompiles only the ports that changed); and when nothing changed the last input itself
 * comes back, so the caller can skip the update by comparing objects.
 */
export class ServiceInputBuilder {
  private cache = new Map<string, { svc: Service; slices: readonly EndpointSlice[]; ports: readonly ServicePort[] }>();
  private last: ServiceInput | undefined;
  /** Where each port id sits in the last input's list. */
  private positions = new Map<string, number>();
  /** The list of Services the last build was given: the same list again means no Service changed. */
  private servicesGiven: Iterable<Service> | undefined;

  constructor(readonly nodeName: string) {}

  build(src: Omit<ServiceSources, 'nodeName'> & IncrementalSources): ServiceInput {
    const quick = this.changedOnly(src);
    if (quick) return quick;
    const bySvc = src.slicesByService ?? slicesByService(src.slices);
    const next = new Map<string, { svc: Service; slices: readonly EndpointSlice[]; ports: readonly ServicePort[] }>();
    // Ports replaced in place (their Service recomputed, the same ids in the same order); any
    // other difference (a Service or port that came or went, an id changed) sorts the list again.
    const replaced: ServicePort[] = [];
    let reshaped = false;
    for (const svc of src.services) {
      const key = `${svc.metadata.namespace}/${svc.metadata.name}`;
      const slices = bySvc.get(key) ?? [];
      const had = this.cache.get(key);
      let ports = had?.ports;
      if (!had || had.svc !== svc || had.slices.length !== slices.length || had.slices.some((x, i) => x !== slices[i])) {
        ports = this.portsOf(svc, slices, had?.ports);
        if (!had || had.ports.length !== ports.length) reshaped = true;
        else
          for (let i = 0; i < ports.length; i++) {
            if (ports[i]!.id !== had.ports[i]!.id) reshaped = true;
            else if (ports[i] !== had.ports[i]) replaced.push(ports[i]!);
          }
      }
      next.set(key, { svc, slices, ports: ports! });
    }
    if (next.size !== this.cache.size) reshaped = true;
    this.cache = next;
    this.servicesGiven = src.services;
    const last = this.last;
    const sameRest = last !== undefined && sameList(last.nodeAddresses, src.nodeAddresses) && sameList(last.clusterCidrs, src.clusterCidrs);
    if (last && sameRest && !reshaped) return this.replacing(last, replaced);
    const services: ServicePort[] = [];
    for (const { ports } of next.values()) services.push(...ports);
    services.sort(byId);
    if (last && sameRest && last.services.length === services.length && last.services.every((p, i) => p === services[i])) return last;
    this.positions = new Map(services.map((p, i) => [p.id, i]));
    this.last = { services, nodeAddresses: [...src.nodeAddresses], clusterCidrs: [...src.clusterCidrs] };
    return this.last;
  }

  /**
   * The input when the caller says which Services' slices changed and nothing else did (the same
   * list of Services, node addresses and pools): those Services' ports recomputed, nothing else
   * looked at. Undefined when it cannot be told so (then every Service is looked at).
   */
  private changedOnly(src: Omit<ServiceSources, 'nodeName'> & IncrementalSources): ServiceInput | undefined {
    const last = this.last;
    const bySvc = src.slicesByService;
    if (!last || !src.changed || !bySvc || src.services !== this.servicesGiven) return undefined;
    if (!sameList(last.nodeAddresses, src.nodeAddresses) || !sameList(last.clusterCidrs, src.clusterCidrs)) return undefined;
    const replaced: ServicePort[] = [];
    // Kept only if every changed Service keeps its port ids: else the whole build redoes them.
    const entries: [string, { svc: Service; slices: readonly EndpointSlice[]; ports: readonly ServicePort[] }][] = [];
    for (const key of src.changed) {
      const had = this.cache.get(key);
      // Not a Service given (refused, or none by that name): its slices feed nothing.
      if (!had) continue;
      const slices = bySvc.get(key) ?? [];
      if (had.slices.length === slices.length && had.slices.every((x, i) => x === slices[i])) continue;
      const ports = this.portsOf(had.svc, slices, had.ports);
      if (ports.length !== had.ports.length) return undefined;
      for (let i = 0; i < ports.length; i++) {
        if (ports[i]!.id !== had.ports[i]!.id) return undefined;
        if (ports[i] !== had.ports[i]) replaced.push(ports[i]!);
      }
      entries.push([key, { svc: had.svc, slices, ports }]);
    }
    for (const [key, entry] of entries) this.cache.set(key, entry);
    return this.replacing(last, replaced);
  }

  /** A Service's ports from its slices, each equal to one it had keeping that object (felix remembers compiled ports by object). */
  private portsOf(svc: Service, slices: readonly EndpointSlice[], had: readonly ServicePort[] = []): ServicePort[] {
    const old = new Map(had.map((p) => [p.id, p]));
    return servicePorts(this.nodeName, svc, slices).map((p) => {
      const was = old.get(p.id);
      return was && JSON.stringify(was) === JSON.stringify(p) ? was : p;
    });
  }

  /** The last input with `replaced` in their places, and felix told which (input-change.ts): neither side passes over every port. */
  private replacing(last: ServiceInput, replaced: readonly ServicePort[]): ServiceInput {
    if (!replaced.length) return last;
    const services = [...last.services];
    const ports = replaced.map((port) => {
      const index = this.positions.get(port.id)!;
      services[index] = port;
      return { index, port };
    });
    this.last = { services, nodeAddresses: last.nodeAddresses, clusterCidrs: last.clusterCidrs };
    recordServiceInputChange(this.last, { from: last, ports });
    return this.last;
  }
}

/** What a caller that follows the changes can add to ServiceSources, so that a change costs what it touches. */
export interface IncrementalSources {
  /** The slices grouped by the Service they belong to (`namespace/name`), as slicesByService() groups `slices`, in the same order. */
  readonly slicesByService?: ReadonlyMap<string, readonly EndpointSlice[]>;
  /** The Services (`namespace/name`) whose slices changed since the last build; with the same list of Services, only those are looked at. */
  readonly changed?: ReadonlySet<string>;
}

const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
