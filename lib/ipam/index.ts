export { Ipam, IpamError, freeBlocks, type AutoAssignRequest, type AssignedAddress, type BlockInfo, type PoolUsage } from './ipam.js';
export {
  blockAllocations,
  blockAddress,
  blockUsage,
  borrowedAddresses,
  affinityNode,
  hostAffinity,
  blockName,
  type Allocation,
  type BorrowedAddress,
} from './block.js';
export { formatIpamShow } from './show.js';
