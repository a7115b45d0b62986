// The agent's WireGuard peers kept between reconciles: a change WireGuard does not read is no
// change, one it reads is seen, and the peers equal a full build every time.
import assert from 'node:assert/strict';
import { ClusterCache } from '../../../lib/agent/cluster-cache.js';
import { blocksByNode, wireguardPeerOf, WireguardPeers } from '../../../lib/agent/wireguard-peers.js';
import type { WatchEvent } from '../../../lib/datastore/index.js';
import { API_VERSION, type IPAMBlock, type Node, type Resource } from '../../../lib/resources/index.js';

const KEY = 'm9TXUUo74FvTEOHtg4w7fYrcBl4SwOweSFuDGkJeIn8=';
const KEY2 = 'uOeXeS8Zr1R0WIW4Pp5sGKQaPi0Yq8HbS9kVdjnQyFA=';

const node = (i: number, extra: Partial<Node['spec']> = {}, labels?: Record<string, string>): Node => ({
  apiVersion: API_VERSION,
  kind: 'Node',
  metadata: { name: `n${i}`, ...(labels ? { labels } : {}) },
  spec: { bgp: { ipv4Address: `10.0.${i >> 8}.${i & 255}/16` }, status: { wireguardPublicKey: KEY }, ...extra },
});
const block = (cidr: string, owner: string): IPAMBlock => ({
  apiVersion: API_VERSION,
  kind: 'IPAMBlock',
  metadata: { name: cidr.replace('/', '-') },
  spec: { cidr, affinity: `host:${owner}`, allocations: [], unallocated: [], attributes: [] },
});

let revision = 0;
const put = (c: ClusterCache, r: Resource) =>
  c.apply({ type: 'put', kind: r.kind, key: r.metadata.name, revision: ++revision, resource: r, synthetic: false } as WatchEvent);
const del = (c: ClusterCache, r: Resource) =>
  c.apply({ type: 'delete', kind: r.kind, key: r.metadata.name, revision: ++revision, synthetic: false } as WatchEvent);

/** What a full build gives (the reference the kept peers must equal). */
const full = (c: ClusterCache) => {
  const owners = blocksByNode(c.blocks.values());
  return [...c.nodes.values()].filter((n) => n.metadata.name !== 'n0').map((n) => wireguardPeerOf(n, owners.get(n.metadata.name) ?? []));
};

describe('agent WireGuard peers kept between reconciles', () => {
  it('changes WireGuard reads are seen, others are not, and the peers always equal a full build', () => {
    const c = new ClusterCache('n0');
    for (let i = 0; i < 4; i++) put(c, node(i));
    put(c, block('10.70.1.0/26', 'n1'));
    const p = new WireguardPeers();
    assert.equal(p.update(c, 'n0'), true, 'the first update is news');
    assert.deepEqual(p.peers, full(c));
    assert.equal(p.peers.length, 3, 'every node but this one');
    const first = p.peers;

    assert.equal(p.update(c, 'n0'), false, 'nothing happened');
    put(c, { apiVersion: API_VERSION, kind: 'IPPool', metadata: { name: 'p' }, spec: { cidr: '10.70.0.0/16' } } as Resource);
    assert.equal(p.update(c, 'n0'), false, 'a pool is not a peer change');
    put(c, node(2, {}, { rack: 'r1' }));
    assert.equal(p.update(c, 'n0'), false, 'a label WireGuard does not read');
    assert.equal(p.peers, first, 'the same list, not rebuilt');

    put(c, node(2, { status: { wireguardPublicKey: KEY2 } }));
    assert.equal(p.update(c, 'n0'), true, 'a new key');
    assert.equal(p.peers.find((x) => x.name === 'n2')?.publicKey, KEY2);
    assert.deepEqual(p.peers, full(c));

    put(c, block('10.70.2.0/26', 'n1'));
    assert.equal(p.update(c, 'n0'), true, 'a block more');
    assert.deepEqual(p.peers.find((x) => x.name === 'n1')?.blocks, ['10.70.1.0/26', '10.70.2.0/26']);

    del(c, node(3));
    put(c, node(4));
    assert.equal(p.update(c, 'n0'), true, 'one node gone and another come');
    assert.deepEqual(
      p.peers.map((x) => x.name),
      ['n1', 'n2', 'n4'],
    );
    assert.deepEqual(p.peers, full(c));

    put(c, node(0, { status: { wireguardPublicKey: KEY2 } }));
    assert.equal(p.update(c, 'n0'), false, 'this node is not its own peer');
  });
});
