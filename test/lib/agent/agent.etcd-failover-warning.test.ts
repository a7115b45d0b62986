// An agent says, at start, when its store can lose what it acknowledged: a one-member etcd
// survives no failure (one member is one disk, and losing it loses every allocation), and a
// Redis without persistence comes back empty after a restart.
import assert from 'node:assert/strict';
import { etcdDatastore, type BackendDatastore, redisDatastore } from '../../../lib/datastore/index.js';
import { startEtcd, type EtcdServer } from '../../support/etcd.js';
import { TestCluster } from './cluster.js';
import { freePort } from '../../../bgp/session/free-port.js';
import { startRedis, type RedisServer } from '../../support/redis.js';

describe('node agent on a one-member etcd', function () {
  this.timeout(60_000);
  let etcd: EtcdServer | undefined;
  let ds: BackendDatastore | undefined;
  let cluster: TestCluster | undefined;
  after(async () => {
    await cluster?.stop();
    await ds?.close();
    await etcd?.stop();
  });

  it('logs datastore-no-failover with the member count', async () => {
    etcd = await startEtcd();
    ds = await etcdDatastore({ endpoints: etcd.endpoints, name: `warn${process.pid}` });
    const logs: [string, Record<string, unknown>][] = [];
    cluster = new TestCluster(ds, await freePort());
    await cluster.add('n1', 1, { log: (e, f) => logs.push([e, f]) });
    const warning = logs.find(([e]) => e === 'datastore-no-failover');
    assert.ok(warning, JSON.stringify(logs.map(([e]) => e)));
    assert.equal(warning[1].members, 1);
  });
});

describe('node agent on a Redis without persistence', function () {
  this.timeout(60_000);
  let redis: RedisServer | undefined;
  let ds: BackendDatastore | undefined;
  let cluster: TestCluster | undefined;
  after(async () => {
    await cluster?.stop();
    await ds?.close();
    await redis?.stop();
  });

  it('logs datastore-persistence-risk with the risk and the settings behind it', async () => {
    redis = await startRedis();
    ds = await redisDatastore({ url: redis.url, name: `warn${process.pid}` });
    const logs: [string, Record<string, unknown>][] = [];
    cluster = new TestCluster(ds, await freePort());
    await cluster.add('n1', 1, { log: (e, f) => logs.push([e, f]) });
    const warning = logs.find(([e]) => e === 'datastore-persistence-risk');
    assert.ok(warning, JSON.stringify(logs.map(([e]) => e)));
    assert.match(String(warning[1].risk), /no persistence/);
    assert.deepEqual([warning[1].appendonly, warning[1].save], ['no', '']);
    assert.equal(
      logs.some(([e]) => e === 'datastore-no-failover' || e === 'datastore-persistence-unknown'),
      false,
    );
  });
});
