import assert from 'node:assert/strict';
import { memoryDatastore, redisDatastore, type RedisBackend } from '../../../lib/datastore/index.js';
import { sharedRedis, startRedis } from '../../support/redis.js';
import { ipamCheckSuite } from './check-suite.js';

describe('ipam check and repair: memory backend', () => {
  ipamCheckSuite(async () => memoryDatastore());
});

describe('ipam check and repair: Redis backend (real redis-server)', function () {
  this.timeout(60_000);
  const redis = sharedRedis('check');
  ipamCheckSuite(() => redisDatastore({ url: redis.url(), name: redis.freshName() }));

  it('names the risk when Redis can lose acknowledged writes, and none with AOF', async () => {
    const ds = await redisDatastore({ url: redis.url() });
    const aof = await startRedis({ persist: true });
    const ds2 = await redisDatastore({ url: aof.url });
    try {
      assert.match((await (ds.raw as RedisBackend).persistence()).risk ?? '', /appendonly|snapshots/);
      const p = await (ds2.raw as RedisBackend).persistence();
      assert.equal(p.appendonly, 'yes');
      assert.equal(p.risk, undefined);
    } finally {
      await ds.close();
      await ds2.close();
      await aof.stop();
    }
  });
});
