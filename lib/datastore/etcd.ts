// The etcd backend, through the etcd3 client. Key layout and revisions: etcd-client.ts. Each
// write is one transaction that compares before it puts (create: the key's create revision is
// 0; update and delete with a guard: its mod revision is the one the caller read), so a write
// made on a stale read fails instead of overwriting; etcd's consensus makes an acknowledged
// write survive the loss of any minority of members.
import { randomUUID } from 'node:crypto';
import type { Etcd3 } from 'etcd3';
import type { Kind } from '../resources/index.js';
import { KindChangedError, type LogReader, type RawBackend, type RawSnapshot, type RawWrite, type StoreIdentity } from './backend.js';
import {
  checkEtcdOptions,
  compact,
  etcdKeys,
  newEtcdClient,
  txn,
  unavailable,
  type Compare,
  type EtcdDatastoreOptions,
  type KV,
  type Keys,
  type Op,
} from './etcd-client.js';
import { EtcdIpamStore } from './etcd-ipam.js';
import { EtcdLogReader } from './etcd-reader.js';
import type { Durability } from './durability.js';
import { AlreadyExistsError, ConflictError, DatastoreError, NotFoundError } from './errors.js';
import type { IpamStore } from './ipam-store.js';

/** The store this client writes to: its id and the etcd revision our revision 0 stands at. */
export interface StoreBase {
  id: string;
  base: number;
}

/** Tries of a write whose store was replaced under it (the id compare failed): then it gives up. */
const ID_RETRIES = 3;

export class EtcdBackend implements RawBackend {
  readonly name = 'etcd' as const;
  readonly keys: Keys;
  private store: StoreBase | undefined;
  private compactedTo = 0;
  private ipam: EtcdIpamStore | undefined;

  private constructor(
    readonly client: Etcd3,
    readonly options: EtcdDatastoreOptions,
  ) {
    this.keys = etcdKeys(options);
  }

