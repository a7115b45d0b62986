// The datastore contract, run unchanged against every backend.
import assert from 'node:assert/strict';
import { resourceKey, type Kind, type Resource } from '../../lib/resources/index.js';
import {
  AlreadyExistsError,
  ConflictError,
  NotFoundError,
  type Datastore,
  type WatchEvent,
  type Watcher,
} from '../../lib/datastore/index.js';
import { waitFor } from './wait.js';

export interface SuiteBackend {
  /** A fresh, empty datastore. logLength: how much change log to keep (small to force trims). */
  open(options?: { logLength?: number }): Promise<Datastore>;
}

/** What a watcher's consumer knows: kind/key -> resource, built only from events. */
export class WatchView {
  readonly objects = new Map<string, Resource>();
  readonly events: WatchEvent[] = [];
  synced = 0;
  constructor(w: Watcher) {
    w.on('event', (e) => {
      this.events.push(e);
      if (e.type === 'synced') {
        this.synced++;
        return;
      }
      const id = `${e.kind}/${e.key}`;
      if (e.type === 'put') this.objects.set(id, e.resource);
      else this.objects.delete(id);
    });
  }
  /** kind/key -> resourceVersion, for comparing with a list. */
  versions(): Map<string, string> {
    return new Map([...this.objects].map(([k, r]) => [k, r.metadata.resourceVersion!]));
  }
}

export async function storeVersions(ds: Datastore, kinds: readonly Kind[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const k of kinds) for (const r of (await ds.list(k)).items) out.set(`${k}/${resourceKey(r)}`, r.metadata.resourceVersion!);
  return out;
}

export const node = (name: string, labels: Record<string, string> = {}, as?: number): Resource => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Node',
  metadata: { name, labels },
  spec: { bgp: { ipv4Address: '10.0.0.1/24', ...(as ? { asNumber: as } : {}) } },
});
export const pool = (name: string, cidr: string, extra: Record<string, unknown> = {}): Resource =>
  ({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name }, spec: { cidr, ...extra } }) as Resource;

