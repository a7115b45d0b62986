// The in-memory backend: the embedded default for one process. JavaScript runs one
// callback at a time, so any synchronous function over these maps is atomic; the IPAM store
// (memory-ipam.ts) relies on that through `transact`.
import { randomUUID } from 'node:crypto';
import type { Kind } from '../resources/index.js';
import {
  KindChangedError,
  type LogEntry,
  type LogReader,
  type RawBackend,
  type RawSnapshot,
  type RawWrite,
  type StoreIdentity,
} from './backend.js';
import type { Durability } from './durability.js';
import { AlreadyExistsError, ConflictError, NotFoundError } from './errors.js';
import type { IpamStore } from './ipam-store.js';
import { MemoryIpamStore } from './memory-ipam.js';

export interface MemoryBackendOptions {
  /** How many log entries to keep for watchers that fall behind (default 10,000). */
  logLength?: number;
}

interface Stored {
  revision: number;
  json: string;
}

/** Synchronous access for atomic multi-object operations (IPAM). */
export interface MemoryTxn {
  get(kind: Kind, key: string): Stored | undefined;
  keys(kind: Kind): IterableIterator<string>;
  entries(kind: Kind): IterableIterator<[string, Stored]>;
  put(kind: Kind, key: string, json: string): number;
  del(kind: Kind, key: string): number | undefined;
}

export class MemoryBackend implements RawBackend {
  readonly name = 'memory' as const;
  readonly storeId = randomUUID();
  private rev = 0;
  private epoch = 0;
  private readonly data = new Map<Kind, Map<string, Stored>>();
  private readonly kindRev = new Map<Kind, number>();
  private log: LogEntry[] = [];
  private readonly logLength: number;
  private waiters = new Set<() => void>();
  private readonly txn: MemoryTxn;
  private ipam: MemoryIpamStore | undefined;

  constructor(options: MemoryBackendOptions = {}) {
    this.logLength = options.logLength ?? 10_000;
    this.txn = {
      get: (kind, key) => this.table(kind).get(key),
      keys: (kind) => this.table(kind).keys(),
      entries: (kind) => this.table(kind).entries(),
      put: (kind, key, json) => this.put(kind, key, json),
      del: (kind, key) => this.del(kind, key),
    };
  }

  /**
   * Fills an empty backend with saved state, revisions as they were (the file datastore's load),
   * so a resourceVersion read by one process still means the same object in the next.
   */
  restore(items: readonly { kind: Kind; key: string; revision: number; json: string }[], revision: number): void {
    if (this.rev !== 0) throw new Error('restore: the backend already holds data');
    for (const i of items) {
      this.table(i.kind).set(i.key, { revision: i.revision, json: i.json });
      this.kindRev.set(i.kind, Math.max(this.kindRev.get(i.kind) ?? 0, i.revision));
    }
    this.rev = Math.max(revision, ...items.map((i) => i.revision), 0);
  }

  /** Runs fn atomically (it must not await). */
  transact<T>(fn: (tx: MemoryTxn) => T): T {
    return fn(this.txn);
  }

  private table(kind: Kind): Map<string, Stored> {
    let t = this.data.get(kind);
    if (!t) {
      t = new Map();
      this.data.set(kind, t);
    }
    return t;
  }

  private append(e: LogEntry): void {
    this.log.push(e);
    if (this.log.length > this.logLength * 2) this.log = this.log.slice(-this.logLength);
    this.kindRev.set(e.kind, e.revision);
    const w = this.waiters;
    this.waiters = new Set();
    for (const wake of w) wake();
  }

  private put(kind: Kind, key: string, json: string): number {
    const revision = ++this.rev;
    this.table(kind).set(key, { revision, json });
    this.append({ revision, type: 'put', kind, key, json });
    return revision;
  }

