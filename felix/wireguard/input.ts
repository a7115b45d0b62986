// What felix needs to encrypt pod traffic between nodes with WireGuard, as Calico does: this
// node's keys and interface addresses, and every other node's underlay addresses, public keys,
// interface addresses and blocks. Plain data, so the desired state is a pure function of it.

/** This node's side of one family's WireGuard device. */
export interface WireguardLocal {
  /** The device's private key (base64, 32 bytes); it stays on this node. */
  readonly privateKey: string;
  /** The device's own address, from one of this node's blocks (Calico: the interface address from IPAM). */
  readonly interfaceAddress?: string;
}

/** Another node, as the cluster describes it. */
export interface WireguardPeer {
  readonly name: string;
  /** The node's underlay addresses (bare or with a length): the peer's endpoint. */
  readonly addressV4?: string;
  readonly addressV6?: string;
  /** Its published public keys; a family without one is reached in clear. */
  readonly publicKey?: string;
  readonly publicKeyV6?: string;
  /** Its WireGuard devices' addresses. */
  readonly interfaceAddressV4?: string;
  readonly interfaceAddressV6?: string;
  /** The pod blocks it holds (both families): what it is the way to. */
  readonly blocks: readonly string[];
}

export interface WireguardInput {
  /** Present when IPv4 WireGuard is on here. */
  readonly v4?: WireguardLocal;
  /** Present when IPv6 WireGuard is on here. */
  readonly v6?: WireguardLocal;
  readonly peers: readonly WireguardPeer[];
}

/** The knobs, as FelixConfiguration's wireguard* fields set them. */
export interface WireguardSettings {
  /** UDP port of the IPv4 device (wireguardListeningPort). Default 51820. */
  readonly port?: number;
  /** wireguardListeningPortV6. Default 51821. */
  readonly portV6?: number;
  /** wireguardInterfaceName. Default wireguard.cali. */
  readonly interfaceName?: string;
  /** wireguardInterfaceNameV6. Default wg-v6.cali. */
  readonly interfaceNameV6?: string;
  /** wireguardMTU: the underlay's 1500 less IPv4 WireGuard's 60 bytes. Default 1440. */
  readonly mtu?: number;
  /** wireguardMTUV6: 1500 less IPv6 WireGuard's 80 bytes. Default 1420. */
  readonly mtuV6?: number;
  /** wireguardRoutingRulePriority. Default 99. */
  readonly rulePriority?: number;
  /** wireguardKeepAlive in seconds; 0 sends none. Default 0. */
  readonly keepAliveSeconds?: number;
  /** The routing table of the routes through the devices. Default 1 (Calico's first routeTableRange index). */
  readonly table?: number;
  /**
   * The mark the devices put on their own UDP packets, so the rule lets them through to the main
   * table instead of back into a device. Default 0x100000, Calico's.
   */
  readonly fwmark?: number;
}

export interface ResolvedWireguardSettings {
  readonly port: number;
  readonly portV6: number;
  readonly interfaceName: string;
  readonly interfaceNameV6: string;
  readonly mtu: number;
  readonly mtuV6: number;
  readonly rulePriority: number;
  readonly keepAliveSeconds: number;
  readonly table: number;
  readonly fwmark: number;
}

export const WIREGUARD_DEFAULTS: ResolvedWireguardSettings = {
  port: 51820,
  portV6: 51821,
  interfaceName: 'wireguard.cali',
  interfaceNameV6: 'wg-v6.cali',
  mtu: 1440,
  mtuV6: 1420,
  rulePriority: 99,
  keepAliveSeconds: 0,
  table: 1,
  fwmark: 0x100000,
};

/** The settings with every default filled; an MTU of 0 means the default, as Calico's 0 means "work it out". */
export function resolveWireguardSettings(s: WireguardSettings = {}): ResolvedWireguardSettings {
  const d = WIREGUARD_DEFAULTS;
  return {
    port: s.port ?? d.port,
    portV6: s.portV6 ?? d.portV6,
    interfaceName: s.interfaceName ?? d.interfaceName,
    interfaceNameV6: s.interfaceNameV6 ?? d.interfaceNameV6,
    mtu: s.mtu || d.mtu,
    mtuV6: s.mtuV6 || d.mtuV6,
    rulePriority: s.rulePriority ?? d.rulePriority,
    keepAliveSeconds: s.keepAliveSeconds ?? d.keepAliveSeconds,
    table: s.table ?? d.table,
    fwmark: s.fwmark ?? d.fwmark,
  };
}
