export {
  Ipam,
  IpamError,
  freeBlocks,
  type IpamOptions,
  type AutoAssignRequest,
  type AssignedAddress,
  type BlockInfo,
  type PoolUsage,
} from './ipam.js';
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
export { memoryIdentityRecord, fileIdentityRecord, storeIdentityProblem, type StoreIdentityRecord } from './guard.js';
export { checkIpam, checkKernel, formatIpamCheck, type IpamCheckReport, type KernelCheck, type KernelEnd } from './check.js';
export { repairIpam, formatIpamRepair, type IpamRepairReport } from './repair.js';
