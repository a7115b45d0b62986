// Calico-style IPAM: pools are carved into blocks; a node claims a block atomically and
// keeps its affinity; addresses come from the node's own blocks first, then from a newly
// claimed block, and only when the pools have no free block left, borrowed from another
// node's block (never under strict affinity). Release is by handle.
import type { BackendDatastore, StoreIdentity, Assigned, AssignRequest, ClaimCandidate, IpamStore } from '../datastore/index.js';
import { cidrName, parseSelector, type IPAMBlock, type IPPool } from '../resources/index.js';
import { cidrContains, cidrSize, familyBits, formatCidr, parseCidr, subBlock, subBlockCount, type IpFamily } from '../../ip/index.js';
import { memoryIdentityRecord, storeIdentityProblem, type StoreIdentityRecord } from './guard.js';
import { blockAddress, blockUsage, borrowedAddresses, hostAffinity, type BorrowedAddress } from './block.js';

export class IpamError extends Error {
  constructor(
    message: string,
    /** StoreReplaced: the store is not the one allocated from before; see guard.ts. */
    readonly code: 'NoPool' | 'Exhausted' | 'BadRequest' | 'StoreReplaced',
  ) {
    super(message);
    this.name = 'IpamError';
  }
}

export interface AutoAssignRequest {
  /** Who holds the address; release by it later (Calico: k8s-pod-network.<container id>). */
  handle: string;
  node: string;
  /** 4 (default) or 6. */
  family?: IpFamily;
  /** Only these pools, by name, in this order (they bypass nodeSelector, as Calico's pool annotation does). */
  pools?: readonly string[];
  /** Stored with the allocation (namespace, pod, ...). "node" is always set to `node`. */
  attrs?: Readonly<Record<string, string>>;
}

export interface AssignedAddress {
  ip: string;
  /** ip/32 or ip/128. */
  cidr: string;
  family: IpFamily;
  block: string;
  pool: string;
  handle: string;
  /** True when the block belongs to another node (or none): advertise the address as a host route. */
  borrowed: boolean;
}

export interface BlockInfo {
  cidr: string;
  name: string;
  pool: string | undefined;
  affinity: string | null;
  size: number;
  used: number;
  free: number;
}

export interface PoolUsage {
  name: string;
  cidr: string;
  blockSize: number;
  disabled: boolean;
  /** Addresses in the pool. A bigint: an IPv6 /64 holds 2^64. */
  size: bigint;
  /** Addresses handed out. */
  used: number;
  blocks: BlockInfo[];
}

const CLAIM_BATCH = 16;
const CLAIM_ATTEMPTS = 20;

/**
 * The store-identity guard (guard.ts) is on unless switched off by name: allocation is refused
 * from a store that is not the one this Ipam allocated from before (emptied, replaced, rolled
 * back), until `podroute ipam repair`. By default the store is remembered in memory for the life
 * of the Ipam, which guards a long-lived caller; one that lives for a single call keeps it in a
 * file (fileIdentityRecord), as the CNI plugin does.
 */
export type IpamOptions =
  | {
      /** Where the identity of the store allocated from is kept. Default: in memory. */
      identity?: StoreIdentityRecord;
      storeGuard?: true;
    }
  | {
      /**
       * No guard: a store that came back empty hands out again every address the pods hold.
       * Only for a caller that empties or replaces the store on purpose (a test, a benchmark
       * that starts over) and for tools that only read or release.
       */
      storeGuard: false;
      identity?: undefined;
    };

export class Ipam {
  private readonly store: IpamStore;
  /** The guard's record; undefined when switched off. */
  private readonly identity: StoreIdentityRecord | undefined;

  constructor(
    readonly ds: BackendDatastore,
    options: IpamOptions = {},
  ) {
    // The backend's own atomic operations (a Lua script in Redis, a synchronous step in memory).
    this.store = ds.raw.ipamStore();
    if (options.storeGuard === false && options.identity !== undefined)
      throw new IpamError('storeGuard: false switches the guard off, so an identity record has nothing to do', 'BadRequest');
    this.identity = options.storeGuard === false ? undefined : (options.identity ?? memoryIdentityRecord());
  }

  /**
   * Throws IpamError StoreReplaced when the store is not the one recorded; else returns what it
   * read, for recordStore once the allocation is acknowledged. Checked before each allocation:
   * a store emptied between the check and the write is caught by the next call (the window is
   * one call, not the rest of the store's life).
   */
  private async checkStore(): Promise<StoreIdentity | undefined> {
    const record = this.identity;
    if (!record) return undefined;
    const now = await this.ds.raw.identity();
    const problem = storeIdentityProblem(await record.load(), now);
    if (problem) throw new IpamError(problem, 'StoreReplaced');
    return now;
  }

