// The Redis backend, through ioredis. See redis-lua.ts for the key layout and why watches
// are exact.
import { randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import type { Kind } from '../resources/types.js';
import { KindChangedError, type LogEntry, type LogReader, type RawBackend, type RawSnapshot, type RawWrite } from './backend.js';
import { AlreadyExistsError, ConflictError, DatastoreError, DatastoreUnavailableError, NotFoundError } from './errors.js';
import { DELETE, HEAD, PRELUDE, SNAPSHOT, WRITE } from './redis-lua.js';

export interface RedisDatastoreOptions {
  /** redis://[user:password@]host:port[/db]. Default: PODROUTE_REDIS_URL, then redis://127.0.0.1:6379. */
  url?: string;
  /** Sentinel: the sentinels to ask, and the master group name. The url's host is then ignored. */
  sentinels?: { host: string; port: number }[];
  sentinelName?: string;
  sentinelPassword?: string;
  /** Several datastores can share one Redis under different names (default "default"). */
  name?: string;
  /** Change-log entries kept for watchers that fall behind (approximate; default 10,000: entries carry whole values, a block is ~3 kB). */
  logLength?: number;
  /** A command without a reply after this long fails (default 5,000 ms). */
  commandTimeoutMs?: number;
  /** How long open() waits for the first connection (default 10,000 ms). */
  connectWaitMs?: number;
  /** Anything else for ioredis (TLS, password, db ...); ours take precedence where they conflict. */
  redisOptions?: RedisOptions;
}

/**
 * The ioredis settings, and why:
 * - enableOfflineQueue false: while disconnected a call fails at once with
 *   DatastoreUnavailableError instead of waiting in a queue for an outage of unknown length
 *   (a CNI ADD must fail fast and be retried by the kubelet, not hang).
 * - maxRetriesPerRequest 0 and autoResendUnfulfilledCommands false: a command in flight when
 *   the connection drops is failed, never sent again after the reconnect; resending an IPAM
 *   script whose reply was lost could allocate twice for one request.
 * - retryStrategy: the connection itself is retried forever with capped exponential
 *   back-off and jitter, so the store comes back on its own.
 * - protocol 2: RESP2 reply shapes for XREAD and scripts, stable across ioredis versions.
 */
export function redisClientOptions(o: RedisDatastoreOptions, role: 'command' | 'watch'): RedisOptions {
  const sentinel: RedisOptions = o.sentinels && o.sentinels.length > 0
    ? { sentinels: o.sentinels, name: o.sentinelName ?? 'mymaster', ...(o.sentinelPassword ? { sentinelPassword: o.sentinelPassword } : {}) }
    : {};
  return {
    ...o.redisOptions,
    ...sentinel,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: 2000,
    // A blocking XREAD waits up to a second; give it room on the watch connection.
    commandTimeout: role === 'watch' ? 10_000 : (o.commandTimeoutMs ?? 5000),
    retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), 2000) + Math.floor(Math.random() * 100),
    protocol: 2,
    connectionName: `podroute-${role}`,
  };
}

function newClient(o: RedisDatastoreOptions, role: 'command' | 'watch'): Redis {
  const url = o.url ?? process.env.PODROUTE_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const client = new Redis(url, redisClientOptions(o, role));
  // ioredis reports connection errors as events too; the calls that fail carry them to callers.
  client.on('error', () => {});
  return client;
}

function describe(client: Redis): string {
  const opts = client.options;
  return opts.sentinels ? `redis (sentinel group ${opts.name})` : `redis at ${opts.host}:${opts.port}`;
}

/** Waits until the client is ready, or fails with DatastoreUnavailableError after waitMs. */
export async function whenReady(client: Redis, waitMs: number): Promise<void> {
  if (client.status === 'ready') return;
  if (client.status === 'wait') client.connect().catch(() => {});
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => {
      client.off('ready', ok);
      reject(new DatastoreUnavailableError(`${describe(client)} is not reachable (waited ${waitMs} ms)`));
    }, waitMs);
    function ok(): void { clearTimeout(t); resolve(); }
    client.once('ready', ok);
  });
}

