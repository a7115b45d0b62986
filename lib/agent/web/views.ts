// The node's status and routes as the web page reads them: the same data `podroute node status`
// and `podroute bgp routes` show, copied field by field (never spread) and capped in size.
import type { AsPathSegment, RibRoute } from '../../../bgp/index.js';
import { bgpRouteRow } from '../route-rows.js';
import type { AgentStatus } from '../status.js';
import type { NodeView, RouteRowView, RoutesView } from './api.js';

/** Rows of each route table sent at most: the page is for looking, `podroute bgp routes` for everything. */
export const MAX_ROUTE_ROWS = 1000;

export function nodeView(s: AgentStatus, now: number, flows: boolean): NodeView {
  return {
    node: s.node,
    address: s.address,
    ...(s.addressV6 ? { addressV6: s.addressV6 } : {}),
    asn: s.asn,
    routerId: s.routerId,
    ...(s.clusterId ? { clusterId: s.clusterId } : {}),
    ready: s.ready,
    restarting: s.restarting,
    now: new Date(now).toISOString(),
    sessions: s.peers.map((p) => ({
      address: p.address,
      asn: p.asn,
      type: p.type,
      source: p.source,
      state: p.state,
      since: p.since ? new Date(p.since).toISOString() : null,
      upSeconds: p.state === 'Established' && p.since ? Math.max(0, Math.round((now - p.since) / 1000)) : null,
      info: p.info,
      prefixesReceived: p.prefixesReceived,
      prefixesSent: p.prefixesSent,
      ...(p.bfd === undefined ? {} : { bfd: p.bfd }),
    })),
    advertised: {
      blocks: [...s.advertised.blocks],
      borrowed: s.advertised.borrowed.slice(0, MAX_ROUTE_ROWS),
      services: [...s.advertised.services],
      serviceAddresses: s.advertised.serviceAddresses.slice(0, MAX_ROUTE_ROWS),
    },
    routes: {
      learned: s.routes.learned,
      programmed: s.routes.programmed,
      failures: s.routes.failures,
      notProgrammed: (s.routes.notProgrammed ?? []).map((r) => ({ dst: r.dst, reason: r.reason })),
    },
    flows,
  };
}

/** An AS path as `show bgp` writes it: "65001 65002 {65010,65011}". */
export function asPathText(path: readonly AsPathSegment[] | undefined): string {
  return (path ?? [])
    .map((seg) => {
      const asns = seg.asns.join(seg.type === 'set' || seg.type === 'confed-set' ? ',' : ' ');
      if (seg.type === 'set') return `{${asns}}`;
      if (seg.type === 'confed-set') return `[${asns}]`;
      if (seg.type === 'confed-sequence') return `(${asns})`;
      return asns;
    })
    .join(' ');
}

export function routesView(
  rib: readonly RibRoute[],
  routes: { programmed: readonly string[]; unresolved: readonly { dst: string; reason: string }[] },
): RoutesView {
  const bgp: RouteRowView[] = rib.slice(0, MAX_ROUTE_ROWS).map((r) => {
    const row = bgpRouteRow(r);
    return { prefix: row.prefix, nextHop: row.nextHop, from: row.from, asPath: asPathText(row.asPath), stale: row.stale === true };
  });
  return {
    bgp,
    bgpTotal: rib.length,
    programmed: routes.programmed.slice(0, MAX_ROUTE_ROWS),
    programmedTotal: routes.programmed.length,
    unresolved: routes.unresolved.slice(0, MAX_ROUTE_ROWS).map((u) => ({ dst: u.dst, reason: u.reason })),
  };
}
