// Opening a datastore from config or the environment.
import { BackendDatastore } from './datastore.js';
import { MemoryBackend, type MemoryBackendOptions } from './memory.js';
import { RedisBackend } from './redis.js';
import type { RedisDatastoreOptions } from './redis-client.js';
import { EtcdBackend } from './etcd.js';
import type { EtcdDatastoreOptions } from './etcd-client.js';

export type DatastoreConfig =
  | ({ type: 'memory' } & MemoryBackendOptions)
  | ({ type: 'redis' } & RedisDatastoreOptions)
  | ({ type: 'etcd' } & EtcdDatastoreOptions);

/** The embedded default: one process, nothing to install. */
export function memoryDatastore(options: MemoryBackendOptions = {}): BackendDatastore {
  return new BackendDatastore(new MemoryBackend(options));
}

/** Connects (waiting up to connectWaitMs) and returns a Redis-backed datastore. */
export async function redisDatastore(options: RedisDatastoreOptions = {}): Promise<BackendDatastore> {
  return new BackendDatastore(await RedisBackend.open(options));
}

/** Connects (waiting up to connectWaitMs for an answer) and returns an etcd-backed datastore. */
export async function etcdDatastore(options: EtcdDatastoreOptions): Promise<BackendDatastore> {
  return new BackendDatastore(await EtcdBackend.open(options));
}

/** `etcd://host:2379,host2:2379` (the etcd members' client addresses) to their URLs; errors name `field`. */
export function etcdEndpoints(value: string, field: string): string[] {
  const list = value.replace(/^etcd:\/\//, '').replace(/\/+$/, '');
  const out = list.split(',').map((h) => h.trim());
  for (const h of out) {
    if (/^unix:\/\/\/\S+$/.test(h)) continue; // a member's Unix socket (the labs)
    if (!/^(https?:\/\/)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]+):\d{1,5}$/.test(h))
      throw new Error(`${field}: ${JSON.stringify(h)} is not host:port in ${JSON.stringify(value)} (etcd://host:2379,host2:2379)`);
  }
  return out.map((h) => (/^(https?|unix):\/\//.test(h) ? h : `http://${h}`));
}

/** A `--datastore` value: memory, etcd://host:port[,host:port...], or a Redis URL (or socket path). */
export function datastoreFromFlag(value: string, field = '--datastore'): DatastoreConfig {
  if (value === 'memory') return { type: 'memory' };
  if (value.startsWith('etcd://')) return { type: 'etcd', endpoints: etcdEndpoints(value, field) };
  return { type: 'redis', url: value };
}

/**
 * From the environment when no config is given:
 *   PODROUTE_DATASTORE=memory|redis|etcd (default: etcd if PODROUTE_ETCD_ENDPOINTS is set, redis if
 *     PODROUTE_REDIS_URL or sentinels are, else memory)
 *   PODROUTE_ETCD_ENDPOINTS=host:2379,host2:2379 (or etcd://host:2379,...)  PODROUTE_ETCD_PREFIX=/podroute/default
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
  const type =
    env.PODROUTE_DATASTORE ?? (env.PODROUTE_ETCD_ENDPOINTS ? 'etcd' : env.PODROUTE_REDIS_URL || sentinels.length > 0 ? 'redis' : 'memory');
  if (type === 'memory') return { type: 'memory' };
  if (type === 'etcd') return etcdConfigFromEnv(env);
  if (type !== 'redis') throw new Error(`PODROUTE_DATASTORE: must be memory, redis or etcd, not ${JSON.stringify(type)}`);
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

function etcdConfigFromEnv(env: NodeJS.ProcessEnv): DatastoreConfig {
  const endpoints = env.PODROUTE_ETCD_ENDPOINTS ?? '';
  if (endpoints.trim() === '')
    throw new Error('PODROUTE_ETCD_ENDPOINTS: PODROUTE_DATASTORE=etcd needs the members, as host:2379,host2:2379');
  const cfg: DatastoreConfig = { type: 'etcd', endpoints: etcdEndpoints(endpoints.trim(), 'PODROUTE_ETCD_ENDPOINTS') };
  if (env.PODROUTE_ETCD_PREFIX) cfg.prefix = env.PODROUTE_ETCD_PREFIX;
  if (env.PODROUTE_DATASTORE_NAME) cfg.name = env.PODROUTE_DATASTORE_NAME;
  return cfg;
}

export async function openDatastore(config: DatastoreConfig = datastoreConfigFromEnv()): Promise<BackendDatastore> {
  if (config.type === 'memory') {
    const { type: _t, ...o } = config;
    return memoryDatastore(o);
  }
  if (config.type === 'etcd') {
    const { type: _t, ...o } = config;
    return etcdDatastore(o);
  }
  const { type: _t, ...o } = config;
  return redisDatastore(o);
}
