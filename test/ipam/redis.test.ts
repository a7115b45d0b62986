import { redisDatastore } from '../../lib/datastore/index.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { ipamSuite } from './suite.js';

describe('ipam: Redis backend (real redis-server)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let n = 0;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });
  ipamSuite(() => redisDatastore({ url: redis.url, name: `ipam${process.pid}-${n++}` }));
});
