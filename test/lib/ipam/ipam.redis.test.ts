import { redisDatastore } from '../../../lib/datastore/index.js';
import { sharedRedis } from '../../support/redis.js';
import { ipamSuite } from '../../support/ipam-suite.js';

describe('ipam: Redis backend (real redis-server)', function () {
  this.timeout(60_000);
  const redis = sharedRedis('ipam');
  ipamSuite(() => redisDatastore({ url: redis.url(), name: redis.freshName() }));
});
