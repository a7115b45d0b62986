// The datastore and IPAM contracts on every backend of the table, unchanged: the datastore
// suite (test/support/datastore-suite.ts), the IPAM suite (test/support/ipam-suite.ts: allocation, release,
// block affinity, borrowing, exhaustion), and the store-identity guard, which every backend
// must make possible by telling one store from another and recording a repair.
import assert from 'node:assert/strict';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam, IpamError, memoryIdentityRecord, repairIpam } from '../../../lib/ipam/index.js';
import { ipamSuite } from '../../support/ipam-suite.js';
import { BACKENDS, type StoreUnderTest } from '../../support/datastore-backends.js';
import { datastoreSuite, node, pool } from '../../support/datastore-suite.js';

/** Rows whose suites already run in their own files; only the guard contract runs here for them. */
const SUITES_ELSEWHERE: Readonly<Record<string, string>> = {
  memory: 'test/lib/datastore/memory.test.ts, test/lib/ipam/ipam.memory.test.ts',
  redis: 'test/lib/datastore/redis.test.ts, test/lib/ipam/ipam.redis.test.ts',
  etcd: 'test/lib/datastore/etcd.test.ts, test/lib/ipam/ipam.etcd.test.ts (one member)',
};

const refusedAsReplaced = (e: unknown): boolean => {
  assert.ok(e instanceof IpamError, String(e));
  assert.equal(e.code, 'StoreReplaced');
  assert.match(e.message, /the datastore (was replaced|is empty).*podroute ipam repair/);
  return true;
};

for (const backend of BACKENDS.filter((b) => !b.sameCodeAs)) {
  describe(`datastore contract: ${backend.name}`, function () {
    this.timeout(60_000);
    let store: StoreUnderTest | undefined;
    let n = 0;
    const fresh = (): string => `contract${process.pid}-${n++}`;
    before(async () => {
      store = await backend.start();
    });
    after(async () => {
      await store?.stop();
    });
    const open = (o?: { logLength?: number }): Promise<BackendDatastore> => store!.open(fresh(), o);

    if (!SUITES_ELSEWHERE[backend.name]) {
      describe('datastore suite', () => datastoreSuite({ open }));
      describe('IPAM suite', () => ipamSuite(() => open()));
    }

    describe('store identity and the IPAM guard', () => {
      const opened: BackendDatastore[] = [];
      afterEach(async () => {
        for (const d of opened.splice(0)) await d.close();
      });
      const openStore = async (): Promise<BackendDatastore> => {
        const d = await open();
        opened.push(d);
        return d;
      };

      it('a store keeps one identity while written, another store has another, and a repair raises the epoch', async () => {
        const a = await openStore();
        await a.apply(pool('p', '10.70.0.0/24'));
        const first = await a.raw.identity();
        assert.ok(first.storeId, 'a written store has an identity');
        assert.equal(first.epoch, 0);
        await a.apply(node('n1'));
        const later = await a.raw.identity();
        assert.equal(later.storeId, first.storeId);
        assert.ok(later.revision > first.revision, `revision ${later.revision} after ${first.revision}`);
        const b = await openStore();
        await b.apply(pool('p', '10.70.0.0/24'));
        assert.notEqual((await b.raw.identity()).storeId, first.storeId);
        const repaired = await a.raw.markRepaired();
        assert.equal(repaired.storeId, first.storeId, 'a repair keeps the store');
        assert.ok(repaired.epoch > 0, `epoch ${repaired.epoch} after a repair: want > 0`);
        assert.deepEqual(await a.raw.identity(), repaired);
        // Another repair, even in the same millisecond, is later still.
        assert.ok((await a.raw.markRepaired()).epoch > repaired.epoch, `a second repair's epoch is not after ${repaired.epoch}`);
      });

      it('refuses to allocate from another store or an empty one, until that store is repaired', async () => {
        const a = await openStore();
        const b = await openStore();
        const empty = await openStore();
        await a.apply(pool('p', '10.71.0.0/24', { blockSize: 28 }));
        await b.apply(pool('p', '10.71.0.0/24', { blockSize: 28 }));
        const record = memoryIdentityRecord();
        const held = await new Ipam(a, { identity: record }).autoAssign({ handle: 'h0', node: 'n1' });
        assert.equal((await record.load())?.storeId, (await a.raw.identity()).storeId);

        await assert.rejects(new Ipam(b, { identity: record }).autoAssign({ handle: 'h1', node: 'n1' }), refusedAsReplaced);
        await assert.rejects(new Ipam(empty, { identity: record }).autoAssign({ handle: 'h1', node: 'n1' }), refusedAsReplaced);
        assert.deepEqual((await b.list('IPAMBlock')).items, [], 'the refused call wrote nothing');
        // The record still names the first store: it is not overwritten by a refused call.
        assert.equal((await record.load())?.storeId, (await a.raw.identity()).storeId);

        // The pod holding h0's address is known to b's orchestrator; the repair rebuilds it.
        await b.apply({
          apiVersion: 'projectcalico.org/v3',
          kind: 'WorkloadEndpoint',
          metadata: { name: 'n1-k8s-pod0-eth0', namespace: 'default', annotations: { 'podroute.io/container-id': 'h0' } },
          spec: { node: 'n1', pod: 'pod0', workload: 'h0', interfaceName: 'cali0', ipNetworks: [`${held.ip}/32`] },
        } as never);
        const report = await repairIpam(b);
        assert.equal(report.addresses, 1);
        const next = await new Ipam(b, { identity: record }).autoAssign({ handle: 'h2', node: 'n1' });
        assert.notEqual(next.ip, held.ip, 'the repaired store knows the held address');
        assert.equal((await record.load())?.storeId, (await b.raw.identity()).storeId, 'the record follows the repaired store');
        // Back to the first store, unrepaired since: refused again.
        await assert.rejects(new Ipam(a, { identity: record }).autoAssign({ handle: 'h3', node: 'n1' }), refusedAsReplaced);
      });

      it('records an identity only after an allocation the store acknowledged, so losing writes nobody was told of is no rollback', async () => {
        const a = await openStore();
        await a.apply(pool('p', '10.72.0.0/24', { blockSize: 28 }));
        const record = memoryIdentityRecord();
        const ipam = new Ipam(a, { identity: record });
        await ipam.autoAssign({ handle: 'h0', node: 'n1' });
        const recorded = (await record.load())!;
        // Another caller's write, not yet acknowledged to it as far as we know (a Sentinel failover
        // may still lose it), then a call of ours that reads the store and fails.
        await a.apply(node('n2'));
        assert.ok((await a.raw.identity()).revision > recorded.revision, 'the other write moved the revision on');
        await assert.rejects(
          ipam.autoAssign({ handle: 'h1', node: 'n1', pools: ['none'] }),
          (e: unknown) => e instanceof IpamError && e.code === 'NoPool',
        );
        assert.deepEqual(await record.load(), recorded, 'a failed allocation records nothing it read');
        await ipam.autoAssign({ handle: 'h2', node: 'n1' });
        assert.ok((await record.load())!.revision > recorded.revision, 'an acknowledged one records what it read before');
      });
    });
  });
}
