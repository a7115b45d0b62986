// The fault on a real Redis: allocate, SIGKILL Redis, restart it empty (no
// persistence), re-apply the pool. Without the guard IPAM hands out addresses pods still
// hold; with it allocation is refused until `ipam repair` has rebuilt the allocations from
// the WorkloadEndpoints, and afterwards nothing collides.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { checkIpam, Ipam } from '../../../lib/ipam/index.js';
import { startRedis, type RedisServer } from '../../support/redis.js';
import { GuardFault } from './guard-fault.js';

describe('ipam: store identity guard (real redis-server killed and restarted empty)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let ds: BackendDatastore;
  const dir = mkdtempSync(join(tmpdir(), 'podroute-guard-'));
  before(async () => {
    redis = await startRedis(); // no persistence: a restart comes back empty
    ds = await redisDatastore({ url: redis.url, name: `guard${process.pid}` });
  });
  after(async () => {
    await ds?.close();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses to allocate from a store that came back empty, and after repair never hands out a held address', async () => {
    const fault = new GuardFault(ds, dir, '10.20.0.0/24', ['n1', 'n2']);
    await fault.applyCluster();
    await fault.startPods(24);

    const pid = redis.pid;
    await redis.kill();
    assert.throws(() => process.kill(pid!, 0), /ESRCH/, 'the first redis-server is gone');
    await redis.restart();
    await fault.untilEmpty(10_000);
    await fault.applyCluster();

    // Today's failure, reproduced: an unguarded caller gets an address a pod still holds.
    const unguarded = await new Ipam(ds).autoAssign({ handle: 'x', node: 'n1' });
    assert.ok(fault.held.has(unguarded.ip), `${unguarded.ip} is handed out twice`);
    await new Ipam(ds).releaseByHandle('x');

    await fault.assertRefused();
    await fault.repair();
    const check = checkIpam((await ds.list('IPAMBlock')).items, (await ds.list('WorkloadEndpoint')).items, (await ds.list('Node')).items);
    assert.ok(check.ok, JSON.stringify(check));
    await fault.allocateTheRest();
  });
});
