// Kubernetes' core/v1 Service and discovery.k8s.io/v1 EndpointSlice, checked by the rules the
// API server applies (ports and their names, NodePort range, cluster IPs per family, affinity,
// traffic policies), defaults filled as it fills them, unknown fields refused. Both arrive in
// Kubernetes' shape (a Service's `status`, an EndpointSlice's addressType/endpoints/ports at the
// top) and leave in the store's (everything under `spec`): see service-types.ts.
import { type Cidr, cidrContains, parseAddress, parseCidr } from '../../ip/index.js';
import type { Checker, Obj } from './checker.js';
import {
  DEFAULT_AFFINITY_TIMEOUT_SECONDS,
  type EndpointConditions,
  type EndpointSliceBody,
  type EndpointSliceEndpoint,
  type EndpointSlicePort,
  HEADLESS,
  NODE_PORT_RANGE,
  type ServicePortSpec,
  type ServiceProtocol,
  type ServiceResourceSpec,
  type ServiceSpec,
  type ServiceStatus,
} from './service-types.js';
import { closestName } from './suggest.js';
import { KUBERNETES_PROTOCOLS, portNameProblem } from './validate-kubernetes.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer'] as const;
const FAMILIES = ['IPv4', 'IPv6'] as const;
const FAMILY_POLICIES = ['SingleStack', 'PreferDualStack', 'RequireDualStack'] as const;
const TRAFFIC_POLICIES = ['Cluster', 'Local'] as const;

/**
 * Addresses no Service may take, whatever the configured ranges: they never reach a node as
 * a destination (the API server refuses them for externalIPs alike).
 */
const SPECIAL: readonly (readonly [Cidr, string])[] = (
  [
    ['0.0.0.0/32', 'the unspecified address'],
    ['127.0.0.0/8', 'a loopback address'],
    ['169.254.0.0/16', 'a link-local address'],
    ['224.0.0.0/4', 'a multicast address'],
    ['255.255.255.255/32', 'the broadcast address'],
    ['::/128', 'the unspecified address'],
    ['::1/128', 'a loopback address'],
    ['fe80::/10', 'a link-local address'],
    ['ff00::/8', 'a multicast address'],
  ] as const
).map(([cidr, what]) => [parseCidr(cidr), what] as const);

/** An IP address a service answers on (cluster, external or load-balancer IP): parsed, and none of SPECIAL. */
function serviceAddress(c: Checker, ip: unknown, field: string): 4 | 6 {
  const family = c.ip(ip, field);
  const a = parseAddress(ip as string, field);
  const special = SPECIAL.find(([range]) => cidrContains(range, a));
  if (special) c.fail(field, `${String(ip)} is ${special[1]}: a service address must be one that is routed to the nodes`);
  return family;
}

const SERVICE_FIELDS = [
  'type',
  'selector',
  'clusterIP',
  'clusterIPs',
  'ipFamilies',
  'ipFamilyPolicy',
  'ports',
  'externalIPs',
  'loadBalancerIP',
  'sessionAffinity',
  'sessionAffinityConfig',
  'externalTrafficPolicy',
  'internalTrafficPolicy',
];
const SERVICE_REFUSED: Record<string, string> = {
  externalName: 'is not supported by podroute: an ExternalName service is a DNS alias, with no data path',
  loadBalancerSourceRanges: 'is not supported by podroute: use a NetworkPolicy on the endpoints',
  healthCheckNodePort: 'is not supported by podroute: no node serves load-balancer health checks',
  publishNotReadyAddresses: 'is not supported by podroute: only ready (or terminating, serving) endpoints are used',
  allocateLoadBalancerNodePorts: 'is not supported by podroute: NodePorts are as written',
  loadBalancerClass: 'is not supported by podroute: no load-balancer implementation is chosen per service',
  trafficDistribution: 'is not supported by podroute: endpoints are chosen with equal weight',
};
const PORT_REFUSED: Record<string, string> = {
  appProtocol: 'is not supported by podroute: the data path balances connections, whatever their protocol',
};

/**
 * The body to check as `spec`, from the document as given: a Service's `status` goes in beside
 * its spec fields, an EndpointSlice's top-level fields go under `spec` (the stored form, with
 * them under `spec` already, is read as well, so what `get` returns applies again).
 */
