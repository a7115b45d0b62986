// IPAM over the in-memory backend. Every method body is synchronous inside transact(), so
// it is atomic in a single-threaded process: the same guarantees the Lua scripts give.
import {
  cidrName as blockName,
  normalizeBlockSpec,
  type IPAMBlock,
  type IPAMConfigurationSpec,
  type IPAMHandle,
  type IPPool,
} from '../resources/index.js';
import type { AssignRequest, Assigned, BorrowResult, ClaimCandidate, ClaimResult, IpamStore, RestoredBlock } from './ipam-store.js';
import { handleWithAddress, newBlock, releaseHandle, takeAddress } from './ipam-block.js';
import type { MemoryTxn } from './memory.js';

/** Indexes derived from the blocks; the backend keeps one store, so they stay exact. */
interface Index {
  affine: Map<string, Set<string>>;
  pool: Map<string, string>;
  free: Map<string, number>;
}

export class MemoryIpamStore implements IpamStore {
  private readonly index: Index = { affine: new Map(), pool: new Map(), free: new Map() };
  /** `transact` is MemoryBackend's: it runs a synchronous function over the maps. */
  constructor(private readonly transact: <T>(fn: (tx: MemoryTxn) => T) => T) {}

  private block(tx: MemoryTxn, name: string): IPAMBlock | undefined {
    const s = tx.get('IPAMBlock', name);
    if (!s) return undefined;
    const b = JSON.parse(s.json) as IPAMBlock;
    b.spec = normalizeBlockSpec(b.spec as unknown as Record<string, unknown>);
    return b;
  }

  private config(tx: MemoryTxn): IPAMConfigurationSpec {
    const s = tx.get('IPAMConfiguration', 'default');
    return s ? (JSON.parse(s.json) as { spec: IPAMConfigurationSpec }).spec : {};
  }

  private assignIn(tx: MemoryTxn, name: string, req: AssignRequest): Assigned | null {
    const b = this.block(tx, name);
    const ordinal = b && takeAddress(b, req);
    if (!b || ordinal === undefined) return null;
    const s = b.spec;
    tx.put('IPAMBlock', name, JSON.stringify(b));
    this.index.free.set(name, s.unallocated.length);
    tx.put('IPAMHandle', req.handle, JSON.stringify(handleWithAddress(tx.get('IPAMHandle', req.handle)?.json, req.handle, s.cidr)));
    return { blockCidr: s.cidr, ordinal, affinity: s.affinity ?? '' };
  }

  async assignFromAffine(req: AssignRequest, pools: readonly string[]): Promise<Assigned | null> {
    return this.transact((tx) => {
      const names = [...(this.index.affine.get(req.node) ?? [])].sort();
      for (const name of names) {
        if (!pools.includes(this.index.pool.get(name) ?? '') || this.index.free.get(name) === 0) continue;
        const got = this.assignIn(tx, name, req);
        if (got) return got;
      }
      return null;
    });
  }

  async claimAndAssign(
    req: AssignRequest,
    pool: { name: string; cidr: string },
    candidates: readonly ClaimCandidate[],
  ): Promise<ClaimResult> {
    return this.transact((tx): ClaimResult => {
      const ps = tx.get('IPPool', pool.name);
      const p = ps ? (JSON.parse(ps.json) as IPPool) : undefined;
      if (!p || p.spec.cidr !== pool.cidr || p.spec.disabled === true) return { result: 'nopool' };
      const cfg = this.config(tx);
      if (cfg.autoAllocateBlocks === false) return { result: 'limit' };
      const mine = this.index.affine.get(req.node) ?? new Set<string>();
      if ((cfg.maxBlocksPerHost ?? 0) > 0 && mine.size >= cfg.maxBlocksPerHost!) return { result: 'limit' };
      for (const c of candidates) {
        if (tx.get('IPAMBlock', c.name)) continue;
        const b = newBlock(c, req.node, cfg.strictAffinity === true);
        tx.put('IPAMBlock', c.name, JSON.stringify(b));
        mine.add(c.name);
        this.index.affine.set(req.node, mine);
        this.index.pool.set(c.name, pool.name);
        return { result: 'ok', assigned: this.assignIn(tx, c.name, req)! };
      }
      return { result: 'raced' };
    });
  }

  async borrow(req: AssignRequest, blockNames: readonly string[]): Promise<BorrowResult> {
    return this.transact((tx): BorrowResult => {
      if (this.config(tx).strictAffinity === true) return { result: 'strict' };
      for (const name of blockNames) {
        if (this.index.free.get(name) === 0) continue;
        const got = this.assignIn(tx, name, req);
        if (got) return { result: 'ok', assigned: got };
      }
      return { result: 'none' };
    });
  }

  async releaseHandle(handle: string): Promise<[string, number][]> {
    return this.transact((tx) => {
      const hs = tx.get('IPAMHandle', handle);
      if (!hs) return [];
      const h = JSON.parse(hs.json) as IPAMHandle;
      const releaseAffine = this.config(tx).releaseEmptyAffineBlocks !== false;
      const out: [string, number][] = [];
      for (const cidr of Object.keys(h.spec.block)) {
        const name = blockName(cidr);
        const b = this.block(tx, name);
        if (!b) continue;
        const s = b.spec;
        for (const ord of releaseHandle(b, handle)) out.push([cidr, ord]);
        const empty = s.unallocated.length === s.allocations.length;
        if (empty && (s.affinity === null || releaseAffine)) {
          tx.del('IPAMBlock', name);
          this.index.pool.delete(name);
          this.index.free.delete(name);
          if (s.affinity?.startsWith('host:')) this.index.affine.get(s.affinity.slice(5))?.delete(name);
        } else {
          tx.put('IPAMBlock', name, JSON.stringify(b));
          this.index.free.set(name, s.unallocated.length);
        }
      }
      tx.del('IPAMHandle', handle);
      return out;
    });
  }

  async restore(blocks: readonly RestoredBlock[], handles: readonly { name: string; json: string }[]): Promise<void> {
    this.transact((tx) => {
      for (const name of [...tx.keys('IPAMBlock')]) tx.del('IPAMBlock', name);
      for (const name of [...tx.keys('IPAMHandle')]) tx.del('IPAMHandle', name);
      this.index.affine.clear();
      this.index.pool.clear();
      this.index.free.clear();
      for (const rb of blocks) {
        const b = JSON.parse(rb.json) as IPAMBlock;
        tx.put('IPAMBlock', rb.name, rb.json);
        this.index.pool.set(rb.name, rb.pool);
        this.index.free.set(rb.name, b.spec.unallocated.length);
        if (b.spec.affinity?.startsWith('host:')) {
          const node = b.spec.affinity.slice(5);
          const mine = this.index.affine.get(node) ?? new Set<string>();
          mine.add(rb.name);
          this.index.affine.set(node, mine);
        }
      }
      for (const h of handles) tx.put('IPAMHandle', h.name, h.json);
    });
  }

  async blockNames(): Promise<string[]> {
    return this.transact((tx) => [...tx.keys('IPAMBlock')]);
  }
}
