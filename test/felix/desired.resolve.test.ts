// Learned next hops off the node's subnet in the desired state: resolved through the node's
// table (kernelRoutes) and its static routes, in direct mode when the peer asked for it, and
// reported as unresolved, with why, when nothing reaches them.
import assert from 'node:assert/strict';
import { computeDesiredState, FelixInputError, type FelixInput, type KernelRoute } from '../../felix/index.js';

const base: FelixInput = {
  node: { addressV4: '10.0.1.5/24', uplink: 'eth0' },
  workloads: [],
  ownBlocks: [],
  remoteRoutes: [],
  pools: [],
  remoteVteps: [],
};
const compute = (p: Partial<FelixInput>) => computeDesiredState({ ...base, ...p });
const hops = (p: Partial<FelixInput>) => compute(p).routes.map((r) => [r.dst, r.nextHops]);
// A ToR whose loopback is reached by a link route, as Calico's L3 fabric draws it.
const torLink: KernelRoute = { dst: '10.90.255.1/32', type: 'unicast', nextHops: [{ dev: 'eth0' }] };
const defaultRoute: KernelRoute = { dst: '0.0.0.0/0', type: 'unicast', nextHops: [{ dev: 'eth0', gateway: '10.0.1.1' }] };

describe('felix desired state: next hops off the node subnet', () => {
  it('a next hop on a link route is installed via itself on that device', () => {
    assert.deepEqual(hops({ kernelRoutes: [torLink], remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['10.90.255.1'] }] }), [
      ['10.66.0.0/26', [{ dev: 'eth0', gateway: '10.90.255.1' }]],
    ]);
  });

  it("a next hop behind a static or default route is installed via that route's gateway (recursive)", () => {
    const kernelRoutes: KernelRoute[] = [
      defaultRoute,
      { dst: '10.0.2.0/24', type: 'unicast', nextHops: [{ dev: 'eth1', gateway: '10.0.9.1' }] },
    ];
    assert.deepEqual(
      hops({
        kernelRoutes,
        remoteRoutes: [
          { prefix: '10.66.0.0/26', nextHops: ['10.0.2.7'] },
          { prefix: '10.67.0.0/26', nextHops: ['192.0.2.9'] },
        ],
      }),
      [
        ['10.66.0.0/26', [{ dev: 'eth1', gateway: '10.0.9.1' }]],
        ['10.67.0.0/26', [{ dev: 'eth0', gateway: '10.0.1.1' }]],
      ],
    );
  });

  it("a next hop on the node's subnet is direct on the uplink as before, whatever the table says", () => {
    const kernelRoutes: KernelRoute[] = [{ dst: '10.0.1.0/24', type: 'unicast', nextHops: [{ dev: 'eth9', gateway: '10.0.9.1' }] }];
    assert.deepEqual(hops({ kernelRoutes, remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['10.0.1.6'] }] }), [
      ['10.66.0.0/26', [{ dev: 'eth0', gateway: '10.0.1.6' }]],
    ]);
  });

  it('two next hops resolving to two gateways make one ECMP route; to one gateway, one hop', () => {
    const kernelRoutes: KernelRoute[] = [
      { dst: '10.91.0.1/32', type: 'unicast', nextHops: [{ dev: 'eth0' }] },
      { dst: '10.92.0.1/32', type: 'unicast', nextHops: [{ dev: 'eth1' }] },
      defaultRoute,
    ];
    assert.deepEqual(hops({ kernelRoutes, remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['10.92.0.1', '10.91.0.1'] }] }), [
      [
        '10.66.0.0/26',
        [
          { dev: 'eth0', gateway: '10.91.0.1' },
          { dev: 'eth1', gateway: '10.92.0.1' },
        ],
      ],
    ]);
    assert.deepEqual(hops({ kernelRoutes, remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['192.0.2.1', '192.0.2.2'] }] }), [
      ['10.66.0.0/26', [{ dev: 'eth0', gateway: '10.0.1.1' }]],
    ]);
  });

  it('one next hop unresolvable of two: the route goes in with the other, the skipped one is a problem', () => {
    const s = compute({ kernelRoutes: [torLink], remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['10.90.255.1', '10.99.0.1'] }] });
    assert.deepEqual(
      s.routes.map((r) => r.nextHops),
      [[{ dev: 'eth0', gateway: '10.90.255.1' }]],
    );
    assert.deepEqual(s.unresolved, []);
    assert.match(s.problems.join('\n'), /10\.66\.0\.0\/26: no route to next hop 10\.99\.0\.1/);
  });

  it('nothing reaches any next hop: no route, and the destination is unresolved with the reason', () => {
    const s = compute({
      kernelRoutes: [{ dst: '10.99.0.0/16', type: 'blackhole', nextHops: [] }],
      remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['10.99.0.1'] }],
    });
    assert.deepEqual(s.routes, []);
    assert.deepEqual(s.unresolved, [
      { dst: '10.66.0.0/26', reason: '10.66.0.0/26: next hop 10.99.0.1 resolves to blackhole 10.99.0.0/16; next hop skipped' },
    ]);
  });

  describe('direct mode (BGPPeer birdGatewayMode DirectIfDirectlyConnected)', () => {
    const kernelRoutes = [torLink, defaultRoute];
    it('a connected next hop is used as it is', () => {
      assert.deepEqual(
        hops({ kernelRoutes, remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: [{ address: '10.0.1.6', peer: '10.90.255.1' }] }] }),
        [['10.66.0.0/26', [{ dev: 'eth0', gateway: '10.0.1.6' }]]],
      );
    });
    it('a next hop that is not connected: the connected peer that sent it is the gateway, not the default route', () => {
      assert.deepEqual(
        hops({ kernelRoutes, remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: [{ address: '10.0.2.7', peer: '10.90.255.1' }] }] }),
        [['10.66.0.0/26', [{ dev: 'eth0', gateway: '10.90.255.1' }]]],
      );
      // Recursive (a plain address) resolves the same next hop through the default route.
      assert.deepEqual(hops({ kernelRoutes, remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['10.0.2.7'] }] }), [
        ['10.66.0.0/26', [{ dev: 'eth0', gateway: '10.0.1.1' }]],
      ]);
    });
    it('a peer that is not connected either: recursive, as Calico for a multihop peer', () => {
      assert.deepEqual(
        hops({ kernelRoutes, remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: [{ address: '10.0.2.7', peer: '10.0.3.1' }] }] }),
        [['10.66.0.0/26', [{ dev: 'eth0', gateway: '10.0.1.1' }]]],
      );
    });
    it('a peer of the other family is refused, naming the field', () => {
      assert.throws(
        () => compute({ remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: [{ address: '10.0.2.7', peer: 'fd00::1' }] }] }),
        (e: unknown) => e instanceof FelixInputError && e.field === 'remoteRoutes[0].nextHops[0].peer',
      );
    });
  });

  describe('static routes (BGPPeer reachableBy)', () => {
    it('the peer via its gateway is programmed, wins over a learned route for it, and learned next hops resolve through it', () => {
      const s = compute({
        staticRoutes: [{ prefix: '10.90.255.1/32', via: '10.0.1.1' }],
        remoteRoutes: [
          { prefix: '10.90.255.1/32', nextHops: ['10.90.255.1'] },
          { prefix: '10.66.0.0/26', nextHops: ['10.90.255.1'] },
        ],
      });
      assert.deepEqual(
        s.routes.map((r) => [r.dst, r.nextHops]),
        [
          ['10.66.0.0/26', [{ dev: 'eth0', gateway: '10.0.1.1' }]],
          ['10.90.255.1/32', [{ dev: 'eth0', gateway: '10.0.1.1' }]],
        ],
      );
      assert.deepEqual(s.problems, []);
    });
    it('a gateway nothing reaches: the static route is unresolved with why', () => {
      const s = compute({ staticRoutes: [{ prefix: '10.90.255.1/32', via: '10.7.0.1' }] });
      assert.deepEqual(s.routes, []);
      assert.deepEqual(s.unresolved, [
        {
          dst: '10.90.255.1/32',
          reason: "10.90.255.1/32: static route via 10.7.0.1: no route to next hop 10.7.0.1 in this node's routing table",
        },
      ]);
    });
    it('bad input names the field', () => {
      assert.throws(
        () => compute({ staticRoutes: [{ prefix: '10.90.255.1/32', via: 'fd00::1' }] }),
        (e: unknown) => e instanceof FelixInputError && e.field === 'staticRoutes[0].via',
      );
      assert.throws(
        () => compute({ kernelRoutes: [{ dst: 'nope', type: 'unicast', nextHops: [] }] }),
        (e: unknown) => e instanceof FelixInputError && e.field === 'kernelRoutes[0].dst',
      );
    });
  });
});
