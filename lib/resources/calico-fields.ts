// Every spec field Calico documents for the kinds podroute takes as written, sorted into the ones
// podroute honours and the ones it refuses, each refusal with its reason. A field in neither
// list is unknown, and the error names the closest known one.

/** A field podroute refuses whatever its value, and why. */
export type Refusals = Readonly<Record<string, string>>;

const NOT_SUPPORTED = 'is not supported by podroute';

export const NODE_FIELDS = ['bgp', 'wireguard', 'status'] as const;
export const NODE_REFUSED: Refusals = {
  ipv4VXLANTunnelAddr: `${NOT_SUPPORTED}: the node agent takes the VXLAN tunnel address from IPAM itself and keeps it in an annotation`,
  ipv6VXLANTunnelAddr: `${NOT_SUPPORTED}: the node agent takes the VXLAN tunnel address from IPAM itself and keeps it in an annotation`,
  vxlanTunnelMACAddr: `${NOT_SUPPORTED}: the node agent derives the VXLAN MAC from the node name`,
  vxlanTunnelMACAddrV6: `${NOT_SUPPORTED}: the node agent derives the VXLAN MAC from the node name`,
  orchRefs: `${NOT_SUPPORTED}: nodes are not tied to an orchestrator's objects`,
  addresses: `${NOT_SUPPORTED}: the node's address is spec.bgp.ipv4Address / ipv6Address`,
  interfaces: `${NOT_SUPPORTED}: the node's address is spec.bgp.ipv4Address / ipv6Address`,
};
export const NODE_WIREGUARD_FIELDS = ['interfaceIPv4Address', 'interfaceIPv6Address'] as const;
export const NODE_STATUS_FIELDS = ['wireguardPublicKey', 'wireguardPublicKeyV6'] as const;
export const NODE_STATUS_REFUSED: Refusals = {
  podCIDRs: `${NOT_SUPPORTED}: a node's pod addresses are its IPAM blocks`,
};
export const NODE_BGP_FIELDS = ['ipv4Address', 'ipv6Address', 'asNumber', 'routeReflectorClusterID'] as const;
export const NODE_BGP_REFUSED: Refusals = {
  ipv4IPIPTunnelAddr: `${NOT_SUPPORTED}: the node agent takes tunl0's address from IPAM itself and keeps it in an annotation`,
};

export const IPPOOL_FIELDS = [
  'cidr',
  'blockSize',
  'ipipMode',
  'vxlanMode',
  'natOutgoing',
  'disabled',
  'nodeSelector',
  'allowedUses',
  'assignmentMode',
] as const;
export const IPPOOL_REFUSED: Refusals = {
  disableBGPExport: `${NOT_SUPPORTED}: every pool's blocks are advertised`,
  ipip: 'is the v1 form, not taken: write ipipMode',
  'nat-outgoing': 'is the v1 form, not taken: write natOutgoing',
  awsSubnetID: `${NOT_SUPPORTED}: there is no AWS secondary-address dataplane`,
  namespaceSelector: `${NOT_SUPPORTED}: pools are chosen by node, not by namespace`,
};

export const IPAM_CONFIGURATION_FIELDS = ['strictAffinity', 'autoAllocateBlocks', 'maxBlocksPerHost', 'releaseEmptyAffineBlocks'] as const;
export const IPAM_CONFIGURATION_REFUSED: Refusals = {
  kubeVirtVMAddressPersistence: `${NOT_SUPPORTED}: there are no KubeVirt workloads`,
};

export const BGP_CONFIGURATION_FIELDS = [
  'asNumber',
  'nodeToNodeMeshEnabled',
  'listenPort',
  'logSeverityScreen',
  'serviceClusterIPs',
  'serviceExternalIPs',
  'serviceLoadBalancerIPs',
  'communities',
  'prefixAdvertisements',
  'nodeMeshMaxRestartTime',
  'nodeMeshPassword',
  'ignoredInterfaces',
  'bindMode',
] as const;
export const BGP_CONFIGURATION_REFUSED: Refusals = {
  localWorkloadPeeringIPV4: `${NOT_SUPPORTED}: workloads do not peer with their node`,
  localWorkloadPeeringIPV6: `${NOT_SUPPORTED}: workloads do not peer with their node`,
  programClusterRoutes: `${NOT_SUPPORTED}: the node agent always programs the routes it learns`,
};

export const BGP_PEER_FIELDS = [
  'node',
  'nodeSelector',
  'peerIP',
  'asNumber',
  'peerSelector',
  'password',
  'keepOriginalNextHop',
  'maxRestartTime',
  'sourceAddress',
  'numAllowedLocalASNumbers',
  'ttlSecurity',
  'failureDetectionMode',
  'restartMode',
  'nextHopMode',
  'maxPrefixes',
  'birdGatewayMode',
  'reachableBy',
  'localASNumber',
  'filters',
] as const;
export const BGP_PEER_REFUSED: Refusals = {
  localWorkloadSelector: `${NOT_SUPPORTED}: workloads do not peer with their node`,
  reversePeeringMode: `${NOT_SUPPORTED}: both ends of a node-to-node peering are derived alike`,
};

export const BGP_FILTER_FIELDS = ['exportV4', 'importV4', 'exportV6', 'importV6'] as const;
export const BGP_FILTER_RULE_FIELDS = ['cidr', 'matchOperator', 'prefixLength', 'source', 'action'] as const;
export const BGP_FILTER_RULE_REFUSED: Refusals = {
  interface: `${NOT_SUPPORTED}: its speaker does not take routes from the kernel, so a route has no interface to match`,
  peerType: `${NOT_SUPPORTED}: give eBGP and iBGP peers BGPPeers of their own, each with its filters`,
  communities: `${NOT_SUPPORTED}: rules match by prefix and source only`,
  asPathPrefix: `${NOT_SUPPORTED}: rules match by prefix and source only`,
  priority: `${NOT_SUPPORTED}: podroute's routes carry no priority to match`,
  operations: `${NOT_SUPPORTED}: a rule accepts or rejects a route as it is`,
};

