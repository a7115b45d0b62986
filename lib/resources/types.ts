// The resources of a podroute cluster, in the shape Calico users already write:
// apiVersion / kind / metadata / spec, with Calico's field names (Kubernetes' for the
// Kubernetes kinds: NetworkPolicy, Namespace).
import {
  API_VERSION_K8S_CORE,
  API_VERSION_K8S_NETWORKING,
  type CalicoNetworkPolicySpec,
  type GlobalNetworkPolicySpec,
  type KubernetesNetworkPolicySpec,
  type NamespaceSpec,
  type TierSpec,
  type WorkloadEndpointPort,
} from './policy-types.js';
import { API_VERSION_K8S_POLICY, type AdminNetworkPolicySpec, type BaselineAdminNetworkPolicySpec } from './admin-policy-types.js';
import type { BGPPeerMaxPrefixes } from './max-prefixes.js';
import type { BGPFilterSpec } from './bgp-filter-types.js';
import type { StagedGlobalNetworkPolicySpec, StagedKubernetesNetworkPolicySpec, StagedNetworkPolicySpec } from './staged-policy-types.js';
import { API_VERSION_K8S_DISCOVERY, type EndpointSliceBody, type ServiceResourceSpec } from './service-types.js';

export * from './policy-types.js';
export * from './admin-policy-types.js';
export * from './service-types.js';
export * from './staged-policy-types.js';
export * from './bgp-filter-types.js';

export const API_VERSION = 'projectcalico.org/v3';
/** Also accepted on input; we always emit API_VERSION so Calico manifests round-trip. */
export const API_VERSION_OWN = 'podroute.io/v1';

export interface ObjectMeta {
  name: string;
  /** Set on the NAMESPACED_KINDS only. */
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** The datastore revision of the last write to this object (set by the datastore, as a string like Kubernetes). */
  resourceVersion?: string;
  creationTimestamp?: string;
}

export type EncapMode = 'Never' | 'Always' | 'CrossSubnet';

export interface NodeSpec {
  bgp?: {
    /** The node's address with prefix length, e.g. 10.0.0.1/24. */
    ipv4Address?: string;
    ipv6Address?: string;
    asNumber?: number;
    routeReflectorClusterID?: string;
  };
  /** The node's WireGuard devices' addresses, from IPAM (written by the node agent, as Calico's node does). */
  wireguard?: {
    interfaceIPv4Address?: string;
    interfaceIPv6Address?: string;
  };
  /** Kubernetes-style `status`, kept in the stored spec (printing puts it back at the top). */
  status?: NodeStatus;
}

/** What a node reports about itself: its WireGuard public keys (the private keys never leave it). */
export interface NodeStatus {
  wireguardPublicKey?: string;
  wireguardPublicKeyV6?: string;
}

export interface IPPoolSpec {
  cidr: string;
  blockSize: number;
  ipipMode: EncapMode;
  vxlanMode: EncapMode;
  natOutgoing?: boolean;
  disabled?: boolean;
  nodeSelector?: string;
}

export interface IPAMAttribute {
  handle_id: string | null;
  secondary: Record<string, string>;
}

export interface IPAMBlockSpec {
  cidr: string;
  /** "host:<node>" while a node holds the block, null when it holds none. */
  affinity: string | null;
  /** One entry per address of the block: an index into attributes, or null when free. */
  allocations: (number | null)[];
  /** Free ordinals, in the order they will be handed out (released ones go to the back). */
  unallocated: number[];
  attributes: IPAMAttribute[];
  strictAffinity?: boolean;
}

export interface IPAMHandleSpec {
  handleID: string;
  /** Addresses this handle holds, counted per block CIDR. */
  block: Record<string, number>;
}

export interface IPAMConfigurationSpec {
  /** No borrowing from other nodes' blocks. */
  strictAffinity?: boolean;
  /** When false a node never claims a new block. */
  autoAllocateBlocks?: boolean;
  /** 0 = unlimited. */
  maxBlocksPerHost?: number;
  /**
   * podroute's own switch. true (our default): a block whose last address is released goes
   * back to the pool even when a node holds its affinity. false: Calico's behaviour, the node
   * keeps its empty affine block.
   */
  releaseEmptyAffineBlocks?: boolean;
}

export interface Community {
  name: string;
  value: string;
}

