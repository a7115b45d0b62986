// Redis killed (SIGKILL, by PID) and restarted on the same port while a watch runs.
import assert from 'node:assert/strict';
import {
  DatastoreUnavailableError,
  redisDatastore,
  type BackendDatastore,
  type Watcher,
  type WatchStatus,
} from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { KINDS } from '../../../lib/resources/index.js';
import { startRedis, type RedisServer } from '../../support/redis.js';
import { assertIpamConsistent } from '../../support/ipam-consistency.js';
import { WatchView, node, pool, storeVersions } from '../../support/datastore-suite.js';
import { waitFor } from '../../support/wait.js';

describe('datastore: Redis outage during a watch', function () {
  this.timeout(90_000);
  let redis: RedisServer | undefined;
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
    await redis?.stop();
    redis = undefined;
  });

  async function setup(
    persist: boolean,
  ): Promise<{ ds: BackendDatastore; ipam: Ipam; w: Watcher; view: WatchView; statuses: WatchStatus[] }> {
    redis = await startRedis({ persist });
    const ds = await redisDatastore({ url: redis.url, name: 'outage' });
    closers.push(() => ds.close());
    const w = ds.watch();
    closers.push(() => w.close());
    const view = new WatchView(w);
    const statuses: WatchStatus[] = [];
    w.on('status', (s) => statuses.push(s));
    w.on('error', () => {}); // expected while Redis is down
    await ds.create(pool('p', '10.50.0.0/24', { blockSize: 28 }));
    const ipam = new Ipam(ds);
    for (let i = 0; i < 20; i++) await ipam.autoAssign({ handle: `before-${i}`, node: `n${i % 3}` });
    for (let i = 0; i < 5; i++) await ds.create(node(`n${i}`));
    const rev = await ds.revision();
    await waitFor(() => w.revision === rev, { what: 'watcher caught up', intervalMs: 10 });
    return { ds, ipam, w, view, statuses };
  }

  function assertNoDuplicates(view: WatchView): void {
    const revs = view.events.filter((e) => e.type !== 'synced' && !e.synthetic).map((e) => e.revision);
    for (let i = 1; i < revs.length; i++) assert.ok(revs[i]! > revs[i - 1]!, `revision ${revs[i]} delivered after ${revs[i - 1]}`);
  }

  it('data kept (AOF): IPAM fails fast and clearly during the outage, the watcher resumes and equals the store', async () => {
    const { ds, ipam, view, statuses } = await setup(true);
    const before = await assertIpamConsistent(ds);
    await redis!.kill();
    await waitFor(() => statuses.includes('disconnected'), { what: 'watcher noticed', intervalMs: 10 });

    const t0 = Date.now();
    await assert.rejects(ipam.autoAssign({ handle: 'during', node: 'n1' }), (e: unknown) => {
      assert.ok(e instanceof DatastoreUnavailableError, String(e));
      assert.match(e.message, /datastore unavailable: redis at 127\.0\.0\.1:\d+ is not connected.*the call was not sent/);
      return true;
    });
    await assert.rejects(ipam.releaseByHandle('before-1'), DatastoreUnavailableError);
    assert.ok(Date.now() - t0 < 1000, `failed in ${Date.now() - t0} ms, not queued`);

    await redis!.restart();
    // Another agent writes as soon as Redis is back, racing the watcher's reconnect.
    const other = await redisDatastore({ url: redis!.url, name: 'outage' });
    closers.push(() => other.close());
    const ipam2 = new Ipam(other);
    for (let i = 0; i < 10; i++) await ipam2.autoAssign({ handle: `after-${i}`, node: 'n4' });
    await ipam2.releaseByHandle('before-0');
    await other.delete('Node', 'n2');
    await other.apply(node('n3', { moved: 'yes' }));

    await waitFor(
      async () => {
        const want = await storeVersions(other, KINDS);
        const got = view.versions();
        return got.size === want.size && [...want].every(([k, v]) => got.get(k) === v);
      },
      { what: 'view equals store', timeoutMs: 20_000, intervalMs: 10 },
    );
    assert.ok(
      statuses.lastIndexOf('connected') > statuses.indexOf('disconnected'),
      `no reconnect after the disconnect: ${statuses.join(' ')}`,
    );
    assertNoDuplicates(view);
    // Nothing was half-written by the failed calls: state is whole and the failed handle holds nothing.
    const after = await assertIpamConsistent(other);
    assert.equal(after.addresses.size, before.addresses.size - 1 + 10);
    assert.ok(![...after.addresses.values()].includes('during'), "an address of handle 'during' (a failed call) is held");
    // The first client is usable again once its connection is back.
    await waitFor(
      () =>
        ds.revision().then(
          () => true,
          () => false,
        ),
      { what: 'client reconnected', intervalMs: 10 },
    );
    assert.equal((await ipam.autoAssign({ handle: 'later', node: 'n1' })).borrowed, false);
  });

  it('data lost (no persistence): the watcher sees a new store and resyncs, deleting what vanished', async () => {
    const { view, statuses } = await setup(false);
    assert.ok(view.objects.size > 0, 'the view holds no objects after setup');
    await redis!.kill();
    await waitFor(() => statuses.includes('disconnected'), { what: 'watcher noticed', intervalMs: 10 });
    await redis!.restart();
    const other = await redisDatastore({ url: redis!.url, name: 'outage' });
    closers.push(() => other.close());
    await other.create(node('fresh'));
    await waitFor(
      async () => {
        const want = await storeVersions(other, KINDS);
        const got = view.versions();
        return got.size === want.size && [...want].every(([k, v]) => got.get(k) === v);
      },
      { what: 'view equals the new store', timeoutMs: 20_000, intervalMs: 10 },
    );
    assert.deepEqual([...view.objects.keys()], ['Node/fresh']);
    assert.ok(
      view.events.some((e) => e.type === 'delete' && e.synthetic),
      'synthetic deletes for the lost objects',
    );
  });
});