export function kubernetesBody(c: Checker, kind: 'Service' | 'EndpointSlice', o: Obj): Obj {
  if (kind === 'Service') {
    onlyTop(c, o, ['apiVersion', 'kind', 'metadata', 'spec', 'status']);
    // Kubernetes' rule for Service names (a DNS-1035 label): its slices' names are made from it.
    const name = (o.metadata as Obj).name as string;
    if (name.length > 63 || !/^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(name))
      c.fail('metadata.name', `${JSON.stringify(name)} must be at most 63 lower-case letters, digits and '-', starting with a letter`);
    const spec = o.spec === undefined || o.spec === null ? {} : c.obj(o.spec, 'spec');
    if (o.status === undefined || o.status === null) return spec;
    if (spec.status !== undefined && spec.status !== null) c.fail('status', 'is given twice: at the top and in spec');
    return { ...spec, status: c.obj(o.status, 'status') };
  }
  const top = ['addressType', 'endpoints', 'ports'];
  onlyTop(c, o, ['apiVersion', 'kind', 'metadata', 'spec', ...top]);
  if (o.spec === undefined || o.spec === null) return Object.fromEntries(top.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
  const given = top.find((k) => o[k] !== undefined && o[k] !== null);
  if (given) c.fail(given, 'an EndpointSlice has addressType, endpoints and ports at the top, not under spec as well');
  return c.obj(o.spec, 'spec');
}

/** Checker.only for the document's own fields, which have no path before them. */
function onlyTop(c: Checker, o: Obj, allowed: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (o[k] === undefined || allowed.includes(k)) continue;
    const near = closestName(k, allowed);
    c.fail(k, `unknown field${near === undefined ? '' : `; did you mean ${near}?`} (known: ${allowed.join(', ')})`);
  }
}

export function checkService(c: Checker, s: Obj): ServiceResourceSpec {
  c.only(s, [...SERVICE_FIELDS, 'status'], 'spec', SERVICE_REFUSED);
  if (s.type === 'ExternalName') c.fail('spec.type', SERVICE_REFUSED.externalName!);
  const type = c.oneOf(s, 'type', 'spec', TYPES, 'ClusterIP');
  const out: ServiceResourceSpec = { type };
  const selector = c.strictLabels(s, 'selector', 'spec');
  if (selector) out.selector = selector;
  checkClusterIPs(c, s, out);
  const headless = out.clusterIP === HEADLESS;
  if (headless && type !== 'ClusterIP') c.fail('spec.clusterIP', `may not be None when type is ${type}`);
  const ports = c.list(s, 'ports', 'spec', 'a list of {name, protocol, port, targetPort, nodePort}');
  if (!ports || ports.length === 0) {
    if (!headless) c.fail('spec.ports', 'is required: a service needs at least one port');
  } else out.ports = checkServicePorts(c, ports, type);
  const external = c.list(s, 'externalIPs', 'spec', 'a list of IP addresses');
  if (external) {
    out.externalIPs = external.map((x, i) => {
      serviceAddress(c, x, `spec.externalIPs[${i}]`);
      return x as string;
    });
  }
  const lbIP = c.str(s, 'loadBalancerIP', 'spec');
  if (lbIP !== undefined && lbIP !== '') {
    if (type !== 'LoadBalancer') c.fail('spec.loadBalancerIP', 'may only be set when type is LoadBalancer');
    serviceAddress(c, lbIP, 'spec.loadBalancerIP');
    out.loadBalancerIP = lbIP;
  }
  out.sessionAffinity = c.oneOf(s, 'sessionAffinity', 'spec', ['None', 'ClientIP'] as const, 'None');
  const cfg = c.optObj(s, 'sessionAffinityConfig', 'spec');
  if (cfg) {
    if (out.sessionAffinity !== 'ClientIP') c.fail('spec.sessionAffinityConfig', 'may only be set when sessionAffinity is ClientIP');
    c.only(cfg, ['clientIP'], 'spec.sessionAffinityConfig');
  }
  if (out.sessionAffinity === 'ClientIP') {
    const clientIP = cfg && c.optObj(cfg, 'clientIP', 'spec.sessionAffinityConfig');
    if (clientIP) c.only(clientIP, ['timeoutSeconds'], 'spec.sessionAffinityConfig.clientIP');
    const timeoutSeconds =
      (clientIP && c.int(clientIP, 'timeoutSeconds', 'spec.sessionAffinityConfig.clientIP', 1, 86400)) ?? DEFAULT_AFFINITY_TIMEOUT_SECONDS;
    out.sessionAffinityConfig = { clientIP: { timeoutSeconds } };
  }
  // Only a service reachable from outside has an external policy (Kubernetes' rule since 1.24).
  const reachable = type !== 'ClusterIP' || (out.externalIPs?.length ?? 0) > 0;
  if (s.externalTrafficPolicy !== undefined && s.externalTrafficPolicy !== null && !reachable)
    c.fail('spec.externalTrafficPolicy', 'may only be set for a NodePort or LoadBalancer service, or one with externalIPs');
  if (reachable) out.externalTrafficPolicy = c.oneOf(s, 'externalTrafficPolicy', 'spec', TRAFFIC_POLICIES, 'Cluster');
  out.internalTrafficPolicy = c.oneOf(s, 'internalTrafficPolicy', 'spec', TRAFFIC_POLICIES, 'Cluster');
  if (s.status !== undefined && s.status !== null) {
    const status = checkServiceStatus(c, s.status);
    if (status) out.status = status;
  }
  return out;
}

