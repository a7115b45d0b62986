// An agent on a one-member etcd says, at start, that the cluster survives no failure: one
// member is one disk, and losing it loses every allocation.
import assert from 'node:assert/strict';
import { etcdDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { startEtcd, type EtcdServer } from '../../support/etcd.js';
import { TestCluster } from './cluster.js';
import { freePort } from '../../../bgp/session/free-port.js';

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
