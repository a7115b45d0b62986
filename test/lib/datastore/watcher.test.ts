// A watcher whose connection is cut three times during 10,000 writes still sees every write
// exactly once: the revisions it delivers are exactly those the writes made, in order, none
// twice, none synthetic (it resumed from its revision, it did not relist), and its view ends
// equal to the store. On each backend; the memory backend has no connection to cut and runs
// the same writes without.
import assert from 'node:assert/strict';
import type { BackendDatastore, Watcher, WatchStatus } from '../../../lib/datastore/index.js';
import { KINDS } from '../../../lib/resources/index.js';
import { BACKENDS, type StoreUnderTest } from '../../support/datastore-backends.js';
import { WatchView, node, storeVersions } from '../../support/datastore-suite.js';
import { waitFor } from '../../support/wait.js';

const WRITES = 10_000;
const IN_FLIGHT = 16;
const KEYS = 500;
const CUT_AT = [2500, 5000, 7500];

for (const backend of BACKENDS.filter((b) => !b.sameCodeAs)) {
  describe(`datastore watch: ${backend.name}, ${WRITES.toLocaleString('en-US')} writes, the watcher's connection cut`, function () {
    this.timeout(120_000);
    let store: StoreUnderTest | undefined;
    let ds: BackendDatastore | undefined;
    let watching: BackendDatastore | undefined;
    let w: Watcher | undefined;
    after(async () => {
      await w?.close();
      await watching?.close();
      await ds?.close();
      await store?.stop();
    });

    it('sees every write exactly once, by revision, and ends equal to the store', async () => {
      store = await backend.start();
      const s = store;
      ds = await s.open(`watch${process.pid}`);
      const d = ds;
      for (let i = 0; i < 20; i++) await d.apply(node(`n${i}`));
      watching = await s.open(`watch${process.pid}`, { forWatch: true });
      w = watching.watch();
      const view = new WatchView(w);
      const statuses: WatchStatus[] = [];
      w.on('status', (st) => statuses.push(st));
      w.on('error', () => {}); // each cut is reported; the watcher reconnects by itself
      await waitFor(() => view.synced === 1, { what: 'the initial list', intervalMs: 10 });
      const from = await d.revision();
      assert.equal(w.revision, from);

      let next = 0;
      let cutsDone = 0;
      const cuts: number[] = [];
      // The revision each write was acknowledged at: what the watcher must deliver, each once.
      const written: number[] = [];
      const write = async (i: number): Promise<void> => {
        const key = `n${i % KEYS}`;
        // Every seventh write of a key that exists deletes it: puts, updates and deletes all travel.
        const done = i % 7 === 3 && (await d.get('Node', key)) ? await d.delete('Node', key) : await d.apply(node(key, { i: String(i) }));
        written.push(Number(done.metadata.resourceVersion));
      };
      let cutting = Promise.resolve();
      const cut = async (n: number): Promise<void> => {
        // Cut a live connection: wait until the watcher is back from the previous cut.
        await waitFor(() => statuses.at(-1) === 'connected', {
          what: 'the watcher connected before the cut',
          timeoutMs: 15_000,
          intervalMs: 10,
        });
        const before = statuses.filter((x) => x === 'disconnected').length;
        // 'connected' is said before the reader's blocking call is on the wire: cut until a
        // connection is there to cut (the count is asserted below), within a bound.
        const deadline = Date.now() + 15_000;
        do cuts[n] = await s.cutWatches!();
        while (cuts[n] === 0 && Date.now() < deadline && (await new Promise((r) => setTimeout(r, 50, true))));
        await waitFor(() => statuses.filter((x) => x === 'disconnected').length > before, {
          what: 'the watcher noticed the cut',
          timeoutMs: 15_000,
          intervalMs: 10,
        });
      };
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < WRITES) {
            const i = next++;
            await write(i);
            if (s.cutWatches && cutsDone < CUT_AT.length && i >= CUT_AT[cutsDone]!) {
              const n = cutsDone++;
              // One cut at a time: a second worker reaching the next point while the first cut is
              // still unnoticed would find the old 'connected' and cut the same connection again.
              cutting = cutting.then(() => cut(n));
              await cutting;
            }
          }
        }),
      );
      const last = await d.revision();
      await waitFor(() => w!.revision === last, { what: 'the watcher caught up', timeoutMs: 30_000, intervalMs: 10 });

      const changes = view.events.filter((e) => e.type !== 'synced');
      const after = changes.filter((e) => e.revision > from);
      assert.deepEqual(
        after.filter((e) => e.synthetic).map((e) => `${e.type} ${e.key}`),
        [],
        'resumed from its revision: nothing relisted',
      );
      // Each write must arrive once, in order, and nothing else (etcd's revisions may skip numbers).
      const revs = after.map((e) => e.revision);
      const seen = new Set(revs);
      const missed = written.filter((r) => !seen.has(r));
      const doubled = revs.filter((r, i) => i > 0 && r <= revs[i - 1]!);
      assert.equal(written.length, WRITES);
      assert.equal(new Set(written).size, WRITES, 'every write has a revision of its own');
      assert.deepEqual(missed.slice(0, 10), [], `${missed.length} writes never delivered`);
      assert.deepEqual(doubled.slice(0, 10), [], `${doubled.length} delivered twice or out of order`);
      assert.equal(revs.length, WRITES, 'no event but the writes');
      assert.deepEqual(view.versions(), await storeVersions(d, KINDS));

      const disconnects = statuses.filter((x) => x === 'disconnected').length;
      if (s.cutWatches) {
        assert.deepEqual(
          cuts.map((n) => n >= 1),
          CUT_AT.map(() => true),
          `watch connections cut at each point: ${cuts.join(', ')}`,
        );
        assert.ok(disconnects >= CUT_AT.length, `${disconnects} disconnects seen`);
      }
      console.log(
        `      ${backend.name}: ${revs.length} events for ${written.length} writes (revisions ${from + 1}..${last}), ${cuts.length} cuts (${cuts.join(', ') || 'no connection'}), ${disconnects} disconnects`,
      );
    });
  });
}