/** FelixConfiguration fields podroute's felix and node agent have a knob for. */
export const FELIX_FIELDS = [
  'routeRefreshInterval',
  'vxlanVNI',
  'vxlanPort',
  'vxlanMTU',
  'vxlanMTUV6',
  'ipipMTU',
  'healthHost',
  'healthPort',
  'healthEnabled',
  'logSeverityScreen',
  'wireguardEnabled',
  'wireguardEnabledV6',
  'wireguardListeningPort',
  'wireguardListeningPortV6',
  'wireguardInterfaceName',
  'wireguardInterfaceNameV6',
  'wireguardMTU',
  'wireguardMTUV6',
  'wireguardRoutingRulePriority',
  'wireguardKeepAlive',
  'flowLogsFileEnabled',
  'flowLogsFlushInterval',
  'flowLogsFileAggregationKindForAllowed',
  'flowLogsFileAggregationKindForDenied',
  'flowLogsConntrackMarkMask',
  'flowLogsPoolsOnly',
] as const;

/**
 * FelixConfiguration fields Calico documents that podroute does not take; each is refused by
 * name ("not supported by podroute"), never dropped.
 */
export const FELIX_REFUSED_NAMES: readonly string[] = [
  'allowIPIPPacketsFromWorkloads',
  'allowVXLANPacketsFromWorkloads',
  'awsSrcDstCheck',
  'bpfEnabled',
  'bpfConnectTimeLoadBalancing',
  'bpfExternalServiceMode',
  'bpfKubeProxyIptablesCleanupEnabled',
  'bpfLogLevel',
  'bpfDataIfacePattern',
  'chainInsertMode',
  'defaultEndpointToHostAction',
  'deviceRouteProtocol',
  'deviceRouteSourceAddress',
  'deviceRouteSourceAddressIPv6',
  'disableConntrackInvalidCheck',
  'endpointReportingEnabled',
  'endpointReportingDelay',
  'externalNodesCIDRList',
  'failsafeInboundHostPorts',
  'failsafeOutboundHostPorts',
  'featureDetectOverride',
  'floatingIPs',
  'genericXDPEnabled',
  'interfaceExclude',
  'interfacePrefix',
  'interfaceRefreshInterval',
  'ipsetsRefreshInterval',
  'iptablesBackend',
  'iptablesFilterAllowAction',
  'iptablesLockTimeout',
  'iptablesMangleAllowAction',
  'iptablesMarkMask',
  'iptablesNATOutgoingInterfaceFilter',
  'iptablesPostWriteCheckInterval',
  'iptablesRefreshInterval',
  'ipv6Support',
  'kubeNodePortRanges',
  'logFilePath',
  'logPrefix',
  'logSeverityFile',
  'logSeveritySys',
  'maxIpsetSize',
  'metadataAddr',
  'metadataPort',
  'mtuIfacePattern',
  'natOutgoingAddress',
  'natPortRange',
  'netlinkTimeout',
  'nftablesMode',
  'openstackRegion',
  'policySyncPathPrefix',
  'prometheusGoMetricsEnabled',
  'prometheusMetricsEnabled',
  'prometheusMetricsHost',
  'prometheusMetricsPort',
  'prometheusProcessMetricsEnabled',
  'prometheusWireGuardMetricsEnabled',
  'removeExternalRoutes',
  'reportingInterval',
  'reportingTTL',
  'routeRefreshIntervalJitter',
  'routeSource',
  'routeSyncDisabled',
  'routeTableRange',
  'routeTableRanges',
  'serviceLoopPrevention',
  'sidecarAccelerationEnabled',
  'usageReportingEnabled',
  'usageReportingInitialDelay',
  'usageReportingInterval',
  'useInternalDataplaneDriver',
  'dataplaneDriver',
  'wireguardEnabled',
  'wireguardEnabledV6',
  'wireguardInterfaceName',
  'wireguardListeningPort',
  'wireguardMTU',
  'wireguardRoutingRulePriority',
  'xdpEnabled',
  'xdpRefreshInterval',
  'healthTimeoutOverrides',
  'debugMemoryProfilePath',
  'debugDisableLogDropping',
  'debugSimulateCalcGraphHangAfter',
  'debugSimulateDataplaneHangAfter',
  'bpfMapSizeNATFrontend',
  'bpfMapSizeRoute',
  'bpfPSNATPorts',
].filter((n) => !(FELIX_FIELDS as readonly string[]).includes(n));

export const FELIX_REFUSED: Refusals = {
  ...Object.fromEntries(FELIX_REFUSED_NAMES.map((n) => [n, `${NOT_SUPPORTED}: its felix has no such setting`])),
  vxlanEnabled: `${NOT_SUPPORTED}: felix makes the VXLAN device when a pool has vxlanMode Always or CrossSubnet`,
  ipipEnabled: `${NOT_SUPPORTED}: felix makes the IPIP device when a pool has ipipMode Always or CrossSubnet`,
  wireguardHostEncryptionEnabled: `${NOT_SUPPORTED}: WireGuard carries pod traffic only, traffic between the nodes' own addresses goes in clear`,
  wireguardThreadingEnabled: `${NOT_SUPPORTED}: the kernel's WireGuard defaults are kept`,
};
