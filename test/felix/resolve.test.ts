// The next-hop resolver alone: longest match over the node's table, one level deep, as a router
// resolves a BGP next hop that is not on a connected network.
import assert from 'node:assert/strict';
import { NextHopResolver, type KernelRoute } from '../../felix/index.js';

const link = (dst: string, dev: string): KernelRoute => ({ dst, type: 'unicast', nextHops: [{ dev }] });
const via = (dst: string, dev: string, gateway: string, metric?: number): KernelRoute => ({
  dst,
  type: 'unicast',
  nextHops: [{ dev, gateway }],
  ...(metric === undefined ? {} : { metric }),
});

describe('felix next-hop resolver', () => {
  it('a link route: the next hop is its own gateway on that device, and connected', () => {
    const r = new NextHopResolver([link('10.90.255.1/32', 'eth0'), via('0.0.0.0/0', 'eth0', '10.0.1.1')]);
    assert.deepEqual(r.resolve('10.90.255.1'), { hops: [{ dev: 'eth0', gateway: '10.90.255.1' }], connected: true, via: '10.90.255.1/32' });
  });

  it('the longest match wins: a static route over the default route, the default route for the rest', () => {
    const r = new NextHopResolver([
      via('0.0.0.0/0', 'eth0', '10.0.1.1'),
      via('10.0.2.0/24', 'eth1', '10.0.9.1'),
      via('10.0.2.128/25', 'eth2', '10.0.8.1'),
    ]);
    assert.deepEqual(r.resolve('10.0.2.200'), { hops: [{ dev: 'eth2', gateway: '10.0.8.1' }], connected: false, via: '10.0.2.128/25' });
    assert.deepEqual(r.resolve('10.0.2.7'), { hops: [{ dev: 'eth1', gateway: '10.0.9.1' }], connected: false, via: '10.0.2.0/24' });
    assert.deepEqual(r.resolve('192.0.2.1'), { hops: [{ dev: 'eth0', gateway: '10.0.1.1' }], connected: false, via: '0.0.0.0/0' });
  });

  it('one destination at two metrics: the lower one, as the kernel forwards', () => {
    const r = new NextHopResolver([via('10.0.2.0/24', 'eth1', '10.0.9.1', 200), via('10.0.2.0/24', 'eth2', '10.0.8.1', 100)]);
    assert.deepEqual(r.resolve('10.0.2.7'), { hops: [{ dev: 'eth2', gateway: '10.0.8.1' }], connected: false, via: '10.0.2.0/24' });
  });

  it('a multipath route under the next hop gives every one of its paths; onlink is kept', () => {
    const r = new NextHopResolver([
      {
        dst: '10.0.0.0/8',
        type: 'unicast',
        nextHops: [
          { dev: 'eth0', gateway: '10.0.1.1' },
          { dev: 'eth1', gateway: '172.16.0.1', onlink: true },
        ],
      },
    ]);
    assert.deepEqual(r.resolve('10.0.2.7'), {
      hops: [
        { dev: 'eth0', gateway: '10.0.1.1' },
        { dev: 'eth1', gateway: '172.16.0.1', onlink: true },
      ],
      connected: false,
      via: '10.0.0.0/8',
    });
  });

  it('IPv6 next hops resolve through IPv6 routes only', () => {
    const r = new NextHopResolver([via('0.0.0.0/0', 'eth0', '10.0.1.1'), link('fd00:90::/64', 'eth1')]);
    assert.deepEqual(r.resolve('fd00:90::1'), { hops: [{ dev: 'eth1', gateway: 'fd00:90::1' }], connected: true, via: 'fd00:90::/64' });
    assert.match((r.resolve('fd00:91::1') as { reason: string }).reason, /no route to next hop fd00:91::1/);
  });

  it('no route, or only a blackhole: a reason that names the next hop', () => {
    const r = new NextHopResolver([{ dst: '10.0.0.0/8', type: 'blackhole', nextHops: [] }]);
    assert.deepEqual(r.resolve('10.0.2.7'), { reason: 'next hop 10.0.2.7 resolves to blackhole 10.0.0.0/8' });
    assert.deepEqual(r.resolve('192.0.2.1'), { reason: "no route to next hop 192.0.2.1 in this node's routing table" });
  });
});
