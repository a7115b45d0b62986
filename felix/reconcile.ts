// The difference between desired and installed state, as the writes that close it. Pure:
// the Felix class feeds it a dump (resync) or its cache of what it wrote (incremental).

import type { NeighborWrite, RouteWrite } from './dataplane.js';
import { defaultMetric } from './dataplane.js';
import { neighborKey, sameForwarding, sameNeighbor, type InstalledRoute, type Neighbor, type Route } from './model.js';

export interface RouteConflict {
  readonly dst: string;
  /** The route another program holds at this destination and metric. */
  readonly holder: InstalledRoute;
}

export interface RoutePlan {
  readonly writes: RouteWrite[];
  /** Desired routes not written because a route of another protocol holds the key. */
  readonly conflicts: RouteConflict[];
  readonly unchanged: number;
}

/** Installed routes indexed the way planning needs them. */
export interface InstalledIndex {
  /** Ours, one per destination (the default-metric one where there are several). */
  readonly ours: Map<string, InstalledRoute>;
  /** Further routes of ours at a destination already in `ours` (other metrics): all stale. */
  readonly extras: InstalledRoute[];
  /** Routes of other protocols at the default metric, by destination. */
  readonly foreign: Map<string, InstalledRoute>;
}

export function indexInstalled(installed: Iterable<InstalledRoute>, protocol: number): InstalledIndex {
  const ours = new Map<string, InstalledRoute>();
  const extras: InstalledRoute[] = [];
  const foreign = new Map<string, InstalledRoute>();
  for (const r of installed) {
    if (r.protocol === protocol) {
      const had = ours.get(r.dst);
      if (!had) ours.set(r.dst, r);
      else if (r.metric === defaultMetric(r.dst)) {
        extras.push(had);
        ours.set(r.dst, r);
      } else extras.push(r);
    } else if (r.metric === defaultMetric(r.dst)) {
      foreign.set(r.dst, r);
    }
  }
  return { ours, extras, foreign };
}

/**
 * Plans route writes. Only routes with our protocol are ever replaced or deleted; a desired
 * route whose destination is held by a foreign route at the default metric is left alone
 * and reported, never overwritten.
 */
export function planRoutes(desired: readonly Route[], installed: InstalledIndex | Iterable<InstalledRoute>, protocol: number): RoutePlan {
  const index = isIndex(installed) ? installed : indexInstalled(installed, protocol);
  const left = new Map(index.ours);
  const writes: RouteWrite[] = [];
  const conflicts: RouteConflict[] = [];
  let unchanged = 0;
  for (const extra of index.extras) writes.push({ op: 'delete', route: extra, metric: extra.metric });
  for (const d of desired) {
    const keep = left.get(d.dst);
    if (keep) {
      left.delete(d.dst);
      if (sameForwarding(keep, d)) unchanged++;
      else writes.push({ op: 'replace', route: d, metric: keep.metric });
      continue;
    }
    const holder = index.foreign.get(d.dst);
    if (holder) conflicts.push({ dst: d.dst, holder });
    else writes.push({ op: 'create', route: d });
  }
  for (const r of left.values()) writes.push({ op: 'delete', route: r, metric: r.metric });
  return { writes, conflicts, unchanged };
}

/**
 * Plans writes for the given destinations only: what an incremental apply needs when the
 * desired table says which destinations changed. Stale extras wait for the next resync.
 */
export function planChanged(dsts: Iterable<string>, desired: ReadonlyMap<string, Route>, index: InstalledIndex): RoutePlan {
  const writes: RouteWrite[] = [];
  const conflicts: RouteConflict[] = [];
  let unchanged = 0;
  for (const dst of dsts) {
    const want = desired.get(dst);
    const keep = index.ours.get(dst);
    if (want && keep) {
      if (sameForwarding(keep, want)) unchanged++;
      else writes.push({ op: 'replace', route: want, metric: keep.metric });
    } else if (want) {
      const holder = index.foreign.get(dst);
      if (holder) conflicts.push({ dst, holder });
      else writes.push({ op: 'create', route: want });
    } else if (keep) writes.push({ op: 'delete', route: keep, metric: keep.metric });
  }
  return { writes, conflicts, unchanged };
}

function isIndex(x: InstalledIndex | Iterable<InstalledRoute>): x is InstalledIndex {
  return (x as InstalledIndex).ours instanceof Map;
}

/** Plans neighbour writes on devices felix owns: every permanent entry there is felix's. */
export function planNeighbors(desired: readonly Neighbor[], installed: readonly Neighbor[]): NeighborWrite[] {
  const have = new Map(installed.map((n) => [neighborKey(n), n]));
  const writes: NeighborWrite[] = [];
  for (const d of desired) {
    const k = neighborKey(d);
    const h = have.get(k);
    have.delete(k);
    if (!h || !sameNeighbor(h, d)) writes.push({ op: 'replace', neighbor: d });
  }
  for (const stale of have.values()) writes.push({ op: 'delete', neighbor: stale });
  return writes;
}
