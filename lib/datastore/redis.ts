// The Redis backend, through ioredis. See redis-lua.ts for the key layout and why watches
// are exact, redis-client.ts for the connection settings.
import type { Redis } from 'ioredis';
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
import { AlreadyExistsError, ConflictError, DatastoreError, NotFoundError } from './errors.js';
import type { IpamStore } from './ipam-store.js';
import { guard, loadRedis, newClient, type RedisDatastoreOptions, replicaAck, ScriptRunner, whenReady } from './redis-client.js';
import { RedisIpamStore } from './redis-ipam.js';
import { DELETE, HEAD, MARK_REPAIRED, SNAPSHOT, WRITE } from './redis-lua.js';
import { persistenceMode, persistenceRisk, type RedisPersistence } from './redis-persistence.js';

export class RedisBackend implements RawBackend {
  readonly name = 'redis' as const;
  readonly prefix: string;
  readonly scripts: ScriptRunner;
  private ipam: RedisIpamStore | undefined;

  private constructor(
    readonly client: Redis,
    private readonly options: RedisDatastoreOptions,
  ) {
    this.prefix = `podroute:{${options.name ?? 'default'}}`;
    this.scripts = new ScriptRunner(client, this.prefix, options.logLength ?? 10_000, replicaAck(options));
  }

  static async open(options: RedisDatastoreOptions = {}): Promise<RedisBackend> {
    replicaAck(options); // bad settings fail before connecting
    await loadRedis();
    const client = newClient(options, 'command');
    try {
      await whenReady(client, options.connectWaitMs ?? 10_000);
    } catch (e) {
      client.disconnect();
      throw e;
    }
    return new RedisBackend(client, options);
  }

  async get(kind: Kind, key: string): Promise<{ revision: number; json: string } | undefined> {
    const raw = await guard(this.client, () => this.client.hget(`${this.prefix}:kv:${kind}`, key));
    return raw === null ? undefined : splitStored(raw);
  }

  async write(w: RawWrite): Promise<number> {
    const g = w.kindUnchangedSince;
    const r = (await this.scripts.run('podrouteWrite', WRITE, [
      w.mode,
      w.kind,
      w.key,
      w.json,
      w.expectRevision ?? '',
      g?.kind ?? '',
      g?.revision ?? '',
    ])) as [string, number?];
    switch (r[0]) {
      case 'ok':
        return Number(r[1]);
      case 'exists':
        throw new AlreadyExistsError(w.kind, w.key);
      case 'notfound':
        throw new NotFoundError(w.kind, w.key);
      case 'conflict':
        throw new ConflictError(w.kind, w.key, w.expectRevision!, Number(r[1]));
      case 'kindchanged':
        throw new KindChangedError(g!.kind, Number(r[1]));
      default:
        throw new DatastoreError(`unexpected reply from the write script: ${JSON.stringify(r)}`, 'Internal');
    }
  }

  async remove(kind: Kind, key: string, expectRevision?: number): Promise<{ revision: number; json: string }> {
    const r = (await this.scripts.run('podrouteDelete', DELETE, [kind, key, expectRevision ?? ''])) as [string, number?, string?];
    if (r[0] === 'notfound') throw new NotFoundError(kind, key);
    if (r[0] === 'conflict') throw new ConflictError(kind, key, expectRevision!, Number(r[1]));
    return { revision: Number(r[1]), json: r[2]! };
  }

  snapshot(kinds: readonly Kind[]): Promise<RawSnapshot> {
    return snapshotWith(this.scripts, kinds);
  }

  async revision(): Promise<number> {
    return Number((await guard(this.client, () => this.client.get(`${this.prefix}:rev`))) ?? 0);
  }

  async identity(): Promise<StoreIdentity> {
    // Plain reads, not a script: every script would set a fresh id on an empty store.
    const p = this.prefix;
    const [id, epoch, rev] = await guard(this.client, () => this.client.mget(`${p}:id`, `${p}:epoch`, `${p}:rev`));
    return { storeId: id ?? null, epoch: Number(epoch ?? 0), revision: Number(rev ?? 0) };
  }

