// The store-identity guard on etcd: a member that comes back with an empty data dir (a lost
// disk, a wiped single-member cluster) is a store that forgot every allocation. IPAM refuses to
// allocate from it until `ipam repair` has rebuilt the allocations from the WorkloadEndpoints.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { etcdDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { startEtcd, type EtcdServer } from '../../support/etcd.js';
import { GuardFault } from './guard-fault.js';

describe('ipam: store identity guard on etcd (a member restarted with an empty data dir)', function () {
  this.timeout(60_000);
  let etcd: EtcdServer;
  let ds: BackendDatastore;
  const dir = mkdtempSync(join(tmpdir(), 'podroute-etcd-guard-'));
  before(async () => {
    etcd = await startEtcd();
    ds = await etcdDatastore({ endpoints: etcd.endpoints, commandTimeoutMs: 2000 });
  });
  after(async () => {
    await ds?.close();
    await etcd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses to allocate from the emptied store, and after repair never hands out a held address', async () => {
    const fault = new GuardFault(ds, dir, '10.21.0.0/26', ['n1']);
    await fault.applyCluster();
    await fault.startPods(20);
    const before = await ds.raw.identity();

    await etcd.restart({ empty: true });
    await fault.untilEmpty(15_000);
    await fault.applyCluster();
    assert.notEqual((await ds.raw.identity()).storeId, before.storeId, 'the emptied store got a new id with its first write');

    await fault.assertRefused();
    await fault.repair();
    await fault.allocateTheRest();
  });
});
