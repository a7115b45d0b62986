// The felix feed and the BGPPeer fields of a fabric: next hops from a peer in direct gateway
// mode reach felix as { address, peer }, and reachableBy becomes a static route to the peer.
import assert from 'node:assert/strict';
import type { BestPathChange, RibRoute } from '../../../bgp/index.js';
import { Felix, MemoryDataplane } from '../../../felix/index.js';
import { FelixFeed } from '../../../lib/agent/felix-feed.js';
import type { DesiredPeer } from '../../../lib/agent/peers.js';

const path = (prefix: string, nextHop: string, peer: string): RibRoute => ({
  family: 'ipv4-unicast',
  prefix,
  pathId: 0,
  nextHop,
  attributes: {} as RibRoute['attributes'],
  peer: { address: peer, type: 'ebgp' } as RibRoute['peer'],
  stale: false,
});
const change = (prefix: string, paths: RibRoute[]): BestPathChange => ({
  kind: 'added',
  family: 'ipv4-unicast',
  prefix,
  best: paths[0],
  multipath: paths,
});
const peer = (address: string, extra: Partial<DesiredPeer> = {}): DesiredPeer => ({
  address,
  asn: 65001,
  type: 'global',
  source: 'BGPPeer/tor',
  routeReflectorClient: false,
  ...extra,
});

describe('agent felix feed: gateway mode and reachableBy', () => {
  it('direct mode peers give { address, peer } hops; recursive ones plain addresses', () => {
    const felix = new Felix(new MemoryDataplane(), { resyncIntervalMs: 0 });
    const feed = new FelixFeed(felix, () => {});
    feed.peers([peer('10.0.1.1', { directGateway: true }), peer('10.0.1.2')]);
    feed.learn(
      [change('10.66.0.0/26', [path('10.66.0.0/26', '10.0.2.7', '10.0.1.1'), path('10.66.0.0/26', '10.0.3.7', '10.0.1.2')])],
      '10.0.1.5/24',
    );
    assert.deepEqual(feed.learnedRoutes(), [{ prefix: '10.66.0.0/26', nextHops: [{ address: '10.0.2.7', peer: '10.0.1.1' }, '10.0.3.7'] }]);
    assert.deepEqual(felix.input.remoteRoutes, feed.learnedRoutes());
  });

  it('reachableBy: a static route to the peer, given to felix once, and taken away with the field', () => {
    const felix = new Felix(new MemoryDataplane(), { resyncIntervalMs: 0 });
    const feed = new FelixFeed(felix, () => {});
    feed.peers([peer('10.90.255.1', { reachableBy: '10.0.1.1' }), peer('fd00:90::1', { reachableBy: 'fd00:1::1' })]);
    assert.deepEqual(felix.input.staticRoutes, [
      { prefix: '10.90.255.1/32', via: '10.0.1.1' },
      { prefix: 'fd00:90::1/128', via: 'fd00:1::1' },
    ]);
    const given = felix.input.staticRoutes;
    feed.peers([peer('10.90.255.1', { reachableBy: '10.0.1.1' }), peer('fd00:90::1', { reachableBy: 'fd00:1::1' })]);
    assert.equal(felix.input.staticRoutes, given, 'the same routes are not given again');
    feed.peers([peer('10.90.255.1')]);
    assert.deepEqual(felix.input.staticRoutes, []);
  });
});
