// The rows behind the control socket's `/bgp/routes` and `/routes`: `podroute bgp routes`
// and the web page read the same documents.
import type { AsPathSegment, BgpSpeaker, RibRoute } from '../../bgp/index.js';
import { describeRoute, type Felix, type RemoteRoute } from '../../felix/index.js';

export interface BgpRouteRow {
  prefix: string;
  nextHop: string;
  /** The peer's address, or "local" for what this node originates. */
  from: string;
  asPath: AsPathSegment[] | undefined;
  stale: boolean | undefined;
}

export function bgpRouteRow(r: RibRoute): BgpRouteRow {
  return {
    prefix: r.prefix,
    nextHop: r.nextHop,
    from: r.peer && r.peer.type !== 'local' ? r.peer.address : 'local',
    asPath: r.attributes.asPath,
    stale: r.stale,
  };
}

/** Every route in the speaker's Loc-RIB, both families; none before the speaker exists. */
export function bgpRouteRows(speaker: BgpSpeaker | undefined): BgpRouteRow[] {
  return (speaker?.routes() ?? []).map(bgpRouteRow);
}

export interface RoutesDocument {
  learned: RemoteRoute[];
  /** Felix's desired routes as `ip route` prints them. */
  programmed: string[];
  failures: unknown[];
  unresolved: { dst: string; reason: string }[];
}

export function routesDocument(learned: RemoteRoute[], felix: Felix): RoutesDocument {
  return {
    learned,
    programmed: felix.desired.routes.map((r) => describeRoute(r)),
    failures: [...felix.failures.values()],
    unresolved: [...felix.unresolved].map(([dst, reason]) => ({ dst, reason })),
  };
}
