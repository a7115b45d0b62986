// The felix feed: best paths from real speakers on loopback become felix's learned routes,
// with their ECMP next hops, and the cluster cache (filled by a real watch of the in-memory
// datastore) gives the rest of felix's input. Felix programs a MemoryDataplane.
import assert from 'node:assert/strict';
import { BgpSpeaker } from '../../../bgp/index.js';
import { Felix, MemoryDataplane } from '../../../felix/index.js';
import { FelixFeed, felixInput } from '../../../lib/agent/felix-feed.js';
import { NodeSpeaker } from '../../../lib/agent/node-speaker.js';
import { SessionReconciler } from '../../../lib/agent/sessions.js';
import { memoryDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { waitFor } from '../../support/wait.js';
import { followCluster, type FollowedCache } from './follow.js';
import { freePort } from '../../../bgp/session/free-port.js';
import { API_VERSION } from '../../../lib/resources/index.js';

const node = (name: string, ip: string, annotations: Record<string, string> = {}) => ({
  apiVersion: API_VERSION,
  kind: 'Node' as const,
  metadata: { name, annotations },
  spec: { bgp: { ipv4Address: `${ip}/8` } },
});
const vtep = (ip: string, mac: string) => ({ 'podroute.io/vxlan-tunnel-address': ip, 'podroute.io/vxlan-tunnel-mac': mac });

describe('agent felix feed', () => {
  let ds: BackendDatastore;
  let followed: FollowedCache;
  let felix: Felix;
  let dataplane: MemoryDataplane;
  let logged: [string, Record<string, unknown>][];

  beforeEach(async () => {
    ds = memoryDatastore();
    await ds.create(node('n1', '127.0.0.1'));
    followed = await followCluster(ds, 'n1');
    dataplane = new MemoryDataplane({ links: ['lo'] });
    felix = new Felix(dataplane, { resyncIntervalMs: 0, sysctls: false });
    logged = [];
  });
  afterEach(async () => {
    felix.stop();
    await followed.watcher.close();
    await ds.close();
  });

  it("input: this node's workloads with addresses, the pools, complete VTEPs of the other nodes, its own VTEP", async () => {
    await ds.create(node('n2', '127.0.0.2', vtep('10.70.0.65', '66:00:00:00:00:02')));
    await ds.create(node('n3', '127.0.0.3', { 'podroute.io/vxlan-tunnel-address': '10.70.0.129' })); // no MAC yet
    const n1 = (await ds.get('Node', 'n1'))!;
    await ds.apply({
      ...n1,
      metadata: { ...n1.metadata, resourceVersion: undefined, annotations: vtep('10.70.0.1', '66:00:00:00:00:01') },
    });
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'vx' },
      spec: { cidr: '10.70.0.0/16', blockSize: 26, ipipMode: 'Never', vxlanMode: 'CrossSubnet' },
    });
    for (const [name, nodeName, nets] of [
      ['a', 'n1', ['10.70.0.2/32']],
      ['pending', 'n1', []],
      ['b', 'n2', ['10.70.0.66/32']],
    ] as const) {
      await ds.create({
        apiVersion: API_VERSION,
        kind: 'WorkloadEndpoint',
        metadata: { name, namespace: 'default' },
        spec: { node: nodeName, pod: name, interfaceName: `cali${name}`, ipNetworks: [...nets] },
      });
    }
    await followed.caughtUp();
    const { cache } = followed;
    const input = felixInput(
      cache,
      cache.self!,
      { address: '127.0.0.1/8', uplink: 'lo' },
      ['10.70.0.0/26'],
      [{ prefix: '10.70.0.64/26', nextHops: ['127.0.0.2'] }],
    );
    assert.deepEqual(input, {
      node: { addressV4: '127.0.0.1/8', uplink: 'lo', vxlanTunnelAddressV4: '10.70.0.1', vxlanTunnelMacV4: '66:00:00:00:00:01' },
      workloads: [{ iface: 'calia', addresses: ['10.70.0.2/32'] }],
      ownBlocks: ['10.70.0.0/26'],
      remoteRoutes: [{ prefix: '10.70.0.64/26', nextHops: ['127.0.0.2'] }],
      pools: [{ cidr: '10.70.0.0/16', ipipMode: 'Never', vxlanMode: 'CrossSubnet' }],
      remoteVteps: [{ nodeIp: '127.0.0.2', vtepIp: '10.70.0.65', vtepMac: '66:00:00:00:00:02' }],
    });
  });

  it("input felix refuses is logged and leaves felix's input as it was", async () => {
    const feed = new FelixFeed(felix, (e, f) => logged.push([e, f]));
    const { cache } = followed;
    feed.push(cache, cache.self!, { address: '127.0.0.1/8', uplink: 'lo' }, ['10.70.0.0/26']);
    assert.deepEqual(felix.input.ownBlocks, ['10.70.0.0/26']);
    feed.push(cache, cache.self!, { address: 'not an address', uplink: 'lo' }, ['10.70.0.64/26']);
    assert.deepEqual(
      logged.map(([e]) => e),
      ['felix-input-error'],
    );
    assert.deepEqual(felix.input.ownBlocks, ['10.70.0.0/26']);
    assert.equal(felix.input.node.addressV4, '127.0.0.1/8');
  });

  describe('with real speakers', () => {
    let port: number;
    let bgp: NodeSpeaker;
    let peers: BgpSpeaker[];

    beforeEach(async () => {
      port = await freePort();
      bgp = new NodeSpeaker({ hostname: 'n1', restarting: false, log: () => undefined });
      peers = [];
    });
    afterEach(async () => {
      await Promise.all([bgp.stop('test over'), ...peers.map((p) => p.stop())]);
    });

    async function peer(address: string): Promise<BgpSpeaker> {
      const s = new BgpSpeaker({ asn: 64512, routerId: address, listen: { host: address, port } });
      await s.start();
      s.addPeer({ address: '127.0.0.1', asn: 64512, port, localAddress: address, holdTime: 9, connectRetryTime: 1 });
      peers.push(s);
      return s;
    }

    it('learned best paths become felix routes with every ECMP next hop; our own prefixes and withdrawn ones do not', async () => {
      const feed = new FelixFeed(felix, (e, f) => logged.push([e, f]));
      const { cache } = followed;
      const ownBlocks = ['10.70.0.0/26'];
      const speaker = bgp.ensure({ asn: 64512, port, clusterId: undefined, routerId: '127.0.0.1' });
      bgp.on('bestPaths', (changes) => {
        feed.learn(changes, '127.0.0.1/8');
        feed.push(cache, cache.self!, { address: '127.0.0.1/8', uplink: 'lo' }, ownBlocks);
      });
      const mesh = (address: string) => ({
        address,
        asn: 64512,
        type: 'mesh' as const,
        source: `Node/${address}`,
        routeReflectorClient: false,
      });
      new SessionReconciler(speaker, () => undefined).reconcile([mesh('127.0.0.2'), mesh('127.0.0.3')], {
        port,
        localAddress: '127.0.0.1',
        holdTime: 9,
        connectRetryTime: 1,
      });
      const [b, c] = [await peer('127.0.0.2'), await peer('127.0.0.3')];
      await felix.start();

      speaker.originate('10.70.0.0/26');
      b.originate('10.70.0.64/26');
      // A service range every node announces: ECMP over both.
      b.originate('10.96.0.0/12');
      c.originate('10.96.0.0/12');
      const routes = () =>
        [...dataplane.routes.values()]
          .map(
            (r) =>
              `${r.type === 'blackhole' ? 'blackhole ' : ''}${r.dst}${r.nextHops.map((h) => ` via ${h.gateway} dev ${h.dev}`).join('')}`,
          )
          .sort();
      await waitFor(
        async () => {
          await felix.settled();
          return routes();
        },
        {
          what: 'felix routes the learned prefixes',
          until: (r) =>
            r.join('|') ===
            '10.70.0.64/26 via 127.0.0.2 dev lo|10.96.0.0/12 via 127.0.0.2 dev lo via 127.0.0.3 dev lo|blackhole 10.70.0.0/26',
        },
      );
      assert.deepEqual(
        feed.learnedRoutes().sort((x, y) => x.prefix.localeCompare(y.prefix)),
        [
          { prefix: '10.70.0.64/26', nextHops: ['127.0.0.2'] },
          { prefix: '10.96.0.0/12', nextHops: ['127.0.0.2', '127.0.0.3'] },
        ],
      );
      assert.equal(feed.learnedCount, 2);

      b.withdraw('10.70.0.64/26');
      c.withdraw('10.96.0.0/12');
      await waitFor(
        async () => {
          await felix.settled();
          return routes();
        },
        {
          what: 'withdrawals reach felix',
          until: (r) => r.join('|') === '10.96.0.0/12 via 127.0.0.2 dev lo|blackhole 10.70.0.0/26',
        },
      );
      assert.deepEqual(feed.learnedRoutes(), [{ prefix: '10.96.0.0/12', nextHops: ['127.0.0.2'] }]);
      assert.deepEqual(logged, []);
    });
  });
});
