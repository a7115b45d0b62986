// Routes, peers and attributes as a program prints them: JSON.stringify and `${}` give plain
// data with communities (standard, extended, large) in their text forms, and the JSON form
// reads back to the same attributes.
import assert from 'node:assert/strict';
import * as root from '../../../index.js';
import { Rib, attributesFromJSON, attributesToJSON, parseExtendedCommunity, type PathAttributes } from '../../../index.js';

const RT = Buffer.from('0002fde800000064', 'hex'); // route target 65000:100
const attributes: PathAttributes = {
  origin: 'igp',
  asPath: [{ type: 'sequence', asns: [65002, 65003] }],
  nextHop: '192.0.2.2',
  med: 5,
  communities: [65001 * 65536 + 7, 0xffffff01],
  extendedCommunities: [RT, Buffer.from('0103c00002010007', 'hex')],
  largeCommunities: [[65001, 1, 2]],
};

function ribWithPeer() {
  const rib = new Rib({ localAs: 65001, routerId: '192.0.2.1' });
  const peer = rib.addPeer({ address: '192.0.2.2', asn: 65002, routerId: '192.0.2.2', families: ['ipv4-unicast'] });
  rib.update(peer, { type: 'update', withdrawn: [], nlri: [{ prefix: '10.1.0.0/16' }], attributes });
  rib.originate('10.9.0.0/24', { attributes: { communities: ['65001:31'] } });
  return rib;
}

describe('routes, peers and attributes print as plain JSON', () => {
  it('JSON.stringify of a lookup: the peer by who it is (not its Adj-RIB-Out), communities as text', () => {
    const found = ribWithPeer().lookup('10.1.0.0/16');
    const json = JSON.parse(JSON.stringify(found)) as { best: Record<string, unknown> };
    assert.deepEqual(json.best, {
      family: 'ipv4-unicast',
      prefix: '10.1.0.0/16',
      pathId: 0,
      nextHop: '192.0.2.2',
      attributes: {
        origin: 'igp',
        asPath: [{ type: 'sequence', asns: [65002, 65003] }],
        med: 5,
        communities: ['65001:7', '65535:65281'],
        extendedCommunities: ['rt:65000:100', 'soo:192.0.2.1:7'],
        largeCommunities: ['65001:1:2'],
      },
      peer: { address: '192.0.2.2', asn: 65002, routerId: '192.0.2.2', type: 'ebgp' },
      stale: false,
    });
  });

  it('a peer in a template string is its address; a route, one line with the communities as text', () => {
    const r = ribWithPeer().lookup('10.1.0.0/16')!.best;
    assert.equal(`${r.peer}`, '192.0.2.2');
    assert.equal(
      `${r}`,
      '10.1.0.0/16 via 192.0.2.2 from 192.0.2.2 AS 65002, as-path 65002 65003, origin igp, med 5, communities 65001:7 65535:65281, ' +
        'extended-communities rt:65000:100 soo:192.0.2.1:7, large-communities 65001:1:2',
    );
  });

  it('an originated route: no peer in its JSON, and its communities, given as text, read as the codec’s numbers', () => {
    const r = ribWithPeer().lookup('10.9.0.0/24')!.best;
    assert.deepEqual(r.attributes.communities, [65001 * 65536 + 31], 'in memory: the codec’s numbers');
    const json = JSON.parse(JSON.stringify(r)) as Record<string, unknown>;
    assert.equal(json.peer, undefined, 'no peer for a local route');
    assert.deepEqual((json.attributes as { communities: string[] }).communities, ['65001:31']);
    assert.match(`${r}`, /^10\.9\.0\.0\/24 via 0\.0\.0\.0 \(local\)/);
  });

  it('the JSON form reads back to the same attributes', () => {
    const { nextHop: _, ...shared } = attributes;
    const back = attributesFromJSON(JSON.parse(JSON.stringify(attributesToJSON(shared))));
    assert.deepEqual(back, { ...shared, extendedCommunities: shared.extendedCommunities!.map((b) => Buffer.from(b)) });
  });

  it('a community that reads as nothing is refused, the field named', () => {
    assert.throws(() => attributesFromJSON({ communities: ['65001:70000'] }), /communities\[0\]: "65001:70000" is not a community/);
    assert.throws(() => attributesFromJSON({ largeCommunities: ['1:2'] }), /largeCommunities\[0\]: "1:2" is not a large community/);
    assert.throws(() => attributesFromJSON({ extendedCommunities: ['rt:1.2.3.4:70000'] }), /extendedCommunities\[0\].*0\.\.65535/);
    assert.throws(() => attributesFromJSON({ communities: '65001:1' as unknown as string[] }), /communities: a list/);
  });
});

describe('the text forms from the package root', () => {
  it('formatCommunity and its kin, both ways, without reaching into podroute/mrt', () => {
    assert.equal(root.formatCommunity(root.parseCommunity('65001:7')), '65001:7');
    assert.equal(root.formatLargeCommunity(root.parseLargeCommunity('65001:1:2')), '65001:1:2');
    assert.equal(root.formatExtendedCommunity(root.parseExtendedCommunity('soo:192.0.2.1:7')), 'soo:192.0.2.1:7');
    assert.equal(typeof root.attributesToJSON, 'function', 'attributesToJSON at the root');
  });
});

describe('extended communities as text (RFC 4360)', () => {
  const cases: [string, string][] = [
    ['0002fde800000064', 'rt:65000:100'],
    ['0003fde8000f4240', 'soo:65000:1000000'],
    ['0102c00002010007', 'rt:192.0.2.1:7'],
    ['0202fa56ea000001', 'rt:4200000000:1'],
    ['02020000fde80001', 'rt:65000L:1'],
    ['4004fde84e6e6b28', '0x4004fde84e6e6b28'],
  ];
  for (const [hex, text] of cases) {
    it(`${hex} ⇄ ${text}`, () => {
      assert.deepEqual(attributesToJSON({ extendedCommunities: [Buffer.from(hex, 'hex')] }).extendedCommunities, [text]);
      assert.equal(parseExtendedCommunity(text).toString('hex'), hex);
    });
  }
});