/** clusterIP and clusterIPs agree (the first is the second's head), one per family, in ipFamilies' order. */
function checkClusterIPs(c: Checker, s: Obj, out: ServiceSpec): void {
  const one = c.str(s, 'clusterIP', 'spec');
  const many = c.list(s, 'clusterIPs', 'spec', 'a list of IP addresses');
  if (many?.some((x) => typeof x !== 'string')) c.fail('spec.clusterIPs', 'must be a list of IP addresses');
  let ips = (many as string[] | undefined) ?? (one ? [one] : []);
  if (one && many && many.length > 0 && many[0] !== one)
    c.fail('spec.clusterIPs', `must start with clusterIP ${one}, not ${JSON.stringify(many[0])}`);
  ips = ips.filter((x) => x !== '');
  const policy = c.oneOf(s, 'ipFamilyPolicy', 'spec', FAMILY_POLICIES, 'SingleStack');
  if (s.ipFamilyPolicy !== undefined && s.ipFamilyPolicy !== null) out.ipFamilyPolicy = policy;
  const fams = c.list(s, 'ipFamilies', 'spec', 'a list of IPv4, IPv6');
  const families = fams?.map((f, i) => {
    if (!FAMILIES.includes(f as 'IPv4')) c.fail(`spec.ipFamilies[${i}]`, `must be IPv4 or IPv6, not ${JSON.stringify(f)}`);
    if (fams.indexOf(f) !== i) c.fail(`spec.ipFamilies[${i}]`, `${String(f)} is listed twice`);
    return f as 'IPv4' | 'IPv6';
  });
  if (families && families.length > 2) c.fail('spec.ipFamilies', 'may hold at most two families');
  if (families && families.length === 2 && policy === 'SingleStack')
    c.fail('spec.ipFamilies', 'two families need ipFamilyPolicy PreferDualStack or RequireDualStack');
  if (ips.includes(HEADLESS)) {
    if (ips.length !== 1) c.fail('spec.clusterIPs', 'None must be the only entry of a headless service');
    out.clusterIP = HEADLESS;
    out.clusterIPs = [HEADLESS];
  } else if (ips.length > 0) {
    if (ips.length > 2) c.fail('spec.clusterIPs', 'may hold at most two addresses, one per family');
    const got = ips.map((ip, i) => (serviceAddress(c, ip, many ? `spec.clusterIPs[${i}]` : 'spec.clusterIP') === 4 ? 'IPv4' : 'IPv6'));
    if (got.length === 2) {
      if (got[0] === got[1]) c.fail('spec.clusterIPs', 'the two addresses must be of different families');
      if (policy === 'SingleStack') c.fail('spec.clusterIPs', 'two addresses need ipFamilyPolicy PreferDualStack or RequireDualStack');
    }
    got.forEach((f, i) => {
      if (families?.[i] !== undefined && families[i] !== f)
        c.fail(`spec.ipFamilies[${i}]`, `is ${families[i]} but clusterIPs[${i}] ${ips[i]} is ${f}`);
    });
    out.clusterIP = ips[0];
    out.clusterIPs = ips;
    out.ipFamilies = families && families.length > got.length ? families : got;
    return;
  }
  if (families) out.ipFamilies = families;
}

