import assert from 'node:assert/strict';
import { computeDesiredState, FelixInputError, type FelixInput } from '../../felix/index.js';

const base: FelixInput = {
  node: { addressV4: '10.0.1.5/24', addressV6: 'fd00:1::5/64', uplink: 'eth0' },
  workloads: [],
  ownBlocks: [],
  remoteRoutes: [],
  pools: [],
  remoteVteps: [],
};
const vteps = [
  { nodeIp: '10.0.1.6', vtepIp: '10.65.1.0', vtepMac: '66:00:00:00:01:06' },
  { nodeIp: '10.0.2.7', vtepIp: '10.65.2.0', vtepMac: '66:00:00:00:02:07' },
  { nodeIp: 'fd00:1::6', vtepIp: 'fd00:65:1::', vtepMac: '66:00:00:00:61:06' },
  { nodeIp: 'fd00:2::7', vtepIp: 'fd00:65:2::', vtepMac: '66:00:00:00:62:07' },
];
const compute = (p: Partial<FelixInput>) => computeDesiredState({ ...base, ...p });
const one = (p: Partial<FelixInput>, dst: string) => compute(p).routes.find((r) => r.dst === dst);

describe('felix desired state', () => {
  describe('local workloads', () => {
    it('IPv4: /32 dev cali scope link, bare or /32 input', () => {
      const s = compute({ workloads: [{ iface: 'cali0a1b2c3d4e5', addresses: ['10.65.0.2', '10.65.0.3/32'] }] });
      assert.deepEqual(s.routes, [
        { dst: '10.65.0.2/32', type: 'unicast', nextHops: [{ dev: 'cali0a1b2c3d4e5' }], reason: 'workload' },
        { dst: '10.65.0.3/32', type: 'unicast', nextHops: [{ dev: 'cali0a1b2c3d4e5' }], reason: 'workload' },
      ]);
    });
    it('IPv6: /128, canonical text', () => {
      const s = compute({ workloads: [{ iface: 'cali1', addresses: ['FD00:0065:0000::0002'] }] });
      assert.deepEqual(
        s.routes.map((r) => r.dst),
        ['fd00:65::2/128'],
      );
    });
    it('a workload address given as a wider prefix is rejected, naming the field', () => {
      assert.throws(
        () => compute({ workloads: [{ iface: 'cali1', addresses: ['10.65.0.0/26'] }] }),
        (e: Error) => e instanceof FelixInputError && /workloads\[0\]\.addresses\[0\]/.test(e.message),
      );
    });
    it('the same address on two interfaces keeps the first and reports it', () => {
      const s = compute({
        workloads: [
          { iface: 'cali1', addresses: ['10.65.0.2'] },
          { iface: 'cali2', addresses: ['10.65.0.2'] },
        ],
      });
      assert.equal(s.routes.length, 1);
      assert.equal(s.routes[0].nextHops[0].dev, 'cali1');
      assert.match(s.problems[0], /cali1 and cali2/);
    });
  });

  describe('own blocks', () => {
    it('a blackhole per block, IPv4 and IPv6', () => {
      const s = compute({ ownBlocks: ['10.65.0.0/26', 'fd00:65::/122'] });
      assert.deepEqual(s.routes, [
        { dst: '10.65.0.0/26', type: 'blackhole', nextHops: [], reason: 'blackhole' },
        { dst: 'fd00:65::/122', type: 'blackhole', nextHops: [], reason: 'blackhole' },
      ]);
    });
    it('a block with host bits set is rejected', () => {
      assert.throws(() => compute({ ownBlocks: ['10.65.0.1/26'] }), /ownBlocks\[0\].*host bits/);
    });
    it('a remote route to our own block is ignored (we are the destination)', () => {
      const s = compute({ ownBlocks: ['10.65.0.0/26'], remoteRoutes: [{ prefix: '10.65.0.0/26', nextHops: ['10.0.1.6'] }] });
      assert.deepEqual(
        s.routes.map((r) => r.type),
        ['blackhole'],
      );
    });
  });

  describe('remote blocks', () => {
    const remote = [
      { prefix: '10.66.0.0/26', nextHops: ['10.0.1.6'] },
      { prefix: '10.67.0.0/26', nextHops: ['10.0.2.7'] },
    ];
    const remote6 = [
      { prefix: 'fd00:66::/122', nextHops: ['fd00:1::6'] },
      { prefix: 'fd00:67::/122', nextHops: ['fd00:2::7'] },
    ];

    it('no pool / encapsulation Never: via node IP dev uplink (v4 and v6)', () => {
      const s = compute({ remoteRoutes: [remote[0], remote6[0]], pools: [{ cidr: '10.64.0.0/10' }] });
      assert.deepEqual(
        s.routes.map((r) => [r.dst, r.nextHops, r.reason]),
        [
          ['10.66.0.0/26', [{ dev: 'eth0', gateway: '10.0.1.6' }], 'direct'],
          ['fd00:66::/122', [{ dev: 'eth0', gateway: 'fd00:1::6' }], 'direct'],
        ],
      );
    });
    it('no encapsulation with an off-subnet next hop and no route to it: not programmed, unresolved with the reason', () => {
      const s = compute({ remoteRoutes: [remote[1]] });
      assert.equal(s.routes.length, 0);
      assert.match(s.problems[0], /no route to next hop 10\.0\.2\.7 in this node's routing table/);
      assert.deepEqual(s.unresolved, [{ dst: '10.67.0.0/26', reason: s.problems[0] }]);
    });
    it('IPIP Always: via node IP dev tunl0 onlink, even in the same subnet', () => {
      const s = compute({ remoteRoutes: remote, pools: [{ cidr: '10.64.0.0/10', ipipMode: 'Always' }] });
      assert.deepEqual(
        s.routes.map((r) => r.nextHops),
        [[{ dev: 'tunl0', gateway: '10.0.1.6', onlink: true }], [{ dev: 'tunl0', gateway: '10.0.2.7', onlink: true }]],
      );
      assert.equal(s.devices.ipip, true);
    });
    it('IPIP CrossSubnet: direct in the subnet, tunl0 outside it', () => {
      const s = compute({ remoteRoutes: remote, pools: [{ cidr: '10.64.0.0/10', ipipMode: 'CrossSubnet' }] });
      assert.deepEqual(
        one({ remoteRoutes: remote, pools: [{ cidr: '10.64.0.0/10', ipipMode: 'CrossSubnet' }] }, '10.66.0.0/26')?.nextHops,
        [{ dev: 'eth0', gateway: '10.0.1.6' }],
      );
      assert.deepEqual(s.routes[1].nextHops, [{ dev: 'tunl0', gateway: '10.0.2.7', onlink: true }]);
    });
    it('IPIP on an IPv6 pool is rejected', () => {
      assert.throws(() => compute({ pools: [{ cidr: 'fd00::/48', ipipMode: 'Always' }] }), /pools\[0\]\.ipipMode/);
    });
    it('VXLAN Always: via the remote VTEP dev vxlan.calico onlink, with ARP and FDB entries (v4)', () => {
      const s = compute({ remoteRoutes: remote, remoteVteps: vteps, pools: [{ cidr: '10.64.0.0/10', vxlanMode: 'Always' }] });
      assert.deepEqual(
        s.routes.map((r) => r.nextHops),
        [[{ dev: 'vxlan.calico', gateway: '10.65.1.0', onlink: true }], [{ dev: 'vxlan.calico', gateway: '10.65.2.0', onlink: true }]],
      );
      assert.deepEqual(s.neighbors, [
        { kind: 'arp', dev: 'vxlan.calico', address: '10.65.1.0', mac: '66:00:00:00:01:06' },
        { kind: 'fdb', dev: 'vxlan.calico', address: '10.0.1.6', mac: '66:00:00:00:01:06' },
        { kind: 'arp', dev: 'vxlan.calico', address: '10.65.2.0', mac: '66:00:00:00:02:07' },
        { kind: 'fdb', dev: 'vxlan.calico', address: '10.0.2.7', mac: '66:00:00:00:02:07' },
      ]);
      assert.deepEqual(s.devices, { ipip: false, vxlanV4: true, vxlanV6: false });
    });
    it('VXLAN CrossSubnet (v6): direct in the subnet, vxlan-v6.calico outside it', () => {
      const s = compute({ remoteRoutes: remote6, remoteVteps: vteps, pools: [{ cidr: 'fd00::/16', vxlanMode: 'CrossSubnet' }] });
      assert.deepEqual(
        s.routes.map((r) => [r.dst, r.nextHops]),
        [
          ['fd00:66::/122', [{ dev: 'eth0', gateway: 'fd00:1::6' }]],
          ['fd00:67::/122', [{ dev: 'vxlan-v6.calico', gateway: 'fd00:65:2::', onlink: true }]],
        ],
      );
      assert.deepEqual(
        s.neighbors.map((n) => [n.kind, n.dev, n.address]),
        [
          ['arp', 'vxlan-v6.calico', 'fd00:65:1::'],
          ['fdb', 'vxlan-v6.calico', 'fd00:1::6'],
          ['arp', 'vxlan-v6.calico', 'fd00:65:2::'],
          ['fdb', 'vxlan-v6.calico', 'fd00:2::7'],
        ],
      );
    });
    it('VXLAN CrossSubnet (v4): same split', () => {
      const s = compute({ remoteRoutes: remote, remoteVteps: vteps, pools: [{ cidr: '10.64.0.0/10', vxlanMode: 'CrossSubnet' }] });
      assert.deepEqual(
        s.routes.map((r) => r.reason),
        ['direct', 'vxlan'],
      );
    });
    it('VXLAN next hop without a known VTEP is skipped and reported', () => {
      const s = compute({ remoteRoutes: [remote[1]], pools: [{ cidr: '10.64.0.0/10', vxlanMode: 'Always' }] });
      assert.equal(s.routes.length, 0);
      assert.match(s.problems[0], /no VXLAN VTEP known for next hop 10\.0\.2\.7/);
    });
    it('the longest matching pool decides the mode', () => {
      const s = compute({ remoteRoutes: remote, pools: [{ cidr: '10.64.0.0/10', ipipMode: 'Always' }, { cidr: '10.66.0.0/16' }] });
      assert.deepEqual(
        s.routes.map((r) => r.reason),
        ['direct', 'ipip'],
      );
    });
    it('a pool with both IPIP and VXLAN is rejected', () => {
      assert.throws(
        () => compute({ pools: [{ cidr: '10.64.0.0/10', ipipMode: 'Always', vxlanMode: 'Always' }] }),
        /pools\[0\]: ipipMode and vxlanMode/,
      );
    });
  });

  describe('ECMP', () => {
    it('several next hops give one multipath route, sorted and deduplicated (v4, v6)', () => {
      const s = compute({
        remoteRoutes: [
          { prefix: '10.66.0.0/26', nextHops: ['10.0.1.9', '10.0.1.6', '10.0.1.9'] },
          { prefix: 'fd00:66::/122', nextHops: ['fd00:1::9', 'fd00:1::6'] },
        ],
      });
      assert.deepEqual(
        s.routes.map((r) => r.nextHops),
        [
          [
            { dev: 'eth0', gateway: '10.0.1.6' },
            { dev: 'eth0', gateway: '10.0.1.9' },
          ],
          [
            { dev: 'eth0', gateway: 'fd00:1::6' },
            { dev: 'eth0', gateway: 'fd00:1::9' },
          ],
        ],
      );
    });
    it('CrossSubnet ECMP mixes direct and tunnelled next hops', () => {
      const s = compute({
        remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['10.0.1.6', '10.0.2.7'] }],
        pools: [{ cidr: '10.64.0.0/10', ipipMode: 'CrossSubnet' }],
      });
      assert.deepEqual(s.routes[0].nextHops, [
        { dev: 'eth0', gateway: '10.0.1.6' },
        { dev: 'tunl0', gateway: '10.0.2.7', onlink: true },
      ]);
    });
    it('a next hop that is this node is dropped', () => {
      const s = compute({ remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['10.0.1.5', '10.0.1.6'] }] });
      assert.deepEqual(s.routes[0].nextHops, [{ dev: 'eth0', gateway: '10.0.1.6' }]);
    });
  });

  describe('precedence and input checks', () => {
    it('a local workload wins over a learned /32 for the same address', () => {
      const s = compute({
        workloads: [{ iface: 'cali1', addresses: ['10.66.0.5'] }],
        remoteRoutes: [{ prefix: '10.66.0.5/32', nextHops: ['10.0.1.6'] }],
      });
      assert.deepEqual(s.routes[0].nextHops, [{ dev: 'cali1' }]);
    });
    it('a borrowed /32 inside our own block routes to the remote node (more specific than the blackhole)', () => {
      const s = compute({ ownBlocks: ['10.65.0.0/26'], remoteRoutes: [{ prefix: '10.65.0.9/32', nextHops: ['10.0.1.6'] }] });
      assert.deepEqual(
        s.routes.map((r) => [r.dst, r.type]),
        [
          ['10.65.0.0/26', 'blackhole'],
          ['10.65.0.9/32', 'unicast'],
        ],
      );
    });
    it('is pure: same input, same output; input not mutated', () => {
      const input: FelixInput = {
        ...base,
        ownBlocks: ['10.65.0.0/26'],
        remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['10.0.1.9', '10.0.1.6'] }],
      };
      const copy = JSON.parse(JSON.stringify(input));
      assert.deepEqual(computeDesiredState(input), computeDesiredState(input));
      assert.deepEqual(input, copy);
    });
    it('bad fields are named', () => {
      assert.throws(() => compute({ remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['nope'] }] }), /remoteRoutes\[0\]\.nextHops\[0\]/);
      assert.throws(
        () => compute({ remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['fd00::1'] }] }),
        /remoteRoutes\[0\]\.nextHops\[0\].*family/,
      );
      assert.throws(() => compute({ node: { uplink: 'has space' } }), /node\.uplink/);
      assert.throws(
        () => compute({ remoteVteps: [{ nodeIp: '10.0.1.6', vtepIp: '10.65.1.0', vtepMac: 'zz' }] }),
        /remoteVteps\[0\]\.vtepMac/,
      );
      assert.throws(() => compute({ pools: [{ cidr: '10.64.0.0/10', vxlanMode: 'Sometimes' as 'Always' }] }), /pools\[0\]\.vxlanMode/);
      assert.throws(
        () => compute({ node: { uplink: 'eth0', vxlanTunnelAddressV4: 'fd00::1' } }),
        /node\.vxlanTunnelAddressV4: must be an IPv4 address/,
      );
      assert.throws(() => compute({ node: { uplink: 'eth0', vxlanTunnelMacV4: '66:00' } }), /node\.vxlanTunnelMacV4/);
      assert.throws(() => compute({ node: { uplink: 'eth0', ipipTunnelAddress: '10.0.0.300' } }), /node\.ipipTunnelAddress/);
      assert.throws(() => compute({ workloads: 'cali1' as unknown as [] }), /workloads: must be an array/);
    });
  });
});
