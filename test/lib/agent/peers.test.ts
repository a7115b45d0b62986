// Calico's BGP fields as the node agent honours them, at the unit level: the route-reflector
// BGPPeer (nodeSelector all() + peerSelector, no peerIP) gives every node a session with each
// reflector and each reflector one with every node; peerIP with a port dials that port;
// sourceAddress None leaves the source to the kernel; the mesh takes nodeMeshMaxRestartTime;
// keepOriginalNextHop towards an eBGP peer is refused by name; and prefixAdvertisements put
// their communities on the announced blocks (on a real speaker's RIB).
import assert from 'node:assert/strict';
import { BgpSpeaker } from '../../../bgp/index.js';
import { advertisements } from '../../../lib/agent/advertise.js';
import { Advertiser } from '../../../lib/agent/advertiser.js';
import { desiredPeers, peerChanged, type ClusterView } from '../../../lib/agent/peers.js';
import { neighborConfig } from '../../../lib/agent/sessions.js';
import { validateResource, type BGPConfiguration, type BGPPeer, type IPAMBlock, type Node } from '../../../lib/resources/index.js';

const node = (name: string, ip: string, labels: Record<string, string> = {}, bgp: Record<string, unknown> = {}): Node =>
  validateResource({
    apiVersion: 'projectcalico.org/v3',
    kind: 'Node',
    metadata: { name, labels },
    spec: { bgp: { ipv4Address: `${ip}/24`, ...bgp } },
  }) as Node;
const peer = (name: string, spec: Record<string, unknown>): BGPPeer =>
  validateResource({ apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name }, spec }) as BGPPeer;
const config = (spec: Record<string, unknown>): BGPConfiguration =>
  validateResource({
    apiVersion: 'projectcalico.org/v3',
    kind: 'BGPConfiguration',
    metadata: { name: 'default' },
    spec,
  }) as BGPConfiguration;

