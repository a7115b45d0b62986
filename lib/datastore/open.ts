// Opening a datastore from config or the environment.
import { BackendDatastore } from './datastore.js';
import { MemoryBackend, type MemoryBackendOptions } from './memory.js';
import { RedisBackend } from './redis.js';
import type { RedisDatastoreOptions } from './redis-client.js';

export type DatastoreConfig = ({ type: 'memory' } & MemoryBackendOptions) | ({ type: 'redis' } & RedisDatastoreOptions);

/** The embedded default: one process, nothing to install. */
export function memoryDatastore(options: MemoryBackendOptions = {}): BackendDatastore {
  return new BackendDatastore(new MemoryBackend(options));
}

/** Connects (waiting up to connectWaitMs) and returns a Redis-backed datastore. */
export async function redisDatastore(options: RedisDatastoreOptions = {}): Promise<BackendDatastore> {
  return new BackendDatastore(await RedisBackend.open(options));
}

/**
 * From the environment when no config is given:
 *   PODROUTE_DATASTORE=memory|redis (default: redis if PODROUTE_REDIS_URL or sentinels are set, else memory)
 *   PODROUTE_REDIS_URL=redis://host:port/db
 *   PODROUTE_REDIS_SENTINELS=host:port,host:port  PODROUTE_REDIS_SENTINEL_NAME=mymaster
 *   PODROUTE_REDIS_MIN_REPLICAS=n (default 1 with sentinels, 0 without)  PODROUTE_REDIS_REPLICA_ACK_TIMEOUT_MS=1000
 *   PODROUTE_DATASTORE_NAME=default
 */
export function datastoreConfigFromEnv(env: NodeJS.ProcessEnv = process.env): DatastoreConfig {
  const sentinels = (env.PODROUTE_REDIS_SENTINELS ?? '')
    .split(',')
    .filter((s) => s.trim() !== '')
    .map((s) => {
      const [host, port] = s.trim().split(':');
      return { host: host!, port: Number(port ?? 26379) };
    });
  const type = env.PODROUTE_DATASTORE ?? (env.PODROUTE_REDIS_URL || sentinels.length > 0 ? 'redis' : 'memory');
  if (type === 'memory') return { type: 'memory' };
  if (type !== 'redis') throw new Error(`PODROUTE_DATASTORE: must be memory or redis, not ${JSON.stringify(type)}`);
  const cfg: DatastoreConfig = { type: 'redis' };
  if (env.PODROUTE_REDIS_URL) cfg.url = env.PODROUTE_REDIS_URL;
  if (sentinels.length > 0) {
    cfg.sentinels = sentinels;
    cfg.sentinelName = env.PODROUTE_REDIS_SENTINEL_NAME ?? 'mymaster';
  }
  const whole = (name: string): number | undefined => {
    const v = env[name];
    if (v === undefined || v.trim() === '') return undefined;
    if (!/^\d+$/.test(v.trim())) throw new Error(`${name}: must be a whole number, not ${JSON.stringify(v)}`);
    return Number(v);
  };
  const minReplicas = whole('PODROUTE_REDIS_MIN_REPLICAS');
  if (minReplicas !== undefined) cfg.minReplicas = minReplicas;
  const ackTimeout = whole('PODROUTE_REDIS_REPLICA_ACK_TIMEOUT_MS');
  if (ackTimeout !== undefined) cfg.replicaAckTimeoutMs = ackTimeout;
  if (env.PODROUTE_DATASTORE_NAME) cfg.name = env.PODROUTE_DATASTORE_NAME;
  return cfg;
}

export async function openDatastore(config: DatastoreConfig = datastoreConfigFromEnv()): Promise<BackendDatastore> {
  if (config.type === 'memory') {
    const { type: _t, ...o } = config;
    return memoryDatastore(o);
  }
  const { type: _t, ...o } = config;
  return redisDatastore(o);
}
