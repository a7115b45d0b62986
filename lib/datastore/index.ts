export type { Datastore, Watcher, WatchEvent, WatchOptions, WatchStatus, ListResult, DeleteOptions } from './types.js';
export { DatastoreError, NotFoundError, AlreadyExistsError, ConflictError, DatastoreUnavailableError } from './errors.js';
export { BackendDatastore } from './datastore.js';
export { MemoryBackend, type MemoryBackendOptions } from './memory.js';
export { RedisBackend, redisClientOptions, type RedisDatastoreOptions } from './redis.js';
export { memoryDatastore, redisDatastore, openDatastore, datastoreConfigFromEnv, type DatastoreConfig } from './open.js';
