// The guard's fault on a real Redis: allocate, SIGKILL Redis, restart it empty (no
// persistence), re-apply the pool. Without the guard IPAM hands out addresses pods still
// hold; with it allocation is refused until `ipam repair` has rebuilt the allocations from
// the WorkloadEndpoints, and afterwards nothing collides. The guard is on by default: a plain
// `new Ipam(ds)`, kept for the life of the process, is guarded as the CNI plugin's file is.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryDatastore, redisDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { checkIpam, Ipam, IpamError, memoryIdentityRecord } from '../../../lib/ipam/index.js';
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

    // What the guard prevents, reproduced: with it switched off, an address a pod still holds is handed out.
    const unguarded = await new Ipam(ds, { storeGuard: false }).autoAssign({ handle: 'x', node: 'n1' });
    assert.ok(fault.held.has(unguarded.ip), `${unguarded.ip} is handed out twice`);
    await new Ipam(ds).releaseByHandle('x');

    await fault.assertRefused();
    await fault.repair();
    const check = checkIpam((await ds.list('IPAMBlock')).items, (await ds.list('WorkloadEndpoint')).items, (await ds.list('Node')).items);
    assert.ok(check.ok, JSON.stringify(check));
    await fault.allocateTheRest();
  });

  it('guards a default new Ipam(ds): after the store came back empty it hands out no address twice', async () => {
    const store = await redisDatastore({ url: redis.url, name: `guard-default${process.pid}` });
    try {
      // One Ipam per node for the life of the process, built as the README's example builds it.
      const ipams = new Map(['n1', 'n2'].map((n) => [n, new Ipam(store)]));
      const fault = new GuardFault(store, dir, '10.30.0.0/26', ['n1', 'n2'], (n) => ipams.get(n)!);
      await fault.applyCluster();
      await fault.startPods(20);

      await redis.kill();
      await redis.restart();
      await fault.untilEmpty(10_000);
      await fault.applyCluster();

      // Every node asks as often as the pool has addresses: each call is refused, none hands out a held address.
      for (let i = 0; i < fault.size; i++) {
        const node = i % 2 === 0 ? 'n1' : 'n2';
        const got = await ipams
          .get(node)!
          .autoAssign({ handle: `again-${i}`, node })
          .then(
            (a) => a.ip,
            (e: unknown) => e,
          );
        assert.ok(typeof got !== 'string' || !fault.held.has(got), `${String(got)} is handed out twice (call ${i}, ${node})`);
        assert.ok(got instanceof IpamError && got.code === 'StoreReplaced', `call ${i} on ${node} was not refused: ${String(got)}`);
      }
      await fault.assertRefused();
      await fault.repair();
      await fault.allocateTheRest();
    } finally {
      await store.close();
    }
  });

  it('refuses storeGuard: false beside an identity record, which it would ignore', async () => {
    const mem = memoryDatastore();
    assert.throws(
      // @ts-expect-error: the options' type refuses it too
      () => new Ipam(mem, { storeGuard: false, identity: memoryIdentityRecord() }),
      (e: unknown) => e instanceof IpamError && /^storeGuard: false switches the guard off/.test(e.message),
    );
  });
});
