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
  SERVICE_NAME_LABEL,
  type Service,
  type WorkloadEndpoint,
} from '../resources/index.js';
import { allocate, serviceRanges } from './allocate.js';
import { desiredSlices, SLICE_CONTROLLER, sameSlice, selects } from './endpoint-slices.js';

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
  /** Service keys by namespace: a pod's change concerns only the services of its namespace. */
  private readonly servicesByNs = new Map<string, Set<string>>();
  private readonly workloadsByNs = new Map<string, Map<string, WorkloadEndpoint>>();
  /** Slices by the "namespace/name" of the Service their label names, then by slice key. */
  private readonly slicesByService = new Map<string, Map<string, EndpointSlice>>();
  private readonly sliceOwner = new Map<string, string>();
  private config: BGPConfiguration | undefined;
  /** Services whose slices must be compared with what they should be, at the next pass. */
  private readonly dirtyServices = new Set<string>();
  private allocationDue = false;
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
      for (const k of this.services.keys()) this.dirtyServices.add(k);
      for (const k of this.slicesByService.keys()) this.dirtyServices.add(k);
      this.allocationDue = true;
      this.schedule();
      return;
    }
    const put = e.type === 'put' ? e.resource : undefined;
    switch (e.kind) {
      case 'BGPConfiguration':
        // The cluster IP range is the default configuration's.
        if (e.key !== 'default') return;
        this.config = put as BGPConfiguration | undefined;
        this.allocationDue = true;
        break;
      case 'Service': {
        const ns = e.key.slice(0, e.key.indexOf('/'));
        if (put) {
          this.services.set(e.key, put as Service);
          setOf(this.servicesByNs, ns).add(e.key);
        } else {
          this.services.delete(e.key);
          deleteFrom(this.servicesByNs, ns, e.key);
        }
        this.dirtyServices.add(e.key);
        this.allocationDue = true;
        break;
      }
      case 'WorkloadEndpoint': {
        const ns = e.key.slice(0, e.key.indexOf('/'));
        const pods = mapOf(this.workloadsByNs, ns);
        const before = pods.get(e.key);
        if (put) pods.set(e.key, put as WorkloadEndpoint);
        else deleteFrom(this.workloadsByNs, ns, e.key);
        // The services whose selector the pod met before or meets now.
        for (const key of this.servicesByNs.get(ns) ?? []) {
          const selector = this.services.get(key)?.spec.selector;
          if (selector && [before, put as WorkloadEndpoint | undefined].some((w) => w && selects(selector, w))) this.dirtyServices.add(key);
        }
        break;
      }
      case 'EndpointSlice': {
        const was = this.sliceOwner.get(e.key);
        if (was !== undefined) {
          deleteFrom(this.slicesByService, was, e.key);
          this.sliceOwner.delete(e.key);
          this.dirtyServices.add(was);
        }
        const slice = put as EndpointSlice | undefined;
        const owner = slice?.metadata.labels?.[SERVICE_NAME_LABEL];
        if (slice && owner) {
          const key = `${slice.metadata.namespace}/${owner}`;
          mapOf(this.slicesByService, key).set(e.key, slice);
          this.sliceOwner.set(e.key, key);
          this.dirtyServices.add(key);
        }
        break;
      }
      default:
        return;
    }
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

  /**
   * Allocation when a Service or the range changed, and the slices of each service marked since
   * the last pass; false when a write failed for another reason than a lost race.
   */
  private async pass(): Promise<boolean> {
    let ok = true;
    const write = async (what: 'allocated' | 'created' | 'updated' | 'deleted', key: string, op: () => Promise<unknown>) => {
      try {
        await op();
        this.stats[what]++;
        this.log(what === 'allocated' ? 'service-allocated' : `endpointslice-${what}`, { resource: key });
        return true;
      } catch (e) {
        if (e instanceof ConflictError || e instanceof AlreadyExistsError || e instanceof NotFoundError) {
          this.stats.lost++;
          return true;
        }
        ok = false;
        this.log('service-controller-write-failed', { resource: key, error: (e as Error).message });
        return false;
      }
    };
    if (this.allocationDue) {
      this.allocationDue = false;
      // The Service as read carries its revision: the update is refused if anyone wrote it since.
      for (const s of allocate(this.services.values(), serviceRanges(this.config)))
        if (!(await write('allocated', resourceKey(s), () => this.ds.update(s)))) this.allocationDue = true;
    }
    const dirty = [...this.dirtyServices];
    this.dirtyServices.clear();
    for (const key of dirty) {
      const svc = this.services.get(key);
      const pods = this.workloadsByNs.get(key.slice(0, key.indexOf('/')))?.values() ?? [];
      // Gone, or without a selector now: its slices that we wrote go.
      const want = new Map((svc ? (desiredSlices(svc, pods) ?? []) : []).map((s) => [resourceKey(s), s]));
      const have = this.slicesByService.get(key) ?? new Map<string, EndpointSlice>();
      let done = true;
      for (const [k, s] of want) {
        const had = have.get(k);
        if (!had) done = (await write('created', k, () => this.ds.create(s))) && done;
        else if (!sameSlice(had, s))
          done =
            (await write('updated', k, () =>
              this.ds.update({ ...s, metadata: { ...s.metadata, resourceVersion: had.metadata.resourceVersion } }),
            )) && done;
      }
      for (const [k, had] of [...have]) {
        if (want.has(k) || had.metadata.labels?.[MANAGED_BY_LABEL] !== SLICE_CONTROLLER) continue;
        done =
          (await write('deleted', k, () => this.ds.delete('EndpointSlice', k, { revision: Number(had.metadata.resourceVersion) }))) && done;
      }
      // A failed write is tried again at the retry; a lost race comes back as a slice event.
      if (!done) this.dirtyServices.add(key);
    }
    return ok;
  }

  /**
   * How many namespaces and services the controller keeps entries for: a namespace whose last
   * Service and pod are gone, or a Service whose last slice is gone, keeps none (a cluster that
   * churns namespaces must not grow the agent).
   */
  tracked(): { namespaces: number; services: number; slicedServices: number } {
    const namespaces = new Set([...this.servicesByNs.keys(), ...this.workloadsByNs.keys()]);
    return { namespaces: namespaces.size, services: this.services.size, slicedServices: this.slicesByService.size };
  }

  private log(event: string, fields: Record<string, unknown>): void {
    this.options.log?.(event, fields);
  }
}

/** Deletes one entry of an inner collection, and the inner collection when that was its last. */
function deleteFrom(m: Map<string, { delete(k: string): boolean; readonly size: number }>, outer: string, inner: string): void {
  const v = m.get(outer);
  if (!v) return;
  v.delete(inner);
  if (v.size === 0) m.delete(outer);
}

function mapOf<V>(m: Map<string, Map<string, V>>, k: string): Map<string, V> {
  let v = m.get(k);
  if (!v) m.set(k, (v = new Map()));
  return v;
}

function setOf(m: Map<string, Set<string>>, k: string): Set<string> {
  let v = m.get(k);
  if (!v) m.set(k, (v = new Set()));
  return v;
}
