// Agents in one process over loopback with the memory datastore: sessions follow the
// datastore live, blocks and borrowed addresses are announced, felix gets the routes.
import assert from 'node:assert/strict';
import { memoryDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { waitFor } from '../../support/wait.js';
import { TestCluster } from './cluster.js';
import { freePort } from '../../../bgp/session/free-port.js';
import { API_VERSION } from '../../../lib/resources/index.js';

async function addPod(ds: BackendDatastore, node: string, name: string, cluster: TestCluster): Promise<string> {
  const a = await new Ipam(ds).autoAssign({ handle: `h-${name}`, node, attrs: { pod: name, namespace: 'default' } });
  const iface = `cali${name}`.slice(0, 15);
  cluster.dataplanes.get(node)!.addLink(iface);
  await ds.create({
    apiVersion: API_VERSION,
    kind: 'WorkloadEndpoint',
    metadata: { name: `${node}-${name}`, namespace: 'default' },
    spec: { node, pod: name, interfaceName: iface, ipNetworks: [a.cidr] },
  });
  return a.ip;
}

describe('node agent (memory datastore, loopback BGP)', function () {
  this.timeout(60_000);
  let ds: BackendDatastore;
  let cluster: TestCluster;

  beforeEach(async () => {
    ds = memoryDatastore();
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: { cidr: '10.70.0.0/16', blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    cluster = new TestCluster(ds, await freePort());
  });
  afterEach(async () => {
    await cluster.stop();
    await ds.close();
  });

  const established = (name: string) =>
    cluster.agents
      .get(name)!
      .status()
      .peers.filter((p) => p.state === 'Established')
      .map((p) => p.address)
      .sort();

  it('meshes, announces blocks and programs them; a new node joins live; a removed node leaves', async () => {
    await cluster.add('n1', 1);
    await cluster.add('n2', 2);
    await cluster.add('n3', 3);
    await waitFor(() => [established('n1'), established('n2'), established('n3')], {
      what: 'full mesh of 3',
      until: (e) => e.every((x) => x.length === 2),
      timeoutMs: 20_000,
    });
    const ip1 = await addPod(ds, 'n1', 'a', cluster);
    const ip2 = await addPod(ds, 'n2', 'b', cluster);
    const blocks = await new Ipam(ds).blocksForNode('n1');
    assert.equal(blocks.length, 1);
    const b1 = blocks[0]!.cidr;
    const b2 = (await new Ipam(ds).blocksForNode('n2'))[0]!.cidr;
    await waitFor(() => cluster.routes('n3'), {
      what: 'n3 routes to both blocks',
      until: (r) => r.includes(`${b1} via 127.0.0.1 dev lo`) && r.includes(`${b2} via 127.0.0.2 dev lo`),
    });
    await waitFor(() => cluster.routes('n1'), {
      what: 'n1 local pod and blackhole',
      until: (r) => r.includes(`${ip1}/32 dev calia`) && r.includes(`blackhole ${b1}`),
    });
    // One route per block: never the /32 of a pod inside it.
    assert.ok(
      !cluster.routes('n3').some((r) => r.startsWith(`${ip1}/32`) || r.startsWith(`${ip2}/32`)),
      `n3 routes the /32 of ${ip1} or ${ip2}: want only their blocks`,
    );
    assert.deepEqual(cluster.agents.get('n1')!.status().advertised.blocks, [b1]);

    // A fourth node: every old node peers with it, nobody restarts.
    await cluster.add('n4', 4);
    await waitFor(() => ['n1', 'n2', 'n3', 'n4'].map(established), {
      what: 'mesh of 4',
      until: (e) => e.every((x) => x.length === 3),
      timeoutMs: 20_000,
    });
    await waitFor(() => cluster.routes('n4'), { what: 'n4 learns the blocks', until: (r) => r.includes(`${b1} via 127.0.0.1 dev lo`) });

    // The node is gone from the datastore: its sessions go.
    await cluster.remove('n4');
    await ds.delete('Node', 'n4');
    await waitFor(
      () =>
        cluster.agents
          .get('n1')!
          .status()
          .peers.map((p) => p.address),
      { what: 'n1 drops n4', until: (p) => !p.includes('127.0.0.4') },
    );
    assert.equal(cluster.agents.get('n1')!.status().peers.length, 2);
    assert.ok(
      cluster.agents
        .get('n1')!
        .status()
        .peers.every((p) => p.type === 'mesh'),
      `n1 has a peer that is not mesh: ${cluster.agents
        .get('n1')!
        .status()
        .peers.map((p) => `${p.address} ${p.type}`)
        .join(', ')}`,
    );
  });

  it('deleting a pod that empties its block withdraws the block everywhere', async () => {
    await cluster.add('n1', 1);
    await cluster.add('n2', 2);
    await addPod(ds, 'n1', 'a', cluster);
    const b1 = (await new Ipam(ds).blocksForNode('n1'))[0]!.cidr;
    await waitFor(() => cluster.routes('n2'), { what: 'n2 learns n1 block', until: (r) => r.includes(`${b1} via 127.0.0.1 dev lo`) });
    await ds.delete('WorkloadEndpoint', 'default/n1-a');
    await new Ipam(ds).releaseByHandle('h-a');
    await waitFor(() => cluster.routes('n2'), { what: 'block withdrawn at n2', until: (r) => !r.some((x) => x.startsWith(b1)) });
    await waitFor(() => cluster.routes('n1'), { what: 'n1 local route and blackhole gone', until: (r) => r.length === 0 });
  });

  it('BGPConfiguration turns the mesh off; BGPPeers with node selectors add sessions', async () => {
    await cluster.add('n1', 1, { labels: { rack: 'r1' } });
    await cluster.add('n2', 2, { labels: { rack: 'r2' } });
    await cluster.add('n3', 3, { labels: { rack: 'r1' } });
    await waitFor(() => established('n1'), { what: 'mesh up', until: (e) => e.length === 2, timeoutMs: 20_000 });
    await ds.apply({
      apiVersion: API_VERSION,
      kind: 'BGPConfiguration',
      metadata: { name: 'default' },
      spec: { nodeToNodeMeshEnabled: false },
    });
    await waitFor(() => cluster.agents.get('n1')!.status().peers, { what: 'mesh sessions removed', until: (p) => p.length === 0 });
    // rack r1 nodes peer with each other through selector BGPPeers (a node skips its own address).
    await ds.apply({
      apiVersion: API_VERSION,
      kind: 'BGPPeer',
      metadata: { name: 'r1-n1' },
      spec: { peerIP: '127.0.0.1', asNumber: 64512, nodeSelector: "rack == 'r1'" },
    });
    await ds.apply({
      apiVersion: API_VERSION,
      kind: 'BGPPeer',
      metadata: { name: 'r1-n3' },
      spec: { peerIP: '127.0.0.3', asNumber: 64512, nodeSelector: "rack == 'r1'" },
    });
    await waitFor(() => [established('n1'), established('n3')], {
      what: 'r1 sessions',
      until: ([a, b]) => a.join() === '127.0.0.3' && b.join() === '127.0.0.1',
      timeoutMs: 20_000,
    });
    assert.deepEqual(cluster.agents.get('n2')!.status().peers, []);
    assert.equal(cluster.agents.get('n1')!.status().peers[0]!.type, 'node');
    // A global peer by IP, and a node-specific one.
    await ds.apply({ apiVersion: API_VERSION, kind: 'BGPPeer', metadata: { name: 'tor' }, spec: { peerIP: '127.0.0.9', asNumber: 65000 } });
    await ds.apply({
      apiVersion: API_VERSION,
      kind: 'BGPPeer',
      metadata: { name: 'only-n2' },
      spec: { peerIP: '127.0.0.10', asNumber: 65000, node: 'n2' },
    });
    await waitFor(
      () =>
        cluster.agents
          .get('n2')!
          .status()
          .peers.map((p) => `${p.address} ${p.type}`)
          .sort(),
      {
        what: 'n2 peers',
        until: (p) => p.join(',') === '127.0.0.10 node,127.0.0.9 global',
      },
    );
    assert.deepEqual(
      cluster.agents
        .get('n1')!
        .status()
        .peers.map((p) => `${p.address} ${p.type}`)
        .sort(),
      ['127.0.0.3 node', '127.0.0.9 global'],
    );
  });

  it('announces a borrowed address as a /32 and the other nodes route it to the borrower', async () => {
    await ds.apply({ apiVersion: API_VERSION, kind: 'IPAMConfiguration', metadata: { name: 'default' }, spec: { maxBlocksPerHost: 1 } });
    await cluster.add('n1', 1);
    await cluster.add('n2', 2);
    await cluster.add('n3', 3);
    // A /30 pool: one block of 4 addresses; n1 takes it, n2 must borrow.
    await ds.delete('IPPool', 'p');
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'tiny' },
      spec: { cidr: '10.71.0.0/30', blockSize: 30, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    await addPod(ds, 'n1', 'a', cluster);
    const borrowed = await addPod(ds, 'n2', 'b', cluster);
    await waitFor(() => cluster.routes('n3'), {
      what: 'n3: block via n1, borrowed /32 via n2',
      until: (r) => r.includes('10.71.0.0/30 via 127.0.0.1 dev lo') && r.includes(`${borrowed}/32 via 127.0.0.2 dev lo`),
      timeoutMs: 20_000,
    });
    assert.deepEqual(cluster.agents.get('n2')!.status().advertised.borrowed, [`${borrowed}/32`]);
  });

  it('with the mesh off, two reflector agents carry every client block; clients peer only with reflectors', async () => {
    await ds.apply({
      apiVersion: API_VERSION,
      kind: 'BGPConfiguration',
      metadata: { name: 'default' },
      spec: { nodeToNodeMeshEnabled: false },
    });
    await cluster.add('rr1', 1, { routeReflectorClusterId: '1.0.0.1' });
    await cluster.add('rr2', 2, { routeReflectorClusterId: '1.0.0.1' });
    for (const [n, i] of [
      ['c3', 3],
      ['c4', 4],
      ['c5', 5],
    ] as const)
      await cluster.add(n, i);
    const peers = (n: string) =>
      cluster.agents
        .get(n)!
        .status()
        .peers.map((p) => `${p.address} ${p.type} ${p.state}`)
        .sort();
    await waitFor(() => ['rr1', 'rr2', 'c3', 'c4', 'c5'].map(peers), {
      what: 'reflector sessions',
      until: ([r1, r2, c3]) =>
        r1!.length === 4 && r2!.length === 4 && c3!.length === 2 && [...r1!, ...r2!, ...c3!].every((x) => x.endsWith('Established')),
      timeoutMs: 20_000,
    });
    assert.deepEqual(peers('c3'), ['127.0.0.1 rr Established', '127.0.0.2 rr Established']);
    assert.deepEqual(peers('rr1'), [
      '127.0.0.2 rr Established',
      '127.0.0.3 rr-client Established',
      '127.0.0.4 rr-client Established',
      '127.0.0.5 rr-client Established',
    ]);
    await addPod(ds, 'c4', 'x', cluster);
    await addPod(ds, 'c5', 'y', cluster);
    const b4 = (await new Ipam(ds).blocksForNode('c4'))[0]!.cidr;
    const b5 = (await new Ipam(ds).blocksForNode('c5'))[0]!.cidr;
    // Reflected routes keep their next hop: c3 sends c4's pods straight to c4, once (both
    // reflectors' copies name the same next hop).
    await waitFor(() => cluster.routes('c3'), {
      what: 'c3 routes both client blocks',
      until: (r) => r.includes(`${b4} via 127.0.0.4 dev lo`) && r.includes(`${b5} via 127.0.0.5 dev lo`),
      timeoutMs: 20_000,
    });
    await waitFor(() => cluster.routes('rr1'), {
      what: 'the reflector routes them too',
      until: (r) => r.includes(`${b4} via 127.0.0.4 dev lo`),
    });
    const paths = cluster.agents.get('c3')!.speaker!.lookup(b4)!.paths;
    assert.equal(paths.length, 2, 'one copy from each reflector');
    assert.ok(
      paths.every((p) => p.attributes.originatorId === '127.0.0.4' && p.attributes.clusterList?.[0] === '1.0.0.1'),
      `want every path reflected from 127.0.0.4 via cluster 1.0.0.1: ${paths.map((p) => `${p.attributes.originatorId} ${p.attributes.clusterList?.join(',')}`).join('; ')}`,
    );
    // Stopping one reflector loses nothing.
    await cluster.remove('rr1');
    await ds.delete('Node', 'rr1');
    await waitFor(() => peers('c3'), { what: 'c3 left with rr2 only', until: (p) => p.join() === '127.0.0.2 rr Established' });
    assert.equal(cluster.agents.get('c3')!.speaker!.lookup(b4)!.paths.length, 1);
    await waitFor(() => cluster.routes('c3'), {
      what: 'c3 keeps the routes through rr2',
      until: (r) => r.includes(`${b4} via 127.0.0.4 dev lo`) && r.includes(`${b5} via 127.0.0.5 dev lo`),
    });
  });

  it('VXLAN CrossSubnet: each agent takes a VTEP address and MAC; nodes in other subnets are reached through vxlan.calico', async () => {
    await ds.delete('IPPool', 'p');
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'vx' },
      spec: { cidr: '10.72.0.0/16', blockSize: 26, ipipMode: 'Never', vxlanMode: 'CrossSubnet' },
    });
    // /32 host addresses: no two nodes share a subnet, so every remote block goes through the tunnel.
    await cluster.add('n1', 1, { ipv4Address: '127.0.0.1/32' });
    await cluster.add('n2', 2, { ipv4Address: '127.0.0.2/32' });
    const vtep = async (n: string) =>
      waitFor(async () => (await ds.get('Node', n))?.metadata.annotations ?? {}, {
        what: `${n} VTEP annotations`,
        until: (a) => Boolean(a['podroute.io/vxlan-tunnel-address'] && a['podroute.io/vxlan-tunnel-mac']),
      });
    const v1 = await vtep('n1');
    const v2 = await vtep('n2');
    const b2 = (await new Ipam(ds).blocksForNode('n2'))[0]!.cidr;
    await waitFor(() => [...cluster.dataplanes.get('n1')!.routes.values()].find((r) => r.dst === b2), {
      what: `n1 routes ${b2} over vxlan.calico`,
      until: (r) =>
        r !== undefined &&
        r.nextHops[0]!.dev === 'vxlan.calico' &&
        r.nextHops[0]!.gateway === v2['podroute.io/vxlan-tunnel-address'] &&
        r.nextHops[0]!.onlink === true,
      timeoutMs: 20_000,
    });
    const neighbors = [...cluster.dataplanes.get('n1')!.neighbors.values()];
    assert.ok(
      neighbors.some(
        (n) => n.kind === 'arp' && n.address === v2['podroute.io/vxlan-tunnel-address'] && n.mac === v2['podroute.io/vxlan-tunnel-mac'],
      ),
      `n1 has no ARP entry for n2's VTEP: ${neighbors.map((n) => `${n.kind} ${n.address} ${n.mac}`).join('; ')}`,
    );
    assert.ok(
      neighbors.some((n) => n.kind === 'fdb' && n.address === '127.0.0.2' && n.mac === v2['podroute.io/vxlan-tunnel-mac']),
      `n1 has no FDB entry for n2's VTEP at 127.0.0.2: ${neighbors.map((n) => `${n.kind} ${n.address} ${n.mac}`).join('; ')}`,
    );
    assert.notEqual(v1['podroute.io/vxlan-tunnel-mac'], v2['podroute.io/vxlan-tunnel-mac']);
  });
});
