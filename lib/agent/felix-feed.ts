// Felix's input from the agent's two sources: the cluster cache (local workloads, pools, the
// other nodes' VTEPs, this node's own VTEP) and the speaker's best paths (learned routes with
// their ECMP next hops). Learned routes go to felix as deltas, one per changed prefix; the
// cache's parts go only when they differ from what felix was last given, so a cluster event
// that changes nothing here costs felix nothing, and a route change costs what it changes.
import type { BestPathChange } from '../../bgp/index.js';
import { cidrAddress } from '../../ip/index.js';
import {
  nextHopKey,
  type Felix,
  type FelixInput,
  type LearnedNextHop,
  type LocalWorkload,
  type PoolConfig,
  type RemoteRoute,
  type RemoteVtep,
  type StaticRoute,
} from '../../felix/index.js';
import {
  type Node,
  IPIP_ADDRESS_ANNOTATION,
  VXLAN_ADDRESS_ANNOTATION,
  VXLAN_ADDRESS_V6_ANNOTATION,
  VXLAN_MAC_ANNOTATION,
  VXLAN_MAC_V6_ANNOTATION,
} from '../resources/index.js';
import type { ClusterCache } from './cluster-cache.js';
import { type DesiredPeer, nodeIpv4, nodeIpv6 } from './peers.js';

export interface FelixNode {
  /** The node's IPv4 address with prefix length; '' on an IPv6-only node. */
  address: string;
  /** The node's IPv6 address with prefix length, when it has one. */
  addressV6?: string;
  uplink: string;
}

/**
 * The next hops felix should use for a prefix: those of the ECMP set learned from peers,
 * without our own address or an unspecified one (a route we originate is not forwarded).
 */
export function learnedNextHops(c: BestPathChange, selfAddresses: string | readonly string[]): LearnedNextHop[] {
  return nextHopsBesides(c, bareAddresses(selfAddresses));
}

/** The node's addresses without their lengths ('' is an address the node does not have). */
function bareAddresses(addresses: string | readonly string[]): ReadonlySet<string> {
  const list = typeof addresses === 'string' ? [addresses] : addresses;
  return new Set(list.filter((a) => a !== '').map((a) => cidrAddress(a, 'node address')));
}

function nextHopsBesides(c: BestPathChange, self: ReadonlySet<string>, direct?: ReadonlySet<string>): LearnedNextHop[] {
  if (!c.best) return [];
  const hops = new Map<string, LearnedNextHop>();
  for (const r of c.multipath) {
    if (!r.peer || r.peer.type === 'local') continue;
    const h = r.nextHop;
    if (self.has(h) || h === '0.0.0.0' || h === '::') continue;
    // A peer in direct mode (birdGatewayMode DirectIfDirectlyConnected): felix falls back to it.
    const hop: LearnedNextHop = direct?.has(r.peer.address) ? { address: h, peer: r.peer.address } : h;
    hops.set(nextHopKey(hop), hop);
  }
  return [...hops.values()];
}

/** Per family: a Node's address, and the annotations that give its VTEP's address and MAC. */
const VTEP_FAMILIES = [
  [nodeIpv4, VXLAN_ADDRESS_ANNOTATION, VXLAN_MAC_ANNOTATION],
  [nodeIpv6, VXLAN_ADDRESS_V6_ANNOTATION, VXLAN_MAC_V6_ANNOTATION],
] as const;

/** The whole felix input for `self`, from the cache, the learned routes and the blocks we announce. */
export function felixInput(
  cache: ClusterCache,
  self: Node,
  node: FelixNode,
  ownBlocks: readonly string[],
  remoteRoutes: readonly RemoteRoute[],
): FelixInput {
  const workloads: LocalWorkload[] = [...cache.workloads.values()]
    .filter((w) => w.spec.ipNetworks.length > 0)
    .map((w) => ({ iface: w.spec.interfaceName, addresses: w.spec.ipNetworks }));
  const pools: PoolConfig[] = [...cache.pools.values()].map((p) => ({
    cidr: p.spec.cidr,
    ipipMode: p.spec.ipipMode,
    vxlanMode: p.spec.vxlanMode,
  }));
  const remoteVteps: RemoteVtep[] = [];
  for (const n of cache.nodes.values()) {
    const an = n.metadata.annotations;
    if (an === undefined || n.metadata.name === cache.nodeName) continue;
    for (const [address, vtepAnnotation, macAnnotation] of VTEP_FAMILIES) {
      const vtepIp = an[vtepAnnotation];
      const vtepMac = an[macAnnotation];
      // Most nodes of a BGP-routed cluster have no VTEP: their addresses are not worth parsing.
      if (!vtepIp || !vtepMac) continue;
      const nodeIp = address(n);
      if (nodeIp) remoteVteps.push({ nodeIp, vtepIp, vtepMac });
    }
  }
  const a = self.metadata.annotations ?? {};
  return {
    node: {
      ...(node.address ? { addressV4: node.address } : {}),
      ...(node.addressV6 ? { addressV6: node.addressV6 } : {}),
      uplink: node.uplink,
      vxlanTunnelAddressV4: a[VXLAN_ADDRESS_ANNOTATION],
      vxlanTunnelMacV4: a[VXLAN_MAC_ANNOTATION],
      ...(a[VXLAN_ADDRESS_V6_ANNOTATION]
        ? { vxlanTunnelAddressV6: a[VXLAN_ADDRESS_V6_ANNOTATION], vxlanTunnelMacV6: a[VXLAN_MAC_V6_ANNOTATION] }
        : {}),
      ...(a[IPIP_ADDRESS_ANNOTATION] ? { ipipTunnelAddress: a[IPIP_ADDRESS_ANNOTATION] } : {}),
    },
    workloads,
    ownBlocks,
    remoteRoutes,
    pools,
    remoteVteps,
  };
}

