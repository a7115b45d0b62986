// This node's VXLAN tunnel endpoint, against IPAM in the in-memory datastore: taken only when
// a pool uses VXLAN, once, from the node's own block, with a MAC of its own.
import assert from 'node:assert/strict';
import { ipipHandle, vtepMac, VtepAllocator } from '../../../lib/agent/vtep.js';
import {
  IPIP_ADDRESS_ANNOTATION,
  VXLAN_ADDRESS_ANNOTATION,
  VXLAN_ADDRESS_V6_ANNOTATION,
  VXLAN_MAC_ANNOTATION,
  VXLAN_MAC_V6_ANNOTATION,
  API_VERSION,
  type IPPool,
  type Node,
} from '../../../lib/resources/index.js';
import { memoryDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { cidrContains, parseAddress, parseCidr } from '../../../ip/index.js';

/** IPv4 `address` inside `cidr`. */
function inBlock(address: string, cidr: string): boolean {
  return cidrContains(parseCidr(cidr), parseAddress(address));
}

describe('agent VTEP', () => {
  let ds: BackendDatastore;
  let ipam: Ipam;
  let allocator: VtepAllocator;
  let logged: [string, Record<string, unknown>][];
  let datastoreErrors: number;

  const pool = (name: string, cidr: string, vxlanMode: IPPool['spec']['vxlanMode'], disabled = false): IPPool => ({
    apiVersion: API_VERSION,
    kind: 'IPPool',
    metadata: { name },
    spec: { cidr, blockSize: cidr.includes(':') ? 122 : 26, ipipMode: 'Never', vxlanMode, disabled },
  });
  const self = async (): Promise<Node> => (await ds.get('Node', 'n1'))!;
  const pools = async () => (await ds.list('IPPool')).items;

  beforeEach(async () => {
    ds = memoryDatastore();
    ipam = new Ipam(ds);
    logged = [];
    datastoreErrors = 0;
    allocator = new VtepAllocator({
      nodeName: 'n1',
      datastore: ds,
      ipam,
      log: (e, f) => logged.push([e, f]),
      onDatastoreError: () => datastoreErrors++,
    });
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'Node',
      metadata: { name: 'n1', annotations: { keep: 'me' } },
      spec: { bgp: { ipv4Address: '10.0.0.1/24' } },
    });
  });
  afterEach(() => ds.close());

  it('the MAC is locally administered unicast, stable for a name and different between names', () => {
    const mac = vtepMac('n1');
    assert.match(mac, /^66(:[0-9a-f]{2}){5}$/);
    assert.equal(parseInt(mac.slice(0, 2), 16) & 0b11, 0b10, 'locally administered, unicast');
    assert.equal(vtepMac('n1'), mac);
    assert.notEqual(vtepMac('n2'), mac);
  });

  it('no pool uses VXLAN (or the one that does is disabled): no VTEP', async () => {
    await ds.create(pool('plain', '10.70.0.0/16', 'Never'));
    await ds.create(pool('off', '10.71.0.0/16', 'Always', true));
    await allocator.ensure(await self(), await pools());
    assert.deepEqual((await self()).metadata.annotations, { keep: 'me' });
    assert.equal((await ds.list('IPAMBlock')).items.length, 0);
  });

  it("an IPIP pool: tunl0's address from the node's own block of that pool, under Calico's handle, no MAC; once", async () => {
    await ds.create(pool('plain', '10.70.0.0/16', 'Never'));
    await ds.create({
      ...pool('ipip', '10.73.0.0/16', 'Never'),
      spec: { ...pool('ipip', '10.73.0.0/16', 'Never').spec, ipipMode: 'Always' },
    });
    const n = await self();
    await Promise.all([allocator.ensure(n, await pools()), allocator.ensure(n, await pools())]);
    await allocator.ensure(await self(), await pools());
    const a = (await self()).metadata.annotations!;
    assert.deepEqual(Object.keys(a).sort(), [IPIP_ADDRESS_ANNOTATION, 'keep'].sort(), 'only the tunnel address is added');
    const blocks = (await ds.list('IPAMBlock')).items;
    assert.equal(blocks.length, 1, 'one block, from the IPIP pool');
    assert.ok(inBlock(a[IPIP_ADDRESS_ANNOTATION]!, blocks[0]!.spec.cidr), `${a[IPIP_ADDRESS_ANNOTATION]} in ${blocks[0]!.spec.cidr}`);
    assert.ok(inBlock(a[IPIP_ADDRESS_ANNOTATION]!, '10.73.0.0/16'), 'from the IPIP pool');
    assert.equal(ipipHandle('n1'), 'ipip-tunnel-addr-n1');
    assert.deepEqual(await ipam.releaseByHandle(ipipHandle('n1')), [a[IPIP_ADDRESS_ANNOTATION]], 'one address under ipip-tunnel-addr-n1');
    assert.deepEqual(
      logged.map(([e]) => e),
      ['ipip-tunnel-address'],
    );
  });

  it("a VXLAN pool: an address from the node's own block and its MAC, once, however often asked at the same time", async () => {
    await ds.create(pool('plain', '10.70.0.0/16', 'Never'));
    await ds.create(pool('vx', '10.72.0.0/16', 'CrossSubnet'));
    const n = await self();
    await Promise.all([allocator.ensure(n, await pools()), allocator.ensure(n, await pools())]);
    const a = (await self()).metadata.annotations!;
    assert.equal(a.keep, 'me');
    assert.equal(a[VXLAN_MAC_ANNOTATION], vtepMac('n1'));
    const address = a[VXLAN_ADDRESS_ANNOTATION]!;
    const [block] = await ipam.blocksForNode('n1');
    assert.ok(block && inBlock(address, block.cidr), `${address} in the node's block ${block?.cidr}`);
    assert.match(block.cidr, /^10\.72\./, 'the block is from the VXLAN pool');
    assert.deepEqual(await ipam.releaseByHandle('vxlan-tunnel-addr-n1'), [address], "one address under the node's handle");
    assert.deepEqual(logged, [['vxlan-tunnel-address', { address }]]);

    // The Node has one now: asking again takes nothing more.
    await allocator.ensure(await self(), await pools());
    assert.equal(logged.length, 1);
  });

  it('asked again with the Node as it was before its VTEP was written (a cache behind its watch), it keeps the one it has', async () => {
    await ds.create(pool('vx', '10.72.0.0/16', 'CrossSubnet'));
    const stale = await self();
    await allocator.ensure(stale, await pools());
    const address = (await self()).metadata.annotations![VXLAN_ADDRESS_ANNOTATION]!;
    await allocator.ensure(stale, await pools());
    assert.equal((await self()).metadata.annotations![VXLAN_ADDRESS_ANNOTATION], address, 'the VTEP address did not move');
    assert.deepEqual(await ipam.releaseByHandle('vxlan-tunnel-addr-n1'), [address], "one address under the node's handle");
    assert.equal(logged.length, 1, JSON.stringify(logged));
  });

  it('a failure is logged and counted, and the next attempt can succeed', async () => {
    await ds.create(pool('vx', '10.72.0.0/16', 'Always'));
    // A pool the datastore does not know: IPAM refuses it.
    await allocator.ensure(await self(), [pool('ghost', '10.99.0.0/16', 'Always')]);
    assert.equal(datastoreErrors, 1);
    assert.equal(logged[0]?.[0], 'vxlan-tunnel-error');
    await allocator.ensure(await self(), await pools());
    assert.ok(
      (await self()).metadata.annotations?.[VXLAN_ADDRESS_ANNOTATION],
      'no VXLAN tunnel address annotation once the pools are known',
    );
  });

  it("an IPv6 VXLAN pool: an IPv6 endpoint from the node's IPv6 block with its own MAC, beside the IPv4 one", async () => {
    const n = (await self())!;
    await ds.apply({
      ...n,
      metadata: { ...n.metadata, resourceVersion: undefined },
      spec: { bgp: { ipv4Address: '10.0.0.1/24', ipv6Address: 'fd00:0:1::1/64' } },
    });
    await ds.create(pool('vx4', '10.72.0.0/16', 'CrossSubnet'));
    await ds.create(pool('vx6', 'fd70::/48', 'CrossSubnet'));
    await allocator.ensure(await self(), await pools());
    const a = (await self()).metadata.annotations!;
    assert.equal(a.keep, 'me');
    assert.match(a[VXLAN_ADDRESS_ANNOTATION]!, /^10\.72\./);
    assert.equal(a[VXLAN_MAC_ANNOTATION], vtepMac('n1'));
    assert.match(a[VXLAN_ADDRESS_V6_ANNOTATION]!, /^fd70:/);
    assert.equal(a[VXLAN_MAC_V6_ANNOTATION], vtepMac('n1', 6));
    assert.notEqual(vtepMac('n1', 6), vtepMac('n1'));
    const blocks = (await ipam.blocksForNode('n1')).map((b) => b.cidr);
    assert.ok(
      blocks.some((c) => c.startsWith('fd70:') && c.endsWith('/122')),
      `an IPv6 block of the node: ${blocks}`,
    );
    assert.deepEqual(await ipam.releaseByHandle('vxlan-v6-tunnel-addr-n1'), [a[VXLAN_ADDRESS_V6_ANNOTATION]]);
    await allocator.ensure(await self(), await pools());
    assert.equal(logged.length, 2, 'nothing more taken');
  });

  it('an IPv6 VXLAN pool and a node without an IPv6 address: no IPv6 endpoint, and nothing written as IPv4', async () => {
    await ds.create(pool('vx6', 'fd70::/48', 'Always'));
    await allocator.ensure(await self(), await pools());
    assert.deepEqual((await self()).metadata.annotations, { keep: 'me' });
    assert.equal((await ds.list('IPAMBlock')).items.length, 0);
  });
});