export function datastoreSuite(backend: SuiteBackend): void {
  let ds: Datastore;
  const open: Datastore[] = [];
  const watchers: Watcher[] = [];
  beforeEach(async () => {
    ds = await backend.open();
    open.push(ds);
  });
  afterEach(async () => {
    for (const w of watchers.splice(0)) await w.close();
    for (const d of open.splice(0)) await d.close();
  });
  const watch = (...a: Parameters<Datastore['watch']>): Watcher => {
    const w = ds.watch(...a);
    watchers.push(w);
    return w;
  };

  it('creates, gets, updates with a revision guard, applies and deletes', async () => {
    assert.equal(await ds.revision(), 0);
    const n = await ds.create(node('n1', { rack: 'r1' }, 65001));
    assert.equal(n.metadata.resourceVersion, '1');
    await assert.rejects(ds.create(node('n1')), AlreadyExistsError);
    const got = await ds.get('Node', 'n1');
    assert.deepEqual(got, n);
    const upd = await ds.update({ ...got!, metadata: { ...got!.metadata, labels: { rack: 'r2' } } });
    assert.equal(upd.metadata.resourceVersion, '2');
    // A writer still holding revision 1 loses.
    await assert.rejects(
      ds.update({ ...got!, metadata: { ...got!.metadata, labels: { rack: 'r3' } } }),
      (e: unknown) => e instanceof ConflictError && e.expected === 1 && e.actual === 2,
    );
    await assert.rejects(ds.update(node('nope')), NotFoundError);
    const applied = await ds.apply(node('n1', { rack: 'r9' }));
    assert.equal(applied.metadata.resourceVersion, '3');
    await assert.rejects(ds.delete('Node', 'n1', { revision: 2 }), ConflictError);
    const del = await ds.delete('Node', 'n1', { revision: 3 });
    assert.equal(del.metadata.labels?.rack, 'r9');
    assert.equal(await ds.get('Node', 'n1'), undefined);
    await assert.rejects(ds.delete('Node', 'n1'), NotFoundError);
    assert.equal(await ds.revision(), 4);
  });

  it('lists by kind, sorted, with the revision of the snapshot', async () => {
    await ds.create(node('b'));
    await ds.create(node('a'));
    await ds.create(pool('p', '10.1.0.0/16'));
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: 'w', namespace: 'ns1' },
      spec: { node: 'a', pod: 'pod1', interfaceName: 'cali1234', ipNetworks: ['10.1.0.1/32'] },
    } as Resource);
    const nodes = await ds.list('Node');
    assert.deepEqual(
      nodes.items.map((n) => n.metadata.name),
      ['a', 'b'],
    );
    assert.equal(nodes.revision, 4);
    assert.equal((await ds.list('IPPool')).items[0]!.spec.blockSize, 26);
    assert.equal((await ds.get('WorkloadEndpoint', 'ns1/w'))!.spec.pod, 'pod1');
    assert.deepEqual((await ds.list('BGPPeer')).items, []);
  });

  it('keeps a BGPFilter and its rules as applied: apply, get, list, delete', async () => {
    const filter = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'BGPFilter',
      metadata: { name: 'tor' },
      spec: {
        exportV4: [{ action: 'Reject', matchOperator: 'Equal', cidr: '10.65.1.0/26' }],
        importV6: [
          { action: 'Accept', matchOperator: 'In', cidr: 'fd00:10::/48', prefixLength: { min: 64, max: 122 }, source: 'RemotePeers' },
          { action: 'Reject' },
        ],
      },
    } as Resource;
    const made = await ds.apply(filter);
    assert.deepEqual(made.spec, filter.spec, 'the stored spec is the one applied');
    assert.deepEqual(await ds.get('BGPFilter', 'tor'), made, 'get returns what apply stored');
    assert.deepEqual(
      (await ds.list('BGPFilter')).items.map((r) => r.metadata.name),
      ['tor'],
      'list holds the filter',
    );
    await ds.delete('BGPFilter', 'tor');
    assert.equal(await ds.get('BGPFilter', 'tor'), undefined, 'delete removed it');
  });

  it('refuses bad resources, overlapping pools and plain writes of IPAM-owned kinds', async () => {
    await assert.rejects(ds.create(pool('p', '10.0.0.0/33')), /spec\.cidr: .*is not a CIDR/);
    await assert.rejects(ds.create(pool('p', '10.0.0.0/16', { blockSize: 19 })), /spec\.blockSize: 19 is out of range/);
    await ds.create(pool('p1', '10.0.0.0/16'));
    await assert.rejects(ds.create(pool('p2', '10.0.128.0/17')), /spec\.cidr: 10\.0\.128\.0\/17 overlaps pool p1/);
    await assert.rejects(ds.apply(pool('p1', '10.0.0.0/16', { blockSize: 28 })), /spec\.blockSize: cannot change/);
    await assert.rejects(
      ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPAMBlock',
        metadata: { name: 'b' },
        spec: { cidr: '10.0.0.0/26' },
      } as Resource),
      /written only by IPAM/,
    );
    // Two racing creates of overlapping pools: the set-wide guard lets exactly one through.
    const r = await Promise.allSettled([ds.create(pool('x1', '10.9.0.0/16')), ds.create(pool('x2', '10.9.0.0/24'))]);
    assert.equal(r.filter((x) => x.status === 'fulfilled').length, 1, JSON.stringify(r.map((x) => x.status)));
  });

  it('watches from a revision: every change, in order, once', async () => {
    await ds.create(node('before'));
    const from = await ds.revision();
    const w = watch({ fromRevision: from });
    const view = new WatchView(w);
    const n1 = await ds.create(node('n1'));
    await ds.update({ ...n1, metadata: { ...n1.metadata, labels: { a: 'b' } } });
    await ds.create(pool('p', '10.2.0.0/16'));
    await ds.delete('Node', 'n1');
    const last = await ds.revision();
    await waitFor(() => w.revision === last, { what: 'all events', intervalMs: 10 });
    assert.deepEqual(
      view.events.map((e) => (e.type === 'synced' ? 'synced' : `${e.type} ${e.kind}/${e.key} @${e.revision}`)),
      [`put Node/n1 @${from + 1}`, `put Node/n1 @${from + 2}`, `put IPPool/p @${from + 3}`, `delete Node/n1 @${from + 4}`],
    );
    const del = view.events[3]!;
    assert.ok(del.type === 'delete' && del.previous?.metadata.labels?.a === 'b', 'a delete carries the deleted object');
    assert.ok(
      view.events.every((e) => e.type === 'synced' || !e.synthetic),
      `synthetic events: ${view.events.flatMap((e) => (e.type !== 'synced' && e.synthetic ? [`${e.type} ${e.kind}/${e.key}`] : [])).join(', ')}`,
    );
  });

  it('without a revision: lists, says synced, then follows; kinds filter', async () => {
    await ds.create(node('n1'));
    await ds.create(pool('p', '10.3.0.0/16'));
    const w = watch({ kinds: ['Node'] });
    const view = new WatchView(w);
    await waitFor(() => view.synced === 1, { what: 'synced', intervalMs: 10 });
    assert.deepEqual([...view.objects.keys()], ['Node/n1']);
    await ds.create(node('n2'));
    await ds.create(pool('q', '10.4.0.0/16'));
    const last = await ds.revision();
    await waitFor(() => w.revision === last, { what: 'caught up', intervalMs: 10 });
    assert.deepEqual(view.versions(), await storeVersions(ds, ['Node']));
  });

  it('resyncs with list + diff when the log was trimmed past the watcher, deletes included', async () => {
    const small = await backend.open({ logLength: 10 });
    open.push(small);
    for (let i = 0; i < 5; i++) await small.create(node(`n${i}`));
    const held = await small.list('Node');
    for (let i = 5; i < 300; i++) await small.create(node(`n${i}`));
    await small.delete('Node', 'n1');
    await small.apply(node('n2', { changed: 'yes' }));
    for (let i = 10; i < 250; i++) await small.delete('Node', `n${i}`);
    const w = small.watch({ fromRevision: held.revision, known: held.items, kinds: ['Node'] });
    watchers.push(w);
    const view = new WatchView(w);
    for (const r of held.items) view.objects.set(`Node/${r.metadata.name}`, r);
    await waitFor(() => view.synced === 1, { what: 'resynced', intervalMs: 10 });
    assert.ok(
      view.events.some((e) => e.type === 'delete' && e.key === 'n1' && e.synthetic),
      'n1 deleted by the diff',
    );
    assert.ok(!view.events.some((e) => e.type === 'put' && e.key === 'n0'), 'unchanged n0 not re-sent');
    assert.deepEqual(view.versions(), await storeVersions(small, ['Node']));
    await small.create(node('after'));
    const last = await small.revision();
    await waitFor(() => w.revision === last, { what: 'follows after resync', intervalMs: 10 });
    assert.deepEqual(view.versions(), await storeVersions(small, ['Node']));
  });

  it('two watchers see the same sequence under concurrent writers', async () => {
    const from = await ds.revision();
    const a = new WatchView(watch({ fromRevision: from }));
    const b = new WatchView(watch({ fromRevision: from }));
    await Promise.all(
      Array.from({ length: 5 }, async (_, wr) => {
        for (let i = 0; i < 20; i++) await ds.apply(node(`w${wr}-${i % 4}`, { i: String(i) }));
      }),
    );
    const last = await ds.revision();
    assert.equal(last, from + 100);
    await waitFor(() => a.events.length === 100 && b.events.length === 100, { what: 'both caught up', intervalMs: 10 });
    const seq = (v: WatchView): number[] => v.events.map((e) => e.revision);
    assert.deepEqual(
      seq(a),
      Array.from({ length: 100 }, (_, i) => from + i + 1),
    );
    assert.deepEqual(seq(a), seq(b));
    assert.deepEqual(a.versions(), await storeVersions(ds, ['Node']));
  });
}