  /**
   * Records the identity read before an allocation the store acknowledged. Not sooner: the
   * revision read may count other callers' writes not yet acknowledged, which a failover may
   * lose (Redis Sentinel promotes a replica without them), and a record of it would then read
   * as a rollback. Our write acknowledged after them means they were kept too.
   */
  private async recordStore(now: StoreIdentity | undefined): Promise<void> {
    if (now !== undefined && now.storeId !== null) await this.identity?.save(now);
  }

  async autoAssign(req: AutoAssignRequest): Promise<AssignedAddress> {
    const family = req.family ?? 4;
    if (family !== 4 && family !== 6) throw new IpamError(`family: must be 4 or 6, not ${String(family)}`, 'BadRequest');
    if (!req.handle) throw new IpamError('handle: is required', 'BadRequest');
    if (!req.node) throw new IpamError('node: is required', 'BadRequest');
    // The guard reads the store's identity before anything else touches the store: a Redis read
    // through a script stamps an empty store with a new id, and the guard would then report a
    // store that came back empty as one replaced, hiding what happened from the operator.
    const identity = await this.checkStore();
    const pools = await this.poolsFor(req, family);
    const ar: AssignRequest = { node: req.node, handle: req.handle, attrs: JSON.stringify({ ...req.attrs, node: req.node }) };
    const names = pools.map((p) => p.metadata.name);

    // 1. A block this node already holds.
    let got = await this.store.assignFromAffine(ar, names);

    // 2. A block nobody holds yet, claimed for this node.
    if (!got) got = await this.claim(ar, pools);

    // 3. An address from someone else's block, when no pool has a free block left.
    if (!got) {
      const blocks = (await this.ds.list('IPAMBlock')).items;
      const candidates = blocks
        .filter((b) => b.spec.unallocated.length > 0 && poolOf(pools, b.spec.cidr))
        // Ours first (one may have freed up since step 1), then the emptiest.
        .sort(
          (a, b) =>
            Number(b.spec.affinity === hostAffinity(req.node)) - Number(a.spec.affinity === hostAffinity(req.node)) ||
            b.spec.unallocated.length - a.spec.unallocated.length,
        )
        .map((b) => b.metadata.name);
      if (candidates.length > 0) {
        const r = await this.store.borrow(ar, candidates);
        if (r.result === 'ok') got = r.assigned;
        else if (r.result === 'strict') {
          throw new IpamError(
            `no free block in pools ${names.join(', ')} for node ${req.node}, and strict affinity forbids borrowing from other nodes' blocks`,
            'Exhausted',
          );
        }
      }
    }
    if (!got) throw new IpamError(`no free IPv${family} address in pools ${names.join(', ')} for node ${req.node}`, 'Exhausted');
    await this.recordStore(identity);
    return this.describe(got, family, pools, req);
  }

  private describe(got: Assigned, family: IpFamily, pools: IPPool[], req: AutoAssignRequest): AssignedAddress {
    const ip = blockAddress(got.blockCidr, got.ordinal);
    return {
      ip,
      cidr: `${ip}/${family === 4 ? 32 : 128}`,
      family,
      block: got.blockCidr,
      pool: poolOf(pools, got.blockCidr)?.metadata.name ?? '',
      handle: req.handle,
      borrowed: got.affinity !== hostAffinity(req.node),
    };
  }

  /** The enabled pools of the family that may serve this node, in name order. */
  private async poolsFor(req: AutoAssignRequest, family: IpFamily): Promise<IPPool[]> {
    const [all, node] = await Promise.all([this.ds.list('IPPool'), this.ds.get('Node', req.node)]);
    if (req.pools && req.pools.length > 0) {
      return req.pools.map((name) => {
        const p = all.items.find((x) => x.metadata.name === name);
        if (!p) throw new IpamError(`pools: no IPPool named ${JSON.stringify(name)}`, 'NoPool');
        if (p.spec.disabled) throw new IpamError(`pools: IPPool ${name} is disabled`, 'NoPool');
        if (parseCidr(p.spec.cidr, 'spec.cidr').family !== family)
          throw new IpamError(`pools: IPPool ${name} (${p.spec.cidr}) is not IPv${family}`, 'NoPool');
        return p;
      });
    }
    const labels = node?.metadata.labels ?? {};
    const ok = all.items.filter(
      (p) =>
        !p.spec.disabled && parseCidr(p.spec.cidr, 'spec.cidr').family === family && parseSelector(p.spec.nodeSelector ?? 'all()')(labels),
    );
    if (ok.length === 0) throw new IpamError(`no enabled IPv${family} IPPool selects node ${req.node}`, 'NoPool');
    return ok;
  }

