// The cluster cache fed by a real watch of the in-memory datastore: what it keeps, what it
// drops, and which events it reports as worth a reconcile.
import assert from 'node:assert/strict';
import { CLUSTER_KINDS, ClusterCache } from '../../../lib/agent/cluster-cache.js';
import { memoryDatastore, type BackendDatastore, type Watcher } from '../../../lib/datastore/index.js';
import { waitFor } from '../../support/wait.js';
import { API_VERSION } from '../../../lib/resources/index.js';

describe('agent cluster cache', () => {
  let ds: BackendDatastore;
  let watcher: Watcher | undefined;
  let cache: ClusterCache;
  /** kind → what apply() answered, in arrival order. */
  let answers: [string, boolean][];
  let synced: boolean;

  const node = (name: string, ip: string, labels: Record<string, string> = {}) => ({
    apiVersion: API_VERSION,
    kind: 'Node' as const,
    metadata: { name, labels },
    spec: { bgp: { ipv4Address: `${ip}/24` } },
  });
  const wep = (name: string, nodeName: string, ip: string) => ({
    apiVersion: API_VERSION,
    kind: 'WorkloadEndpoint' as const,
    metadata: { name, namespace: 'default' },
    spec: { node: nodeName, pod: name, interfaceName: `cali${name}`, ipNetworks: [`${ip}/32`] },
  });

  beforeEach(() => {
    ds = memoryDatastore();
    cache = new ClusterCache('n1');
    answers = [];
    synced = false;
  });
  afterEach(async () => {
    await watcher?.close();
    await ds.close();
  });

  /** Watches every kind (not only the agent's), so the cache also sees kinds it must ignore. */
  function follow(): void {
    watcher = ds.watch({});
    watcher.on('event', (e) => {
      const relevant = cache.apply(e);
      if (e.type === 'synced') synced = true;
      else answers.push([e.kind, relevant]);
    });
  }

  it('follows every kind the agent watches, puts and deletes, and reports other kinds as not relevant', async () => {
    await ds.create(node('n1', '10.0.0.1'));
    await ds.create(node('n2', '10.0.0.2'));
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: { cidr: '10.70.0.0/16', blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'BGPPeer',
      metadata: { name: 'tor' },
      spec: { peerIP: '10.0.0.254', asNumber: 65000 },
    });
    await ds.create({ apiVersion: API_VERSION, kind: 'IPAMConfiguration', metadata: { name: 'default' }, spec: { maxBlocksPerHost: 2 } });
    follow();
    await waitFor(() => synced, { what: 'initial sync' });
    assert.equal(cache.self?.metadata.name, 'n1');
    assert.deepEqual([...cache.nodes.keys()].sort(), ['n1', 'n2']);
    assert.deepEqual([...cache.pools.keys()], ['p']);
    assert.deepEqual([...cache.bgpPeers.keys()], ['tor']);
    assert.deepEqual(
      answers.filter(([k]) => k === 'IPAMConfiguration'),
      [['IPAMConfiguration', false]],
    );
    assert.ok(
      answers.filter(([k]) => CLUSTER_KINDS.includes(k as never)).every(([, relevant]) => relevant),
      `cluster kinds answered not relevant: ${answers
        .filter(([k, relevant]) => CLUSTER_KINDS.includes(k as never) && !relevant)
        .map(([k]) => k)
        .join(', ')}`,
    );

    await ds.delete('Node', 'n2');
    await ds.delete('BGPPeer', 'tor');
    await waitFor(() => [...cache.nodes.keys()].join() + '|' + cache.bgpPeers.size, {
      what: 'deletes reach the cache',
      until: (v) => v === 'n1|0',
    });
    const view = cache.peerView(cache.self!);
    assert.deepEqual(
      view.nodes.map((n) => n.metadata.name),
      ['n1'],
    );
    assert.deepEqual(view.bgpPeers, []);
  });

  it("keeps only this node's workload endpoints; one that moves to another node is dropped", async () => {
    follow();
    await waitFor(() => synced, { what: 'initial sync' });
    await ds.create(wep('a', 'n1', '10.70.0.1'));
    await ds.create(wep('b', 'n2', '10.70.0.65'));
    await waitFor(() => answers.filter(([k]) => k === 'WorkloadEndpoint').length, { what: 'two endpoint events', until: (n) => n === 2 });
    assert.deepEqual([...cache.workloads.keys()], ['default/a']);
    const a = (await ds.get('WorkloadEndpoint', 'default/a'))!;
    await ds.apply({ ...a, metadata: { ...a.metadata, resourceVersion: undefined }, spec: { ...a.spec, node: 'n2' } });
    await waitFor(() => cache.workloads.size, { what: 'moved endpoint dropped', until: (n) => n === 0 });
  });

  it('takes BGPConfiguration "default" as the cluster configuration and no other', async () => {
    follow();
    await waitFor(() => synced, { what: 'initial sync' });
    await ds.create({ apiVersion: API_VERSION, kind: 'BGPConfiguration', metadata: { name: 'node.n1' }, spec: { asNumber: 65001 } });
    await waitFor(() => answers.length, { what: 'the per-node configuration event', until: (n) => n === 1 });
    assert.equal(cache.config, undefined);
    await ds.create({ apiVersion: API_VERSION, kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { asNumber: 65002 } });
    await waitFor(() => cache.config?.spec.asNumber, { what: 'default configuration', until: (a) => a === 65002 });
    await ds.delete('BGPConfiguration', 'default');
    await waitFor(() => cache.config, { what: 'default configuration removed', until: (c) => c === undefined });
  });
});
