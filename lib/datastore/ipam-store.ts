// The atomic IPAM operations each backend provides (RawBackend.ipamStore). Each runs as one
// indivisible step in the store (a Lua script in Redis, a synchronous function in memory),
// and re-checks everything the caller decided from its possibly stale reads: that a block is
// still free, still affine, the pool still there. IPAM (lib/ipam) decides what to ask for;
// these make it safe. They live with the backends because only a backend can make a
// multi-object change atomic in its own medium.

export interface AssignRequest {
  node: string;
  handle: string;
  /** JSON of the allocation's attributes (always has "node"). */
  attrs: string;
}

export interface Assigned {
  blockCidr: string;
  ordinal: number;
  /** The block's affinity at assignment ("" for none). */
  affinity: string;
}

export interface ClaimCandidate {
  name: string;
  cidr: string;
  size: number;
}

export type ClaimResult =
  | { result: 'ok'; assigned: Assigned }
  /** Every candidate was claimed by someone else meanwhile: compute new candidates. */
  | { result: 'raced' }
  /** The pool vanished, changed or was disabled. */
  | { result: 'nopool' }
  /** maxBlocksPerHost reached or autoAllocateBlocks off. */
  | { result: 'limit' };

export type BorrowResult = { result: 'ok'; assigned: Assigned } | { result: 'none' } | { result: 'strict' };

/** One block as `podroute ipam repair` rebuilt it, with the pool it belongs to. */
export interface RestoredBlock {
  name: string;
  pool: string;
  /** The IPAMBlock's JSON. */
  json: string;
}

export interface IpamStore {
  /** Assign from a block affine to the node, belonging to one of these pools. */
  assignFromAffine(req: AssignRequest, pools: readonly string[]): Promise<Assigned | null>;
  /** Claim the first candidate block nobody holds, give the node its affinity, assign from it. */
  claimAndAssign(req: AssignRequest, pool: { name: string; cidr: string }, candidates: readonly ClaimCandidate[]): Promise<ClaimResult>;
  /** Assign from the first of these blocks with a free address, unless strict affinity is on. */
  borrow(req: AssignRequest, blockNames: readonly string[]): Promise<BorrowResult>;
  /** Free every address of the handle; returns [blockCidr, ordinal] of each. */
  releaseHandle(handle: string): Promise<[string, number][]>;
  /** Replaces every IPAMBlock and IPAMHandle (and the indexes) with these, in one step. */
  restore(blocks: readonly RestoredBlock[], handles: readonly { name: string; json: string }[]): Promise<void>;
  /** Names of every existing block. */
  blockNames(): Promise<string[]>;
}
