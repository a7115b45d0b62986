// The ioredis connection the Redis backend and its IPAM store share: the client settings,
// waiting for readiness, turning connection failures into DatastoreUnavailableError, and
// calling our Lua scripts by name.
import { randomUUID } from 'node:crypto';
import type { Redis, RedisOptions } from 'ioredis';
import { DatastoreUnavailableError } from './errors.js';
import { PRELUDE } from './redis-lua.js';

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
  /**
   * Replicas that must hold every write before it is acknowledged (Redis WAIT after each write
   * script). Default: 1 with sentinels (a failover then loses no acknowledged write), 0 for a
   * single Redis (nothing to wait for). Env PODROUTE_REDIS_MIN_REPLICAS.
   */
  minReplicas?: number;
  /** How long a write waits for those replicas before failing with DatastoreUnavailableError (default 1,000 ms; below commandTimeoutMs). Env PODROUTE_REDIS_REPLICA_ACK_TIMEOUT_MS. */
  replicaAckTimeoutMs?: number;
  /** Anything else for ioredis (TLS, password, db ...); ours take precedence where they conflict. */
  redisOptions?: RedisOptions;
}

/**
 * Replies refusing a call before it ran: the server is a replica (READONLY; MASTERDOWN when it
 * lost its primary), is still loading its data (LOADING), or has too few replicas for
 * min-replicas-to-write (NOREPLICAS). A write script fails at its first write, so it changed
 * nothing either.
 */
const NOT_PRIMARY = /^(READONLY|MASTERDOWN|LOADING|NOREPLICAS)\b/;
/** WAIT on a server demoted since the script before it ran there: that write may be lost in the resync. */
const DEMOTED_BEFORE_WAIT = /WAIT cannot be used with replica/;
/** Whether a reply says this connection reached a replica: reconnect (through the sentinels) to find the primary. */
const onAReplica = (message: string): boolean => /^(READONLY|MASTERDOWN)\b/.test(message) || DEMOTED_BEFORE_WAIT.test(message);

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
 * - reconnectOnError: a reply saying the server is a replica now (onAReplica) drops the
 *   connection, so the next one asks the sentinels again for the primary. A primary restarted
 *   after a failover answers as primary until Sentinel demotes it, and a client that reached it
 *   in that window would otherwise write against a replica until the connection broke. The
 *   call itself still fails (1, not 2: never resent).
 * - protocol 2: RESP2 reply shapes for XREAD and scripts, stable across ioredis versions.
 */
export function redisClientOptions(o: RedisDatastoreOptions, role: 'command' | 'watch'): RedisOptions {
  const sentinel: RedisOptions =
    o.sentinels && o.sentinels.length > 0
      ? {
          sentinels: o.sentinels,
          name: o.sentinelName ?? 'mymaster',
          ...(o.sentinelPassword ? { sentinelPassword: o.sentinelPassword } : {}),
        }
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
    reconnectOnError: (err: Error) => (onAReplica(err.message) ? 1 : false),
    protocol: 2,
    connectionName: `podroute-${role}`,
  };
}

// ioredis is loaded on first open, not on import: a program that imports podroute for the codec,
// or a CNI call on another datastore, should not pay for a Redis client it never uses.
let RedisClient: typeof Redis | undefined;

/** Loads ioredis once; RedisBackend.open awaits it before the first newClient. */
export async function loadRedis(): Promise<void> {
  RedisClient ??= (await import('ioredis')).Redis;
}

export function newClient(o: RedisDatastoreOptions, role: 'command' | 'watch'): Redis {
  if (RedisClient === undefined) throw new Error('newClient: ioredis is not loaded yet (await loadRedis() first)');
  const url = o.url ?? process.env.PODROUTE_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const client = new RedisClient(url, redisClientOptions(o, role));
  // ioredis reports connection errors as events too; the calls that fail carry them to callers.
  client.on('error', () => {});
  return client;
}

function describe(client: Redis): string {
  const opts = client.options;
  if (opts.sentinels) return `redis (sentinel group ${opts.name})`;
  // A Unix socket (a url that is a path): ioredis still fills in host and port, which it never dials.
  return opts.path ? `redis at ${opts.path}` : `redis at ${opts.host}:${opts.port}`;
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
    function ok(): void {
      clearTimeout(t);
      resolve();
    }
    client.once('ready', ok);
  });
}

/** What a write waits for before it is acknowledged: `replicas` copies, for at most `timeoutMs`. */
export interface ReplicaAck {
  replicas: number;
  timeoutMs: number;
}