function checkServicePorts(c: Checker, ports: unknown[], type: ServiceSpec['type']): ServicePortSpec[] {
  const names = new Set<string>();
  const pairs = new Set<string>();
  const nodePorts = new Set<string>();
  return ports.map((x, i) => {
    const p = `spec.ports[${i}]`;
    const m = c.obj(x, p);
    c.only(m, ['name', 'protocol', 'port', 'targetPort', 'nodePort'], p, PORT_REFUSED);
    const out: ServicePortSpec = { port: 0 };
    const name = c.str(m, 'name', p);
    if (ports.length > 1 && !name) c.fail(`${p}.name`, 'is required when a service has more than one port');
    if (name) {
      if (name.length > 63 || !DNS_LABEL.test(name))
        c.fail(
          `${p}.name`,
          `${JSON.stringify(name)} must be at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit`,
        );
      if (names.has(name)) c.fail(`${p}.name`, `${name} is named twice`);
      names.add(name);
      out.name = name;
    }
    out.protocol = c.oneOf(m, 'protocol', p, KUBERNETES_PROTOCOLS, 'TCP') as ServiceProtocol;
    out.port = c.int(m, 'port', p, 1, 65535, true)!;
    const pair = `${out.port}/${out.protocol}`;
    if (pairs.has(pair)) c.fail(`${p}.port`, `${pair} is given twice`);
    pairs.add(pair);
    const target = m.targetPort;
    if (target === undefined || target === null || target === 0 || target === '') out.targetPort = out.port;
    else if (typeof target === 'string' && !/^\d+$/.test(target)) {
      const why = portNameProblem(target);
      if (why) c.fail(`${p}.targetPort`, `${JSON.stringify(target)} is not a port name: it ${why}`);
      out.targetPort = target;
    } else out.targetPort = c.num(target, `${p}.targetPort`, 1, 65535);
    if (m.nodePort !== undefined && m.nodePort !== null && m.nodePort !== 0) {
      if (type === 'ClusterIP') c.fail(`${p}.nodePort`, 'may not be set when type is ClusterIP');
      const [lo, hi] = NODE_PORT_RANGE;
      out.nodePort = c.int(m, 'nodePort', p, lo, hi)!;
      const key = `${out.nodePort}/${out.protocol}`;
      if (nodePorts.has(key)) c.fail(`${p}.nodePort`, `${key} is given twice`);
      nodePorts.add(key);
    }
    return out;
  });
}

function checkServiceStatus(c: Checker, v: unknown): ServiceStatus | undefined {
  const o = c.obj(v, 'status');
  c.only(o, ['loadBalancer'], 'status', { conditions: 'is not supported by podroute: nothing reports service conditions' });
  const lb = c.optObj(o, 'loadBalancer', 'status');
  if (!lb) return undefined;
  c.only(lb, ['ingress'], 'status.loadBalancer');
  const ingress = c.list(lb, 'ingress', 'status.loadBalancer', 'a list of {ip, hostname}');
  if (!ingress) return { loadBalancer: {} };
  return {
    loadBalancer: {
      ingress: ingress.map((x, i) => {
        const p = `status.loadBalancer.ingress[${i}]`;
        const m = c.obj(x, p);
        c.only(m, ['ip', 'hostname'], p, {
          ipMode: 'is not supported by podroute: every address is a VIP',
          ports: 'is not supported by podroute',
        });
        const out: { ip?: string; hostname?: string } = {};
        const ip = c.str(m, 'ip', p);
        if (ip) {
          serviceAddress(c, ip, `${p}.ip`);
          out.ip = ip;
        }
        const host = c.str(m, 'hostname', p);
        if (host) {
          if (host.length > 253 || !DNS_SUBDOMAIN.test(host)) c.fail(`${p}.hostname`, `${JSON.stringify(host)} is not a DNS name`);
          out.hostname = host;
        }
        if (!ip && !host) c.fail(p, 'needs an ip or a hostname');
        return out;
      }),
    },
  };
}