export interface BGPConfigurationSpec {
  asNumber?: number;
  nodeToNodeMeshEnabled?: boolean;
  listenPort?: number;
  logSeverityScreen?: string;
  serviceClusterIPs?: { cidr: string }[];
  serviceExternalIPs?: { cidr: string }[];
  serviceLoadBalancerIPs?: { cidr: string }[];
  communities?: Community[];
  prefixAdvertisements?: { cidr: string; communities: string[] }[];
  /** Graceful restart time of the mesh sessions, a Go-style duration ("120s"). */
  nodeMeshMaxRestartTime?: string;
  /** TCP-MD5 key of the mesh sessions, as BGPPeer.password. */
  nodeMeshPassword?: BGPPeerSpec['password'];
  /** Interfaces whose routes BIRD would not export; podroute exports none, so this holds already. */
  ignoredInterfaces?: string[];
  /** NodeIP: the speaker listens on the node's address, which is what the node agent does. */
  bindMode?: 'NodeIP';
}

export interface BGPPeerSpec {
  /** "ip", "ip:port" or "[ipv6]:port"; absent when peerSelector picks the peers. */
  peerIP?: string;
  /** Required with peerIP; with peerSelector each picked node's own AS is used. */
  asNumber?: number;
  /** Only this node peers; empty means every node selected by nodeSelector (or all). */
  node?: string;
  nodeSelector?: string;
  peerSelector?: string;
  /** A plain secret (podroute) or Calico's reference to a Kubernetes secret. */
  password?: string | { secretKeyRef: { name: string; key: string } };
  keepOriginalNextHop?: boolean;
  /**
   * GracefulRestart (default): RFC 4724 alone. LongLivedGracefulRestart: RFC 9494 beside it, and
   * maxRestartTime is then the long-lived stale time (default 3600 s), as Calico has it.
   */
  restartMode?: 'GracefulRestart' | 'LongLivedGracefulRestart';
  /** Go-style duration, e.g. "120s": the graceful restart time, or the LLGR stale time (restartMode). */
  maxRestartTime?: string;
  /** podroute's own: per family, how many prefixes the peer may send (see max-prefixes.ts). */
  maxPrefixes?: BGPPeerMaxPrefixes;
  /** UseNodeIP (default): sessions leave from the node's address; None: the kernel picks. */
  sourceAddress?: 'UseNodeIP' | 'None';
  /**
   * How the gateway of a route learned from this peer is chosen: Recursive (default) resolves its
   * next hop through the node's routing table; DirectIfDirectlyConnected, for a peer on a connected
   * network, takes the next hop when it is connected and else the peer itself (BIRD's `gateway direct`).
   */
  birdGatewayMode?: 'Recursive' | 'DirectIfDirectlyConnected';
  /** A gateway the peer is reached through: the node gets a static route to the peer via it. */
  reachableBy?: string;
  /** GTSM (RFC 5082): the peer is this many hops away at most; sessions send TTL 255 and accept no less than 256 - hops. */
  ttlSecurity?: number;
  /** BFDIfDirectlyConnected: BFD on the session when the peer is on one of the node's subnets. */
  failureDetectionMode?: 'None' | 'BFDIfDirectlyConnected';
  /** Our AS on these sessions, in place of the node's (an eBGP session to a ToR with a per-rack AS). */
  localASNumber?: number;
  /** BGPFilters applied to these sessions, in order: the first rule that matches a route decides. */
  filters?: string[];
}

