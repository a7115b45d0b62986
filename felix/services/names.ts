// The names services take in the one table (`inet podroute`). Fixed objects start `svc-`; a
// service port's chains and sets start with what they are and the family, then the port's id
// (shortened with a hash when nft could not read it as it is, as policy names are), so `nft list`
// shows which service a chain is for. None of them can meet a policy name (see felix/policy/names.ts).
import { nftName } from '../policy/names.js';

export type Family = 4 | 6;

/** Base chains: DNAT before routing (prerouting, and output for the node's own traffic), masquerade after. */
export const NAT_PREROUTING = 'svc-nat-prerouting';
export const NAT_OUTPUT = 'svc-nat-output';
export const NAT_POSTROUTING = 'svc-nat-postrouting';
/** Base chains that reject new connections to a frontend with no endpoint, before DNAT and before policy. */
export const FILTER_INPUT = 'svc-filter-input';
export const FILTER_FORWARD = 'svc-filter-forward';
export const FILTER_OUTPUT = 'svc-filter-output';

/** Looks the packet's destination up in the frontend maps (kube-proxy's `services`). */
export const DISPATCH = 'svc-dispatch';
/** Looks it up in the no-endpoint maps (kube-proxy's `endpoints-check`). */
export const CHECK = 'svc-check';
export const REJECT = 'svc-reject';
export const MARK_MASQUERADE = 'svc-mark-masq';

/** `address . protocol . port` → the service's chain (cluster, external and load-balancer IPs). */
export const ipsMap = (f: Family): string => `svc-ips-v${f}`;
/** `protocol . port` → the service's external chain, for packets to this node's addresses. */
export const nodePortsMap = (f: Family): string => `svc-nodeports-v${f}`;
/** The same keys → `goto svc-reject` (no endpoint at all) or `drop` (none for this traffic policy). */
export const noEndpointIpsMap = (f: Family): string => `svc-noep-ips-v${f}`;
export const noEndpointNodePortsMap = (f: Family): string => `svc-noep-nodeports-v${f}`;
/**
 * `frontend . i` → endpoint i's `address . port`, what the DNAT of a port without session affinity
 * reads (`… numgen random mod N map @…`): by address (cluster, external and load-balancer IPs) or
 * by NodePort, over every endpoint or this node's alone, one map per protocol (nft declares the
 * port of the data as the protocol's) and shard (a hash of the port's id picks it, so a change
 * rebuilds one small map). A changed endpoint is elements here.
 */
export const endpointsMap = (f: Family, protocol: string, shard: number): string => `svc-eps-${protocol}-v${f}-${shard}`;
export const localEndpointsMap = (f: Family, protocol: string, shard: number): string => `svc-local-eps-${protocol}-v${f}-${shard}`;
export const nodePortEndpointsMap = (f: Family, protocol: string, shard: number): string => `svc-np-eps-${protocol}-v${f}-${shard}`;
export const nodePortLocalEndpointsMap = (f: Family, protocol: string, shard: number): string =>
  `svc-np-local-eps-${protocol}-v${f}-${shard}`;
/** The pools: a source inside is "inside the cluster". */
export const clusterSet = (f: Family): string => `svc-cluster-v${f}`;
/** `a . a` for each endpoint on this node: a connection DNATed back to its own source (hairpin). */
export const hairpinSet = (f: Family): string => `svc-hairpin-v${f}`;
/** This node's addresses that take NodePorts, when the input names them. */
export const nodePortIpsSet = (f: Family): string => `svc-nodeport-ips-v${f}`;

/** Every endpoint of the port (Cluster policy). */
export const clusterChain = (id: string, f: Family): string => nftName(`cluster${f}-`, id);
/** This node's endpoints of the port (Local policy). */
export const localChain = (id: string, f: Family): string => nftName(`local${f}-`, id);
/** External traffic (NodePort, external and load-balancer IPs): masquerade or keep the client's address, then a policy chain. */
export const externalChain = (id: string, f: Family): string => nftName(`external${f}-`, id);

/** NodePort traffic of a port without session affinity (its endpoints are keyed by the NodePort). */
export const nodePortChain = (id: string, f: Family): string => nftName(`nodeport${f}-`, id);

const endpointKey = (id: string, address: string, port: number): string => `${id}/${address}/${port}`;
/** One endpoint of a port with session affinity: its affinity update, then DNAT. */
export const endpointChain = (id: string, address: string, port: number, f: Family): string =>
  nftName(`endpoint${f}-`, endpointKey(id, address, port));
/** The clients that last reached this endpoint of this port, each for the affinity timeout. */
export const affinitySet = (id: string, address: string, port: number, f: Family): string =>
  nftName(`affinity${f}-`, endpointKey(id, address, port));

/** Rule ids (counters): packets rejected for want of an endpoint, connections masqueraded. */
export const REJECT_ID = 'services/reject';
export const MASQUERADE_ID = 'services/masquerade';
export const HAIRPIN_ID = 'services/hairpin';