/** Calls scripts (prelude + body) by name; ioredis sends EVALSHA and falls back to EVAL after a restart flushed them. */
export class ScriptRunner {
  private readonly defined = new Set<string>();
  constructor(private readonly client: Redis, readonly prefix: string, private readonly logLength: number) {}

  async run(name: string, body: string, args: readonly (string | number)[]): Promise<unknown> {
    if (!this.defined.has(name)) {
      this.client.defineCommand(name, { numberOfKeys: 1, lua: PRELUDE + body });
      this.defined.add(name);
    }
    const fn = (this.client as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>)[name]!;
    return guard(this.client, () => fn.call(this.client, `${this.prefix}:rev`, this.prefix, randomUUID(), this.logLength, ...args));
  }
}

/** Turns connection failures into DatastoreUnavailableError that says whether the call may have run. */
export async function guard<T>(client: Redis, call: () => Promise<T>): Promise<T> {
  if (client.status !== 'ready') {
    throw new DatastoreUnavailableError(`${describe(client)} is not connected (status ${client.status}); the call was not sent, retry when the store is back`);
  }
  try {
    return await call();
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    if (/enableOfflineQueue|Stream isn't writeable/i.test(msg)) {
      throw new DatastoreUnavailableError(`${describe(client)} is not connected; the call was not sent, retry when the store is back`, e);
    }
    if (/Connection is closed|MaxRetriesPerRequest|timed out|ECONNRESET|EPIPE|ECONNREFUSED/i.test(msg)) {
      throw new DatastoreUnavailableError(`${describe(client)} was lost during the call (${msg}); it may or may not have been applied`, e);
    }
    throw e;
  }
}

export class RedisBackend implements RawBackend {
  readonly name = 'redis' as const;
  readonly prefix: string;
  readonly scripts: ScriptRunner;

  private constructor(readonly client: Redis, private readonly options: RedisDatastoreOptions) {
    this.prefix = `podroute:{${options.name ?? 'default'}}`;
    this.scripts = new ScriptRunner(client, this.prefix, options.logLength ?? 10_000);
  }

  static async open(options: RedisDatastoreOptions = {}): Promise<RedisBackend> {
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
      w.mode, w.kind, w.key, w.json, w.expectRevision ?? '', g?.kind ?? '', g?.revision ?? '',
    ])) as [string, number?];
    switch (r[0]) {
      case 'ok': return Number(r[1]);
      case 'exists': throw new AlreadyExistsError(w.kind, w.key);
      case 'notfound': throw new NotFoundError(w.kind, w.key);
      case 'conflict': throw new ConflictError(w.kind, w.key, w.expectRevision!, Number(r[1]));
      case 'kindchanged': throw new KindChangedError(g!.kind, Number(r[1]));
      default: throw new DatastoreError(`unexpected reply from the write script: ${JSON.stringify(r)}`, 'Internal');
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
        const [rev, id] = (await scripts.run('podrouteHead', HEAD, [])) as [string, string];
        return { revision: Number(rev), storeId: id };
      },
      snapshot: async (kinds) => { await ready(); return snapshotWith(scripts, kinds); },
      read: async (after, waitMs) => {
        await ready();
        const reply = (await guard(client, () =>
          client.xread('COUNT', 1000, 'BLOCK', waitMs, 'STREAMS', stream, `${after}-0`))) as
          [string, [string, string[]][]][] | null;
        if (!reply) return [];
        return reply[0]![1].map(([id, fields]) => toEntry(id, fields));
      },
      close: async () => { closed = true; client.disconnect(); },
    };
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}

async function snapshotWith(scripts: ScriptRunner, kinds: readonly Kind[]): Promise<RawSnapshot> {
  const r = (await scripts.run('podrouteSnapshot', SNAPSHOT, kinds)) as (string | string[])[];
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
  return { revision: Number(id.slice(0, id.indexOf('-'))), type: f.t === 'del' ? 'del' : 'put', kind: f.k as Kind, key: f.n!, json: f.v ?? '' };
}
