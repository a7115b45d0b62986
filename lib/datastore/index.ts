// The datastore's face: the store's interface, its backends (memory, file, Redis, etcd) and how
// one is opened, and the atomic operations IPAM runs on it. Code outside lib/datastore imports
// from here; the resources the store holds have their own face, lib/resources/index.ts.
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
export { defaultDatastoreFile, openFileDatastore } from './file.js';
export type { Assigned, AssignRequest, BorrowResult, ClaimCandidate, ClaimResult, IpamStore, RestoredBlock } from './ipam-store.js';
