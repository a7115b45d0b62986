// The fault on a real Redis: allocate, SIGKILL Redis, restart it empty (no
// persistence), re-apply the pool. Without the guard IPAM hands out addresses pods still
// hold; with it allocation is refused until `ipam repair` has rebuilt the allocations from
// the WorkloadEndpoints, and afterwards nothing collides.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  API_VERSION,
  redisDatastore,
  type BackendDatastore,
  type IPPool,
  type Node,
  type WorkloadEndpoint,
} from '../../lib/datastore/public.js';
import { checkIpam, fileIdentityRecord, Ipam, IpamError, repairIpam } from '../../lib/ipam/index.js';
import { startRedis, type RedisServer } from '../support/redis.js';

const pool: IPPool = {
  apiVersion: API_VERSION,
  kind: 'IPPool',
  metadata: { name: 'p' },
  spec: { cidr: '10.20.0.0/24', blockSize: 28, ipipMode: 'Never', vxlanMode: 'Never' },
};
const node = (name: string): Node => ({ apiVersion: API_VERSION, kind: 'Node', metadata: { name }, spec: {} });
const wep = (i: number, nodeName: string, ip: string): WorkloadEndpoint => ({
  apiVersion: API_VERSION,
  kind: 'WorkloadEndpoint',
  metadata: { name: `${nodeName}-k8s-pod${i}-eth0`, namespace: 'default', annotations: { 'podroute.io/container-id': `c${i}` } },
  spec: { node: nodeName, pod: `pod${i}`, workload: `c${i}`, interfaceName: `cali${i}`, ipNetworks: [`${ip}/32`] },
});

async function untilConnected(ds: BackendDatastore): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await ds.revision();
      return;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

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
    await ds.apply(pool);
    await ds.apply(node('n1'));
    await ds.apply(node('n2'));
    const guarded = (n: string): Ipam => new Ipam(ds, { identity: fileIdentityRecord(join(dir, `${n}.json`)) });
    const held = new Set<string>();
    const weps: WorkloadEndpoint[] = [];
    for (let i = 0; i < 24; i++) {
      const n = i % 2 === 0 ? 'n1' : 'n2';
      const a = await guarded(n).autoAssign({ handle: `c${i}`, node: n });
      held.add(a.ip);
      weps.push(wep(i, n, a.ip));
      await ds.apply(weps[i]!);
    }
    assert.equal(held.size, 24);

    const pid = redis.pid;
    await redis.kill();
    assert.throws(() => process.kill(pid!, 0), /ESRCH/, 'the first redis-server is gone');
    await redis.restart();
    await untilConnected(ds);
    assert.equal((await ds.raw.identity()).storeId, null, 'the restarted Redis is empty');
    await ds.apply(pool);
    await ds.apply(node('n1'));
    await ds.apply(node('n2'));

    // Today's failure, reproduced: an unguarded caller gets an address a pod still holds.
    const unguarded = await new Ipam(ds).autoAssign({ handle: 'x', node: 'n1' });
    assert.ok(held.has(unguarded.ip), `${unguarded.ip} is handed out twice`);
    await new Ipam(ds).releaseByHandle('x');

    // The guard refuses, and says why.
    await assert.rejects(
      guarded('n1').autoAssign({ handle: 'c100', node: 'n1' }),
      (e: unknown) => e instanceof IpamError && e.code === 'StoreReplaced' && /was replaced.*ipam repair/.test(e.message),
    );

    // The orchestrator re-applies the pods' endpoints; repair rebuilds the allocations.
    for (const w of weps) await ds.apply({ ...w, metadata: { ...w.metadata, resourceVersion: undefined } });
    const report = await repairIpam(ds);
    assert.equal(report.addresses, 24);
    assert.deepEqual(report.conflicts, []);
    const check = checkIpam((await ds.list('IPAMBlock')).items, (await ds.list('WorkloadEndpoint')).items, (await ds.list('Node')).items);
    assert.ok(check.ok, JSON.stringify(check));

    for (let i = 100; i < 400; i++) {
      const n = i % 2 === 0 ? 'n1' : 'n2';
      let a: Awaited<ReturnType<Ipam['autoAssign']>>;
      try {
        a = await guarded(n).autoAssign({ handle: `c${i}`, node: n });
      } catch (e) {
        if (e instanceof IpamError && e.code === 'Exhausted') break;
        throw e;
      }
      assert.ok(!held.has(a.ip), `${a.ip} is held by a pod already`);
      held.add(a.ip);
    }
    assert.equal(held.size, 256, 'the whole /24 was handed out, each address once');
  });
});
