// Routes as a person reads them: a dataplane's routes printed the way `ip route` prints them,
// and the routes a node should hold, worked out from the datastore alone (blocks, their
// affinity, the nodes' addresses and the endpoints), so the demo can tell when it converged.
import { PODROUTE_PROTOCOL, type InstalledRoute, type NextHop } from '../../felix/index.js';
import { parseInterfaceAddress } from '../../ip/index.js';

export interface BlockOwner {
  cidr: string;
  node: string;
}

export interface EndpointRoute {
  node: string;
  /** The pod's address with /32. */
  cidr: string;
  interfaceName: string;
}

function hop(h: NextHop): string {
  return `${h.gateway ? `via ${h.gateway} ` : ''}dev ${h.dev}`;
}

/** iproute2 drops the /32 of an IPv4 host route (and the /128 of an IPv6 one). */
function destination(dst: string): string {
  return dst.endsWith('/32') && !dst.includes(':') ? dst.slice(0, -3) : dst.endsWith('/128') ? dst.slice(0, -4) : dst;
}

/** One route as `ip route` prints it: `10.65.1.0/26 via 127.0.0.2 dev eth0 proto 81`. */
export function ipRouteLine(r: Pick<InstalledRoute, 'dst' | 'type' | 'nextHops' | 'protocol' | 'metric'>): string {
  const proto = `proto ${r.protocol}`;
  const metric = r.metric && !r.dst.includes(':') ? ` metric ${r.metric}` : '';
  if (r.type === 'blackhole') return `blackhole ${destination(r.dst)} ${proto}${metric}`;
  if (r.nextHops.length === 1) {
    const h = r.nextHops[0]!;
    const scope = h.gateway ? '' : ' scope link';
    return `${destination(r.dst)} ${hop(h)} ${proto}${scope}${metric}${h.onlink ? ' onlink' : ''}`;
  }
  // ECMP: iproute2 prints the next hops on lines of their own; one line keeps a view tabular.
  return `${destination(r.dst)} ${proto}${metric} ${r.nextHops.map((h) => `nexthop ${hop(h)}${h.onlink ? ' onlink' : ''} weight 1`).join(' ')}`;
}

/** A dataplane's routes, printed and sorted by destination address. */
export function ipRoutes(routes: Iterable<InstalledRoute>): string[] {
  return [...routes].sort((a, b) => compareDst(a.dst, b.dst)).map(ipRouteLine);
}

/** Destinations in address order (IPv4 before IPv6), then by prefix length. */
export function compareDst(a: string, b: string): number {
  const x = parseInterfaceAddress(a, 'dst');
  const y = parseInterfaceAddress(b, 'dst');
  if (x.family !== y.family) return x.family - y.family;
  for (let i = 0; i < x.bytes.length; i++) if (x.bytes[i] !== y.bytes[i]) return x.bytes[i] - y.bytes[i];
  return x.prefixLength - y.prefixLength;
}

/**
 * What a node in a pool without encapsulation should hold, as Calico programs it: a blackhole
 * for each of its own blocks, each other node's block via that node, each local pod's /32 on
 * its host veth.
 */
export function expectedRoutes(
  node: string,
  blocks: readonly BlockOwner[],
  addresses: ReadonlyMap<string, string>,
  endpoints: readonly EndpointRoute[],
  uplink: string,
  protocol = PODROUTE_PROTOCOL,
): string[] {
  const routes: InstalledRoute[] = [];
  const base = { protocol, table: 254, metric: 0 };
  for (const b of blocks) {
    if (b.node === node) routes.push({ ...base, dst: b.cidr, type: 'blackhole', nextHops: [] });
    else {
      const gateway = addresses.get(b.node);
      if (gateway) routes.push({ ...base, dst: b.cidr, type: 'unicast', nextHops: [{ dev: uplink, gateway }] });
    }
  }
  for (const e of endpoints)
    if (e.node === node) routes.push({ ...base, dst: e.cidr, type: 'unicast', nextHops: [{ dev: e.interfaceName }] });
  return ipRoutes(routes);
}
