// BGP next hops that are not on the node's subnet, resolved as a router resolves them (BIRD's
// `gateway recursive`, RFC 4271 §5.1.3): through the longest route of the node's own table that
// covers the next hop, a connected (link) route, a static route or the default route. Only
// routes that are not felix's take part: a learned route never resolves through another learned
// route, so two of them cannot hold each other up. Pure: the table is given.

import { cidrContains, formatAddress, parseAddress, parseCidr, type Address, type Cidr, type IpFamily } from '../ip/index.js';
import type { NextHop, RouteType } from './model.js';

/** A route of the node's table, as a dump gives it (felix's own routes left out). */
export interface KernelRoute {
  readonly dst: string;
  readonly type: RouteType;
  readonly nextHops: readonly NextHop[];
  /** Lower wins where two routes have one destination, as in the kernel. Default 0. */
  readonly metric?: number;
}

export type Resolution =
  | {
      readonly hops: readonly NextHop[];
      /** The next hop is on a connected network: the route under it has no gateway. */
      readonly connected: boolean;
      /** The route it resolved through, for messages. */
      readonly via: string;
    }
  | { readonly reason: string };

interface Entry {
  readonly cidr: Cidr;
  readonly route: KernelRoute;
  readonly metric: number;
}

export class NextHopResolver {
  /** Per family, longest prefix first, then lowest metric. */
  private readonly byFamily = new Map<IpFamily, Entry[]>();
  /** Next hops resolve to few answers and recur in many routes: each is worked out once. */
  private readonly memo = new Map<string, Resolution>();

  constructor(routes: readonly KernelRoute[] = []) {
    for (const route of routes) {
      const cidr = parseCidr(route.dst, 'dst', false);
      const list = this.byFamily.get(cidr.family) ?? [];
      list.push({ cidr, route, metric: route.metric ?? 0 });
      this.byFamily.set(cidr.family, list);
    }
    for (const list of this.byFamily.values()) list.sort((a, b) => b.cidr.prefixLength - a.cidr.prefixLength || a.metric - b.metric);
  }

  get size(): number {
    let n = 0;
    for (const l of this.byFamily.values()) n += l.length;
    return n;
  }

  /** The route of the table that covers `address` (canonical text), longest first. */
  lookup(address: string): KernelRoute | undefined {
    const a = parseAddress(address);
    return this.entryFor(a)?.route;
  }

  /**
   * How to reach `address`: through a link route it is its own gateway on that route's device;
   * through a route with gateways, those gateways (one level: routes in the kernel have
   * gateways the kernel already found reachable). A blackhole or no route at all: a reason.
   */
  resolve(address: string): Resolution {
    const known = this.memo.get(address);
    if (known) return known;
    const r = this.work(address);
    this.memo.set(address, r);
    return r;
  }

  private work(address: string): Resolution {
    const a = parseAddress(address);
    const gw = formatAddress(a.bytes);
    const e = this.entryFor(a);
    if (!e) return { reason: `no route to next hop ${gw} in this node's routing table` };
    const r = e.route;
    if (r.type === 'blackhole') return { reason: `next hop ${gw} resolves to blackhole ${r.dst}` };
    if (r.nextHops.length === 0) return { reason: `next hop ${gw} resolves to ${r.dst}, which has no next hop` };
    const hops: NextHop[] = [];
    let connected = true;
    for (const h of r.nextHops) {
      if (h.gateway === undefined) hops.push({ dev: h.dev, gateway: gw });
      else {
        connected = false;
        hops.push(h.onlink ? { dev: h.dev, gateway: h.gateway, onlink: true } : { dev: h.dev, gateway: h.gateway });
      }
    }
    return { hops, connected, via: r.dst };
  }

  private entryFor(a: Address): Entry | undefined {
    const list = this.byFamily.get(a.family);
    if (!list) return undefined;
    for (const e of list) if (cidrContains(e.cidr, a)) return e;
    return undefined;
  }
}

/** A stable text of a table, to tell whether a new dump changed anything the resolver reads. */
export function kernelRoutesKey(routes: readonly KernelRoute[]): string {
  return routes
    .map((r) => `${r.dst} ${r.type} ${r.metric ?? 0} ${r.nextHops.map((h) => `${h.dev}/${h.gateway ?? ''}/${h.onlink ? 1 : 0}`).join(',')}`)
    .sort()
    .join('\n');
}
