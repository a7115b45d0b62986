// What a node announces, computed from IPAM blocks (pure): one route per affine block (never
// the addresses inside it), a host route for every address it borrowed from another node's
// block, and the service addresses Calico's rules give this node (`serviceRoutes`).
import { borrowedAddresses, hostAffinity } from '../ipam/block.js';
import type { BGPConfiguration, IPAMBlock } from '../resources/index.js';
import { serviceRoutes, type ServiceAdvertisementInput } from './service-advertise.js';

export interface Advertisements {
  /** Blocks this node holds the affinity of (also its blackhole routes). */
  blocks: string[];
  /** ip/32 or ip/128 of addresses borrowed from blocks of other nodes. */
  borrowed: string[];
  /**
   * BGPConfiguration.serviceClusterIPs, and the serviceExternalIPs and serviceLoadBalancerIPs
   * wider than one address: the CIDRs as written, announced by every node (ECMP at the receivers).
   */
  services: string[];
  /**
   * Host routes of single services from this node: those of `externalTrafficPolicy: Local`
   * services with a ready endpoint here, and the external or LB IPs of Cluster services that
   * the configuration lists as single addresses.
   */
  serviceAddresses: string[];
}

export function advertisements(
  node: string,
  blocks: readonly IPAMBlock[],
  config: BGPConfiguration | undefined,
  services?: ServiceAdvertisementInput,
): Advertisements {
  const affinity = hostAffinity(node);
  const own = blocks
    .filter((b) => b.spec.affinity === affinity)
    .map((b) => b.spec.cidr)
    .sort();
  const borrowed = borrowedAddresses(blocks, node)
    .map((a) => `${a.ip}/${a.ip.includes(':') ? 128 : 32}`)
    .sort();
  const s = serviceRoutes(node, config, services);
  return { blocks: own, borrowed, services: s.ranges, serviceAddresses: s.addresses };
}

export function allPrefixes(a: Advertisements): string[] {
  return [...new Set([...a.blocks, ...a.borrowed, ...a.services, ...a.serviceAddresses])];
}