  async markRepaired(): Promise<StoreIdentity> {
    const r = (await this.scripts.run('podrouteMarkRepaired', MARK_REPAIRED, [Date.now()])) as [string, string, string];
    return { storeId: r[0], epoch: Number(r[1]), revision: Number(r[2]) };
  }

  /** How Redis persists acknowledged writes, and the risk if it may lose some (see README). */
  async persistence(): Promise<RedisPersistence> {
    const c = this.client;
    const get = async (name: string): Promise<string> => {
      const r = (await guard(c, () => c.config('GET', name))) as string[];
      return r[1] ?? '';
    };
    const p = { appendonly: await get('appendonly'), appendfsync: await get('appendfsync'), save: await get('save') };
    return { ...p, risk: persistenceRisk(p) };
  }

  /** Durable unless the persistence configured can lose acknowledged writes (redis-persistence.ts). */
  async durability(): Promise<Durability> {
    const persistence = await this.persistence();
    return { store: 'redis', durable: persistence.risk === undefined, mode: persistenceMode(persistence), persistence };
  }

  openReader(): LogReader {
    const client = newClient(this.options, 'watch');
    const scripts = new ScriptRunner(client, this.prefix, this.options.logLength ?? 10_000);
    const stream = `${this.prefix}:log`;
    let closed = false;
    const ready = async (): Promise<void> => {
      if (closed) throw new DatastoreError('watch closed', 'Closed');
      await whenReady(client, 1000);
    };
    return {
      head: async () => {
        await ready();
        const [rev, id] = (await scripts.run('podrouteHead', HEAD, [], true)) as [string, string];
        return { revision: Number(rev), storeId: id };
      },
      snapshot: async (kinds) => {
        await ready();
        return snapshotWith(scripts, kinds);
      },
      read: async (after, waitMs) => {
        await ready();
        const reply = (await guard(client, () => client.xread('COUNT', 1000, 'BLOCK', waitMs, 'STREAMS', stream, `${after}-0`))) as
          | [string, [string, string[]][]][]
          | null;
        if (!reply) return [];
        return reply[0]![1].map(([id, fields]) => toEntry(id, fields));
      },
      close: async () => {
        closed = true;
        client.disconnect();
      },
    };
  }

  ipamStore(): IpamStore {
    this.ipam ??= new RedisIpamStore(this.client, this.prefix, this.scripts);
    return this.ipam;
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}

async function snapshotWith(scripts: ScriptRunner, kinds: readonly Kind[]): Promise<RawSnapshot> {
  const r = (await scripts.run('podrouteSnapshot', SNAPSHOT, kinds, true)) as (string | string[])[];
  const snap: RawSnapshot = { revision: Number(r[0]), storeId: r[1] as string, items: [], kindRevisions: {} };
  for (let i = 2; i < r.length; i += 3) {
    const kind = r[i] as Kind;
    snap.kindRevisions[kind] = Number(r[i + 1]);
    const flat = r[i + 2] as string[];
    for (let j = 0; j < flat.length; j += 2) {
      const { revision, json } = splitStored(flat[j + 1]!);
      snap.items.push({ kind, key: flat[j]!, revision, json });
    }
  }
  return snap;
}

function splitStored(raw: string): { revision: number; json: string } {
  const i = raw.indexOf(':');
  return { revision: Number(raw.slice(0, i)), json: raw.slice(i + 1) };
}

function toEntry(id: string, fields: string[]): LogEntry {
  const f: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  return {
    revision: Number(id.slice(0, id.indexOf('-'))),
    type: f.t === 'del' ? 'del' : 'put',
    kind: f.k as Kind,
    key: f.n!,
    json: f.v ?? '',
  };
}
