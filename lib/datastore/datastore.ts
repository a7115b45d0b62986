// The Datastore API over any RawBackend: validation, revision guards, the IPPool overlap
// rule, and watches. Backends only store bytes and revisions.
import {
  IPAM_OWNED_KINDS,
  resourceKey,
  type IPPool,
  type Kind,
  type Resource,
  type ResourceOf,
  validateResource,
} from '../resources/index.js';
import { KindChangedError, type RawBackend } from './backend.js';
import { decodeResource, encodeResource } from './codec.js';
import type { Durability } from './durability.js';
import { DatastoreError } from './errors.js';
import { batchPoolConflict, poolConflict } from './pool-rules.js';
import { LogWatcher } from './watcher.js';
import type { Datastore, DeleteOptions, ListResult, WatchOptions, Watcher } from './types.js';

const GUARD_RETRIES = 10;

export class BackendDatastore implements Datastore {
  constructor(readonly raw: RawBackend) {}

  get backend(): 'memory' | 'redis' | 'etcd' {
    return this.raw.name;
  }

  async get<K extends Kind>(kind: K, key: string): Promise<ResourceOf<K> | undefined> {
    const got = await this.raw.get(kind, key);
    return got ? (decodeResource(kind, got.json, got.revision) as ResourceOf<K>) : undefined;
  }

  create<R extends Resource>(resource: R): Promise<R> {
    return this.write('create', resource);
  }
  update<R extends Resource>(resource: R): Promise<R> {
    return this.write('update', resource);
  }
  apply<R extends Resource>(resource: R): Promise<R> {
    return this.write('apply', resource);
  }

  async delete<K extends Kind>(kind: K, key: string, options: DeleteOptions = {}): Promise<ResourceOf<K>> {
    this.refuseIpamOwned(kind);
    const { json, revision } = await this.raw.remove(kind, key, options.revision);
    return decodeResource(kind, json, revision) as ResourceOf<K>;
  }

  async list<K extends Kind>(kind: K): Promise<ListResult<ResourceOf<K>>> {
    const snap = await this.raw.snapshot([kind]);
    const items = snap.items.map((it) => decodeResource(kind, it.json, it.revision) as ResourceOf<K>);
    items.sort((a, b) => (resourceKey(a) < resourceKey(b) ? -1 : 1));
    return { items, revision: snap.revision };
  }

  revision(): Promise<number> {
    return this.raw.revision();
  }

  /** Whether the store keeps what it acknowledged, and how; see durability.ts. */
  durability(): Promise<Durability> {
    return this.raw.durability();
  }

  watch(options: WatchOptions = {}): Watcher {
    return new LogWatcher(this.raw.openReader(), options);
  }

  close(): Promise<void> {
    return this.raw.close();
  }

  private refuseIpamOwned(kind: Kind): void {
    if (IPAM_OWNED_KINDS.includes(kind)) {
      throw new DatastoreError(
        `${kind} objects are written only by IPAM (autoAssign / releaseByHandle), so that their indexes stay exact`,
        'IpamOwned',
      );
    }
  }

  private async write<R extends Resource>(mode: 'create' | 'update' | 'apply', input: R): Promise<R> {
    const resource = validateResource(input) as R;
    this.refuseIpamOwned(resource.kind);
    const key = resourceKey(resource);
    const json = encodeResource(resource);
    const rv = resource.metadata.resourceVersion;
    const expectRevision = mode === 'update' && rv !== undefined ? Number(rv) : undefined;
    for (let attempt = 0; ; attempt++) {
      let kindUnchangedSince: { kind: Kind; revision: number } | undefined;
      if (resource.kind === 'IPPool') kindUnchangedSince = await this.checkPool(resource as IPPool);
      try {
        const revision = await this.raw.write({ mode, kind: resource.kind, key, json, expectRevision, kindUnchangedSince });
        return { ...resource, metadata: { ...resource.metadata, resourceVersion: String(revision) } };
      } catch (e) {
        // Another pool was written between our check and our write: check again.
        if (e instanceof KindChangedError && attempt < GUARD_RETRIES) continue;
        throw e;
      }
    }
  }

  /**
   * Checks the pools of one file against each other and the stored pools before any is
   * written, so a refused pool leaves none of its file's pools behind. The write of each
   * still checks again (another writer may come between).
   */
  async checkPools(pools: readonly IPPool[]): Promise<void> {
    if (pools.length === 0) return;
    const bad = batchPoolConflict(pools, (await this.list('IPPool')).items);
    if (bad) throw bad;
  }

  /**
   * Pools must not overlap, and a pool's CIDR and block size are fixed once it exists (its
   * blocks were carved with them). Checked against a snapshot of all pools; the write then
   * carries "no pool changed since that snapshot", so two racing creates cannot both pass.
   */
  private async checkPool(pool: IPPool): Promise<{ kind: Kind; revision: number }> {
    const snap = await this.raw.snapshot(['IPPool']);
    const stored = snap.items.map((it) => decodeResource('IPPool', it.json, it.revision) as IPPool);
    const bad = poolConflict(pool, stored);
    if (bad) throw bad;
    return { kind: 'IPPool', revision: snap.kindRevisions.IPPool ?? 0 };
  }
}