  private async claim(ar: AssignRequest, pools: IPPool[]): Promise<Assigned | null> {
    for (const pool of pools) {
      for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
        const existing = new Set(await this.store.blockNames());
        const candidates = freeBlocks(pool, ar.node, existing, CLAIM_BATCH);
        if (candidates.length === 0) break; // pool full: next pool
        const r = await this.store.claimAndAssign(ar, { name: pool.metadata.name, cidr: pool.spec.cidr }, candidates);
        if (r.result === 'ok') return r.assigned;
        if (r.result === 'limit') return null; // no more blocks for this node anywhere: borrow
        if (r.result === 'nopool') break;
      }
    }
    return null;
  }

  /** Frees every address held by the handle; returns them. Releasing an unknown handle is a no-op. */
  async releaseByHandle(handle: string): Promise<string[]> {
    const freed = await this.store.releaseHandle(handle);
    return freed.map(([cidr, ord]) => blockAddress(cidr, ord));
  }

  /** The blocks the node holds the affinity of: it advertises each as one route. */
  async blocksForNode(node: string): Promise<BlockInfo[]> {
    const [blocks, pools] = await Promise.all([this.ds.list('IPAMBlock'), this.ds.list('IPPool')]);
    return blocks.items.filter((b) => b.spec.affinity === hostAffinity(node)).map((b) => blockInfo(b, pools.items));
  }

  /** Addresses the node holds in blocks it has no affinity for: it advertises each as a /32 or /128. */
  async borrowedAddresses(node: string): Promise<BorrowedAddress[]> {
    return borrowedAddresses((await this.ds.list('IPAMBlock')).items, node);
  }

  /** Pools with their blocks and usage, for `podroute ipam show`. */
  async usage(): Promise<PoolUsage[]> {
    const [blocks, pools] = await Promise.all([this.ds.list('IPAMBlock'), this.ds.list('IPPool')]);
    return pools.items.map((p) => {
      const c = parseCidr(p.spec.cidr, 'spec.cidr');
      const mine = blocks.items.filter((b) => poolOf([p], b.spec.cidr)).map((b) => blockInfo(b, pools.items));
      return {
        name: p.metadata.name,
        cidr: p.spec.cidr,
        blockSize: p.spec.blockSize,
        disabled: p.spec.disabled === true,
        size: cidrSize(c),
        used: mine.reduce((n, b) => n + b.used, 0),
        blocks: mine,
      };
    });
  }
}

function blockInfo(b: IPAMBlock, pools: readonly IPPool[]): BlockInfo {
  return {
    cidr: b.spec.cidr,
    name: b.metadata.name,
    pool: poolOf(pools, b.spec.cidr)?.metadata.name,
    affinity: b.spec.affinity,
    ...blockUsage(b.spec),
  };
}

function poolOf(pools: readonly IPPool[], blockCidr: string): IPPool | undefined {
  const b = parseCidr(blockCidr, 'spec.cidr');
  return pools.find((p) => cidrContains(parseCidr(p.spec.cidr, 'spec.cidr'), b));
}

/**
 * Up to `n` blocks of the pool that nobody holds, starting at a place derived from the node
 * name: nodes start in different places, so they seldom race for the same block, and a node
 * that gives a block back tends to get the same one next time.
 */
export function freeBlocks(pool: IPPool, node: string, existing: ReadonlySet<string>, n: number): ClaimCandidate[] {
  const c = parseCidr(pool.spec.cidr, 'spec.cidr');
  const count = subBlockCount(c, pool.spec.blockSize);
  const size = 1 << (familyBits(c.family) - pool.spec.blockSize);
  const start = BigInt(fnv1a(node)) % count;
  const out: ClaimCandidate[] = [];
  // At most existing.size blocks can be skipped, so this ends quickly even in an IPv6 pool.
  const limit = BigInt(existing.size + n) < count ? BigInt(existing.size + n) : count;
  for (let i = 0n; i < limit && out.length < n; i++) {
    const cidr = formatCidr(subBlock(c, pool.spec.blockSize, (start + i) % count));
    const name = cidrName(cidr);
    if (!existing.has(name)) out.push({ name, cidr, size });
  }
  return out;
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
