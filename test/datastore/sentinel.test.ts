// Redis Sentinel with real processes: a primary, a replica and three sentinels. Allocators run
// through Sentinel while the primary is SIGKILLed; every write waited for the replica (WAIT),
// so the promoted replica holds every allocation a caller was told about, and none twice.
import assert from 'node:assert/strict';
import { DatastoreUnavailableError, datastoreConfigFromEnv, redisDatastore, type BackendDatastore } from '../../lib/datastore/index.js';
import { replicaAck } from '../../lib/datastore/redis-client.js';
import { Ipam } from '../../lib/ipam/index.js';
import { assertIpamConsistent } from '../ipam/consistency.js';
import { startRedis, startSentinelGroup, type RedisServer, type SentinelGroup } from '../support/redis.js';
import { pool } from './suite.js';

describe('datastore: Redis replica acknowledgement (WAIT)', function () {
  this.timeout(30_000);
  let redis: RedisServer | undefined;
  afterEach(async () => {
    await redis?.stop();
    redis = undefined;
  });

  it('defaults: one replica through Sentinel, none for a single Redis; env and bad values', () => {
    assert.deepEqual(replicaAck({}), { replicas: 0, timeoutMs: 1000 });
    assert.deepEqual(replicaAck({ sentinels: [{ host: '127.0.0.1', port: 26379 }] }), { replicas: 1, timeoutMs: 1000 });
    assert.deepEqual(replicaAck({ sentinels: [{ host: '127.0.0.1', port: 26379 }], minReplicas: 0 }), { replicas: 0, timeoutMs: 1000 });
    assert.throws(() => replicaAck({ replicaAckTimeoutMs: 5000 }), /below commandTimeoutMs \(5000\)/);
    assert.throws(() => replicaAck({ minReplicas: -1 }), /minReplicas/);
    const cfg = datastoreConfigFromEnv({
      PODROUTE_REDIS_SENTINELS: '127.0.0.1:26379,127.0.0.1:26380',
      PODROUTE_REDIS_MIN_REPLICAS: '2',
      PODROUTE_REDIS_REPLICA_ACK_TIMEOUT_MS: '250',
    });
    assert.deepEqual(cfg, {
      type: 'redis',
      sentinels: [
        { host: '127.0.0.1', port: 26379 },
        { host: '127.0.0.1', port: 26380 },
      ],
      sentinelName: 'mymaster',
      minReplicas: 2,
      replicaAckTimeoutMs: 250,
    });
    assert.throws(() => datastoreConfigFromEnv({ PODROUTE_REDIS_URL: 'redis://x', PODROUTE_REDIS_MIN_REPLICAS: 'one' }), /whole number/);
  });

  it('a write no replica acknowledges fails with DatastoreUnavailableError, never a silent success', async () => {
    redis = await startRedis();
    const ds = await redisDatastore({ url: redis.url, name: 'noreplica', minReplicas: 1, replicaAckTimeoutMs: 200 });
    try {
      const t0 = Date.now();
      await assert.rejects(ds.create(pool('p', '10.61.0.0/24')), (e: unknown) => {
        assert.ok(e instanceof DatastoreUnavailableError, String(e));
        assert.match(e.message, /0 of 1 replica\(s\) acknowledged the write within 200 ms; it may or may not have been applied/);
        return true;
      });
      assert.ok(Date.now() - t0 < 2000, `gave up after ${Date.now() - t0} ms`);
      // IPAM's scripts wait too.
      await assert.rejects(new Ipam(ds).autoAssign({ handle: 'h', node: 'n' }), DatastoreUnavailableError);
      // Reads do not wait.
      assert.equal((await ds.list('IPPool')).items.length, 1);
    } finally {
      await ds.close();
    }
  });
});

describe('datastore: Redis Sentinel failover (primary, replica, three sentinels)', function () {
  this.timeout(90_000);
  let group: SentinelGroup | undefined;
  const open: BackendDatastore[] = [];
  after(async () => {
    for (const ds of open.splice(0)) await ds.close();
    await group?.stop();
  });

  it('8 allocators, primary SIGKILLed mid-run: allocations resume within seconds, none twice, none acknowledged lost', async () => {
    group = await startSentinelGroup();
    const g = group;
    const options = { sentinels: [...g.sentinels], sentinelName: g.name, name: 'failover' };
    const setupDs = await redisDatastore(options);
    open.push(setupDs);
    await setupDs.create(pool('p', '10.62.0.0/16', { blockSize: 26 }));

    const acked = new Map<string, string>(); // handle -> ip, only what a caller was told
    let failures = 0;
    let killedAt = 0;
    let firstAfterKill = 0;
    let stop = false;
    const allocator = async (i: number): Promise<void> => {
      const ds = await redisDatastore(options);
      open.push(ds);
      const ipam = new Ipam(ds);
      for (let k = 0; !stop; k++) {
        const handle = `a${i}-${k}`;
        const started = Date.now();
        try {
          const a = await ipam.autoAssign({ handle, node: `node-${i % 4}` });
          acked.set(handle, a.ip);
          // Resumed: a call begun after the primary was dead got through.
          if (killedAt > 0 && started > killedAt && firstAfterKill === 0) firstAfterKill = Date.now();
        } catch (e) {
          if (!(e instanceof DatastoreUnavailableError)) throw e;
          // Not acknowledged: the handle may or may not hold an address; a fresh handle next.
          failures++;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    };
    const running = Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(allocator));
    const waitFor = async (what: string, ok: () => boolean, ms: number): Promise<void> => {
      const deadline = Date.now() + ms;
      while (!ok()) {
        if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      await waitFor('400 allocations before the kill', () => acked.size >= 400, 30_000);
      const old = await g.primary();
      const oldPort = old.port;
      const before = acked.size;
      await old.kill();
      killedAt = Date.now();
      const newPort = await g.waitForFailover(oldPort, 20_000);
      const promotedMs = Date.now() - killedAt;
      // With one replica promoted, writes need the old primary back as its replica.
      await g.rejoin(old);
      const rejoinedMs = Date.now() - killedAt;
      await waitFor('allocations resumed', () => firstAfterKill > 0, 15_000);
      const resumeMs = firstAfterKill - killedAt;
      await waitFor('300 more allocations', () => acked.size >= before + 300, 30_000);
      stop = true;
      await running;
      console.log(
        `      sentinel: ${acked.size} acknowledged, ${failures} refused; primary ${oldPort} -> ${newPort} in ${promotedMs} ms, old primary back as replica at ${rejoinedMs} ms, allocations resumed after ${resumeMs} ms`,
      );
      assert.ok(resumeMs < 15_000, `allocations resumed after ${resumeMs} ms`);
      assert.notEqual(newPort, oldPort);
    } finally {
      stop = true;
      await running.catch(() => {});
    }

    // Read the promoted primary through Sentinel with a fresh client.
    const check = await redisDatastore(options);
    open.push(check);
    const { addresses } = await assertIpamConsistent(check); // every address once in the store
    const ips = [...acked.values()];
    assert.equal(new Set(ips).size, ips.length, 'an address was acknowledged to two callers');
    const lost = [...acked].filter(([handle, ip]) => addresses.get(ip) !== handle);
    assert.deepEqual(lost.slice(0, 5), [], `${lost.length} acknowledged allocations are missing from the new primary`);
  });
});
