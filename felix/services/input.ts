// What the node agent tells felix about Services: plain data, already resolved for this node.
// The agent has matched selectors, picked the endpoints Kubernetes would use (ready ones; if
// none is ready, the serving-and-terminating ones, as kube-proxy falls back), resolved named
// target ports, and split every Service into one entry per (port, protocol). felix needs no
// Kubernetes logic: it turns this into DNAT in the table policy already owns (`inet podroute`).
//
// Semantics (kube-proxy's):
// - A packet to a frontend (cluster IP, external IP or load-balancer IP : port/protocol, or any
//   of this node's addresses : nodePort) is DNATed to one endpoint, chosen uniformly at random;
//   replies are un-NATed by conntrack.
// - affinityTimeoutSeconds: a client address goes to the endpoint it reached last, until it
//   has been silent that long.
// - externalLocal: traffic arriving from outside the cluster (NodePort, external and LB IPs)
//   goes only to endpoints on this node, keeping the client's address; none here → dropped.
//   Otherwise external traffic is masqueraded to the node's address so replies come back
//   through it. internalLocal: traffic from inside goes only to this node's endpoints.
// - A pod reaching its own service and landing on itself (hairpin) is masqueraded; felix knows
//   such a pod by `local`, so an endpoint on this node must say so.
// - No endpoint at all: new connections are rejected with an ICMP port unreachable (kube-proxy's
//   `reject`), which a TCP client sees as a refused connection; never blackholed silently.
// - A family is served for a port only when it has a cluster IP of that family: an external or
//   load-balancer IP of another family is left out (kube-proxy's proxiers are per family).

export type ServiceProtocol = 'tcp' | 'udp' | 'sctp';

export interface ServiceEndpoint {
  readonly address: string;
  /** The port on the endpoint (targetPort resolved). */
  readonly port: number;
  /** On this node: what the Local traffic policies keep. */
  readonly local: boolean;
}

export interface ServicePort {
  /** Unique and stable: names the chains and counters, e.g. "default/web/http/tcp". */
  readonly id: string;
  readonly protocol: ServiceProtocol;
  readonly port: number;
  /** Cluster IPs (one per family in a dual-stack service); empty for a headless service. */
  readonly clusterIPs: readonly string[];
  /** Reached on every address of this node at this port; absent for ClusterIP services. */
  readonly nodePort?: number;
  /** spec.externalIPs. */
  readonly externalIPs: readonly string[];
  /** status.loadBalancer.ingress[].ip. */
  readonly loadBalancerIPs: readonly string[];
  /** The endpoints to balance over; empty means reject. */
  readonly endpoints: readonly ServiceEndpoint[];
  /** sessionAffinity ClientIP, with its timeout (Kubernetes' default is 10800). */
  readonly affinityTimeoutSeconds?: number;
  /** externalTrafficPolicy: Local. */
  readonly externalLocal?: boolean;
  /** internalTrafficPolicy: Local. */
  readonly internalLocal?: boolean;
}

export interface ServiceInput {
  readonly services: readonly ServicePort[];
  /** This node's addresses, where NodePorts listen; empty: every local address but loopback. */
  readonly nodeAddresses: readonly string[];
  /** Every pool's CIDR: a source inside one is "inside the cluster" for the traffic policies. */
  readonly clusterCidrs: readonly string[];
}

export const EMPTY_SERVICE_INPUT: ServiceInput = { services: [], nodeAddresses: [], clusterCidrs: [] };
