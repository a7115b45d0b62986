// What a node announces, computed from IPAM blocks (pure): one route per affine block (never
// the addresses inside it), a host route for every address it borrowed from another node's
// block, and the service cluster, external and load-balancer CIDRs when BGPConfiguration lists them.
import { borrowedAddresses, hostAffinity } from '../ipam/block.js';
import type { BGPConfiguration, IPAMBlock } from '../resources/types.js';

export interface Advertisements {
  /** Blocks this node holds the affinity of (also its blackhole routes). */
  blocks: string[];
  /** ip/32 or ip/128 of addresses borrowed from blocks of other nodes. */
  borrowed: string[];
  /**
   * BGPConfiguration.serviceClusterIPs, serviceExternalIPs and serviceLoadBalancerIPs: the CIDRs
   * as written, announced by every node (ECMP at the receivers), as Calico does for a service
   * range; announcing single service addresses from the nodes with endpoints is not done here.
   */
  services: string[];
}

export function advertisements(node: string, blocks: readonly IPAMBlock[], config: BGPConfiguration | undefined): Advertisements {
  const affinity = hostAffinity(node);
  const own = blocks
    .filter((b) => b.spec.affinity === affinity)
    .map((b) => b.spec.cidr)
    .sort();
  const borrowed = borrowedAddresses(blocks, node)
    .map((a) => `${a.ip}/${a.ip.includes(':') ? 128 : 32}`)
    .sort();
  const spec = config?.spec;
  const services = [
    ...new Set(
      [...(spec?.serviceClusterIPs ?? []), ...(spec?.serviceExternalIPs ?? []), ...(spec?.serviceLoadBalancerIPs ?? [])].map((s) => s.cidr),
    ),
  ];
  return { blocks: own, borrowed, services };
}

export function allPrefixes(a: Advertisements): string[] {
  return [...new Set([...a.blocks, ...a.borrowed, ...a.services])];
}