/** The options' replica acknowledgement, with its defaults (see minReplicas). */
export function replicaAck(o: RedisDatastoreOptions): ReplicaAck {
  const replicas = o.minReplicas ?? (o.sentinels && o.sentinels.length > 0 ? 1 : 0);
  const timeoutMs = o.replicaAckTimeoutMs ?? 1000;
  const commandTimeoutMs = o.commandTimeoutMs ?? 5000;
  if (!Number.isInteger(replicas) || replicas < 0) throw new Error(`minReplicas: must be a whole number >= 0, not ${replicas}`);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs >= commandTimeoutMs) {
    throw new Error(
      `replicaAckTimeoutMs: must be a whole number of ms from 1 to below commandTimeoutMs (${commandTimeoutMs}), not ${timeoutMs}`,
    );
  }
  return { replicas, timeoutMs };
}

/**
 * Calls scripts (prelude + body) by name; ioredis sends EVALSHA and falls back to EVAL after a
 * restart flushed them. A write script is followed by WAIT on the same connection (a script
 * cannot call WAIT): Redis replicates asynchronously, and a write only the primary holds is
 * lost if Sentinel promotes a replica, so it is acknowledged only once `ack.replicas` have it.
 */
export class ScriptRunner {
  private readonly defined = new Set<string>();
  constructor(
    private readonly client: Redis,
    readonly prefix: string,
    private readonly logLength: number,
    private readonly ack: ReplicaAck = { replicas: 0, timeoutMs: 1000 },
  ) {}

  /** `readOnly` scripts (snapshot, head) skip the WAIT: they change nothing worth keeping. */
  async run(name: string, body: string, args: readonly (string | number)[], readOnly = false): Promise<unknown> {
    if (!this.defined.has(name)) {
      this.client.defineCommand(name, { numberOfKeys: 1, lua: PRELUDE + body });
      this.defined.add(name);
    }
    const fn = (this.client as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>)[name]!;
    const r = await guard(this.client, () =>
      fn.call(this.client, `${this.prefix}:rev`, this.prefix, randomUUID(), this.logLength, ...args),
    );
    if (!readOnly) await waitForReplicas(this.client, this.ack);
    return r;
  }
}

/**
 * WAIT counts the replicas that have every write this connection made so far, so a WAIT sent
 * after a script's reply covers that script whatever else shares the connection. Too few in
 * time: the write is on the primary but could vanish in a failover, so the caller is told it
 * may or may not have been applied (IPAM: release the handle, then retry), never success.
 */
export async function waitForReplicas(client: Redis, ack: ReplicaAck): Promise<void> {
  if (ack.replicas === 0) return;
  const got = Number(await guard(client, () => client.wait(ack.replicas, ack.timeoutMs)));
  if (got < ack.replicas) {
    throw new DatastoreUnavailableError(
      `${describe(client)}: ${got} of ${ack.replicas} replica(s) acknowledged the write within ${ack.timeoutMs} ms; it may or may not have been applied and could be lost in a failover, retry`,
    );
  }
}

/** Turns connection failures into DatastoreUnavailableError that says whether the call may have run. */
export async function guard<T>(client: Redis, call: () => Promise<T>): Promise<T> {
  if (client.status !== 'ready') {
    throw new DatastoreUnavailableError(
      `${describe(client)} is not connected (status ${client.status}); the call was not sent, retry when the store is back`,
    );
  }
  try {
    return await call();
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    if (/enableOfflineQueue|Stream isn't writeable/i.test(msg)) {
      throw new DatastoreUnavailableError(`${describe(client)} is not connected; the call was not sent, retry when the store is back`, e);
    }
    if (NOT_PRIMARY.test(msg)) {
      throw new DatastoreUnavailableError(`${describe(client)} refused the call without applying it (${msg}); retry`, e);
    }
    if (DEMOTED_BEFORE_WAIT.test(msg)) {
      throw new DatastoreUnavailableError(
        `${describe(client)} became a replica after the write; it may or may not have been applied and could be lost in the resync, retry`,
        e,
      );
    }
    if (/Connection is closed|MaxRetriesPerRequest|timed out|ECONNRESET|EPIPE|ECONNREFUSED/i.test(msg)) {
      throw new DatastoreUnavailableError(`${describe(client)} was lost during the call (${msg}); it may or may not have been applied`, e);
    }
    throw e;
  }
}
