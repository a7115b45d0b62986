// Cluster IPs and NodePorts for Services that do not name their own, as the API server hands
// them out, computed so that every node agent picks the same ones without talking: a Service's
// first candidate is a hash of its namespace/name inside the range, the next free one after it
// when taken, services visited in key order. What an agent allocated it marks with an
// annotation; if two agents with different views ever gave one address (or NodePort) to two
// Services, the Service whose key sorts first keeps it and the other is allocated again (what a
// user wrote in the manifest always stays where it is written).
import { addressAt, cidrSize, formatAddress, parseAddress, parseCidr, type Cidr } from '../../ip/index.js';
import { type BGPConfiguration, HEADLESS, NODE_PORT_RANGE, resourceKey, type Service, type ServicePortSpec } from '../resources/index.js';
import { digest32 } from './endpoint-slices.js';

/** Kubernetes' default --service-cluster-ip-range: used when the BGPConfiguration names no IPv4 serviceClusterIPs. */
export const DEFAULT_SERVICE_CLUSTER_IP_RANGE = '10.96.0.0/12';
/** The cluster IPs podroute allocated to a Service (comma-separated), so they may be moved on a clash. */
export const ALLOCATED_CLUSTER_IPS = 'podroute.io/allocated-cluster-ips';
/** The NodePorts podroute allocated ("port/protocol=nodePort", comma-separated). */
export const ALLOCATED_NODE_PORTS = 'podroute.io/allocated-node-ports';

export interface ServiceRanges {
  4?: Cidr;
  6?: Cidr;
}

/** The ranges cluster IPs come from: the default BGPConfiguration's first serviceClusterIPs per family; IPv4 has a default. */
export function serviceRanges(config: BGPConfiguration | undefined): ServiceRanges {
  const out: ServiceRanges = {};
  for (const { cidr } of config?.spec.serviceClusterIPs ?? []) {
    const c = parseCidr(cidr);
    out[c.family] ??= c;
  }
  out[4] ??= parseCidr(DEFAULT_SERVICE_CLUSTER_IP_RANGE);
  return out;
}

/** Who holds each cluster IP (canonical text) and each NodePort ("nodePort/protocol"): a Service's key. */
export interface Holders {
  clusterIPs: Map<string, string>;
  nodePorts: Map<string, string>;
  /**
   * Those that more than one Service wrote by hand, with all of them in key order: no
   * allocation can settle these (a written address never moves), so key order does not
   * make one of them right.
   */
  contestedIPs: Map<string, string[]>;
  contestedNodePorts: Map<string, string[]>;
}

/** An address in one spelling, so `FD00::A` and `fd00::a` are one; text that does not read is kept as it is. */
export function canonicalIP(text: string): string {
  try {
    return formatAddress(parseAddress(text));
  } catch {
    return text;
  }
}

const byKey = (a: Service, b: Service) => (resourceKey(a) < resourceKey(b) ? -1 : 1);
const allocatedIPs = (s: Service) =>
  new Set((s.metadata.annotations?.[ALLOCATED_CLUSTER_IPS] ?? '').split(',').filter(Boolean).map(canonicalIP));
/** The annotation lists "port/protocol=nodePort". */
const allocatedPorts = (s: Service) =>
  new Map(
    (s.metadata.annotations?.[ALLOCATED_NODE_PORTS] ?? '')
      .split(',')
      .filter(Boolean)
      .map((x) => x.split('=') as [string, string]),
  );
const nodePortKey = (p: ServicePortSpec) => `${p.nodePort}/${p.protocol ?? 'TCP'}`;
const isAllocated = (s: Service, p: ServicePortSpec) => allocatedPorts(s).get(`${p.port}/${p.protocol ?? 'TCP'}`) === String(p.nodePort);

/**
 * The allocator's records: who keeps each cluster IP and NodePort when more than one Service
 * names it. Written by hand first, then allocated, each in key order; so an address a user
 * wrote is never taken from them by an allocation, and every node reads the same holder. What
 * two Services wrote by hand is also listed as contested.
 */
export function holders(services: Iterable<Service>): Holders {
  const ips = new Ledger();
  const ports = new Ledger();
  for (const s of services) {
    const c = claimsOf(s);
    for (const x of c.clusterIPs) ips.add(x.what, c.key, x.byHand);
    for (const x of c.nodePorts) ports.add(x.what, c.key, x.byHand);
  }
  return { clusterIPs: ips.holders(), nodePorts: ports.holders(), contestedIPs: ips.contested, contestedNodePorts: ports.contested };
}

/** One cluster IP (canonical) or NodePort ("nodePort/protocol") a Service names, where, and whether written by hand. */
export interface Claim {
  what: string;
  /** The index in clusterIPs, or in ports. */
  index: number;
  byHand: boolean;
}

export interface Claims {
  key: string;
  clusterIPs: readonly Claim[];
  nodePorts: readonly Claim[];
}

/** Per Service object (a watch delivers a new one for every change): read once, however often the set is looked at. */
const claimsMemo = new WeakMap<Service, Claims>();

export function claimsOf(s: Service): Claims {
  let c = claimsMemo.get(s);
  if (c) return c;
  const mine = allocatedIPs(s);
  const given = allocatedPorts(s);
  const clusterIPs: Claim[] = [];
  for (const [index, text] of (s.spec.clusterIPs ?? []).entries()) {
    if (text === HEADLESS || text === '') continue;
    const what = canonicalIP(text);
    clusterIPs.push({ what, index, byHand: !mine.has(what) });
  }
  const nodePorts: Claim[] = [];
  for (const [index, p] of (s.spec.ports ?? []).entries())
    if (p.nodePort)
      nodePorts.push({ what: nodePortKey(p), index, byHand: given.get(`${p.port}/${p.protocol ?? 'TCP'}`) !== String(p.nodePort) });
  c = { key: resourceKey(s), clusterIPs, nodePorts };
  claimsMemo.set(s, c);
  return c;
}

