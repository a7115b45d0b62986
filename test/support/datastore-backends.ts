// The datastore backends the cross-backend tests and the IPAM benchmark run on, as one table:
// how to start the store, open a Datastore on it, reach it from another process, cut a
// watcher's connection, and kill and bring back the store (or its primary, or its leader).
// A new backend is one more row.
import { Etcd3 } from 'etcd3';
import { Redis } from 'ioredis';
import { BackendDatastore, etcdDatastore, MemoryBackend, redisDatastore, type DatastoreConfig } from '../../lib/datastore/index.js';
import { startEtcdCluster, type EtcdMember } from './etcd.js';
import { startRedis, startSentinelGroup, type RedisServer } from './redis.js';

export interface OpenOptions {
  /** How much change log to keep (small to force a watcher's resync). */
  logLength?: number;
  /**
   * For the watcher whose connection cutWatches() cuts, with the writers' connections left
   * alone (etcd: through one follower only, the member cutWatches restarts).
   */
  forWatch?: boolean;
}

/** A running store of one backend. Optional parts are absent where the backend has no such thing. */
export interface StoreUnderTest {
  /** Opens a datastore. On a shared store the same name is the same data; a new name is an empty store. */
  open(name: string, options?: OpenOptions): Promise<BackendDatastore>;
  /** What another process passes to openDatastore to reach the same data (absent: in-process only). */
  config?(name: string): DatastoreConfig;
  /** The environment the `podroute` CLI reads to reach the same data. */
  env?(name: string): Record<string, string>;
  /** SIGKILLs the store, or its primary or leader, as a crash; returns the PID it killed. */
  kill?(): Promise<number>;
  /**
   * Brings back what kill() took (same port and directory), waiting (bounded) until writes are
   * acknowledged again: a single Redis restarts; under Sentinel the old primary rejoins as the
   * promoted one's replica (WAIT needs one); an etcd member restarts and rejoins.
   */
  recover?(): Promise<void>;
  /**
   * Cuts the watch connections (Redis: every one, by CLIENT KILL; etcd: those opened forWatch,
   * by restarting their member); the client reconnects by itself. Returns how many were cut.
   */
  cutWatches?(): Promise<number>;
  /** One bare round trip to the store, the floor under every datastore call (the benchmark's reference). */
  roundTrip?(): Promise<unknown>;
  /** Stops every process of the store by PID and removes its files. */
  stop(): Promise<void>;
}

export interface Backend {
  name: string;
  /** The store runs as processes of its own: it can be killed, its watchers cut, other processes reach it. */
  outOfProcess: boolean;
  /** Whether an acknowledged write survives kill() (false: a single Redis without persistence). */
  durable: boolean;
  /**
   * The row runs the same datastore code as this one, over a store set up differently (Redis
   * with AOF): the contract and watch tests run once, on that row.
   */
  sameCodeAs?: string;
  start(): Promise<StoreUnderTest>;
}

/** Kills the clients of `server` whose connection name is the watch connection's; returns how many. */
async function killWatchClients(port: number): Promise<number> {
  const admin = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000 });
  try {
    await admin.connect();
    const list = (await admin.client('LIST')) as string;
    const ids = list
      .split('\n')
      .filter((l) => / name=podroute-watch /.test(l))
      .map((l) => /^id=(\d+) /.exec(l)?.[1])
      .filter((id): id is string => id !== undefined);
    for (const id of ids) await admin.client('KILL', 'ID', id);
    return ids.length;
  } finally {
    admin.disconnect();
  }
}

/** A lazily connected plain client for the round-trip reference, closed with the store. */
function pinger(connect: () => Redis): { roundTrip: () => Promise<unknown>; close: () => void } {
  let c: Redis | undefined;
  return {
    roundTrip: () => {
      c ??= connect();
      return c.ping();
    },
    close: () => c?.disconnect(),
  };
}

function singleRedis(persist: boolean): () => Promise<StoreUnderTest> {
  return async () => {
    const redis: RedisServer = await startRedis({ persist });
    const ping = pinger(() => new Redis(redis.url, { protocol: 2 }));
    return {
      open: (name, o = {}) => redisDatastore({ url: redis.url, name, logLength: o.logLength }),
      config: (name) => ({ type: 'redis', url: redis.url, name }),
      env: (name) => ({ PODROUTE_REDIS_URL: redis.url, PODROUTE_DATASTORE_NAME: name }),
      kill: async () => {
        const pid = redis.pid;
        if (pid === undefined) throw new Error('redis-server is not running');
        await redis.kill();
        return pid;
      },
      recover: () => redis.restart(),
      cutWatches: () => killWatchClients(redis.port),
      roundTrip: ping.roundTrip,
      stop: async () => {
        ping.close();
        await redis.stop();
      },
    };
  };
}

