// When the datastore comes back empty or replaced (Redis restarted without persistence, a
// snapshot restored), the agent must not follow it: an empty store would have felix delete
// every pod's route, the sessions close, and IPAM hand out again the addresses pods still hold.
// So the agent holds its ground. It stops applying datastore events (they wait in order),
// writes back what it knows it owns (its Node, its pods' WorkloadEndpoints and the IPPools
// they came from), so that `podroute ipam repair` can rebuild the allocations from them, and
// resumes once the store is repaired: then the waiting events are applied in one go, and
// felix never sees the empty store in between.
import { type BackendDatastore, type StoreIdentity, type WatchEvent, AlreadyExistsError } from '../datastore/index.js';
import type { IPPool, Node, Resource, WorkloadEndpoint } from '../resources/index.js';
import { storeIdentityProblem } from '../ipam/guard.js';

export interface Owned {
  self: Node | undefined;
  workloads: Iterable<WorkloadEndpoint>;
  pools: Iterable<IPPool>;
}

export interface StoreLossOptions {
  datastore: BackendDatastore;
  /** What this node owns, as last seen before the loss (the cache is not touched while held). */
  owned: () => Owned;
  /** The events that waited, in order, once the store is repaired. */
  resume: (waited: WatchEvent[]) => void;
  log: (event: string, fields: Record<string, unknown>) => void;
  /** How often to look whether the store was repaired. Default 1 s. */
  pollMs?: number;
}

export interface StoreHold {
  since: number;
  problem: string | undefined;
  restored: boolean;
}

export class StoreLossGuard {
  private seen: StoreIdentity | undefined;
  private held: (StoreHold & { waiting: WatchEvent[] }) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly o: StoreLossOptions) {}

  /** Records the store this agent follows: the one it registered in. */
  async start(): Promise<void> {
    this.seen = await this.o.datastore.raw.identity();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Why the agent is not following the store, while it is not. */
  get hold(): StoreHold | undefined {
    if (!this.held) return undefined;
    const { since, problem, restored } = this.held;
    return { since, problem, restored };
  }

  /** The watcher reconnected to another store: hold now, before its events arrive; then look. */
  suspect(): void {
    if (this.held || this.stopped) return;
    this.held = { since: Date.now(), problem: undefined, restored: false, waiting: [] };
    void this.check();
  }

  /** Takes the event while held (true), so the caller does not apply it. */
  offer(e: WatchEvent): boolean {
    if (!this.held) return false;
    this.held.waiting.push(e);
    return true;
  }

  private async check(): Promise<void> {
    const held = this.held;
    if (!held || this.stopped) return;
    try {
      const now = await this.o.datastore.raw.identity();
      const problem = storeIdentityProblem(this.seen, now);
      if (!problem) return this.release(now);
      if (held.problem === undefined) this.o.log('datastore-replaced', { problem, waiting: 'podroute ipam repair' });
      held.problem = problem;
      if (!held.restored) {
        await this.restore();
        held.restored = true;
      }
    } catch (e) {
      this.o.log('datastore-error', { error: (e as Error).message, while: 'holding after the store was replaced' });
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.check(), this.o.pollMs ?? 1000).unref();
  }

  private release(now: StoreIdentity): void {
    const held = this.held!;
    this.held = undefined;
    this.seen = now;
    if (held.problem !== undefined)
      this.o.log('datastore-repaired', { heldMs: Date.now() - held.since, events: held.waiting.length, epoch: now.epoch });
    this.o.resume(held.waiting);
  }

  /** Writes back, where missing, what this node owns; a store that has it already keeps its own. */
  private async restore(): Promise<void> {
    const owned = this.o.owned();
    const counts = { node: 0, workloads: 0, pools: 0 };
    const put = async (r: Resource): Promise<boolean> => {
      const { resourceVersion: _rv, ...metadata } = r.metadata;
      try {
        await this.o.datastore.create({ ...r, metadata } as Resource);
        return true;
      } catch (e) {
        if (e instanceof AlreadyExistsError) return false;
        throw e;
      }
    };
    for (const pool of owned.pools) if (await put(pool)) counts.pools++;
    if (owned.self && (await put(owned.self))) counts.node++;
    for (const w of owned.workloads) if (await put(w)) counts.workloads++;
    this.o.log('datastore-restored', counts);
  }
}
