import { redisDatastore } from '../../../lib/datastore/index.js';
import { sharedRedis } from '../../support/redis.js';
import { datastoreSuite } from '../../support/datastore-suite.js';

describe('datastore: Redis backend (real redis-server)', function () {
  this.timeout(60_000);
  const redis = sharedRedis('t');
  // Each test gets its own datastore name on the shared server: an empty store.
  datastoreSuite({ open: async (o = {}) => redisDatastore({ url: redis.url(), name: redis.freshName(), ...o }) });
});
