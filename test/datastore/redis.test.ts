import { redisDatastore } from '../../lib/datastore/index.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { datastoreSuite } from './suite.js';

describe('datastore: Redis backend (real redis-server)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let n = 0;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });
  // Each test gets its own datastore name on the shared server: an empty store.
  datastoreSuite({ open: async (o = {}) => redisDatastore({ url: redis.url, name: `t${process.pid}-${n++}`, ...o }) });
});
