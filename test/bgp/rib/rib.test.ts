// Rib.update takes an UPDATE by one of two paths: one as received whose attributes and IPv4
// fields nobody has read is applied from its octets alone, any other from its message. Both
// must leave the table, and the peer's counters, as the same UPDATE built in code leaves them,
// and each must leave unmade what it does not need.
import assert from 'node:assert/strict';
import {
  attributesUnread,
  decodeReceivedMessage,
  encodeMessage,
  receivedNlri,
  type CodecOptions,
  type ReceivedUpdate,
  type UpdateMessage,
} from '../../../bgp/codec/index.js';
import { Rib, type RibPeerConfig } from '../../../bgp/rib/index.js';

const v6 = { afi: 2, safi: 1 };
const attributes = {
  origin: 'igp' as const,
  asPath: [{ type: 'sequence' as const, asns: [65001, 64999] }],
  nextHop: '192.0.2.1',
  med: 7,
  communities: [65001 * 65536 + 1],
};

/** Announcements and withdrawals of both families, with an IPv4 UPDATE carrying MP attributes too. */
function updates(): UpdateMessage[] {
  return [
    {
      type: 'update',
      withdrawn: [],
      nlri: [{ prefix: '10.0.0.0/24' }, { prefix: '10.0.1.0/24' }, { prefix: '10.0.2.0/25' }],
      attributes: {
        ...attributes,
        mpReach: { ...v6, nextHop: '2001:db8::1', nlri: [{ prefix: '2001:db8:1::/48' }, { prefix: '2001:db8:2::/48' }] },
      },
    },
    {
      type: 'update',
      withdrawn: [{ prefix: '10.0.1.0/24' }],
      nlri: [{ prefix: '10.0.3.0/24' }],
      attributes: { ...attributes, med: 8, mpUnreach: { ...v6, withdrawn: [{ prefix: '2001:db8:2::/48' }] } },
    },
    { type: 'update', withdrawn: [{ prefix: '10.0.2.0/25' }], nlri: [], attributes: {} },
  ];
}

/** What the table holds, and what the peer's counters say. */
function apply(messages: Array<UpdateMessage | ReceivedUpdate>, config: Partial<RibPeerConfig> = {}): unknown {
  const rib = new Rib({ localAs: 65000, routerId: '192.0.2.254' });
  const peer = rib.addPeer({
    address: '192.0.2.1',
    asn: 65001,
    routerId: '192.0.2.1',
    families: ['ipv4-unicast', 'ipv6-unicast'],
    ...config,
  });
  for (const m of messages) rib.update(peer, m);
  const routes = (['ipv4-unicast', 'ipv6-unicast'] as const).flatMap((f) =>
    [...rib.routes(f)].map((r) => ({ prefix: r.prefix, nextHop: r.nextHop, attributes: r.attributes })),
  );
  const { announced, withdrawn, treatAsWithdraw, loopRejected, policyRejected } = peer.stats;
  return { routes, stats: { announced, withdrawn, treatAsWithdraw, loopRejected, policyRejected } };
}

function received(options: CodecOptions): ReceivedUpdate[] {
  return updates().map((m) => decodeReceivedMessage(encodeMessage(m, options), options) as ReceivedUpdate);
}

describe('rib: an UPDATE by its octets or by its message', () => {
  const built = apply(updates());

  it('applies an UPDATE nobody has read from its octets alone, as the same UPDATE built in code', () => {
    const us = received({ fourOctetAs: true });
    assert.deepEqual(apply(us), built);
    for (const u of us) {
      assert.equal(attributesUnread(u), true, 'no attribute object made');
      assert.notEqual(receivedNlri(u)?.unread, false, 'no IPv4 prefix list made');
    }
  });

  it('applies one whose attributes were read before from its message, its IPv4 lists still unmade', () => {
    const us = received({ fourOctetAs: true });
    for (const u of us) assert.ok(u.message.attributes, 'the message path made the attributes');
    assert.deepEqual(apply(us), built);
    for (const u of us) assert.notEqual(receivedNlri(u)?.unread, false);
  });

  it("keys a 2-octet-AS peer's IPv4 fields from their octets: its attributes are decoded, its lists never made", () => {
    const us = received({ fourOctetAs: false });
    for (const u of us) assert.equal(attributesUnread(u), false, 'the codec decodes a 2-octet peer attributes whole');
    assert.deepEqual(apply(us, { fourOctetAs: false }), apply(updates(), { fourOctetAs: false }));
    for (const u of us) assert.notEqual(receivedNlri(u)?.unread, false);
  });

  it('applies one whose prefix lists were read before from its message', () => {
    const us = received({ fourOctetAs: true });
    for (const u of us) assert.ok(u.message.nlri.length + u.message.withdrawn.length > 0, 'the message path made the prefix lists');
    assert.deepEqual(apply(us), built);
  });

  it('gives an import policy the prefixes of both families as text on the octet path', () => {
    const seen: string[] = [];
    const importPolicy = (r: { prefix: string }) => {
      seen.push(r.prefix);
      return r.prefix !== '10.0.3.0/24' && r.prefix !== '2001:db8:1::/48';
    };
    const fromOctets = apply(received({ fourOctetAs: true }), { importPolicy });
    const octetsSeen = seen.splice(0);
    assert.deepEqual(fromOctets, apply(updates(), { importPolicy }));
    assert.deepEqual(octetsSeen, seen);
    assert.deepEqual(octetsSeen, ['10.0.0.0/24', '10.0.1.0/24', '10.0.2.0/25', '2001:db8:1::/48', '2001:db8:2::/48', '10.0.3.0/24']);
    const { stats } = fromOctets as { stats: { policyRejected: number } };
    assert.equal(stats.policyRejected, 2);
  });

  it('drops a looped announcement on either path, and the earlier route of its prefixes with it', () => {
    const looped: UpdateMessage = {
      type: 'update',
      withdrawn: [],
      nlri: [{ prefix: '10.0.0.0/24' }],
      attributes: {
        ...attributes,
        asPath: [{ type: 'sequence', asns: [65001, 65000] }],
        mpReach: { ...v6, nextHop: '2001:db8::1', nlri: [{ prefix: '2001:db8:1::/48' }] },
      },
    };
    const options = { fourOctetAs: true };
    const fromOctets = apply([...received(options), decodeReceivedMessage(encodeMessage(looped, options), options) as ReceivedUpdate]);
    const fromMessage = apply([...updates(), looped]);
    assert.deepEqual(fromOctets, fromMessage);
    const { routes, stats } = fromMessage as { routes: Array<{ prefix: string }>; stats: { loopRejected: number } };
    assert.deepEqual(
      routes.map((r) => r.prefix),
      ['10.0.3.0/24'],
    );
    assert.equal(stats.loopRejected, 2);
  });
});
