// What a storage backend provides underneath the Datastore API. Values travel as JSON text
// (without metadata.resourceVersion: the revision is kept beside the value, never inside it).
import type { Kind } from '../resources/index.js';
import type { Durability } from './durability.js';
import type { IpamStore } from './ipam-store.js';

export interface LogEntry {
  revision: number;
  type: 'put' | 'del';
  kind: Kind;
  key: string;
  /** For a put the new value, for a del the value that was deleted. */
  json: string;
}

export interface RawItem {
  kind: Kind;
  key: string;
  revision: number;
  json: string;
}

export interface RawSnapshot {
  revision: number;
  storeId: string;
  items: RawItem[];
  /** The last revision that changed each listed kind (0 if never). */
  kindRevisions: Partial<Record<Kind, number>>;
}

export interface RawWrite {
  mode: 'create' | 'update' | 'apply';
  kind: Kind;
  key: string;
  json: string;
  expectRevision?: number;
  /** Refuse the write if any object of this kind changed after this revision (set-wide guard). */
  kindUnchangedSince?: { kind: Kind; revision: number };
}

/** A watch's own view of the store (in Redis, its own connection: XREAD BLOCK ties one up). */
export interface LogReader {
  /** Revisions may skip numbers (etcd): a trim is then only ever told by LogTrimmedError. */
  readonly revisionsSkip?: boolean;
  head(): Promise<{ revision: number; storeId: string }>;
  snapshot(kinds: readonly Kind[]): Promise<RawSnapshot>;
  /**
   * The entries after `after` in revision order, waiting up to waitMs for one; [] on timeout.
   * Entries of one transaction share a revision and come in one read. A log whose revisions
   * have no holes (memory, Redis) shows a trim by a first entry that is not after + 1; one
   * whose revisions skip (etcd: one per transaction, shared with keys of other stores) throws
   * LogTrimmedError instead.
   */
  read(after: number, waitMs: number): Promise<LogEntry[]>;
  close(): Promise<void>;
}

/**
 * Who the store is. `storeId` is set once when the store is first written (null: nothing was
 * ever written, e.g. Redis just came back empty); it changes when the store is emptied and
 * written again. `epoch` is 0 until `podroute ipam repair` marks the store repaired (then the
 * time of the repair in ms), so a record of an earlier store can tell "repaired since" from
 * "replaced since". `revision` goes backwards only when the store was rolled back.
 */
export interface StoreIdentity {
  storeId: string | null;
  epoch: number;
  revision: number;
}

export interface RawBackend {
  readonly name: 'memory' | 'redis' | 'etcd';
  get(kind: Kind, key: string): Promise<{ revision: number; json: string } | undefined>;
  /** Returns the new revision. Throws AlreadyExists/NotFound/Conflict or KindChangedError. */
  write(w: RawWrite): Promise<number>;
  /** Returns the revision of the delete and the deleted value. */
  remove(kind: Kind, key: string, expectRevision?: number): Promise<{ revision: number; json: string }>;
  snapshot(kinds: readonly Kind[]): Promise<RawSnapshot>;
  revision(): Promise<number>;
  openReader(): LogReader;
  identity(): Promise<StoreIdentity>;
  /** Sets a new epoch (the repair's time, later than any before) and returns the identity. */
  markRepaired(): Promise<StoreIdentity>;
  /**
   * Whether an acknowledged write survives the store's restart, and how (durability.ts).
   * Rejects when the store will not say: Redis with CONFIG renamed or forbidden, etcd unreachable.
   */
  durability(): Promise<Durability>;
  /** The backend's atomic IPAM operations, over the same store (one per backend). */
  ipamStore(): IpamStore;
  close(): Promise<void>;
}

export class KindChangedError extends Error {
  constructor(
    readonly kind: Kind,
    readonly revision: number,
  ) {
    super(`${kind} objects changed at revision ${revision}`);
  }
}

/** The log no longer holds the entries after `after` (etcd: compacted past it); list and diff. */
export class LogTrimmedError extends Error {
  constructor(readonly after: number) {
    super(`the change log was trimmed past revision ${after}`);
  }
}