async function sentinelGroup(): Promise<StoreUnderTest> {
  const group = await startSentinelGroup();
  const where = { sentinels: [...group.sentinels], sentinelName: group.name };
  let killed: RedisServer | undefined;
  const ping = pinger(() => new Redis({ sentinels: where.sentinels, name: group.name, protocol: 2 }));
  return {
    open: (name, o = {}) => redisDatastore({ ...where, name, logLength: o.logLength }),
    config: (name) => ({ type: 'redis', ...where, name }),
    env: (name) => ({
      PODROUTE_REDIS_SENTINELS: group.sentinels.map((s) => `${s.host}:${s.port}`).join(','),
      PODROUTE_REDIS_SENTINEL_NAME: group.name,
      PODROUTE_DATASTORE_NAME: name,
    }),
    kill: async () => {
      const primary = await group.primary();
      const pid = primary.pid;
      if (pid === undefined) throw new Error('the primary is not running');
      await primary.kill();
      killed = primary;
      return pid;
    },
    recover: async () => {
      const old = killed;
      if (!old) throw new Error('recover: nothing was killed');
      killed = undefined;
      await group.waitForFailover(old.port, 20_000);
      await group.rejoin(old);
    },
    cutWatches: async () => killWatchClients(await group.primaryPort()),
    roundTrip: ping.roundTrip,
    stop: async () => {
      ping.close();
      await group.stop();
    },
  };
}

async function etcdCluster(): Promise<StoreUnderTest> {
  const cluster = await startEtcdCluster(3);
  const endpoints = [...cluster.endpoints];
  // Watchers go through one follower and writers through the other two, so that restarting
  // it cuts the watches and nothing else (a write cut mid-call has an unknown outcome).
  const leader = await cluster.leader();
  const watchMember = cluster.members.find((m) => m.name !== leader.name)!;
  const writeEndpoints = cluster.members.filter((m) => m !== watchMember).map((m) => m.clientUrl);
  let killed: EtcdMember | undefined;
  let ref: Etcd3 | undefined;
  return {
    open: (name, o = {}) =>
      etcdDatastore({ endpoints: o.forWatch ? [watchMember.clientUrl] : writeEndpoints, name, logLength: o.logLength }),
    config: (name) => ({ type: 'etcd', endpoints, name }),
    env: (name) => ({ PODROUTE_ETCD_ENDPOINTS: endpoints.join(','), PODROUTE_DATASTORE_NAME: name }),
    kill: async () => {
      const leader = await cluster.leader();
      const pid = leader.pid;
      if (pid === undefined) throw new Error('the leader is not running');
      await cluster.kill(leader);
      killed = leader;
      return pid;
    },
    recover: async () => {
      const m = killed;
      if (!m) throw new Error('recover: nothing was killed');
      killed = undefined;
      await cluster.restart(m);
    },
    // A member restart ends every stream on it; the watch client waits for it to come back.
    cutWatches: async () => {
      await cluster.restart(watchMember);
      return 1;
    },
    roundTrip: () => {
      ref ??= new Etcd3({ hosts: endpoints });
      return ref.get('podroute-bench-reference').string();
    },
    stop: async () => {
      ref?.close();
      await cluster.stop();
    },
  };
}

export const BACKENDS: readonly Backend[] = [
  {
    name: 'memory',
    outOfProcess: false,
    durable: false,
    // One process, no connection: nothing to kill, cut or reach from elsewhere.
    start: async () => {
      const stores = new Map<string, MemoryBackend>();
      return {
        open: async (name, o = {}) => {
          let store = stores.get(name);
          if (!store) stores.set(name, (store = new MemoryBackend({ logLength: o.logLength })));
          return new BackendDatastore(store);
        },
        stop: async () => {},
      };
    },
  },
  { name: 'redis', outOfProcess: true, durable: false, start: singleRedis(false) },
  { name: 'redis-aof', outOfProcess: true, durable: true, sameCodeAs: 'redis', start: singleRedis(true) },
  { name: 'sentinel', outOfProcess: true, durable: true, start: sentinelGroup },
  { name: 'etcd', outOfProcess: true, durable: true, start: etcdCluster },
];

export function backendNamed(name: string): Backend {
  const b = BACKENDS.find((x) => x.name === name);
  if (!b) throw new Error(`no backend named ${name} (${BACKENDS.map((x) => x.name).join(', ')})`);
  return b;
}
