// The agent's picture of the cluster: the resources it follows, kept current by one datastore
// watch. Every other part of the agent reads from here and nothing else writes to it.
import type { WatchEvent } from '../datastore/index.js';
import type {
  BGPConfiguration,
  BGPFilter,
  BGPPeer,
  EndpointSlice,
  IPAMBlock,
  IPPool,
  Kind,
  Node,
  Resource,
  Service,
  WorkloadEndpoint,
} from '../resources/index.js';
import type { ClusterView } from './peers.js';

/** The kinds the agent watches. */
export const CLUSTER_KINDS: readonly Kind[] = [
  'Node',
  'BGPConfiguration',
  'BGPPeer',
  'BGPFilter',
  'IPPool',
  'IPAMBlock',
  'WorkloadEndpoint',
  'Service',
  'EndpointSlice',
];

export class ClusterCache {
  private readonly nodeMap = new Map<string, Node>();
  private readonly bgpPeerMap = new Map<string, BGPPeer>();
  private readonly bgpFilterMap = new Map<string, BGPFilter>();
  private readonly poolMap = new Map<string, IPPool>();
  private readonly blockMap = new Map<string, IPAMBlock>();
  private readonly workloadMap = new Map<string, WorkloadEndpoint>();
  private readonly serviceMap = new Map<string, Service>();
  private readonly sliceMap = new Map<string, EndpointSlice>();
  private bgpConfig: BGPConfiguration | undefined;
  private readonly changeCounts = new Map<Kind, number>();

  constructor(readonly nodeName: string) {}

  /** How many events of `kind` the cache has taken: unchanged means nothing of that kind changed since. */
  changes(kind: Kind): number {
    return this.changeCounts.get(kind) ?? 0;
  }

  get nodes(): ReadonlyMap<string, Node> {
    return this.nodeMap;
  }
  get bgpPeers(): ReadonlyMap<string, BGPPeer> {
    return this.bgpPeerMap;
  }
  /** BGPFilters by name, which BGPPeers name in `filters`. */
  get bgpFilters(): ReadonlyMap<string, BGPFilter> {
    return this.bgpFilterMap;
  }
  get pools(): ReadonlyMap<string, IPPool> {
    return this.poolMap;
  }
  get blocks(): ReadonlyMap<string, IPAMBlock> {
    return this.blockMap;
  }
  /** This node's workload endpoints only. */
  get workloads(): ReadonlyMap<string, WorkloadEndpoint> {
    return this.workloadMap;
  }
  /** Every Service of the cluster, by "namespace/name". */
  get services(): ReadonlyMap<string, Service> {
    return this.serviceMap;
  }
  /** Every EndpointSlice of the cluster, by "namespace/name". */
  get endpointSlices(): ReadonlyMap<string, EndpointSlice> {
    return this.sliceMap;
  }
  /** BGPConfiguration "default", the cluster-wide one. */
  get config(): BGPConfiguration | undefined {
    return this.bgpConfig;
  }

  /** This node's own Node, once the watch has delivered it. */
  get self(): Node | undefined {
    return this.nodeMap.get(this.nodeName);
  }

  /**
   * Takes one watch event. True when it was about a kind the agent follows (the caller then
   * reconciles); false for `synced` and any other kind.
   */
  apply(e: WatchEvent): boolean {
    if (e.type === 'synced') return false;
    const r: Resource | undefined = e.type === 'put' ? e.resource : undefined;
    this.changeCounts.set(e.kind, this.changes(e.kind) + 1);
    switch (e.kind) {
      case 'Node':
        setOrDelete(this.nodeMap, e.key, r as Node | undefined);
        return true;
      case 'BGPPeer':
        setOrDelete(this.bgpPeerMap, e.key, r as BGPPeer | undefined);
        return true;
      case 'BGPFilter':
        setOrDelete(this.bgpFilterMap, e.key, r as BGPFilter | undefined);
        return true;
      case 'IPPool':
        setOrDelete(this.poolMap, e.key, r as IPPool | undefined);
        return true;
      case 'IPAMBlock':
        setOrDelete(this.blockMap, e.key, r as IPAMBlock | undefined);
        return true;
      case 'WorkloadEndpoint': {
        // An endpoint that moved to another node is no longer ours.
        const w = r as WorkloadEndpoint | undefined;
        if (w && w.spec.node !== this.nodeName) this.workloadMap.delete(e.key);
        else setOrDelete(this.workloadMap, e.key, w);
        return true;
      }
      case 'Service':
        setOrDelete(this.serviceMap, e.key, r as Service | undefined);
        return true;
      case 'EndpointSlice':
        setOrDelete(this.sliceMap, e.key, r as EndpointSlice | undefined);
        return true;
      case 'BGPConfiguration':
        // Calico reads the cluster-wide defaults from the one named "default".
        if (e.key === 'default') this.bgpConfig = r as BGPConfiguration | undefined;
        return true;
      default:
        return false;
    }
  }

  /** What `desiredPeers` needs, seen from `self`. */
  peerView(self: Node): ClusterView {
    return { self, nodes: [...this.nodeMap.values()], config: this.bgpConfig, bgpPeers: [...this.bgpPeerMap.values()] };
  }
}

function setOrDelete<T>(m: Map<string, T>, key: string, value: T | undefined): void {
  if (value === undefined) m.delete(key);
  else m.set(key, value);
}
