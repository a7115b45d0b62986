// Redis replica acknowledgement: with Sentinel every write waits for a replica (WAIT), and a
// write no replica acknowledges fails loudly. A client left on a server demoted to replica is
// told its write was not applied, and finds the primary again. (The primary SIGKILLed while processes allocate
// through Sentinel is the sentinel row of backend.faults.test.ts.)
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { DatastoreUnavailableError, datastoreConfigFromEnv, redisDatastore } from '../../../lib/datastore/index.js';
import { loadRedis, newClient, replicaAck, waitForReplicas, whenReady } from '../../../lib/datastore/redis-client.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { startRedis, type RedisServer } from '../../support/redis.js';
import { pool } from '../../support/datastore-suite.js';

describe('datastore: Redis replica acknowledgement (WAIT)', function () {
  this.timeout(30_000);
  let redis: RedisServer | undefined;
  afterEach(async () => {
    await redis?.stop();
    redis = undefined;
  });

  it('a Redis that is not there is named by what was asked for: its socket path, or its host and port', async () => {
    await assert.rejects(
      redisDatastore({ url: '/nonexistent/podroute-redis.sock', connectWaitMs: 300 }),
      /redis at \/nonexistent\/podroute-redis\.sock is not reachable/,
    );
    await assert.rejects(redisDatastore({ url: 'redis://127.0.0.1:1', connectWaitMs: 300 }), /redis at 127\.0\.0\.1:1 is not reachable/);
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

  it('a server demoted under a connected client: the write is refused as not applied, the client reconnects, writes go on once it is primary', async () => {
    redis = await startRedis();
    const other = await startRedis();
    const admin = new Redis(redis.url, { protocol: 2 });
    const ds = await redisDatastore({ url: redis.url, name: 'demoted' });
    const commandClient = async (): Promise<string | undefined> =>
      String(await admin.client('LIST'))
        .split('\n')
        .find((l) => l.includes('name=podroute-command'))
        ?.match(/^id=(\d+)/)?.[1];
    try {
      await ds.create(pool('before', '10.62.0.0/24'));
      const first = await commandClient();
      assert.ok(first, 'the datastore holds a named command connection');
      // What a primary restarted after a failover goes through when Sentinel reconfigures it.
      await admin.replicaof('127.0.0.1', other.port);
      await assert.rejects(ds.create(pool('during', '10.62.1.0/24')), (e: unknown) => {
        assert.ok(e instanceof DatastoreUnavailableError, String(e));
        assert.match(e.message, /refused the call without applying it \(READONLY/);
        return true;
      });
      await admin.replicaof('NO', 'ONE');
      const deadline = Date.now() + 10_000;
      for (;;) {
        try {
          await ds.create(pool('after', '10.62.2.0/24'));
          break;
        } catch (e) {
          assert.ok(e instanceof DatastoreUnavailableError && Date.now() < deadline, `writes did not resume: ${e}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      const second = await commandClient();
      assert.ok(second !== undefined && second !== first, `the client reconnected after READONLY (connection ${first}, now ${second})`);
      assert.deepEqual(
        (await ds.list('IPPool')).items.map((p) => p.metadata.name).sort(),
        ['after', 'before'],
        'the refused write left nothing',
      );
    } finally {
      await ds.close();
      admin.disconnect();
      await other.stop();
    }
  });

  it('WAIT on a server demoted after the write: "may or may not have been applied", and the client reconnects', async () => {
    redis = await startRedis();
    const other = await startRedis();
    await loadRedis();
    const client = newClient({ url: redis.url }, 'command');
    const admin = new Redis(redis.url, { protocol: 2 });
    try {
      await whenReady(client, 5000);
      await client.set('k', 'v');
      await admin.replicaof('127.0.0.1', other.port);
      let reconnecting = false;
      client.once('reconnecting', () => {
        reconnecting = true;
      });
      await assert.rejects(waitForReplicas(client, { replicas: 1, timeoutMs: 100 }), (e: unknown) => {
        assert.ok(e instanceof DatastoreUnavailableError, String(e));
        assert.match(e.message, /became a replica after the write; it may or may not have been applied/);
        return true;
      });
      const deadline = Date.now() + 5000;
      while (!reconnecting && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.ok(reconnecting, 'the client dropped its connection to the replica');
    } finally {
      client.disconnect();
      admin.disconnect();
      await other.stop();
    }
  });
});
