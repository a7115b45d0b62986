// IPAM over the etcd backend: each operation is one optimistic transaction (etcd-tx.ts), so
// two nodes racing for the same block or the same address are serialised by etcd's compare on
// the block's mod revision: one commits, the other reads again and picks anew. Beside the
// IPAMBlock and IPAMHandle objects one index lives in P/ipam/aff/<node> (block name -> pool
// name for the blocks the node holds the affinity of), written only here, in the same
// transaction as the blocks. Nothing expires, so no etcd lease is needed: as in the other
// backends, an address is held until its handle is released.
import {
  cidrName as blockName,
  type IPAMBlock,
  type IPAMConfigurationSpec,
  type IPAMHandle,
  type IPPool,
  normalizeBlockSpec,
} from '../resources/index.js';
import type { EtcdBackend } from './etcd.js';
import { handleWithAddress, newBlock, releaseHandle, takeAddress } from './ipam-block.js';
import { runTx, type EtcdTx } from './etcd-tx.js';
import type { AssignRequest, Assigned, BorrowResult, ClaimCandidate, ClaimResult, IpamStore, RestoredBlock } from './ipam-store.js';

type Affinities = Record<string, string>;

const BORROW_SLICE = 16;

export class EtcdIpamStore implements IpamStore {
  constructor(private readonly backend: EtcdBackend) {}

  private get keys() {
    return this.backend.keys;
  }

  private block(tx: EtcdTx, name: string): IPAMBlock | undefined {
    const j = tx.value(this.keys.kv('IPAMBlock', name));
    if (j === undefined) return undefined;
    const b = JSON.parse(j) as IPAMBlock;
    b.spec = normalizeBlockSpec(b.spec as unknown as Record<string, unknown>);
    return b;
  }

  private async config(tx: EtcdTx): Promise<IPAMConfigurationSpec> {
    const j = await tx.get(this.keys.kv('IPAMConfiguration', 'default'));
    return j ? ((JSON.parse(j) as { spec?: IPAMConfigurationSpec }).spec ?? {}) : {};
  }

  private async affinities(tx: EtcdTx, node: string, compare: boolean): Promise<Affinities> {
    const j = await tx.get(this.keys.aff(node), compare);
    return j ? (JSON.parse(j) as Affinities) : {};
  }

  private setAffinities(tx: EtcdTx, node: string, aff: Affinities): void {
    if (Object.keys(aff).length === 0) tx.del(this.keys.aff(node));
    else tx.put(this.keys.aff(node), JSON.stringify(aff));
  }

  private static free(b: IPAMBlock | undefined): boolean {
    return b !== undefined && b.spec.unallocated.length > 0;
  }

  /** Takes the block's first free address for the request (the block must be loaded). */
  private async assignIn(tx: EtcdTx, name: string, req: AssignRequest): Promise<Assigned | null> {
    const key = this.keys.kv('IPAMBlock', name);
    const b = this.block(tx, name);
    if (!b || b.spec.unallocated.length === 0) return null;
    tx.depend(key);
    const ordinal = takeAddress(b, req)!;
    const s = b.spec;
    tx.putObject('IPAMBlock', name, JSON.stringify(b));
    const hj = await tx.get(this.keys.kv('IPAMHandle', req.handle));
    tx.putObject('IPAMHandle', req.handle, JSON.stringify(handleWithAddress(hj, req.handle, s.cidr)));
    return { blockCidr: s.cidr, ordinal, affinity: s.affinity ?? '' };
  }

  assignFromAffine(req: AssignRequest, pools: readonly string[]): Promise<Assigned | null> {
    return runTx(this.backend, 'assigning from an affine block', async (tx) => {
      // The list only narrows the search: each block says its own affinity, and the commit
      // compares the block used.
      const aff = await this.affinities(tx, req.node, false);
      const names = Object.keys(aff)
        .filter((n) => pools.includes(aff[n]!))
        .sort();
      await tx.load(
        names.map((n) => this.keys.kv('IPAMBlock', n)),
        false,
      );
      for (const name of names) {
        const b = this.block(tx, name);
        if (!EtcdIpamStore.free(b) || b!.spec.affinity !== `host:${req.node}`) continue;
        const got = await this.assignIn(tx, name, req);
        if (got) return got;
      }
      return null;
    });
  }

