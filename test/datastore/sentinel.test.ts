// Redis replica acknowledgement: with Sentinel every write waits for a replica (WAIT), and a
// write no replica acknowledges fails loudly. (The primary SIGKILLed while processes allocate
// through Sentinel is the sentinel row of faults.test.ts.)
import assert from 'node:assert/strict';
import { DatastoreUnavailableError, datastoreConfigFromEnv, redisDatastore } from '../../lib/datastore/index.js';
import { replicaAck } from '../../lib/datastore/redis-client.js';
import { Ipam } from '../../lib/ipam/index.js';
import { startRedis, type RedisServer } from '../support/redis.js';
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
