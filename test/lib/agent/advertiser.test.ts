// The advertiser on a real speaker, with blocks made by IPAM in the in-memory datastore: the
// node's blocks, its borrowed addresses and the service IPs are originated, what goes away is
// withdrawn, and an unchanged picture changes nothing in the RIB.
import assert from 'node:assert/strict';
import { BgpSpeaker, type BestPathChange } from '../../../bgp/index.js';
import { Advertiser } from '../../../lib/agent/advertiser.js';
import { memoryDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { API_VERSION, type BGPConfiguration, type IPAMBlock } from '../../../lib/resources/index.js';

describe('agent advertiser', () => {
  let ds: BackendDatastore;
  let ipam: Ipam;
  let speaker: BgpSpeaker;
  let changes: BestPathChange[];
  let advertiser: Advertiser;

  const blocks = async (): Promise<IPAMBlock[]> => (await ds.list('IPAMBlock')).items;
  const originated = () =>
    speaker
      .routes()
      .map((r) => r.prefix)
      .sort();

  beforeEach(async () => {
    ds = memoryDatastore();
    ipam = new Ipam(ds);
    // One block of four per pool and host, so a second node must borrow from the first one's.
    await ds.apply({ apiVersion: API_VERSION, kind: 'IPAMConfiguration', metadata: { name: 'default' }, spec: { maxBlocksPerHost: 1 } });
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'tiny' },
      spec: { cidr: '10.71.0.0/30', blockSize: 30, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    speaker = new BgpSpeaker({ asn: 64512, routerId: '127.0.0.1', listen: false });
    changes = [];
    speaker.on('bestPaths', (c) => changes.push(...c));
    advertiser = new Advertiser(speaker);
  });
  afterEach(async () => {
    await speaker.stop();
    await ds.close();
  });

  it('originates its blocks, the addresses it borrowed and the service IPs; nothing else', async () => {
    await ipam.autoAssign({ handle: 'a', node: 'n1' });
    const borrowed = await ipam.autoAssign({ handle: 'b', node: 'n2' });
    const config: BGPConfiguration = {
      apiVersion: API_VERSION,
      kind: 'BGPConfiguration',
      metadata: { name: 'default' },
      spec: { serviceClusterIPs: [{ cidr: '10.96.0.0/12' }] },
    };
    assert.deepEqual(advertiser.reconcile('n1', await blocks(), config), {
      blocks: ['10.71.0.0/30'],
      borrowed: [],
      services: ['10.96.0.0/12'],
      serviceAddresses: [],
    });
    assert.deepEqual(originated(), ['10.71.0.0/30', '10.96.0.0/12']);
    assert.deepEqual(advertiser.advertised.blocks, ['10.71.0.0/30']);

    const other = new BgpSpeaker({ asn: 64512, routerId: '127.0.0.2', listen: false });
    const n2 = new Advertiser(other);
    assert.deepEqual(n2.reconcile('n2', await blocks(), undefined), {
      blocks: [],
      borrowed: [`${borrowed.ip}/32`],
      services: [],
      serviceAddresses: [],
    });
    assert.deepEqual(
      other.routes().map((r) => r.prefix),
      [`${borrowed.ip}/32`],
    );
    await other.stop();
  });

  it('withdraws what is no longer announced and leaves the rest in the RIB untouched', async () => {
    await ipam.autoAssign({ handle: 'a', node: 'n1' });
    advertiser.reconcile('n1', await blocks(), undefined);
    assert.deepEqual(originated(), ['10.71.0.0/30']);
    changes = [];
    advertiser.reconcile('n1', await blocks(), undefined);
    assert.equal(changes.length, 0, 'the same picture again: no best-path change');

    await ipam.releaseByHandle('a');
    advertiser.reconcile('n1', await blocks(), undefined);
    assert.deepEqual(originated(), []);
    assert.deepEqual(
      changes.map((c) => [c.prefix, c.best === undefined]),
      [['10.71.0.0/30', true]],
    );
    assert.deepEqual(advertiser.advertised, { blocks: [], borrowed: [], services: [], serviceAddresses: [] });
  });
});