  claimAndAssign(req: AssignRequest, pool: { name: string; cidr: string }, candidates: readonly ClaimCandidate[]): Promise<ClaimResult> {
    return runTx(this.backend, 'claiming a block', async (tx): Promise<ClaimResult> => {
      const pj = await tx.get(this.keys.kv('IPPool', pool.name));
      const p = pj ? (JSON.parse(pj) as IPPool) : undefined;
      if (!p || p.spec.cidr !== pool.cidr || p.spec.disabled === true) return { result: 'nopool' };
      const cfg = await this.config(tx);
      if (cfg.autoAllocateBlocks === false) return { result: 'limit' };
      // Compared: maxBlocksPerHost counts it, and the claim rewrites it.
      const aff = await this.affinities(tx, req.node, true);
      if ((cfg.maxBlocksPerHost ?? 0) > 0 && Object.keys(aff).length >= cfg.maxBlocksPerHost!) return { result: 'limit' };
      await tx.load(
        candidates.map((c) => this.keys.kv('IPAMBlock', c.name)),
        false,
      );
      for (const c of candidates) {
        const key = this.keys.kv('IPAMBlock', c.name);
        if (tx.value(key) !== undefined) continue;
        tx.depend(key); // still nobody's at commit
        const b = newBlock(c, req.node, cfg.strictAffinity === true);
        tx.putObject('IPAMBlock', c.name, JSON.stringify(b));
        this.setAffinities(tx, req.node, { ...aff, [c.name]: pool.name });
        return { result: 'ok', assigned: (await this.assignIn(tx, c.name, req))! };
      }
      return { result: 'raced' };
    });
  }

  borrow(req: AssignRequest, blockNames: readonly string[]): Promise<BorrowResult> {
    return runTx(this.backend, 'borrowing an address', async (tx): Promise<BorrowResult> => {
      if ((await this.config(tx)).strictAffinity === true) return { result: 'strict' };
      // A few blocks at a time, in the caller's order: the first with a free address wins.
      for (let at = 0; at < blockNames.length; at += BORROW_SLICE) {
        const slice = blockNames.slice(at, at + BORROW_SLICE);
        await tx.load(
          slice.map((n) => this.keys.kv('IPAMBlock', n)),
          false,
        );
        for (const name of slice) {
          if (!EtcdIpamStore.free(this.block(tx, name))) continue;
          const got = await this.assignIn(tx, name, req);
          if (got) return { result: 'ok', assigned: got };
        }
      }
      return { result: 'none' };
    });
  }

  releaseHandle(handle: string): Promise<[string, number][]> {
    return runTx(this.backend, 'releasing a handle', async (tx) => {
      const hj = await tx.get(this.keys.kv('IPAMHandle', handle));
      if (!hj) return [];
      const h = JSON.parse(hj) as IPAMHandle;
      const releaseAffine = (await this.config(tx)).releaseEmptyAffineBlocks !== false;
      const cidrs = Object.keys(typeof h.spec.block === 'object' && h.spec.block !== null ? h.spec.block : {});
      await tx.load(cidrs.map((cidr) => this.keys.kv('IPAMBlock', blockName(cidr))));
      const out: [string, number][] = [];
      for (const cidr of cidrs) {
        const name = blockName(cidr);
        const b = this.block(tx, name);
        if (!b) continue;
        const s = b.spec;
        for (const ord of releaseHandle(b, handle)) out.push([cidr, ord]);
        const empty = s.unallocated.length === s.allocations.length;
        if (empty && (s.affinity === null || releaseAffine)) {
          tx.delObject('IPAMBlock', name);
          if (s.affinity?.startsWith('host:')) {
            const node = s.affinity.slice(5);
            const aff = await this.affinities(tx, node, true);
            delete aff[name];
            this.setAffinities(tx, node, aff);
          }
        } else {
          tx.putObject('IPAMBlock', name, JSON.stringify(b));
        }
      }
      tx.delObject('IPAMHandle', handle);
      return out;
    });
  }

  restore(blocks: readonly RestoredBlock[], handles: readonly { name: string; json: string }[]): Promise<void> {
    const k = this.keys;
    return runTx(this.backend, 'restoring the allocations', async (tx) => {
      // Every IPAM write stamps these two: comparing them covers every block, handle and affinity.
      await tx.load([k.kr('IPAMBlock'), k.kr('IPAMHandle')]);
      const keep = new Set<string>();
      const affs = new Map<string, Affinities>();
      for (const rb of blocks) {
        tx.putObject('IPAMBlock', rb.name, rb.json);
        keep.add(k.kv('IPAMBlock', rb.name));
        const aff = (JSON.parse(rb.json) as IPAMBlock).spec.affinity;
        if (aff?.startsWith('host:')) affs.set(aff.slice(5), { ...affs.get(aff.slice(5)), [rb.name]: rb.pool });
      }
      for (const h of handles) {
        tx.putObject('IPAMHandle', h.name, h.json);
        keep.add(k.kv('IPAMHandle', h.name));
      }
      for (const [node, aff] of affs) {
        tx.put(k.aff(node), JSON.stringify(aff));
        keep.add(k.aff(node));
      }
      const old = [
        ...(await tx.keysUnder(k.kv('IPAMBlock'))),
        ...(await tx.keysUnder(k.kv('IPAMHandle'))),
        ...(await tx.keysUnder(k.aff(''))),
      ];
      for (const key of old) if (!keep.has(key)) tx.del(key);
      tx.put(k.kr('IPAMBlock'), '');
      tx.put(k.kr('IPAMHandle'), '');
    });
  }

  async blockNames(): Promise<string[]> {
    return runTx(this.backend, 'listing blocks', async (tx) => {
      const p = this.keys.kv('IPAMBlock');
      return (await tx.keysUnder(p)).map((key) => key.slice(p.length));
    });
  }
}