/** The FelixConfiguration fields podroute's felix has a knob for (the others are refused by name). */
export interface FelixConfigurationSpec {
  /** Go-style duration between full route resyncs ("90s"); "0" turns them off. */
  routeRefreshInterval?: string;
  vxlanVNI?: number;
  vxlanPort?: number;
  vxlanMTU?: number;
  vxlanMTUV6?: number;
  ipipMTU?: number;
  /** Encrypt pod traffic between nodes over IPv4 / IPv6 with WireGuard. Default false. */
  wireguardEnabled?: boolean;
  wireguardEnabledV6?: boolean;
  /** UDP ports of the devices. Default 51820 / 51821. */
  wireguardListeningPort?: number;
  wireguardListeningPortV6?: number;
  /** Device names. Default wireguard.cali / wg-v6.cali. */
  wireguardInterfaceName?: string;
  wireguardInterfaceNameV6?: string;
  /** Device MTUs; 0 (the default) means the underlay's 1500 less WireGuard's overhead: 1440 / 1420. */
  wireguardMTU?: number;
  wireguardMTUV6?: number;
  /** Priority of the rule that sends pod traffic to the WireGuard table. Default 99. */
  wireguardRoutingRulePriority?: number;
  /** Go-style duration between keepalives to each peer; "0s" (the default) sends none. */
  wireguardKeepAlive?: string;
  healthHost?: string;
  healthPort?: number;
  healthEnabled?: boolean;
  /** Info only: what podroute logs. */
  logSeverityScreen?: 'Info';
  /** Flow logs on this node: connections and refused packets, with the policy that decided, on the control socket. Default false. */
  flowLogsFileEnabled?: boolean;
  /** Go-style duration of one aggregation window ("15s"). */
  flowLogsFlushInterval?: string;
  /** 0 none, 1 source ports, 2 also source pods by replica set, 3 also destination pods. Default 2 and 1. */
  flowLogsFileAggregationKindForAllowed?: number;
  flowLogsFileAggregationKindForDenied?: number;
  /**
   * Conntrack mark bits (one run of 2 or more, e.g. 0x00ff0000) an Allow rule writes its number
   * into, so an allowed connection is named by its conntrack events alone. Unset: each allowed
   * connection's first packet is logged instead. Only for bits no other program of the node uses.
   */
  flowLogsConntrackMarkMask?: number;
  /**
   * The kernel drops the conntrack events of IPv4 flows with no address in an IP pool before the
   * agent reads them (the node's own and host-network pods' traffic). Default false: a pod whose
   * address is from no pool would lose its flows.
   */
  flowLogsPoolsOnly?: boolean;
}

export interface WorkloadEndpointSpec {
  orchestrator?: string;
  workload?: string;
  node: string;
  pod: string;
  endpoint?: string;
  interfaceName: string;
  mac?: string;
  ipNetworks: string[];
  profiles?: string[];
  /** The pod's named container ports, which policies may name instead of a number. */
  ports?: WorkloadEndpointPort[];
}

export interface SpecOf {
  Node: NodeSpec;
  IPPool: IPPoolSpec;
  IPAMBlock: IPAMBlockSpec;
  IPAMHandle: IPAMHandleSpec;
  IPAMConfiguration: IPAMConfigurationSpec;
  BGPConfiguration: BGPConfigurationSpec;
  BGPPeer: BGPPeerSpec;
  /** Calico's projectcalico.org/v3 BGPFilter: import and export rules that BGPPeers name. */
  BGPFilter: BGPFilterSpec;
  FelixConfiguration: FelixConfigurationSpec;
  WorkloadEndpoint: WorkloadEndpointSpec;
  Namespace: NamespaceSpec;
  /** Calico's projectcalico.org/v3 Tier: policies' order of groups, each with its default action. */
  Tier: TierSpec;
  /** Calico's projectcalico.org/v3 NetworkPolicy. */
  NetworkPolicy: CalicoNetworkPolicySpec;
  GlobalNetworkPolicy: GlobalNetworkPolicySpec;
  /** Kubernetes' networking.k8s.io/v1 NetworkPolicy, under a kind name of its own. */
  KubernetesNetworkPolicy: KubernetesNetworkPolicySpec;
  /** Kubernetes' policy.networking.k8s.io/v1alpha1 AdminNetworkPolicy (cluster-wide). */
  AdminNetworkPolicy: AdminNetworkPolicySpec;
  /** Kubernetes' policy.networking.k8s.io/v1alpha1 BaselineAdminNetworkPolicy (one, named default). */
  BaselineAdminNetworkPolicy: BaselineAdminNetworkPolicySpec;
  /** Calico's staged policies: the policy they preview, evaluated beside the enforced ones without enforcing it. */
  StagedNetworkPolicy: StagedNetworkPolicySpec;
  StagedGlobalNetworkPolicy: StagedGlobalNetworkPolicySpec;
  StagedKubernetesNetworkPolicy: StagedKubernetesNetworkPolicySpec;
  /** Kubernetes' v1 Service; its `status` is kept in the stored spec. */
  Service: ServiceResourceSpec;
  /** Kubernetes' discovery.k8s.io/v1 EndpointSlice; its top-level fields are kept as the stored spec. */
  EndpointSlice: EndpointSliceBody;
}

