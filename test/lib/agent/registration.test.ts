// What the agent writes at start, against the in-memory datastore: its Node (merged with what
// is there) and the default pool (only when the cluster has none, once however many try).
import assert from 'node:assert/strict';
import { ensureDefaultPool, registerNode } from '../../../lib/agent/registration.js';
import { memoryDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { API_VERSION } from '../../../lib/resources/index.js';

describe('agent registration', () => {
  let ds: BackendDatastore;
  beforeEach(() => {
    ds = memoryDatastore();
  });
  afterEach(() => ds.close());

  it('writes a new Node with its address, AS, cluster ID and labels', async () => {
    await registerNode(ds, {
      nodeName: 'n1',
      address: '10.0.0.1/24',
      asNumber: 65001,
      routeReflectorClusterId: '1.0.0.1',
      labels: { rack: 'r1' },
    });
    const n = (await ds.get('Node', 'n1'))!;
    assert.deepEqual(n.spec.bgp, { ipv4Address: '10.0.0.1/24', asNumber: 65001, routeReflectorClusterID: '1.0.0.1' });
    assert.deepEqual(n.metadata.labels, { rack: 'r1' });
  });

  it('keeps what others wrote on an existing Node; a new address and labels are merged in', async () => {
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'Node',
      metadata: { name: 'n1', labels: { zone: 'a', rack: 'old' }, annotations: { 'podroute.io/vxlan-tunnel-address': '10.70.0.1' } },
      spec: { bgp: { ipv4Address: '10.0.0.9/24', asNumber: 65009, routeReflectorClusterID: '1.0.0.1' } },
    });
    await registerNode(ds, { nodeName: 'n1', address: '10.0.0.1/24', labels: { rack: 'r1' } });
    const n = (await ds.get('Node', 'n1'))!;
    assert.deepEqual(n.spec.bgp, { ipv4Address: '10.0.0.1/24', asNumber: 65009, routeReflectorClusterID: '1.0.0.1' });
    assert.deepEqual(n.metadata.labels, { zone: 'a', rack: 'r1' });
    assert.equal(n.metadata.annotations?.['podroute.io/vxlan-tunnel-address'], '10.70.0.1');
  });

  it('an empty cluster ID stops the node being a reflector; none given leaves the role alone', async () => {
    await registerNode(ds, { nodeName: 'n1', address: '10.0.0.1/24', routeReflectorClusterId: '1.0.0.1' });
    await registerNode(ds, { nodeName: 'n1', address: '10.0.0.1/24' });
    assert.equal((await ds.get('Node', 'n1'))!.spec.bgp?.routeReflectorClusterID, '1.0.0.1');
    await registerNode(ds, { nodeName: 'n1', address: '10.0.0.1/24', routeReflectorClusterId: '' });
    assert.equal((await ds.get('Node', 'n1'))!.spec.bgp?.routeReflectorClusterID, undefined);
  });

  it('creates the default pool only when there is no pool, once when several nodes race', async () => {
    await ensureDefaultPool(ds, false);
    await ensureDefaultPool(ds, undefined);
    assert.equal((await ds.list('IPPool')).items.length, 0);
    await Promise.all([1, 2, 3].map(() => ensureDefaultPool(ds, { cidr: '10.65.0.0/16', vxlanMode: 'CrossSubnet' })));
    const pools = (await ds.list('IPPool')).items;
    assert.deepEqual(
      pools.map((p) => [p.metadata.name, p.spec]),
      [['default-ipv4-ippool', { cidr: '10.65.0.0/16', blockSize: 26, ipipMode: 'Never', vxlanMode: 'CrossSubnet', natOutgoing: true }]],
    );
    await ensureDefaultPool(ds, { cidr: '10.66.0.0/16' });
    assert.equal((await ds.list('IPPool')).items.length, 1, 'a pool exists: no second one');
  });

  it('the default pool masquerades traffic leaving the pools unless told not to', async () => {
    await ensureDefaultPool(ds, { cidr: '10.65.0.0/16', natOutgoing: false });
    assert.equal((await ds.get('IPPool', 'default-ipv4-ippool'))?.spec.natOutgoing, false);
  });
});
