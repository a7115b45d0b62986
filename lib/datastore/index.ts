export type { Datastore, Watcher, WatchEvent, WatchOptions, WatchStatus, ListResult, DeleteOptions } from './types.js';
export { DatastoreError, NotFoundError, AlreadyExistsError, ConflictError, DatastoreUnavailableError } from './errors.js';
export { BackendDatastore } from './datastore.js';
export { MemoryBackend, type MemoryBackendOptions } from './memory.js';
export { RedisBackend } from './redis.js';
export { redisClientOptions, type RedisDatastoreOptions } from './redis-client.js';
export {
  memoryDatastore,
  redisDatastore,
  etcdDatastore,
  openDatastore,
  datastoreConfigFromEnv,
  datastoreFromFlag,
  etcdEndpoints,
  type DatastoreConfig,
} from './open.js';
export { EtcdBackend } from './etcd.js';
export type { EtcdDatastoreOptions } from './etcd-client.js';
export type { StoreIdentity } from './backend.js';
export type { Durability } from './durability.js';
export { persistenceMode, persistenceRisk, type RedisPersistence } from './redis-persistence.js';