describe('agent: Calico BGP fields honoured', () => {
  // Two reflectors (labelled, with a cluster ID) and three ordinary nodes, mesh off, as Calico's guide.
  const rr1 = node('rr1', '10.0.0.1', { 'route-reflector': 'true' }, { routeReflectorClusterID: '244.0.0.1' });
  const rr2 = node('rr2', '10.0.0.2', { 'route-reflector': 'true' }, { routeReflectorClusterID: '244.0.0.1' });
  const workers = ['10.0.0.11', '10.0.0.12', '10.0.0.13'].map((ip, i) => node(`w${i + 1}`, ip));
  const nodes = [rr1, rr2, ...workers];
  const rrPeer = peer('peer-with-route-reflectors', { nodeSelector: 'all()', peerSelector: "route-reflector == 'true'" });
  const noMesh = config({ nodeToNodeMeshEnabled: false });
  const view = (self: Node, bgpPeers: BGPPeer[] = [rrPeer], cfg: BGPConfiguration | undefined = noMesh): ClusterView => ({
    self,
    nodes,
    config: cfg,
    bgpPeers,
  });
  const summary = (v: ClusterView) => desiredPeers(v).map((p) => `${p.address} ${p.type}${p.routeReflectorClient ? ' client' : ''}`);

  it('route-reflector BGPPeer: each worker peers with both reflectors, and nothing else', () => {
    for (const w of workers) {
      const got = desiredPeers(view(w));
      assert.deepEqual(
        got.map((p) => p.address),
        ['10.0.0.1', '10.0.0.2'],
      );
      for (const p of got) assert.equal(p.routeReflectorClient, false);
    }
  });

  it('route-reflector BGPPeer: each reflector peers with every node, the workers as its clients', () => {
    assert.deepEqual(summary(view(rr1)), [
      '10.0.0.11 rr-client client',
      '10.0.0.12 rr-client client',
      '10.0.0.13 rr-client client',
      '10.0.0.2 rr',
    ]);
  });

  it('the BGPPeer alone (no cluster IDs) peers selected nodes both ways, and only them', () => {
    // Plain nodes: "tor"-labelled ones are picked; nodeSelector narrows who peers with them.
    const a = node('a', '10.1.0.1', { tor: 'yes' });
    const b = node('b', '10.1.0.2', { rack: 'r1' });
    const c = node('c', '10.1.0.3', { rack: 'r2' });
    const p = peer('to-tor', { nodeSelector: "rack == 'r1'", peerSelector: "tor == 'yes'" });
    const v = (self: Node): ClusterView => ({ self, nodes: [a, b, c], config: noMesh, bgpPeers: [p] });
    assert.deepEqual(summary(v(b)), ['10.1.0.1 node']);
    assert.deepEqual(summary(v(a)), ['10.1.0.2 node']);
    assert.deepEqual(summary(v(c)), []);
  });

  it('peerIP with a port dials that port; sourceAddress None sets no source address', () => {
    const peers = desiredPeers(
      view(workers[0]!, [
        peer('tor', { peerIP: '192.0.2.1:1790', asNumber: 65000, sourceAddress: 'None' }),
        peer('tor6', { peerIP: '[2001:db8::1]:1791', asNumber: 65000 }),
        peer('plain', { peerIP: '192.0.2.9', asNumber: 65000 }),
      ]),
    );
    const byAddress = new Map(peers.map((p) => [p.address, p]));
    const settings = { port: 179, localAddress: '10.0.0.11' };
    const tor = neighborConfig(byAddress.get('192.0.2.1')!, settings);
    assert.equal(tor.port, 1790);
    assert.equal(tor.localAddress, undefined);
    // Not the listen address either, which the speaker dials from when a peer names none.
    assert.equal(tor.kernelSourceAddress, true, 'sourceAddress None asks the speaker for the kernel’s source');
    assert.equal(neighborConfig(byAddress.get('192.0.2.9')!, settings).kernelSourceAddress, undefined, 'UseNodeIP: the node address');
    // An IPv6 peer is sourced from the node's IPv6 address and carries IPv6 routes only.
    const tor6 = neighborConfig(byAddress.get('2001:db8::1')!, { ...settings, localAddressV6: 'fd00::11' });
    assert.equal(tor6.port, 1791);
    assert.equal(tor6.localAddress, 'fd00::11');
    assert.deepEqual(tor6.families, ['ipv6-unicast']);
    assert.equal(neighborConfig(byAddress.get('192.0.2.9')!, settings).port, 179);
  });

  it('the mesh takes nodeMeshMaxRestartTime and nodeMeshPassword; a BGPPeer its own maxRestartTime', () => {
    const cfg = config({ nodeMeshMaxRestartTime: '45s', nodeMeshPassword: { secretKeyRef: { name: 's', key: 'k' } } });
    const mesh = desiredPeers({ self: workers[0]!, nodes: workers, config: cfg, bgpPeers: [] });
    assert.equal(mesh.length, 2);
    for (const p of mesh) {
      assert.equal(p.type, 'mesh');
      assert.equal(p.restartTime, 45);
      assert.deepEqual(p.password, { secretKeyRef: { name: 's', key: 'k' } });
    }
    const [tor] = desiredPeers({
      self: workers[0]!,
      nodes: workers,
      config: cfg,
      bgpPeers: [peer('tor', { peerIP: '192.0.2.1', asNumber: 65000, maxRestartTime: '2m' })],
    }).filter((p) => p.address === '192.0.2.1');
    assert.equal(tor!.restartTime, 120);
    assert.equal(tor!.password, undefined);
  });

  it('restartMode LongLivedGracefulRestart: maxRestartTime is the long-lived stale time (3600 s without one), the restart time stays the node’s', () => {
    const peers = desiredPeers(
      view(workers[0]!, [
        peer('llgr', { peerIP: '192.0.2.1', asNumber: 65000, restartMode: 'LongLivedGracefulRestart', maxRestartTime: '10m' }),
        peer('llgr-default', { peerIP: '192.0.2.2', asNumber: 65000, restartMode: 'LongLivedGracefulRestart' }),
        peer('gr', { peerIP: '192.0.2.3', asNumber: 65000, restartMode: 'GracefulRestart', maxRestartTime: '10m' }),
      ]),
    );
    const byAddress = new Map(peers.map((p) => [p.address, p]));
    const llgr = byAddress.get('192.0.2.1')!;
    assert.equal(llgr.longLivedStaleTime, 600);
    assert.equal(llgr.restartTime, undefined);
    assert.equal(byAddress.get('192.0.2.2')!.longLivedStaleTime, 3600);
    assert.equal(byAddress.get('192.0.2.3')!.longLivedStaleTime, undefined);
    assert.equal(byAddress.get('192.0.2.3')!.restartTime, 600);
    const settings = { port: 179, localAddress: '192.0.2.10', restartTime: 30 };
    const n = neighborConfig(llgr, settings);
    assert.deepEqual(n.longLivedGracefulRestart, { staleTime: 600 });
    assert.deepEqual(n.gracefulRestart, { restartTime: 30 });
    assert.equal(neighborConfig(byAddress.get('192.0.2.3')!, settings).longLivedGracefulRestart, undefined);
    assert.ok(peerChanged(llgr, { ...llgr, longLivedStaleTime: 60 }), 'a new stale time does not rebuild the session');
  });

  it('keepOriginalNextHop: taken towards an iBGP peer, refused by name towards an eBGP one', () => {
    const peers = desiredPeers(
      view(workers[0]!, [
        peer('ibgp', { peerIP: '192.0.2.1', asNumber: 64512, keepOriginalNextHop: true }),
        peer('ebgp', { peerIP: '192.0.2.2', asNumber: 65000, keepOriginalNextHop: true }),
      ]),
    );
    const byAddress = new Map(peers.map((p) => [p.address, p]));
    assert.equal(byAddress.get('192.0.2.1')!.refused, undefined);
    assert.match(byAddress.get('192.0.2.2')!.refused ?? '', /keepOriginalNextHop .*eBGP/);
  });

  it('serviceExternalIPs and serviceLoadBalancerIPs ranges are announced as written, with the cluster IPs; a single address only per service', () => {
    const cfg = config({
      serviceClusterIPs: [{ cidr: '10.96.0.0/12' }],
      serviceExternalIPs: [{ cidr: '104.244.42.129/32' }, { cidr: '172.217.3.0/24' }],
      serviceLoadBalancerIPs: [{ cidr: '192.168.100.0/24' }],
    });
    assert.deepEqual(advertisements('w1', [], cfg).services, ['10.96.0.0/12', '172.217.3.0/24', '192.168.100.0/24']);
  });

  it('prefixAdvertisements: blocks inside the CIDR carry its communities (names resolved), others none', () => {
    const speaker = new BgpSpeaker({ asn: 63400, routerId: '127.0.0.1', listen: false });
    try {
      const block = (cidr: string): IPAMBlock =>
        ({
          apiVersion: 'projectcalico.org/v3',
          kind: 'IPAMBlock',
          metadata: { name: cidr.replace(/[./]/g, '-') },
          spec: { cidr, affinity: 'host:w1', allocations: [], unallocated: [], attributes: [] },
        }) as IPAMBlock;
      const blocks = [block('172.218.4.0/26'), block('172.218.5.0/26')];
      const cfg = config({
        communities: [{ name: 'bgp-large-community', value: '63400:300:100' }],
        prefixAdvertisements: [{ cidr: '172.218.4.0/24', communities: ['bgp-large-community', '63400:120'] }],
      });
      const advertiser = new Advertiser(speaker);
      advertiser.reconcile('w1', blocks, cfg);
      const attrs = (p: string) => speaker.lookup(p)?.best.attributes;
      assert.deepEqual(attrs('172.218.4.0/26')?.communities, [63400 * 65536 + 120]);
      assert.deepEqual(attrs('172.218.4.0/26')?.largeCommunities, [[63400, 300, 100]]);
      assert.equal(attrs('172.218.5.0/26')?.communities, undefined);
      // The configuration changes: the block is originated again without them.
      advertiser.reconcile('w1', blocks, config({}));
      assert.equal(attrs('172.218.4.0/26')?.communities, undefined);
      assert.equal(attrs('172.218.4.0/26')?.largeCommunities, undefined);
    } finally {
      speaker.stop?.();
    }
  });
});
