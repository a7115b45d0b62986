// The EndpointSlices a selector Service should have, computed from the pods' WorkloadEndpoints
// as Kubernetes' endpointslice controller computes them: the pods of the Service's namespace
// whose labels hold every selector pair, one endpoint per pod and address family, with the
// Service's target ports resolved on each pod (a named targetPort through the pod's named
// ports; a pod without that name gets no such port). Pods that resolve to the same port list
// share a slice. The result is a pure function of its input, in a fixed order with names
// derived from the content, so every node computing it writes byte-identical objects.
import { cidrAddress, parseCidr } from '../../ip/index.js';
import {
  API_VERSION_K8S_DISCOVERY,
  type EndpointSlice,
  type EndpointSliceEndpoint,
  type EndpointSlicePort,
  MANAGED_BY_LABEL,
  SERVICE_NAME_LABEL,
  type Service,
  type WorkloadEndpoint,
} from '../resources/index.js';

/** What this controller writes in the managed-by label; slices with another value are someone else's. */
export const SLICE_CONTROLLER = 'endpointslice-controller.podroute.io';

/** Kubernetes' default --max-endpoints-per-slice. */
export const MAX_ENDPOINTS_PER_SLICE = 100;

type Family = 'IPv4' | 'IPv6';

/** Kubernetes' Service selector: every pair holds in the pod's labels. */
export function selects(selector: Readonly<Record<string, string>>, pod: WorkloadEndpoint): boolean {
  return Object.entries(selector).every(([k, v]) => pod.metadata.labels?.[k] === v);
}

/** The families the Service serves: its ipFamilies (validation fills them from its cluster IPs), else both. */
function servedFamilies(svc: Service): readonly Family[] {
  if (svc.spec.ipFamilies && svc.spec.ipFamilies.length > 0) return svc.spec.ipFamilies;
  return ['IPv4', 'IPv6'];
}

/** The slice's ports for one pod: each Service port with its target resolved there, or left out. */
function resolvePorts(svc: Service, pod: WorkloadEndpoint): EndpointSlicePort[] {
  const out: EndpointSlicePort[] = [];
  for (const p of svc.spec.ports ?? []) {
    const protocol = p.protocol ?? 'TCP';
    let port: number | undefined;
    if (typeof p.targetPort === 'string') {
      port = pod.spec.ports?.find((x) => x.name === p.targetPort && x.protocol === protocol)?.port;
      if (port === undefined) continue;
    } else port = p.targetPort ?? p.port;
    out.push(p.name ? { name: p.name, protocol, port } : { protocol, port });
  }
  return out;
}

/** FNV-1a, 32 bits: a stable number for a string, the same on every node. */
export function digest32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A short stable digest of a string (base 36): names a slice by its port list. */
export function digest(text: string): string {
  return digest32(text).toString(36);
}

/**
 * The slices `svc` should have, given every WorkloadEndpoint of the cluster; undefined for a
 * Service without a selector (its slices are written by hand and left alone).
 */
export function desiredSlices(svc: Service, workloads: Iterable<WorkloadEndpoint>): EndpointSlice[] | undefined {
  const selector = svc.spec.selector;
  if (!selector) return undefined;
  const ns = svc.metadata.namespace ?? 'default';
  const families = servedFamilies(svc);
  const groups = new Map<string, { family: Family; ports: EndpointSlicePort[]; endpoints: EndpointSliceEndpoint[] }>();
  for (const w of workloads) {
    if (w.metadata.namespace !== ns || !selects(selector, w)) continue;
    const ports = resolvePorts(svc, w);
    for (const net of w.spec.ipNetworks) {
      const c = parseCidr(net, 'ipNetworks', false);
      const family: Family = c.family === 4 ? 'IPv4' : 'IPv6';
      if (!families.includes(family)) continue;
      const key = `${family} ${JSON.stringify(ports)}`;
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { family, ports, endpoints: [] }));
      g.endpoints.push({
        addresses: [cidrAddress(net, 'ipNetworks')],
        // A WorkloadEndpoint exists while the pod is networked: podroute knows no readiness probe.
        conditions: { ready: true, serving: true, terminating: false },
        nodeName: w.spec.node,
        targetRef: { kind: 'Pod', namespace: ns, name: w.spec.pod },
      });
    }
  }
  // No pod selected: one empty slice of the first family, as Kubernetes keeps a placeholder.
  if (groups.size === 0) groups.set('', { family: families[0]!, ports: [], endpoints: [] });
  const out: EndpointSlice[] = [];
  for (const [key, g] of groups) {
    g.endpoints.sort((a, b) => (a.addresses[0]! < b.addresses[0]! ? -1 : a.addresses[0]! > b.addresses[0]! ? 1 : 0));
    const base = `${svc.metadata.name}-${g.family.toLowerCase()}-${digest(key)}`;
    // At most MAX_ENDPOINTS_PER_SLICE each, as Kubernetes' controller cuts them by default.
    for (let i = 0; i === 0 || i * MAX_ENDPOINTS_PER_SLICE < g.endpoints.length; i++) {
      const spec: EndpointSlice['spec'] = {
        addressType: g.family,
        endpoints: g.endpoints.slice(i * MAX_ENDPOINTS_PER_SLICE, (i + 1) * MAX_ENDPOINTS_PER_SLICE),
      };
      if (g.ports.length > 0) spec.ports = g.ports;
      out.push({
        apiVersion: API_VERSION_K8S_DISCOVERY,
        kind: 'EndpointSlice',
        metadata: {
          name: i === 0 ? base : `${base}-${i}`,
          namespace: ns,
          labels: { [SERVICE_NAME_LABEL]: svc.metadata.name, [MANAGED_BY_LABEL]: SLICE_CONTROLLER },
        },
        spec,
      });
    }
  }
  return out.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
}

/** Whether a stored slice already says what `want` says (labels and body; revision aside). */
export function sameSlice(have: EndpointSlice, want: EndpointSlice): boolean {
  return canonical(have.metadata.labels ?? {}) === canonical(want.metadata.labels ?? {}) && canonical(have.spec) === canonical(want.spec);
}

/** JSON with every object's keys sorted: equal data, equal text, whatever order it was built in. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  );
}
