import type { EventEmitter } from 'eventemitter3';
import type { Kind, Resource, ResourceOf } from '../resources/index.js';

export interface ListResult<R> {
  items: R[];
  /** The store revision the list is a consistent snapshot of; watch from here to follow it. */
  revision: number;
}

export type WatchEvent =
  | {
      type: 'put';
      kind: Kind;
      key: string;
      /** The revision of this change (for synthetic events: of the snapshot they come from). */
      revision: number;
      resource: Resource;
      /** True when made up by a resync (list + diff) rather than read from the change log. */
      synthetic: boolean;
    }
  | { type: 'delete'; kind: Kind; key: string; revision: number; previous?: Resource; synthetic: boolean }
  /** The watcher's view equals the store at `revision` (after the initial list and after each resync). */
  | { type: 'synced'; revision: number };

/**
 * `replaced`: the store the watcher reconnected to is not the one it followed (it came back
 * empty, was replaced or rolled back). Said before the resync's events, so a consumer can stop
 * following before they arrive.
 */
export type WatchStatus = 'connected' | 'disconnected' | 'resyncing' | 'replaced';

export interface WatchEvents {
  event: [WatchEvent];
  status: [WatchStatus];
  /** A lost connection or a failed read; the watcher keeps trying on its own. */
  error: [Error];
}

export interface WatchOptions {
  /** Only these kinds (default: all). */
  kinds?: readonly Kind[];
  /**
   * Deliver the changes after this revision. Omitted: first deliver every existing object as
   * a synthetic put, then `synced`, then the changes (Calico's syncer pattern).
   */
  fromRevision?: number;
  /**
   * With fromRevision: the objects the caller already holds (e.g. its last list). Only used if
   * the log was trimmed past fromRevision: the resync then also deletes what vanished.
   */
  known?: readonly Resource[];
}

export interface Watcher extends EventEmitter<WatchEvents> {
  /** The last revision delivered or passed over. */
  readonly revision: number;
  close(): Promise<void>;
}

export interface DeleteOptions {
  /** Revision guard: delete only if the object is still at this revision. */
  revision?: number;
}

export interface Datastore {
  readonly backend: 'memory' | 'redis' | 'etcd';
  get<K extends Kind>(kind: K, key: string): Promise<ResourceOf<K> | undefined>;
  /** Fails with AlreadyExistsError if the object exists. */
  create<R extends Resource>(resource: R): Promise<R>;
  /** Fails with NotFoundError, or ConflictError when metadata.resourceVersion is set and stale. */
  update<R extends Resource>(resource: R): Promise<R>;
  /** Create or replace, without a revision guard. */
  apply<R extends Resource>(resource: R): Promise<R>;
  /** Returns the deleted object; NotFoundError if there was none. */
  delete<K extends Kind>(kind: K, key: string, options?: DeleteOptions): Promise<ResourceOf<K>>;
  list<K extends Kind>(kind: K): Promise<ListResult<ResourceOf<K>>>;
  /** The current store revision (0 for an empty store). */
  revision(): Promise<number>;
  watch(options?: WatchOptions): Watcher;
  close(): Promise<void>;
}
