// The documents the web page reads from its agent (`/api/...`): what the server builds and the
// page draws, typed once for both. Each is a projection field by field, so nothing the agent
// holds (BGP passwords, WireGuard keys, the datastore's address) reaches a browser by accident.
export type { FlowEndpoint, FlowPolicy, FlowRecord } from './flows.js';

/** `/api/node`: the node and its BGP sessions. */
export interface NodeView {
  node: string;
  address: string;
  addressV6?: string;
  asn: number;
  routerId: string;
  clusterId?: string;
  ready: boolean;
  restarting: boolean;
  /** The agent's clock (ISO 8601): uptimes are counted on it, not the browser's. */
  now: string;
  sessions: SessionView[];
  advertised: { blocks: string[]; borrowed: string[]; services: string[]; serviceAddresses: string[] };
  routes: { learned: number; programmed: number; failures: number; notProgrammed: { dst: string; reason: string }[] };
  /** Whether this agent keeps flow records for `/api/flows`. */
  flows: boolean;
}

export interface SessionView {
  address: string;
  asn: number;
  /** mesh, rr, rr-client, global, node (as `podroute node status`). */
  type: string;
  /** The Node or BGPPeer the session comes from. */
  source: string;
  state: string;
  /** When the current state began (ISO 8601), null when it never did. */
  since: string | null;
  /** Seconds Established, by the agent's clock; null when not Established. */
  upSeconds: number | null;
  info: string;
  prefixesReceived: number;
  prefixesSent: number;
  bfd?: string;
}

export interface RouteRowView {
  prefix: string;
  nextHop: string;
  from: string;
  /** The AS path as `show bgp` writes it: sequences space-separated, sets in braces. */
  asPath: string;
  stale: boolean;
}

/** `/api/routes`: the Loc-RIB and what felix programs, each capped (the totals say how many there are). */
export interface RoutesView {
  bgp: RouteRowView[];
  bgpTotal: number;
  programmed: string[];
  programmedTotal: number;
  unresolved: { dst: string; reason: string }[];
}

export interface PictureNode {
  name: string;
  ipv4?: string;
  ipv6?: string;
  asn: number;
  /** Its route reflector cluster ID, when it is a reflector. */
  reflector?: string;
  labels: Record<string, string>;
}

/** A BGP speaker outside the cluster: a ToR (peered per node or rack) or another router (peered by all). */
export interface PicturePeer {
  /** "BGPPeer/<name>", or the address for a session no BGPPeer names. */
  id: string;
  name: string;
  address: string;
  asn?: number;
  role: 'tor' | 'router';
}

/** A session between a node and a node or peer; its state is known for this node's own sessions only. */
export interface PictureSession {
  /** A node's name. */
  a: string;
  /** A node's name, or a peer's id. */
  b: string;
  address: string;
  type: string;
  state?: string;
}

/** `/api/cluster`: what the agent knows of the cluster, to draw. */
export interface ClusterPicture {
  self: string;
  nodes: PictureNode[];
  peers: PicturePeer[];
  sessions: PictureSession[];
  /** Set when the picture leaves something out (a large cluster), saying what. */
  partial?: string;
}
