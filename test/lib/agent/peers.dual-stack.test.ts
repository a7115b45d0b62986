// The agent's dual-stack decisions, at the unit level: which sessions a node with an IPv6
// address holds (one per family, as Calico's mesh), how each is configured (source address,
// the one family it carries), which next hops felix is given, and how the IPv6 address is
// found and checked.
import assert from 'node:assert/strict';
import type { NetworkInterfaceInfo } from 'node:os';
import type { BestPathChange } from '../../../bgp/index.js';
import { autodetectIpv6, checkNodeAddress } from '../../../lib/agent/autodetect.js';
import { learnedNextHops } from '../../../lib/agent/felix-feed.js';
import { desiredPeers, type ClusterView } from '../../../lib/agent/peers.js';
import { neighborConfig } from '../../../lib/agent/sessions.js';
import { validateResource, type BGPConfiguration, type BGPPeer, type Node } from '../../../lib/resources/index.js';

const node = (name: string, ip: string, ip6?: string, bgp: Record<string, unknown> = {}): Node =>
  validateResource({
    apiVersion: 'projectcalico.org/v3',
    kind: 'Node',
    metadata: { name },
    spec: { bgp: { ipv4Address: `${ip}/24`, ...(ip6 ? { ipv6Address: `${ip6}/64` } : {}), ...bgp } },
  }) as Node;
const peer = (name: string, spec: Record<string, unknown>): BGPPeer =>
  validateResource({ apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name }, spec }) as BGPPeer;
const noMesh = validateResource({
  apiVersion: 'projectcalico.org/v3',
  kind: 'BGPConfiguration',
  metadata: { name: 'default' },
  spec: { nodeToNodeMeshEnabled: false },
}) as BGPConfiguration;
const summary = (v: ClusterView) => desiredPeers(v).map((p) => `${p.address} ${p.type}${p.refused ? ' refused' : ''}`);

