// What the API server and kube-controller-manager do for Services, done by the node agents:
// cluster IPs and NodePorts for Services that name none (allocate.ts), and the EndpointSlices
// of selector Services kept in line with the pods' WorkloadEndpoints (endpoint-slices.ts). Every
// node agent runs one; they agree without electing a leader because each writes only what
// those pure functions compute (the same objects on every node for the same cluster state) and
// every write is a compare-and-set: a create fails if the slice is there, an update or delete
// fails if the slice changed since this node read it. The node that loses drops its write; the
// watch then brings it the winner's slice, which already says what it wanted, so it writes
// nothing. Only slices labelled as ours (managed-by) are ever changed or deleted, and only the
// cluster IPs and NodePorts of a Service that has none are filled in.
import { AlreadyExistsError, ConflictError, type Datastore, NotFoundError, type Watcher, type WatchEvent } from '../datastore/index.js';
import {
  type BGPConfiguration,
  type EndpointSlice,
  type Kind,
  MANAGED_BY_LABEL,
  resourceKey,
  type Service,
  type WorkloadEndpoint,
} from '../resources/types.js';
import { allocate, serviceRanges } from './allocate.js';
import { desiredSlices, SLICE_CONTROLLER, sameSlice } from './endpoint-slices.js';

export interface ServiceControllerOptions {
  log?: (event: string, fields: Record<string, unknown>) => void;
  /** How long to wait before trying again after the store refused or failed. Default 1 s. */
  retryMs?: number;
}

/** What the controller has done, for status and tests. */
export interface ServiceControllerStats {
  /** Services given cluster IPs or NodePorts. */
  allocated: number;
  created: number;
  updated: number;
  deleted: number;
  /** Writes another writer got in first (compare-and-set lost): dropped, not retried. */
  lost: number;
  passes: number;
}

export class ServiceController {
  static readonly kinds: readonly Kind[] = ['Service', 'WorkloadEndpoint', 'EndpointSlice', 'BGPConfiguration'];
  private readonly services = new Map<string, Service>();
  private readonly workloads = new Map<string, WorkloadEndpoint>();
  private readonly slices = new Map<string, EndpointSlice>();
  private config: BGPConfiguration | undefined;
  private watcher: Watcher | undefined;
  private synced = false;
  private running = false;
  private dirty = false;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private idle: (() => void)[] = [];
  readonly stats: ServiceControllerStats = { allocated: 0, created: 0, updated: 0, deleted: 0, lost: 0, passes: 0 };

  constructor(
    private readonly ds: Datastore,
    private readonly options: ServiceControllerOptions = {},
  ) {}

  /** Follows the store from now on; resolves once the first pass after the initial list is done. */
  async start(): Promise<void> {
    this.watcher = this.ds.watch({ kinds: ServiceController.kinds });
    this.watcher.on('event', (e) => this.apply(e));
    this.watcher.on('error', (e) => this.log('service-controller-watch-error', { error: e.message }));
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
    if (e.kind === 'BGPConfiguration') {
      // The cluster IP range is the default configuration's.
      if (e.key === 'default') this.config = e.type === 'put' ? (e.resource as BGPConfiguration) : undefined;
      if (this.synced) this.schedule();
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

  /** One comparison of what is there with what is wanted; false when a write failed for another reason than a lost race. */
  private async pass(): Promise<boolean> {
    let ok = true;
    const write = async (what: 'allocated' | 'created' | 'updated' | 'deleted', key: string, op: () => Promise<unknown>) => {
      try {
        await op();
        this.stats[what]++;
        this.log(what === 'allocated' ? 'service-allocated' : `endpointslice-${what}`, { resource: key });
      } catch (e) {
        if (e instanceof ConflictError || e instanceof AlreadyExistsError || e instanceof NotFoundError) this.stats.lost++;
        else {
          ok = false;
          this.log('service-controller-write-failed', { resource: key, error: (e as Error).message });
        }
      }
    };
    // The Service as read carries its revision: the update is refused if anyone wrote it since.
    for (const s of allocate(this.services.values(), serviceRanges(this.config)))
      await write('allocated', resourceKey(s), () => this.ds.update(s));
    const want = new Map<string, EndpointSlice>();
    for (const svc of this.services.values())
      for (const s of desiredSlices(svc, this.workloads.values()) ?? []) want.set(resourceKey(s), s);
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
