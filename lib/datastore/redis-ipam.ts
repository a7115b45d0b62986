// IPAM over the Redis backend: each operation is one of the scripts in redis-ipam-lua.ts,
// run through the backend's script runner so it shares the datastore's prelude and keys.
import type { Redis } from 'ioredis';
import type { AssignRequest, Assigned, BorrowResult, ClaimCandidate, ClaimResult, IpamStore, RestoredBlock } from './ipam-store.js';
import { guard, type ScriptRunner } from './redis-client.js';
import { ASSIGN_AFFINE, BORROW, CLAIM, IPAM_PRELUDE, RELEASE, RESTORE } from './redis-ipam-lua.js';

type Reply = (string | number)[];

function assigned(r: Reply, from: number): Assigned {
  return { ordinal: Number(r[from]), blockCidr: String(r[from + 1]), affinity: String(r[from + 2] ?? '') };
}

export class RedisIpamStore implements IpamStore {
  constructor(
    private readonly client: Redis,
    private readonly prefix: string,
    private readonly scripts: ScriptRunner,
  ) {}

  private run(name: string, body: string, args: readonly (string | number)[]): Promise<unknown> {
    return this.scripts.run(name, IPAM_PRELUDE + body, args);
  }

  async assignFromAffine(req: AssignRequest, pools: readonly string[]): Promise<Assigned | null> {
    const r = (await this.run('podrouteIpamAssignAffine', ASSIGN_AFFINE, [req.node, req.handle, req.attrs, ...pools])) as Reply | null;
    return r ? assigned(r, 0) : null;
  }

  async claimAndAssign(
    req: AssignRequest,
    pool: { name: string; cidr: string },
    candidates: readonly ClaimCandidate[],
  ): Promise<ClaimResult> {
    const args: (string | number)[] = [req.node, req.handle, req.attrs, pool.name, pool.cidr];
    for (const c of candidates) args.push(c.name, c.cidr, c.size);
    const r = (await this.run('podrouteIpamClaim', CLAIM, args)) as Reply;
    if (r[0] === 'ok') return { result: 'ok', assigned: assigned(r, 1) };
    return { result: r[0] as 'raced' | 'nopool' | 'limit' };
  }

  async borrow(req: AssignRequest, blockNames: readonly string[]): Promise<BorrowResult> {
    const r = (await this.run('podrouteIpamBorrow', BORROW, [req.node, req.handle, req.attrs, ...blockNames])) as Reply;
    if (r[0] === 'ok') return { result: 'ok', assigned: assigned(r, 1) };
    return { result: r[0] as 'none' | 'strict' };
  }

  async releaseHandle(handle: string): Promise<[string, number][]> {
    const r = (await this.run('podrouteIpamRelease', RELEASE, [handle])) as Reply;
    const out: [string, number][] = [];
    for (let i = 0; i < r.length; i += 2) out.push([String(r[i]), Number(r[i + 1])]);
    return out;
  }

  async restore(blocks: readonly RestoredBlock[], handles: readonly { name: string; json: string }[]): Promise<void> {
    const args: (string | number)[] = [blocks.length];
    for (const b of blocks) args.push(b.name, b.pool, b.json);
    for (const h of handles) args.push(h.name, h.json);
    await this.run('podrouteIpamRestore', RESTORE, args);
  }

  async blockNames(): Promise<string[]> {
    const c = this.client;
    return guard(c, () => c.hkeys(`${this.prefix}:kv:IPAMBlock`));
  }
}