export function checkEndpointSlice(c: Checker, s: Obj): EndpointSliceBody {
  onlyTop(c, s, ['addressType', 'endpoints', 'ports']);
  const addressType = s.addressType;
  if (addressType === 'FQDN') c.fail('addressType', 'FQDN is not supported by podroute: endpoints are addresses');
  if (addressType === undefined || addressType === null) c.fail('addressType', 'is required (IPv4 or IPv6)');
  if (addressType !== 'IPv4' && addressType !== 'IPv6') c.fail('addressType', `must be IPv4 or IPv6, not ${JSON.stringify(addressType)}`);
  const family = addressType === 'IPv4' ? 4 : 6;
  const list = s.endpoints;
  if (list === undefined || list === null) c.fail('endpoints', 'is required (it may be empty)');
  if (!Array.isArray(list)) c.fail('endpoints', 'must be a list of {addresses, conditions, nodeName, targetRef}');
  if (list.length > 1000) c.fail('endpoints', `holds ${list.length} endpoints; an EndpointSlice holds at most 1000`);
  const endpoints = list.map((x, i) => checkEndpoint(c, x, `endpoints[${i}]`, family));
  const out: EndpointSliceBody = { addressType, endpoints };
  const ports = s.ports;
  if (ports !== undefined && ports !== null) {
    if (!Array.isArray(ports)) c.fail('ports', 'must be a list of {name, protocol, port}');
    if (ports.length > 100) c.fail('ports', `holds ${ports.length} ports; an EndpointSlice holds at most 100`);
    const names = new Set<string>();
    out.ports = ports.map((x, i): EndpointSlicePort => {
      const p = `ports[${i}]`;
      const m = c.obj(x, p);
      c.only(m, ['name', 'protocol', 'port'], p, PORT_REFUSED);
      const port: EndpointSlicePort = {};
      const name = c.str(m, 'name', p) ?? '';
      if (name !== '' && (name.length > 63 || !DNS_LABEL.test(name)))
        c.fail(`${p}.name`, `${JSON.stringify(name)} must be empty or at most 63 lower-case letters, digits and '-'`);
      if (names.has(name)) c.fail(`${p}.name`, `${JSON.stringify(name)} is named twice`);
      names.add(name);
      if (name !== '') port.name = name;
      port.protocol = c.oneOf(m, 'protocol', p, KUBERNETES_PROTOCOLS, 'TCP') as ServiceProtocol;
      const n = c.int(m, 'port', p, 1, 65535);
      if (n !== undefined) port.port = n;
      return port;
    });
  }
  return out;
}

const ENDPOINT_REFUSED: Record<string, string> = {
  hostname: 'is not supported by podroute: there is no cluster DNS',
  zone: 'is not supported by podroute: endpoints are chosen without topology',
  hints: 'is not supported by podroute: endpoints are chosen without topology',
  deprecatedTopology: 'is not supported by podroute: endpoints are chosen without topology',
};

function checkEndpoint(c: Checker, v: unknown, p: string, family: 4 | 6): EndpointSliceEndpoint {
  const m = c.obj(v, p);
  c.only(m, ['addresses', 'conditions', 'nodeName', 'targetRef'], p, ENDPOINT_REFUSED);
  const addresses = c.list(m, 'addresses', p, 'a list of addresses');
  if (!addresses || addresses.length === 0) c.fail(`${p}.addresses`, 'must hold at least one address');
  if (addresses.length > 100) c.fail(`${p}.addresses`, 'may hold at most 100 addresses');
  const out: EndpointSliceEndpoint = {
    addresses: addresses.map((a, j) => {
      if (c.ip(a, `${p}.addresses[${j}]`) !== family)
        c.fail(`${p}.addresses[${j}]`, `${String(a)} is not an IPv${family} address, as the slice's addressType says`);
      return a as string;
    }),
  };
  const cond = c.optObj(m, 'conditions', p);
  if (cond) {
    c.only(cond, ['ready', 'serving', 'terminating'], `${p}.conditions`);
    const conditions: EndpointConditions = {};
    for (const k of ['ready', 'serving', 'terminating'] as const) {
      const b = c.bool(cond, k, `${p}.conditions`);
      if (b !== undefined) conditions[k] = b;
    }
    out.conditions = conditions;
  }
  const node = c.str(m, 'nodeName', p);
  if (node) {
    if (node.length > 253 || !DNS_SUBDOMAIN.test(node)) c.fail(`${p}.nodeName`, `${JSON.stringify(node)} is not a node name`);
    out.nodeName = node;
  }
  const ref = c.optObj(m, 'targetRef', p);
  if (ref) {
    c.only(ref, ['kind', 'namespace', 'name'], `${p}.targetRef`);
    const targetRef: NonNullable<EndpointSliceEndpoint['targetRef']> = {};
    for (const k of ['kind', 'namespace', 'name'] as const) {
      const s = c.str(ref, k, `${p}.targetRef`);
      if (s) targetRef[k] = s;
    }
    out.targetRef = targetRef;
  }
  return out;
}
