// Pure views of IPAM blocks, usable on objects from a list or a watch (the agent builds its
// routes from these without asking IPAM again).
import { addressAt, formatAddress, parseCidr } from '../../ip/index.js';
import { cidrName, type IPAMBlock, type IPAMBlockSpec } from '../resources/index.js';

export { cidrName as blockName };

export interface Allocation {
  ip: string;
  ordinal: number;
  handle: string | null;
  attrs: Record<string, string>;
}

export function hostAffinity(node: string): string {
  return `host:${node}`;
}

/** The node named by "host:<node>", or undefined. */
export function affinityNode(spec: IPAMBlockSpec): string | undefined {
  return spec.affinity?.startsWith('host:') ? spec.affinity.slice(5) : undefined;
}

/** The address at `ordinal` in the block: the block's base plus the ordinal. */
export function blockAddress(cidr: string, ordinal: number): string {
  return formatAddress(addressAt(parseCidr(cidr, 'spec.cidr'), ordinal));
}

export function blockAllocations(spec: IPAMBlockSpec): Allocation[] {
  const out: Allocation[] = [];
  spec.allocations.forEach((a, ordinal) => {
    if (a === null) return;
    const attr = spec.attributes[a];
    out.push({ ip: blockAddress(spec.cidr, ordinal), ordinal, handle: attr?.handle_id ?? null, attrs: attr?.secondary ?? {} });
  });
  return out;
}

export function blockUsage(spec: IPAMBlockSpec): { size: number; used: number; free: number } {
  const size = spec.allocations.length;
  const free = spec.unallocated.length;
  return { size, used: size - free, free };
}

export interface BorrowedAddress {
  ip: string;
  block: string;
  /** The node whose block it is (undefined if the block has no affinity). */
  owner: string | undefined;
  handle: string | null;
}

/**
 * Addresses `node` holds inside blocks it has no affinity for. The node advertises these
 * as host routes (/32, /128), since the block's route points at another node.
 */
export function borrowedAddresses(blocks: readonly IPAMBlock[], node: string): BorrowedAddress[] {
  const out: BorrowedAddress[] = [];
  for (const b of blocks) {
    if (b.spec.affinity === hostAffinity(node)) continue;
    for (const a of blockAllocations(b.spec)) {
      if (a.attrs.node === node) out.push({ ip: a.ip, block: b.spec.cidr, owner: affinityNode(b.spec), handle: a.handle });
    }
  }
  return out;
}