export class FelixFeed {
  /** prefix → sorted next hops. */
  private readonly remote = new Map<string, LearnedNextHop[]>();
  /** Peers whose next hops felix takes in direct mode. */
  private direct: ReadonlySet<string> = new Set();
  /** The static routes felix was last given (reachableBy), as text. */
  private statics = '[]';
  /** What felix was last given of each cache-derived part, as text to compare. */
  private readonly given = new Map<keyof FelixInput, string>();

  constructor(
    private readonly felix: Felix,
    private readonly log: (event: string, fields: Record<string, unknown>) => void,
  ) {}

  /** Takes best-path changes into the learned routes and hands felix those that changed. */
  learn(changes: readonly BestPathChange[], selfAddress: string | readonly string[]): void {
    const changed = new Map<string, LearnedNextHop[]>();
    const self = bareAddresses(selfAddress);
    for (const c of changes) {
      const hops = nextHopsBesides(c, self, this.direct).sort(byKey);
      const had = this.remote.get(c.prefix);
      if (had ? sameHops(had, hops) : hops.length === 0) {
        changed.delete(c.prefix); // back where it was within this batch
        continue;
      }
      if (hops.length === 0) this.remote.delete(c.prefix);
      else this.remote.set(c.prefix, hops);
      changed.set(c.prefix, hops);
    }
    if (changed.size === 0) return;
    try {
      this.felix.changeRemoteRoutes([...changed].map(([prefix, nextHops]) => ({ prefix, nextHops })));
    } catch (e) {
      this.log('felix-input-error', { error: (e as Error).message });
    }
  }

  /**
   * The node's peers: those in direct gateway mode, for the next hops learned from now on (a
   * change of mode restarts the session, so its routes come again), and the static routes
   * their reachableBy asks for.
   */
  peers(peers: readonly DesiredPeer[]): void {
    this.direct = new Set(peers.filter((p) => p.directGateway).map((p) => p.address));
    const staticRoutes: StaticRoute[] = peers
      .filter((p) => p.reachableBy !== undefined)
      .map((p) => ({ prefix: `${p.address}/${p.address.includes(':') ? 128 : 32}`, via: p.reachableBy! }));
    const text = JSON.stringify(staticRoutes);
    if (text === this.statics) return;
    try {
      this.felix.update({ staticRoutes });
      this.statics = text;
    } catch (e) {
      this.log('felix-input-error', { error: (e as Error).message });
    }
  }

  get learnedCount(): number {
    return this.remote.size;
  }

  /** Learned routes as felix is given them (prefix → next hops). */
  learnedRoutes(): RemoteRoute[] {
    return [...this.remote].map(([prefix, nextHops]) => ({ prefix, nextHops }));
  }

  /**
   * Hands felix the parts of its input from the cache that changed since the last push.
   * Input felix refuses is logged and leaves felix as it was.
   */
  push(cache: ClusterCache, self: Node, node: FelixNode, ownBlocks: readonly string[]): void {
    const { remoteRoutes: _learned, ...parts } = felixInput(cache, self, node, ownBlocks, []);
    const partial: Partial<FelixInput> = {};
    const texts = new Map<keyof FelixInput, string>();
    for (const [key, value] of Object.entries(parts) as [keyof FelixInput, unknown][]) {
      const text = JSON.stringify(value);
      texts.set(key, text);
      if (this.given.get(key) !== text) Object.assign(partial, { [key]: value });
    }
    if (Object.keys(partial).length === 0) return;
    try {
      this.felix.update(partial);
      for (const [key, text] of texts) this.given.set(key, text);
    } catch (e) {
      this.log('felix-input-error', { error: (e as Error).message });
    }
  }
}

function sameHops(a: readonly LearnedNextHop[], b: readonly LearnedNextHop[]): boolean {
  return a.length === b.length && a.every((h, i) => nextHopKey(h) === nextHopKey(b[i]!));
}

function byKey(a: LearnedNextHop, b: LearnedNextHop): number {
  const x = nextHopKey(a),
    y = nextHopKey(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