  private del(kind: Kind, key: string): number | undefined {
    const t = this.table(kind);
    const cur = t.get(key);
    if (!cur) return undefined;
    t.delete(key);
    const revision = ++this.rev;
    this.append({ revision, type: 'del', kind, key, json: cur.json });
    return revision;
  }

  async get(kind: Kind, key: string): Promise<Stored | undefined> {
    return this.table(kind).get(key);
  }

  async write(w: RawWrite): Promise<number> {
    const cur = this.table(w.kind).get(w.key);
    if (w.mode === 'create' && cur) throw new AlreadyExistsError(w.kind, w.key);
    if (w.mode === 'update' && !cur) throw new NotFoundError(w.kind, w.key);
    if (w.expectRevision !== undefined && cur && cur.revision !== w.expectRevision) {
      throw new ConflictError(w.kind, w.key, w.expectRevision, cur.revision);
    }
    const g = w.kindUnchangedSince;
    if (g && (this.kindRev.get(g.kind) ?? 0) > g.revision) throw new KindChangedError(g.kind, this.kindRev.get(g.kind)!);
    return this.put(w.kind, w.key, w.json);
  }

  async remove(kind: Kind, key: string, expectRevision?: number): Promise<{ revision: number; json: string }> {
    const cur = this.table(kind).get(key);
    if (!cur) throw new NotFoundError(kind, key);
    if (expectRevision !== undefined && cur.revision !== expectRevision) throw new ConflictError(kind, key, expectRevision, cur.revision);
    return { revision: this.del(kind, key)!, json: cur.json };
  }

  async snapshot(kinds: readonly Kind[]): Promise<RawSnapshot> {
    const items: RawSnapshot['items'] = [];
    const kindRevisions: RawSnapshot['kindRevisions'] = {};
    for (const kind of kinds) {
      kindRevisions[kind] = this.kindRev.get(kind) ?? 0;
      for (const [key, s] of this.table(kind)) items.push({ kind, key, revision: s.revision, json: s.json });
    }
    return { revision: this.rev, storeId: this.storeId, items, kindRevisions };
  }

  async revision(): Promise<number> {
    return this.rev;
  }

  async identity(): Promise<StoreIdentity> {
    return { storeId: this.storeId, epoch: this.epoch, revision: this.rev };
  }

  async markRepaired(): Promise<StoreIdentity> {
    this.epoch = Math.max(this.epoch + 1, Date.now());
    return this.identity();
  }

  /** Entries after `after`; if the log was trimmed past it, the first entry shows the gap. */
  entriesAfter(after: number): LogEntry[] {
    if (this.log.length === 0 || after >= this.rev) return [];
    const first = this.log[0]!.revision;
    const start = Math.max(0, after + 1 - first);
    return this.log.slice(start, start + 1000);
  }

  openReader(): LogReader {
    let closed = false;
    let wakeOnClose: (() => void) | undefined;
    return {
      head: async () => ({ revision: this.rev, storeId: this.storeId }),
      snapshot: (kinds) => this.snapshot(kinds),
      read: async (after, waitMs) => {
        const now = this.entriesAfter(after);
        if (now.length > 0 || closed) return now;
        await new Promise<void>((resolve) => {
          const done = (): void => {
            clearTimeout(t);
            this.waiters.delete(done);
            resolve();
          };
          const t = setTimeout(done, waitMs);
          this.waiters.add(done);
          wakeOnClose = done;
        });
        return closed ? [] : this.entriesAfter(after);
      },
      close: async () => {
        closed = true;
        wakeOnClose?.();
      },
    };
  }

  async durability(): Promise<Durability> {
    return { store: 'memory', durable: false };
  }

  ipamStore(): IpamStore {
    // One per backend: its indexes are derived from every IPAM write to these maps.
    this.ipam ??= new MemoryIpamStore((fn) => this.transact(fn));
    return this.ipam;
  }

  async close(): Promise<void> {
    for (const wake of this.waiters) wake();
  }
}