/** Claims on one kind of thing, kept so the holder is found without sorting every Service. */
class Ledger {
  private readonly hand = new Map<string, string>();
  private readonly allocated = new Map<string, string>();
  readonly contested = new Map<string, string[]>();

  add(what: string, key: string, byHand: boolean): void {
    const m = byHand ? this.hand : this.allocated;
    const had = m.get(what);
    if (had === undefined || key < had) m.set(what, key);
    if (!byHand || had === undefined || had === key) return;
    const all = this.contested.get(what);
    if (!all) this.contested.set(what, [had, key].sort());
    else if (!all.includes(key)) {
      all.push(key);
      all.sort();
    }
  }

  /** Written by hand first (the first key), then allocated (the first key). */
  holders(): Map<string, string> {
    const out = new Map(this.hand);
    for (const [what, key] of this.allocated) if (!out.has(what)) out.set(what, key);
    return out;
  }
}

/** Every Service that needs a write, with what it should say: cluster IPs filled or moved, NodePorts filled. */
export function allocate(services: Iterable<Service>, ranges: ServiceRanges): Service[] {
  const all = [...services].sort(byKey);
  const { clusterIPs: holder, nodePorts } = holders(all);

  const out: Service[] = [];
  for (const s of all) {
    const key = resourceKey(s);
    let spec = s.spec;
    const annotations = { ...s.metadata.annotations };
    const ips = spec.clusterIPs ?? [];
    const lost = ips.some((ip) => ip !== HEADLESS && holder.get(canonicalIP(ip)) !== key);
    if (spec.clusterIP !== HEADLESS && (ips.length === 0 || (lost && ips.every((ip) => allocatedIPs(s).has(canonicalIP(ip)))))) {
      const picked = pickClusterIPs(s, ranges, holder);
      if (picked) {
        spec = { ...spec, clusterIP: picked.ips[0], clusterIPs: picked.ips, ipFamilies: picked.families };
        annotations[ALLOCATED_CLUSTER_IPS] = picked.ips.join(',');
      }
    }
    // A port without a NodePort gets one; one we allocated that another service holds moves.
    const needs = (p: ServicePortSpec) => !p.nodePort || (isAllocated(s, p) && nodePorts.get(nodePortKey(p)) !== key);
    if ((spec.type === 'NodePort' || spec.type === 'LoadBalancer') && spec.ports?.some(needs)) {
      const given = allocatedPorts(s);
      let changed = false;
      const ports = spec.ports.map((p): ServicePortSpec => {
        if (!needs(p)) return p;
        const n = pickNodePort(`${key}/${p.name ?? p.port}`, p.protocol ?? 'TCP', nodePorts, key);
        if (n === undefined) return p;
        given.set(`${p.port}/${p.protocol ?? 'TCP'}`, String(n));
        changed = true;
        return { ...p, nodePort: n };
      });
      if (changed) {
        spec = { ...spec, ports };
        annotations[ALLOCATED_NODE_PORTS] = [...given].map(([k, v]) => `${k}=${v}`).join(',');
      }
    }
    if (spec !== s.spec) out.push({ ...s, metadata: { ...s.metadata, annotations }, spec });
  }
  return out;
}

function pickClusterIPs(
  s: Service,
  ranges: ServiceRanges,
  holder: Map<string, string>,
): { ips: string[]; families: ('IPv4' | 'IPv6')[] } | undefined {
  const key = resourceKey(s);
  const dual = s.spec.ipFamilyPolicy === 'PreferDualStack' || s.spec.ipFamilyPolicy === 'RequireDualStack';
  let families = s.spec.ipFamilies ?? (dual ? ['IPv4', 'IPv6'] : ['IPv4']);
  if (s.spec.ipFamilyPolicy === 'PreferDualStack') families = families.filter((f) => ranges[f === 'IPv4' ? 4 : 6]);
  if (!dual) families = families.slice(0, 1);
  const ips: string[] = [];
  for (const f of families) {
    const range = ranges[f === 'IPv4' ? 4 : 6];
    if (!range) return undefined;
    const ip = pickAddress(range, key, holder);
    if (!ip) return undefined;
    holder.set(ip, key);
    ips.push(ip);
  }
  return ips.length > 0 ? { ips, families } : undefined;
}

/** The first free address from the key's hash on, skipping the network address (and IPv4's broadcast). */
function pickAddress(range: Cidr, key: string, holder: ReadonlyMap<string, string>): string | undefined {
  const size = cidrSize(range);
  const usable = range.family === 4 ? size - 2n : size - 1n;
  if (usable <= 0n) return undefined;
  const start = BigInt(digest32(key)) % usable;
  // Bounded: a full range is a miss, reported by the caller, not an endless search.
  const tries = usable < 65536n ? usable : 65536n;
  for (let i = 0n; i < tries; i++) {
    const ip = formatAddress(addressAt(range, 1n + ((start + i) % usable)));
    if (!holder.has(ip)) return formatAddress(parseAddress(ip));
  }
  return undefined;
}

function pickNodePort(id: string, protocol: string, taken: Map<string, string>, key: string): number | undefined {
  const [lo, hi] = NODE_PORT_RANGE;
  const span = hi - lo + 1;
  const start = digest32(`${id}/${protocol}`) % span;
  for (let i = 0; i < span; i++) {
    const n = lo + ((start + i) % span);
    if (!taken.has(`${n}/${protocol}`)) {
      taken.set(`${n}/${protocol}`, key);
      return n;
    }
  }
  return undefined;
}
