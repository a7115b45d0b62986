// Helpers shared by tests that run several daemons: one interface over all of them, and
// waits phrased in BGP terms.
import type { Family, PeerStatus, RibRoute, RouterConfig } from './bgp-config.js';
import { waitFor } from './wait.js';

/** What every daemon runner offers (Frr, Bird, Gobgp). */
export interface BgpDaemon {
  readonly kind: string;
  readonly config: RouterConfig;
  peers(): Promise<PeerStatus[]>;
  routes(family?: Family): Promise<RibRoute[]>;
  stop(): Promise<void>;
}

/** Waits until every configured peer of `daemon` is Established. */
export async function waitEstablished(daemon: BgpDaemon, timeoutMs = 30_000): Promise<PeerStatus[]> {
  return waitFor(() => daemon.peers(), {
    what: `${daemon.kind} ${daemon.config.routerId}: all ${daemon.config.peers.length} sessions Established`,
    until: (peers) => peers.length === daemon.config.peers.length && peers.every((p) => p.established),
    timeoutMs,
  });
}

/** Waits until `daemon` holds a path for every prefix in `prefixes` (optionally matching `where`). */
export async function waitRoutes(
  daemon: BgpDaemon,
  family: Family,
  prefixes: string[],
  options: { where?: (route: RibRoute) => boolean; timeoutMs?: number } = {},
): Promise<RibRoute[]> {
  const where = options.where ?? (() => true);
  return waitFor(() => daemon.routes(family), {
    what: `${daemon.kind} ${daemon.config.routerId}: ${family} routes ${prefixes.join(', ')}`,
    until: (routes) => prefixes.every((prefix) => routes.some((r) => r.prefix === prefix && where(r))),
    timeoutMs: options.timeoutMs ?? 20_000,
  });
}

/** Waits until `daemon` holds no path for any of `prefixes`. */
export async function waitNoRoutes(daemon: BgpDaemon, family: Family, prefixes: string[], timeoutMs = 20_000): Promise<RibRoute[]> {
  return waitFor(() => daemon.routes(family), {
    what: `${daemon.kind} ${daemon.config.routerId}: ${family} routes ${prefixes.join(', ')} gone`,
    until: (routes) => !routes.some((r) => prefixes.includes(r.prefix)),
    timeoutMs,
  });
}
