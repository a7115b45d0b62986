// A route reflector: a BgpSpeaker whose RIB carries the RFC 4456 hook and cluster ID, with
// clients and non-clients named as such. Clients that get the same routes share one update
// group in the RIB, so the reflector computes and encodes each reflected route once however
// many clients it has; each client costs a queue and what it was sent, not a copy of the table.
import { BgpSpeaker, type DynamicNeighbors, type NeighborConfig, type PeerStatus, type SpeakerOptions } from '../bgp/index.js';
import { checkClusterId, routeReflectorRibOptions } from './rules.js';

export interface RouteReflectorOptions extends SpeakerOptions {
  /** The cluster ID (dotted quad). Default: the router ID, as RFC 4456 §7 suggests. */
  clusterId?: string;
}

export type ReflectorRole = 'client' | 'non-client' | 'ebgp';

export interface ReflectorPeerStatus extends PeerStatus {
  role: ReflectorRole;
  /** Prefixes dropped as loops: our cluster ID in CLUSTER_LIST, our router ID as ORIGINATOR_ID, our AS in AS_PATH. */
  loopRejected: number;
}

export interface ReflectorStatus {
  asn: number;
  routerId: string;
  clusterId: string;
  peers: ReflectorPeerStatus[];
  /** Sum of the peers' loopRejected (of the peers that are still configured). */
  loopRejected: number;
  rib: ReturnType<BgpSpeaker['rib']['stats']>;
  /** One per set of peers that share an Adj-RIB-Out computation. */
  updateGroups: {
    type: 'ebgp' | 'ibgp';
    routeReflectorClient: boolean;
    longLivedGracefulRestart: boolean;
    members: number;
    exportedAttributeSets: number;
  }[];
}

/** SpeakerOptions that make a BgpSpeaker a reflector of cluster `clusterId` (default: the router ID). */
export function reflectorSpeakerOptions(options: RouteReflectorOptions): SpeakerOptions {
  const { clusterId = options.routerId, ...speaker } = options;
  checkClusterId(clusterId);
  return { ...speaker, rib: { ...speaker.rib, ...routeReflectorRibOptions(clusterId) } };
}

/**
 * The reflector's view of a speaker: each peer's role and loop counter, and the update groups.
 * `clients` names statically configured clients whose session is not up (the RIB knows a
 * peer's role only while it has one); a dynamic neighbour's role comes from its range.
 */
export function reflectorStatus(speaker: BgpSpeaker, clusterId: string, clients: ReadonlySet<string> = new Set()): ReflectorStatus {
  const ribPeers = new Map(speaker.rib.peers().map((p) => [p.address, p]));
  let loops = 0;
  const peers = speaker.peerStatus().map((p): ReflectorPeerStatus => {
    const r = ribPeers.get(p.address);
    const client = r ? r.config.routeReflectorClient === true : clients.has(p.address);
    const loopRejected = r?.stats.loopRejected ?? 0;
    loops += loopRejected;
    return { ...p, role: p.type === 'ebgp' ? 'ebgp' : client ? 'client' : 'non-client', loopRejected };
  });
  return {
    asn: speaker.asn,
    routerId: speaker.routerId,
    clusterId,
    peers,
    loopRejected: loops,
    rib: speaker.rib.stats(),
    updateGroups: speaker.rib.updateGroups().map((g) => ({
      type: g.info.type,
      routeReflectorClient: g.info.routeReflectorClient,
      longLivedGracefulRestart: g.info.longLivedGracefulRestart,
      members: g.members.size,
      exportedAttributeSets: g.size,
    })),
  };
}

export class RouteReflector {
  readonly speaker: BgpSpeaker;
  readonly clusterId: string;
  private readonly clients = new Set<string>();

  constructor(options: RouteReflectorOptions) {
    const speakerOptions = reflectorSpeakerOptions(options);
    this.clusterId = options.clusterId ?? options.routerId;
    this.speaker = new BgpSpeaker(speakerOptions);
  }

  /** Listens for sessions; resolves with the port bound. */
  start(): Promise<number | undefined> {
    return this.speaker.start();
  }

  stop(message?: string): Promise<void> {
    return this.speaker.stop(message);
  }

  /** An iBGP peer whose routes go to everyone and who gets everyone's routes. */
  addClient(config: Omit<NeighborConfig, 'routeReflectorClient'>): void {
    this.checkIbgp(config.asn, `client ${config.address}`);
    this.speaker.addPeer({ ...config, routeReflectorClient: true });
    this.clients.add(config.address);
  }

  /**
   * A peer that is not a client: another reflector (same cluster for redundancy, or another
   * cluster in a hierarchy), a full-mesh iBGP router, or an eBGP peer.
   */
  addNonClient(config: Omit<NeighborConfig, 'routeReflectorClient'>): void {
    this.speaker.addPeer({ ...config, routeReflectorClient: false });
  }

  /** Clients that connect from a range (Calico nodes, FRR's `bgp listen range`). */
  addClientRange(d: Omit<DynamicNeighbors, 'routeReflectorClient'>): void {
    for (const asn of Array.isArray(d.asn) ? d.asn : [d.asn]) this.checkIbgp(asn, `client range ${d.range}`);
    this.speaker.addDynamicNeighbors({ ...d, routeReflectorClient: true });
  }

  removePeer(address: string): void {
    this.speaker.removePeer(address);
    this.clients.delete(address);
  }

  status(): ReflectorStatus {
    return reflectorStatus(this.speaker, this.clusterId, this.clients);
  }

  private checkIbgp(asn: number, what: string): void {
    if (asn !== this.speaker.asn)
      throw new TypeError(`${what}: asn ${asn} is not ours (${this.speaker.asn}); route reflector clients are iBGP peers`);
  }
}
