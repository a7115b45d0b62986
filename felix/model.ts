// What felix programs, in the kernel's own terms but with device names and canonical
// address text, so the in-memory and Linux dataplanes hold exactly the same values.

/** podroute's route protocol number (rtm_protocol). Calico Felix uses 80, BIRD 12, FRR
 * 186..192; 81 sits next to Calico's (same role) but is our own, so a host running both
 * never has one program remove the other's routes. Not in iproute2's rt_protos list. */
export const PODROUTE_PROTOCOL = 81;

/** The main routing table. felix only ever programs this table. */
export const MAIN_TABLE = 254;

export interface NextHop {
  /** Egress device name (cali1234, vxlan.calico, tunl0, eth0). */
  readonly dev: string;
  /** Gateway address; absent for a directly connected destination (scope link). */
  readonly gateway?: string;
  /** Treat the gateway as on-link even though no connected route covers it (tunnels). */
  readonly onlink?: boolean;
}

export type RouteType = 'unicast' | 'blackhole';

export interface Route {
  /** Canonical destination prefix, e.g. "10.65.0.0/26" or "fd00:10::/122". */
  readonly dst: string;
  readonly type: RouteType;
  /** One entry for a plain route, several for ECMP, none for a blackhole. */
  readonly nextHops: readonly NextHop[];
  /** Why this route exists (for humans and logs; not programmed). */
  readonly reason?: RouteClass;
}

export type RouteClass = 'workload' | 'blackhole' | 'direct' | 'ipip' | 'vxlan';

/** A route as read back from a dataplane, with the fields that identify its owner. */
export interface InstalledRoute extends Route {
  readonly protocol: number;
  readonly table: number;
  readonly metric: number;
}

/** A static neighbour entry felix owns on the VXLAN device: ARP/NDP or bridge FDB. */
export interface Neighbor {
  readonly kind: 'arp' | 'fdb';
  readonly dev: string;
  /** arp: the remote VTEP address; fdb: the remote node's underlay address. */
  readonly address: string;
  readonly mac: string;
}

export function neighborKey(n: Pick<Neighbor, 'kind' | 'dev' | 'address' | 'mac'>): string {
  // One ARP entry per (dev, IP); one FDB entry per (dev, MAC).
  return n.kind === 'arp' ? `arp|${n.dev}|${n.address}` : `fdb|${n.dev}|${n.mac}`;
}

function hopKey(h: NextHop): string {
  return `${h.dev}|${h.gateway ?? ''}|${h.onlink ? 1 : 0}`;
}

/** Next hops in a stable order, so ECMP sets compare regardless of the order given. */
export function sortNextHops(hops: readonly NextHop[]): NextHop[] {
  return [...hops].sort((a, b) => (hopKey(a) < hopKey(b) ? -1 : hopKey(a) > hopKey(b) ? 1 : 0));
}

/** True when two routes would program the same forwarding (reason is ignored). */
export function sameForwarding(a: Route, b: Route): boolean {
  if (a.dst !== b.dst || a.type !== b.type || a.nextHops.length !== b.nextHops.length) return false;
  if (a.nextHops.length === 0) return true;
  if (a.nextHops.length === 1) {
    const x = a.nextHops[0],
      y = b.nextHops[0];
    return x.dev === y.dev && (x.gateway ?? '') === (y.gateway ?? '') && !x.onlink === !y.onlink;
  }
  const x = sortNextHops(a.nextHops),
    y = sortNextHops(b.nextHops);
  return x.every((h, i) => hopKey(h) === hopKey(y[i]));
}

export function sameNeighbor(a: Neighbor, b: Neighbor): boolean {
  return a.kind === b.kind && a.dev === b.dev && a.address === b.address && a.mac.toLowerCase() === b.mac.toLowerCase();
}

/** `ip route` style text, for messages and logs. */
export function describeRoute(r: Route): string {
  if (r.type === 'blackhole') return `blackhole ${r.dst}`;
  const hop = (h: NextHop) => `${h.gateway ? `via ${h.gateway} ` : ''}dev ${h.dev}${h.onlink ? ' onlink' : ''}`;
  if (r.nextHops.length === 1) return `${r.dst} ${hop(r.nextHops[0])}${r.nextHops[0].gateway ? '' : ' scope link'}`;
  return `${r.dst} ${r.nextHops.map((h) => `nexthop ${hop(h)}`).join(' ')}`;
}
