// etcd when the member a watcher reads from dies and comes back: the watch resumes from its
// revision, every write once, none twice. (A leader lost while nodes allocate is the etcd row
// of backend.faults.test.ts.)
import assert from 'node:assert/strict';
import {
  DatastoreError,
  DatastoreUnavailableError,
  etcdDatastore,
  type BackendDatastore,
  type WatchEvent,
} from '../../../lib/datastore/index.js';
import { startEtcd, type EtcdServer } from '../../support/etcd.js';
import { node, storeVersions } from '../../support/datastore-suite.js';
import { waitFor } from '../../support/wait.js';

/** Calls that may fail while a member is down: the store said so, and the call can be made again. */
function transient(e: unknown): boolean {
  return e instanceof DatastoreUnavailableError || (e instanceof DatastoreError && (e.code === 'Unavailable' || e.code === 'Conflict'));
}

describe('datastore: etcd faults (real etcd members, SIGKILLed)', function () {
  this.timeout(120_000);
  const open: BackendDatastore[] = [];
  let etcd: EtcdServer | undefined;
  afterEach(async () => {
    for (const ds of open.splice(0)) await ds.close().catch(() => undefined);
    await etcd?.stop();
    etcd = undefined;
  });

  it('a watcher whose member is killed and restarted mid-stream sees every write exactly once', async () => {
    etcd = await startEtcd();
    const name = `resume${process.pid}`;
    const writer = await etcdDatastore({ endpoints: etcd.endpoints, name, commandTimeoutMs: 2000 });
    const reader = await etcdDatastore({ endpoints: etcd.endpoints, name, commandTimeoutMs: 2000 });
    open.push(writer, reader);
    await writer.apply(node('seed'));
    const from = await writer.revision();
    const w = reader.watch({ fromRevision: from, kinds: ['Node'] });
    const events: WatchEvent[] = [];
    const statuses: string[] = [];
    w.on('event', (e) => events.push(e));
    w.on('status', (s) => statuses.push(s));
    w.on('error', () => undefined);

    const acked: { key: string; revision: number }[] = [];
    const N = 600;
    let cut: Promise<void> | undefined;
    let killedPid: number | undefined;
    for (let i = 0; i < N; i++) {
      if (i === 200) {
        killedPid = etcd.pid;
        cut = (async () => {
          await etcd!.kill();
          await new Promise((r) => setTimeout(r, 500));
          await etcd!.restart();
        })();
      }
      for (let tries = 0; ; tries++) {
        try {
          // Distinct keys: a retried write whose first try was applied is then a second, real write.
          const r = await writer.apply(node(`n${i}`, { i: String(i), try: String(tries) }));
          acked.push({ key: `n${i}`, revision: Number(r.metadata.resourceVersion) });
          break;
        } catch (e) {
          if (!transient(e) || tries > 200) throw e;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    }
    await cut;
    assert.throws(() => process.kill(killedPid!, 0), /ESRCH/, 'the first etcd process is gone');
    const last = await writer.revision();
    await waitFor(() => w.revision >= last, { what: 'the watcher caught up', timeoutMs: 30_000, intervalMs: 10 });
    await w.close();

    assert.ok(statuses.includes('disconnected'), `the watch really lost its connection: ${statuses.join(',')}`);
    const changes = events.filter((e): e is Exclude<WatchEvent, { type: 'synced' }> => e.type !== 'synced');
    assert.equal(changes.length, events.length, 'resumed from its revision, no resync');
    assert.ok(
      changes.every((e) => !e.synthetic),
      'every event read from etcd history',
    );
    const revs = changes.map((e) => e.revision);
    for (let i = 1; i < revs.length; i++)
      assert.ok(revs[i]! > revs[i - 1]!, `revision ${revs[i]} after ${revs[i - 1]}: doubled or out of order`);
    const seen = new Set(changes.map((e) => `${e.key}@${e.revision}`));
    const missed = acked.filter((a) => !seen.has(`${a.key}@${a.revision}`));
    assert.deepEqual(missed, [], 'every acknowledged write was delivered');
    assert.equal(changes.length, last - from, 'one event per revision of the store');
    const view = new Map<string, string>();
    for (const e of changes) if (e.type === 'put') view.set(`Node/${e.key}`, e.resource.metadata.resourceVersion!);
    const store = await storeVersions(writer, ['Node']);
    store.delete('Node/seed');
    assert.deepEqual(view, store);
  });
});
