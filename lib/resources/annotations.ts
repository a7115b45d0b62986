// podroute's own annotations on resources: where our resources have no field for something
// the agent, the CNI plugin and IPAM's check all read.

/** On a Node: its VXLAN tunnel endpoint address, from one of its blocks (Calico's IPv4VXLANTunnelAddr). */
export const VXLAN_ADDRESS_ANNOTATION = 'podroute.io/vxlan-tunnel-address';
/** On a Node: its VXLAN device MAC. */
export const VXLAN_MAC_ANNOTATION = 'podroute.io/vxlan-tunnel-mac';
/** On a Node: tunl0's address, from one of its blocks (Calico's IPv4IPIPTunnelAddr). */
export const IPIP_ADDRESS_ANNOTATION = 'podroute.io/ipip-tunnel-address';
/** On a Node: its IPv6 VXLAN tunnel endpoint address, from one of its IPv6 blocks (Calico's IPv6VXLANTunnelAddr). */
export const VXLAN_ADDRESS_V6_ANNOTATION = 'podroute.io/vxlan-tunnel-address-v6';
/** On a Node: its IPv6 VXLAN device MAC (Calico's VXLANTunnelMACAddrV6). */
export const VXLAN_MAC_V6_ANNOTATION = 'podroute.io/vxlan-tunnel-mac-v6';
/** On a WorkloadEndpoint: the container ID, which is also its IPAM handle. */
export const CONTAINER_ID_ANNOTATION = 'podroute.io/container-id';
/**
 * On a Node: the node is being taken out of service (`podroute node drain`, with the time it was
 * asked). Its agent announces its routes again with GRACEFUL_SHUTDOWN (RFC 8326), waits for its
 * peers to move away, then closes its sessions and keeps them closed; on SIGTERM it drains so
 * instead of restarting gracefully. Removing the annotation brings the sessions back.
 */
export const DRAIN_ANNOTATION = 'podroute.io/drain';
