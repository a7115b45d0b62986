// Kubernetes Services and EndpointSlices, in Kubernetes' own field names (core/v1 Service,
// discovery.k8s.io/v1 EndpointSlice), so manifests apply as written. A Service's `status` and
// an EndpointSlice's top-level fields (addressType, endpoints, ports) are kept as written; how
// they sit in the store is the validator's business, not the user's.

export type ServiceProtocol = 'TCP' | 'UDP' | 'SCTP';

export interface ServicePortSpec {
  /** Required when a Service has more than one port; EndpointSlice ports match by this name. */
  name?: string;
  protocol?: ServiceProtocol;
  port: number;
  /** A number, or the name of a container port (resolved through the endpoints' named ports). */
  targetPort?: number | string;
  nodePort?: number;
}

export interface ServiceSpec {
  type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer';
  /** Label selector (equality only, as Kubernetes): pods it matches become the endpoints. */
  selector?: Record<string, string>;
  /** `None` makes a headless service: nothing is load-balanced. */
  clusterIP?: string;
  clusterIPs?: string[];
  ipFamilies?: ('IPv4' | 'IPv6')[];
  ipFamilyPolicy?: 'SingleStack' | 'PreferDualStack' | 'RequireDualStack';
  ports?: ServicePortSpec[];
  externalIPs?: string[];
  loadBalancerIP?: string;
  sessionAffinity?: 'None' | 'ClientIP';
  sessionAffinityConfig?: { clientIP?: { timeoutSeconds?: number } };
  externalTrafficPolicy?: 'Cluster' | 'Local';
  internalTrafficPolicy?: 'Cluster' | 'Local';
}

export interface ServiceStatus {
  loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] };
}

export interface EndpointConditions {
  /** Absent means ready (Kubernetes' rule for consumers). */
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
}

export interface EndpointSliceEndpoint {
  addresses: string[];
  conditions?: EndpointConditions;
  nodeName?: string;
  targetRef?: { kind?: string; namespace?: string; name?: string };
}

export interface EndpointSlicePort {
  name?: string;
  protocol?: ServiceProtocol;
  port?: number;
}

export interface EndpointSliceBody {
  addressType: 'IPv4' | 'IPv6';
  endpoints: EndpointSliceEndpoint[];
  ports?: EndpointSlicePort[];
}

/** The label that ties an EndpointSlice to its Service, as Kubernetes sets it. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

export const API_VERSION_K8S_DISCOVERY = 'discovery.k8s.io/v1';

/**
 * A Service as the store holds it: the store has apiVersion/kind/metadata/spec only, so the
 * Kubernetes `status` rides inside `spec` (printing puts it back at the top). Defaults filled:
 * type ClusterIP, port protocol TCP, targetPort = port, sessionAffinity None,
 * internalTrafficPolicy Cluster, externalTrafficPolicy Cluster for NodePort/LoadBalancer,
 * ClientIP's timeoutSeconds 10800.
 */
export interface ServiceResourceSpec extends ServiceSpec {
  status?: ServiceStatus;
}

/** clusterIP `None`: a headless service, no cluster IP and nothing load-balanced. */
export const HEADLESS = 'None';

/** Kubernetes' defaults for NodePorts (the API server's --service-node-port-range) and ClientIP affinity. */
export const NODE_PORT_RANGE: readonly [number, number] = [30000, 32767];
export const DEFAULT_AFFINITY_TIMEOUT_SECONDS = 10800;

/** The EndpointSlice label naming the writer, as Kubernetes' controller sets it. */
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
