// What the node agent tells felix. Everything is plain data, so a test or a simulation can
// build it by hand and the same value always yields the same desired state.

import type { KernelRoute } from './resolve.js';

export type EncapMode = 'Never' | 'Always' | 'CrossSubnet';

export interface PoolConfig {
  readonly cidr: string;
  /** IPIP encapsulation (IPv4 only). Default Never. */
  readonly ipipMode?: EncapMode;
  /** VXLAN encapsulation. Default Never. A pool uses IPIP or VXLAN, not both. */
  readonly vxlanMode?: EncapMode;
}

export interface LocalWorkload {
  /** The pod's addresses, bare or as /32 and /128. */
  readonly addresses: readonly string[];
  /** Host side of the pod's veth, e.g. "cali1a2b3c4d5e6". */
  readonly iface: string;
}

/**
 * A next hop learned from a peer whose gateway is chosen as BIRD's `gateway direct` does (Calico's
 * BGPPeer birdGatewayMode DirectIfDirectlyConnected): the next hop itself when it is on a
 * connected network, else the peer that sent the route, when that peer is.
 */
export interface DirectNextHop {
  readonly address: string;
  /** The session's neighbour: the gateway when `address` is not directly reachable. */
  readonly peer: string;
}

/** A BGP next hop: an address (resolved recursively when not connected), or one in direct mode. */
export type LearnedNextHop = string | DirectNextHop;

export interface RemoteRoute {
  /** A prefix learned over BGP: a remote block (/26, /122) or a borrowed /32. */
  readonly prefix: string;
  /** The BGP next hops (the remote nodes' addresses); several mean ECMP. */
  readonly nextHops: readonly LearnedNextHop[];
}

/** A next hop's text, to compare and sort hop lists by. */
export function nextHopKey(h: LearnedNextHop): string {
  return typeof h === 'string' ? h : `${h.address} direct ${h.peer}`;
}

/** A route the node needs for itself (Calico's BGPPeer reachableBy: the peer via a gateway). */
export interface StaticRoute {
  readonly prefix: string;
  /** The gateway, on a connected network or reachable through the node's routing table. */
  readonly via: string;
}

export interface RemoteVtep {
  /** The remote node's underlay address: the BGP next hop and the FDB destination. */
  readonly nodeIp: string;
  /** The remote node's VXLAN device address. */
  readonly vtepIp: string;
  /** The remote node's VXLAN device MAC. */
  readonly vtepMac: string;
}

export interface NodeInfo {
  /** This node's IPv4 address with its subnet length, e.g. "10.0.1.5/24". */
  readonly addressV4?: string;
  /** This node's IPv6 address with its subnet length. */
  readonly addressV6?: string;
  /** The interface that reaches the node's subnet (routes without encapsulation use it). */
  readonly uplink: string;
  /** This node's VXLAN tunnel (VTEP) address, from one of its blocks (Calico: IPv4VXLANTunnelAddr). */
  readonly vxlanTunnelAddressV4?: string;
  /** MAC for vxlan.calico; the kernel picks one when absent (read it back from the device status). */
  readonly vxlanTunnelMacV4?: string;
  readonly vxlanTunnelAddressV6?: string;
  readonly vxlanTunnelMacV6?: string;
  /** Address for tunl0, from one of this node's blocks (Calico: IPv4IPIPTunnelAddr). */
  readonly ipipTunnelAddress?: string;
}

export interface DeviceNames {
  readonly ipip: string;
  readonly vxlanV4: string;
  readonly vxlanV6: string;
}

export const DEFAULT_DEVICE_NAMES: DeviceNames = { ipip: 'tunl0', vxlanV4: 'vxlan.calico', vxlanV6: 'vxlan-v6.calico' };
/** The tunnel devices' MTUs unless FelixOptions say otherwise (Calico's defaults: 1500 less each header). */
export const DEFAULT_TUNNEL_MTU = { ipip: 1440, vxlanV4: 1450, vxlanV6: 1430 } as const;

export interface FelixInput {
  readonly node: NodeInfo;
  readonly workloads: readonly LocalWorkload[];
  readonly ownBlocks: readonly string[];
  readonly remoteRoutes: readonly RemoteRoute[];
  readonly pools: readonly PoolConfig[];
  readonly remoteVteps: readonly RemoteVtep[];
  readonly deviceNames?: Partial<DeviceNames>;
  /**
   * Routes felix programs for the node itself (BGPPeer reachableBy); they win over a learned
   * route for the same prefix, and learned next hops resolve through them.
   */
  readonly staticRoutes?: readonly StaticRoute[];
  /**
   * The node's routing table without felix's routes: learned next hops off the node's subnet
   * resolve through it (resolve.ts). Felix fills it from each dump of the dataplane.
   */
  readonly kernelRoutes?: readonly KernelRoute[];
}

export const EMPTY_INPUT: FelixInput = {
  node: { uplink: 'eth0' },
  workloads: [],
  ownBlocks: [],
  remoteRoutes: [],
  pools: [],
  remoteVteps: [],
};