describe('dual stack: the agent’s sessions, next hops and IPv6 address', () => {
  const a = node('a', '10.0.0.1', 'fd00::1');
  const b = node('b', '10.0.0.2', 'fd00::2');
  const c = node('c', '10.0.0.3'); // IPv4 only
  const view = (self: Node, bgpPeers: BGPPeer[] = [], config?: BGPConfiguration): ClusterView => ({
    self,
    nodes: [a, b, c],
    config,
    bgpPeers,
  });

  it('the mesh: an IPv6 session besides the IPv4 one between nodes that both have IPv6, IPv4 only otherwise', () => {
    assert.deepEqual(summary(view(a)), ['10.0.0.2 mesh', '10.0.0.3 mesh', 'fd00::2 mesh']);
    assert.deepEqual(summary(view(c)), ['10.0.0.1 mesh', '10.0.0.2 mesh']);
    // However the Node spells it, the session's address is the canonical one (the speaker's, the status's).
    const spelled = node('d', '10.0.0.4', 'FD00:0:0::0004');
    assert.deepEqual(summary({ self: a, nodes: [a, spelled], config: undefined, bgpPeers: [] }), ['10.0.0.4 mesh', 'fd00::4 mesh']);
  });

  it('reflectors: a client peers with the reflector over both families, the reflector reflects both', () => {
    const rr = node('rr', '10.0.0.9', 'fd00::9', { routeReflectorClusterID: '244.0.0.1' });
    const nodes = [rr, a, c];
    assert.deepEqual(summary({ self: a, nodes, config: noMesh, bgpPeers: [] }), ['10.0.0.9 rr', 'fd00::9 rr']);
    const fromRr = desiredPeers({ self: rr, nodes, config: noMesh, bgpPeers: [] });
    assert.deepEqual(
      fromRr.map((p) => `${p.address} ${p.type} ${p.routeReflectorClient}`),
      ['10.0.0.1 rr-client true', '10.0.0.3 rr-client true', 'fd00::1 rr-client true'],
    );
  });

  it('a BGPPeer with an IPv6 peerIP: a session on a node with IPv6, refused by name on one without', () => {
    const tor6 = peer('tor6', { peerIP: '2001:db8::1', asNumber: 65000 });
    assert.deepEqual(summary(view(a, [tor6], noMesh)), ['2001:db8::1 global']);
    const onC = desiredPeers(view(c, [tor6], noMesh));
    assert.equal(onC.length, 1);
    assert.match(onC[0]!.refused ?? '', /peerIP is IPv6 .*spec\.bgp\.ipv6Address/);
    // A node's own IPv6 address is never a peer of itself.
    assert.deepEqual(summary(view(a, [peer('self', { peerIP: 'fd00::1', asNumber: 65000 })], noMesh)), []);
  });

  it('an IPv6 session is sourced from the node’s IPv6 address and carries ipv6-unicast only; IPv4 ones ipv4-unicast', () => {
    const s = { port: 179, localAddress: '10.0.0.1', localAddressV6: 'fd00::1' };
    const [v4, v6] = desiredPeers(view(a)).filter((p) => p.source === 'Node/b');
    assert.ok(v4 && v6, `want an IPv4 and an IPv6 session to Node/b, got ${v4?.address} and ${v6?.address}`);
    const c4 = neighborConfig(v4, s);
    const c6 = neighborConfig(v6, s);
    assert.deepEqual([c4.localAddress, c4.families], ['10.0.0.1', ['ipv4-unicast']]);
    assert.deepEqual([c6.localAddress, c6.families], ['fd00::1', ['ipv6-unicast']]);
  });

  it('felix is given learned IPv6 next hops, never our own IPv6 address nor ::', () => {
    const path = (nextHop: string, type: 'internal' | 'local' = 'internal') => ({ nextHop, peer: { type } });
    const change = {
      prefix: 'fd00:94::/122',
      best: path('fd00::2'),
      multipath: [path('fd00::2'), path('fd00::3'), path('fd00::1'), path('::')],
    } as unknown as BestPathChange;
    assert.deepEqual(learnedNextHops(change, ['10.0.0.1/24', 'fd00::1/64']).sort(), ['fd00::2', 'fd00::3']);
  });

  it('IP6 autodetection: the first global IPv6 address (link-local skipped); errors name the field', () => {
    const ifs: Record<string, NetworkInterfaceInfo[]> = {
      lo: [
        {
          address: '::1',
          netmask: 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
          family: 'IPv6',
          mac: '',
          internal: true,
          cidr: '::1/128',
          scopeid: 0,
        },
      ],
      eth0: [
        { address: '10.0.0.1', netmask: '255.255.255.0', family: 'IPv4', mac: '', internal: false, cidr: '10.0.0.1/24' },
        { address: 'fe80::1', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6', mac: '', internal: false, cidr: 'fe80::1/64', scopeid: 2 },
        { address: 'fd00::1', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6', mac: '', internal: false, cidr: 'fd00::1/64', scopeid: 0 },
      ],
      eth1: [
        { address: 'fd01::1', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6', mac: '', internal: false, cidr: 'fd01::1/64', scopeid: 0 },
      ],
    };
    assert.deepEqual(autodetectIpv6('first-found', ifs), { cidr: 'fd00::1/64', interface: 'eth0' });
    assert.deepEqual(autodetectIpv6('interface=eth1', ifs), { cidr: 'fd01::1/64', interface: 'eth1' });
    assert.throws(
      () => autodetectIpv6('interface=eth9', ifs),
      /^Error: ip6AutodetectionMethod interface=eth9: no interface with an IPv6 address/,
    );
    assert.throws(() => autodetectIpv6('can-reach=x', ifs), /^Error: ip6AutodetectionMethod: "can-reach=x"/);
    checkNodeAddress('fd00::1/64', 'ipv6Address', 6);
    assert.throws(() => checkNodeAddress('10.0.0.1/24', 'ipv6Address', 6), /^Error: ipv6Address: "10.0.0.1\/24" is not an IPv6 address/);
    assert.throws(
      () => checkNodeAddress('fd00::1', 'ipv6Address', 6),
      /^Error: ipv6Address: "fd00::1" is not an address with a prefix length \(e\.g\. fd00::1\/64\)/,
    );
  });
});
