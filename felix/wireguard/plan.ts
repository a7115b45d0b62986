// Desired WireGuard state against what the kernel holds → the writes that make them equal (pure).
// Only the difference is written: a node joining costs one peer and its routes, not the mesh.
import type { InstalledPeer, WireguardRouteWrite } from './dataplane.js';
import type { WireguardPeerSpec, WireguardRoute, WireguardRule } from './desired.js';

export interface PeerPlan {
  /** Peers to add, or whose endpoint, allowed IPs or keepalive differ. */
  readonly set: readonly WireguardPeerSpec[];
  /** Public keys of peers no node has any more (a node gone, or its key rotated). */
  readonly remove: readonly string[];
}

export function planPeers(want: readonly WireguardPeerSpec[], have: readonly InstalledPeer[]): PeerPlan {
  const installed = new Map(have.map((p) => [p.publicKey, p]));
  const set = want.filter((p) => {
    const h = installed.get(p.publicKey);
    return !h || h.endpoint !== p.endpoint || h.keepAliveSeconds !== p.keepAliveSeconds || !sameSet(h.allowedIps, p.allowedIps);
  });
  const wanted = new Set(want.map((p) => p.publicKey));
  const remove = have.filter((p) => !wanted.has(p.publicKey)).map((p) => p.publicKey);
  return { set, remove };
}

export function planTableRoutes(want: readonly WireguardRoute[], have: readonly WireguardRoute[]): WireguardRouteWrite[] {
  const installed = new Map(have.map((r) => [r.dst, r]));
  const writes: WireguardRouteWrite[] = [];
  for (const r of want) if (installed.get(r.dst)?.dev !== r.dev) writes.push({ op: 'replace', route: r });
  const wanted = new Set(want.map((r) => r.dst));
  for (const r of have) if (!wanted.has(r.dst)) writes.push({ op: 'delete', route: r });
  return writes;
}

export interface RulePlan {
  readonly add?: WireguardRule;
  readonly remove: readonly WireguardRule[];
}

/**
 * Ours are the rules that send to our table everything without our mark: the wanted one stays,
 * any other of that shape (an old priority or table) goes. Without `want`, all of them go.
 */
export function planRules(want: WireguardRule | undefined, have: readonly WireguardRule[], fwmark: number): RulePlan {
  const ours = have.filter((r) => r.fwmark === fwmark);
  const same = (r: WireguardRule) => want !== undefined && r.priority === want.priority && r.table === want.table;
  return {
    ...(want && !ours.some(same) ? { add: want } : {}),
    remove: ours.filter((r) => !same(r)),
  };
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const s = new Set(a);
  return b.every((x) => s.has(x));
}