export type Kind = keyof SpecOf;
export const KINDS: readonly Kind[] = [
  'Node',
  'IPPool',
  'IPAMBlock',
  'IPAMHandle',
  'IPAMConfiguration',
  'BGPConfiguration',
  'BGPPeer',
  'BGPFilter',
  'FelixConfiguration',
  'WorkloadEndpoint',
  'Namespace',
  'Tier',
  'NetworkPolicy',
  'GlobalNetworkPolicy',
  'KubernetesNetworkPolicy',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'StagedNetworkPolicy',
  'StagedGlobalNetworkPolicy',
  'StagedKubernetesNetworkPolicy',
  'Service',
  'EndpointSlice',
];
/** Kinds whose objects live in a namespace (key "namespace/name"). */
export const NAMESPACED_KINDS: readonly Kind[] = [
  'WorkloadEndpoint',
  'NetworkPolicy',
  'KubernetesNetworkPolicy',
  'StagedNetworkPolicy',
  'StagedKubernetesNetworkPolicy',
  'Service',
  'EndpointSlice',
];
/** Kinds written only by IPAM's atomic operations, never by a plain create/update. */
export const IPAM_OWNED_KINDS: readonly Kind[] = ['IPAMBlock', 'IPAMHandle'];

/** The apiVersion a kind is stored and printed with. */
export function apiVersionOf(kind: Kind): string {
  if (kind === 'KubernetesNetworkPolicy') return API_VERSION_K8S_NETWORKING;
  if (kind === 'AdminNetworkPolicy' || kind === 'BaselineAdminNetworkPolicy') return API_VERSION_K8S_POLICY;
  if (kind === 'Namespace' || kind === 'Service') return API_VERSION_K8S_CORE;
  if (kind === 'EndpointSlice') return API_VERSION_K8S_DISCOVERY;
  return API_VERSION;
}

/** The kind as its users write it: Kubernetes' NetworkPolicy is stored as KubernetesNetworkPolicy. */
export function manifestKind(kind: Kind): string {
  return kind === 'KubernetesNetworkPolicy' ? 'NetworkPolicy' : kind;
}

export interface ResourceOf<K extends Kind> {
  /** apiVersionOf(kind). */
  apiVersion: string;
  kind: K;
  metadata: ObjectMeta;
  spec: SpecOf[K];
}

export type Resource = { [K in Kind]: ResourceOf<K> }[Kind];

export type Node = ResourceOf<'Node'>;
export type IPPool = ResourceOf<'IPPool'>;
export type IPAMBlock = ResourceOf<'IPAMBlock'>;
export type IPAMHandle = ResourceOf<'IPAMHandle'>;
export type IPAMConfiguration = ResourceOf<'IPAMConfiguration'>;
export type BGPConfiguration = ResourceOf<'BGPConfiguration'>;
export type BGPPeer = ResourceOf<'BGPPeer'>;
export type BGPFilter = ResourceOf<'BGPFilter'>;
export type FelixConfiguration = ResourceOf<'FelixConfiguration'>;
export type WorkloadEndpoint = ResourceOf<'WorkloadEndpoint'>;
export type Namespace = ResourceOf<'Namespace'>;
export type Tier = ResourceOf<'Tier'>;
export type CalicoNetworkPolicy = ResourceOf<'NetworkPolicy'>;
export type GlobalNetworkPolicy = ResourceOf<'GlobalNetworkPolicy'>;
export type KubernetesNetworkPolicy = ResourceOf<'KubernetesNetworkPolicy'>;
export type AdminNetworkPolicy = ResourceOf<'AdminNetworkPolicy'>;
export type BaselineAdminNetworkPolicy = ResourceOf<'BaselineAdminNetworkPolicy'>;
export type StagedNetworkPolicy = ResourceOf<'StagedNetworkPolicy'>;
export type StagedGlobalNetworkPolicy = ResourceOf<'StagedGlobalNetworkPolicy'>;
export type StagedKubernetesNetworkPolicy = ResourceOf<'StagedKubernetesNetworkPolicy'>;
export type Service = ResourceOf<'Service'>;
export type EndpointSlice = ResourceOf<'EndpointSlice'>;

/** The datastore key of a resource inside its kind: "name", or "namespace/name" when namespaced. */
export function resourceKey(r: { metadata: ObjectMeta }): string {
  return r.metadata.namespace ? `${r.metadata.namespace}/${r.metadata.name}` : r.metadata.name;
}

export const BGP_DEFAULTS = { asNumber: 64512, nodeToNodeMeshEnabled: true, listenPort: 179 } as const;
export const DEFAULT_BLOCK_SIZE: Record<4 | 6, number> = { 4: 26, 6: 122 };
