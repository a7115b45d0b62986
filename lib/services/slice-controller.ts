// Keeps the EndpointSlices of selector Services in line with the pods' WorkloadEndpoints. Every
// node agent runs one; they agree without electing a leader because each writes only what
// desiredSlices() computes (the same objects on every node for the same cluster state) and
// every write is a compare-and-set: a create fails if the slice is there, an update or delete
// fails if the slice changed since this node read it. The node that loses drops its write; the
// watch then brings it the winner's slice, which already says what it wanted, so it writes
// nothing. Only slices labelled as ours (managed-by) are ever changed or deleted.
import { AlreadyExistsError, ConflictError, type Datastore, NotFoundError, type Watcher, type WatchEvent } from '../datastore/index.js';
import { type EndpointSlice, type Kind, MANAGED_BY_LABEL, resourceKey, type Service, type WorkloadEndpoint } from '../resources/types.js';
import { desiredSlices, SLICE_CONTROLLER, sameSlice } from './endpoint-slices.js';

export interface SliceControllerOptions {
  log?: (event: string, fields: Record<string, unknown>) => void;
  /** How long to wait before trying again after the store refused or failed. Default 1 s. */
  retryMs?: number;
}

/** What the controller has done, for status and tests. */
export interface SliceControllerStats {
  created: number;
  updated: number;
  deleted: number;
  /** Writes another writer got in first (compare-and-set lost): dropped, not retried. */
  lost: number;
  passes: number;
}

export class EndpointSliceController {
  static readonly kinds: readonly Kind[] = ['Service', 'WorkloadEndpoint', 'EndpointSlice'];
  private readonly services = new Map<string, Service>();
  private readonly workloads = new Map<string, WorkloadEndpoint>();
  private readonly slices = new Map<string, EndpointSlice>();
  private watcher: Watcher | undefined;
  private synced = false;
  private running = false;
  private dirty = false;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private idle: (() => void)[] = [];
  readonly stats: SliceControllerStats = { created: 0, updated: 0, deleted: 0, lost: 0, passes: 0 };

  constructor(
    private readonly ds: Datastore,
    private readonly options: SliceControllerOptions = {},
  ) {}

  /** Follows the store from now on; resolves once the first pass after the initial list is done. */
  async start(): Promise<void> {
    this.watcher = this.ds.watch({ kinds: EndpointSliceController.kinds });
    this.watcher.on('event', (e) => this.apply(e));
    this.watcher.on('error', (e) => this.log('endpointslice-watch-error', { error: e.message }));
    await new Promise<void>((resolve) => {
      const check = (e: WatchEvent) => {
        if (e.type !== 'synced') return;
        this.watcher?.off('event', check);
        resolve();
      };
      this.watcher!.on('event', check);
    });
    await this.settled();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    await this.watcher?.close();
    for (const f of this.idle.splice(0)) f();
  }

  /** Resolves when no pass is running or due. */
  settled(): Promise<void> {
    if (!this.running && !this.dirty) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Takes one watch event of the kinds it follows. */
  apply(e: WatchEvent): void {
    if (e.type === 'synced') {
      this.synced = true;
      this.schedule();
      return;
    }
    const map =
      e.kind === 'Service'
        ? this.services
        : e.kind === 'WorkloadEndpoint'
          ? this.workloads
          : e.kind === 'EndpointSlice'
            ? this.slices
            : undefined;
    if (!map) return;
    if (e.type === 'put') (map as Map<string, unknown>).set(e.key, e.resource);
    else map.delete(e.key);
    if (this.synced) this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.dirty = true;
    if (this.running) return;
    this.running = true;
    // Events delivered together are folded into one pass.
    setImmediate(() => void this.loop());
  }

  private async loop(): Promise<void> {
    try {
      while (this.dirty && !this.stopped) {
        this.dirty = false;
        this.stats.passes++;
        if (!(await this.pass())) {
          clearTimeout(this.retry);
          this.retry = setTimeout(() => this.schedule(), this.options.retryMs ?? 1000);
        }
      }
    } finally {
      this.running = false;
      if (!this.dirty) for (const f of this.idle.splice(0)) f();
    }
  }

  /** One comparison of the slices there with the slices wanted; false when a write failed for another reason than a lost race. */
  private async pass(): Promise<boolean> {
    const want = new Map<string, EndpointSlice>();
    for (const svc of this.services.values())
      for (const s of desiredSlices(svc, this.workloads.values()) ?? []) want.set(resourceKey(s), s);
    let ok = true;
    const write = async (what: 'created' | 'updated' | 'deleted', key: string, op: () => Promise<unknown>) => {
      try {
        await op();
        this.stats[what]++;
        this.log(`endpointslice-${what}`, { slice: key });
      } catch (e) {
        if (e instanceof ConflictError || e instanceof AlreadyExistsError || e instanceof NotFoundError) this.stats.lost++;
        else {
          ok = false;
          this.log('endpointslice-write-failed', { slice: key, error: (e as Error).message });
        }
      }
    };
    for (const [key, s] of want) {
      const have = this.slices.get(key);
      if (!have) await write('created', key, () => this.ds.create(s));
      else if (!sameSlice(have, s))
        await write('updated', key, () =>
          this.ds.update({ ...s, metadata: { ...s.metadata, resourceVersion: have.metadata.resourceVersion } }),
        );
    }
    for (const [key, have] of this.slices) {
      if (want.has(key) || have.metadata.labels?.[MANAGED_BY_LABEL] !== SLICE_CONTROLLER) continue;
      await write('deleted', key, () => this.ds.delete('EndpointSlice', key, { revision: Number(have.metadata.resourceVersion) }));
    }
    return ok;
  }

  private log(event: string, fields: Record<string, unknown>): void {
    this.options.log?.(event, fields);
  }
}