  static async open(options: EtcdDatastoreOptions): Promise<EtcdBackend> {
    checkEtcdOptions(options);
    const client = await newEtcdClient(options);
    const b = new EtcdBackend(client, options);
    const wait = options.connectWaitMs ?? 10_000;
    const deadline = Date.now() + wait;
    for (;;) {
      try {
        await b.revision();
        return b;
      } catch (e) {
        if (Date.now() + 200 > deadline) {
          client.close();
          throw new DatastoreError(
            `etcd at ${options.endpoints.join(',')} did not answer within ${wait} ms: ${(e as Error).message}`,
            'Unavailable',
          );
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /** The store's id and base, creating the id if the store has none (as the first write does). */
  async ensureStore(): Promise<StoreBase> {
    if (this.store) return this.store;
    const k = this.keys;
    const r = await txn(
      this.client,
      [{ key: k.id, target: 'Create', result: 'Equal', value: 0 }],
      [{ put: k.id, value: randomUUID() }, { get: k.id }],
      [{ get: k.id }],
    );
    const kv = r.succeeded ? r.results[1]![0]! : r.results[0]![0]!;
    this.store = { id: kv.value, base: kv.createRevision };
    return this.store;
  }

  /** Forget the store: the next write reads (or creates) the id again. */
  forgetStore(): void {
    this.store = undefined;
  }

  /** The compare every write carries: the store is still the one we know. */
  sameStore(s: StoreBase): Compare {
    return { key: this.keys.id, target: 'Value', result: 'Equal', value: s.id };
  }

  /** Keeps logLength revisions of history when asked to (see EtcdDatastoreOptions.logLength). */
  wrote(etcdRevision: number): void {
    const keep = this.options.logLength;
    if (!keep) return;
    const to = etcdRevision - keep;
    if (to <= 0 || to - this.compactedTo < Math.max(1, keep >> 1)) return;
    this.compactedTo = to;
    compact(this.client, to).catch(() => undefined);
  }

  async get(kind: Kind, key: string): Promise<{ revision: number; json: string } | undefined> {
    const r = await txn(this.client, [], [{ get: this.keys.id }, { get: this.keys.kv(kind, key) }]);
    const base = r.results[0]![0]?.createRevision ?? 0;
    const kv = r.results[1]![0];
    return kv ? { revision: kv.modRevision - base, json: kv.value } : undefined;
  }

  async write(w: RawWrite): Promise<number> {
    const k = this.keys;
    const key = k.kv(w.kind, w.key);
    const g = w.kindUnchangedSince;
    for (let attempt = 0; ; attempt++) {
      const s = await this.ensureStore();
      const compares: Compare[] = [this.sameStore(s)];
      if (w.mode === 'create') compares.push({ key, target: 'Create', result: 'Equal', value: 0 });
      if (w.mode === 'update') compares.push({ key, target: 'Create', result: 'Greater', value: 0 });
      if (w.expectRevision !== undefined && w.mode !== 'create')
        compares.push({ key, target: 'Mod', result: 'Equal', value: w.expectRevision + s.base });
      if (g) compares.push({ key: k.kr(g.kind), target: 'Mod', result: 'Less', value: g.revision + s.base + 1 });
      const otherwise: Op[] = [{ get: k.id }, { get: key }];
      if (g) otherwise.push({ get: k.kr(g.kind) });
      const r = await txn(
        this.client,
        compares,
        [
          { put: key, value: w.json },
          { put: k.kr(w.kind), value: '' },
        ],
        otherwise,
      );
      if (r.succeeded) {
        this.wrote(r.revision);
        return r.revision - s.base;
      }
      if (r.results[0]![0]?.value !== s.id) {
        this.forgetStore();
        if (attempt < ID_RETRIES) continue;
        throw new DatastoreError('etcd: the store was replaced under this write, again and again', 'Unavailable');
      }
      const cur = r.results[1]![0];
      if (w.mode === 'create' && cur) throw new AlreadyExistsError(w.kind, w.key);
      if (w.mode === 'update' && !cur) throw new NotFoundError(w.kind, w.key);
      if (w.expectRevision !== undefined && cur && cur.modRevision - s.base !== w.expectRevision)
        throw new ConflictError(w.kind, w.key, w.expectRevision, cur.modRevision - s.base);
      const kr = g ? r.results[2]![0] : undefined;
      if (g && kr && kr.modRevision - s.base > g.revision) throw new KindChangedError(g.kind, kr.modRevision - s.base);
      // The key vanished between compare and read (a delete without a guard): try again.
      if (attempt >= ID_RETRIES) throw new DatastoreError(`etcd: the write of ${w.kind} ${w.key} kept failing its compares`, 'Internal');
    }
  }

  async remove(kind: Kind, key: string, expectRevision?: number): Promise<{ revision: number; json: string }> {
    const k = this.keys;
    const full = k.kv(kind, key);
    for (let attempt = 0; ; attempt++) {
      const s = await this.ensureStore();
      const compares: Compare[] = [this.sameStore(s), { key: full, target: 'Create', result: 'Greater', value: 0 }];
      if (expectRevision !== undefined) compares.push({ key: full, target: 'Mod', result: 'Equal', value: expectRevision + s.base });
      const r = await txn(this.client, compares, [{ del: full }, { put: k.kr(kind), value: '' }], [{ get: k.id }, { get: full }]);
      if (r.succeeded) {
        this.wrote(r.revision);
        return { revision: r.revision - s.base, json: r.results[0]![0]!.value };
      }
      if (r.results[0]![0]?.value !== s.id) {
        this.forgetStore();
        if (attempt < ID_RETRIES) continue;
        throw new DatastoreError('etcd: the store was replaced under this delete, again and again', 'Unavailable');
      }
      const cur = r.results[1]![0];
      if (!cur) throw new NotFoundError(kind, key);
      throw new ConflictError(kind, key, expectRevision!, cur.modRevision - s.base);
    }
  }

  async snapshot(kinds: readonly Kind[]): Promise<RawSnapshot> {
    return (await this.snapshotWithBase(kinds)).snap;
  }

  /** Every object of these kinds, the kinds' revisions and the store's, read at one etcd revision. */
  async snapshotWithBase(kinds: readonly Kind[]): Promise<{ snap: RawSnapshot; base: number }> {
    const s = await this.ensureStore();
    const k = this.keys;
    const ops: Op[] = [{ get: k.id }, { getPrefix: `${k.prefix}kr/` }, ...kinds.map((kind): Op => ({ getPrefix: k.kv(kind) }))];
    const r = await txn(this.client, [], ops);
    const id = r.results[0]![0];
    if (!id || id.value !== s.id) {
      // Replaced since we last looked: take the store as it is now.
      this.forgetStore();
      if (!id) return this.snapshotWithBase(kinds);
    }
    const base = id!.createRevision;
    const kr = lastChanges(r.results[1]!, `${k.prefix}kr/`, base);
    const snap: RawSnapshot = { revision: kr.last, storeId: id!.value, items: [], kindRevisions: {} };
    kinds.forEach((kind, i) => {
      snap.kindRevisions[kind] = kr.byKind.get(kind) ?? 0;
      const p = k.kv(kind);
      for (const kv of r.results[i + 2]!)
        snap.items.push({ kind, key: kv.key.slice(p.length), revision: kv.modRevision - base, json: kv.value });
    });
    return { snap, base };
  }

  /** The last revision that changed this store (0 if none), its id and base; creates the id. */
  async head(): Promise<{ revision: number; storeId: string; base: number }> {
    const { snap, base } = await this.snapshotWithBase([]);
    return { revision: snap.revision, storeId: snap.storeId, base };
  }

  async revision(): Promise<number> {
    const k = this.keys;
    const r = await txn(this.client, [], [{ get: k.id }, { getPrefix: `${k.prefix}kr/` }]);
    const id = r.results[0]![0];
    return id ? lastChanges(r.results[1]!, `${k.prefix}kr/`, id.createRevision).last : 0;
  }

  async identity(): Promise<StoreIdentity> {
    // Plain reads: an empty store must stay without an id, so the guard can say "emptied".
    const k = this.keys;
    const r = await txn(this.client, [], [{ get: k.id }, { get: k.epoch }, { getPrefix: `${k.prefix}kr/` }]);
    const id = r.results[0]![0];
    const epoch = Number(r.results[1]![0]?.value ?? 0);
    if (!id) return { storeId: null, epoch, revision: 0 };
    return { storeId: id.value, epoch, revision: lastChanges(r.results[2]!, `${k.prefix}kr/`, id.createRevision).last };
  }

  async markRepaired(): Promise<StoreIdentity> {
    const k = this.keys;
    for (let attempt = 0; attempt < 20; attempt++) {
      const s = await this.ensureStore();
      const r = await txn(this.client, [], [{ get: k.epoch }]);
      const cur = r.results[0]![0];
      const epoch = Math.max(Number(cur?.value ?? 0) + 1, Date.now());
      const w = await txn(
        this.client,
        [this.sameStore(s), { key: k.epoch, target: 'Mod', result: 'Equal', value: cur?.modRevision ?? 0 }],
        [{ put: k.epoch, value: String(epoch) }],
        [{ get: k.id }],
      );
      if (w.succeeded) return this.identity();
      if (w.results[0]![0]?.value !== s.id) this.forgetStore();
    }
    throw new DatastoreError('etcd: could not mark the store repaired: the epoch kept changing', 'Conflict');
  }

  openReader(): LogReader {
    return new EtcdLogReader(this);
  }

  ipamStore(): IpamStore {
    this.ipam ??= new EtcdIpamStore(this);
    return this.ipam;
  }

  /** How many members the cluster has: fewer than three survive no failure (a warning at start). */
  async members(): Promise<number> {
    return (await this.client.cluster.memberList({})).members?.length ?? 0;
  }

  async durability(): Promise<Durability> {
    return { store: 'etcd', durable: true, members: await this.members() };
  }

  async close(): Promise<void> {
    try {
      this.client.close();
    } catch (e) {
      throw unavailable(e);
    }
  }
}

/** From the P/kr/<Kind> keys: the last revision that changed each kind, and the latest of all. */
function lastChanges(kvs: readonly KV[], prefix: string, base: number): { last: number; byKind: Map<string, number> } {
  const byKind = new Map<string, number>();
  let last = 0;
  for (const kv of kvs) {
    const rev = kv.modRevision - base;
    byKind.set(kv.key.slice(prefix.length), rev);
    if (rev > last) last = rev;
  }
  return { last, byKind };
}
