// A decoded UPDATE's path attributes, MP ones included, are checked at decode time and made into
// objects when first read. Until then the message must look like the plain object it always was, every
// problem must still be found at decode time, and what is made must be what the eager decode
// makes.
import assert from 'node:assert/strict';
import { decodeAttributes, type Problem } from '../../../bgp/codec/attributes-decode.js';
import {
  attributesUnread,
  BgpError,
  UpdateSubcode,
  decodeMessage,
  encodeMessage,
  receivedAttributes,
  receivedNlri,
  type UpdateMessage,
} from '../../../bgp/codec/index.js';
import { readMrtFile } from '../../../bgp/mrt/index.js';

const sent: UpdateMessage = {
  type: 'update',
  withdrawn: [],
  attributes: {
    origin: 'igp',
    asPath: [{ type: 'sequence', asns: [65001, 4_200_000_001] }],
    nextHop: '192.0.2.1',
    med: 7,
    communities: [0xfde80001],
  },
  nlri: [{ prefix: '10.0.0.0/8' }],
};
const bytes = encodeMessage(sent);
const decode = (b = bytes) => decodeMessage(b, { fourOctetAs: true }) as UpdateMessage;
const plain = (m: unknown) => JSON.parse(JSON.stringify(m));

/** The attribute octets of an UPDATE message (after the header and withdrawn routes). */
function attributeOctets(b: Buffer): Buffer {
  const withdrawnEnd = 21 + b.readUInt16BE(19);
  return b.subarray(withdrawnEnd + 2, withdrawnEnd + 2 + b.readUInt16BE(withdrawnEnd));
}

describe('codec: path attributes made on demand', () => {
  it('checks them without making them, and makes them once when read', () => {
    const m = decode();
    const fields = receivedNlri(m)!;
    assert.equal(fields.attributesUnread, true);
    assert.deepEqual(receivedAttributes(m), attributeOctets(bytes));
    const a = m.attributes;
    assert.equal(fields.attributesUnread, false);
    assert.equal(m.attributes, a, 'the same object on every read');
    assert.deepEqual(a, sent.attributes);
    assert.equal(fields.unread, true, 'reading the attributes makes no prefix list');
  });

  it('reads as the plain message: keys, spread, JSON, deep equality, encoding', () => {
    assert.deepEqual(Object.keys(decode()), ['type', 'withdrawn', 'attributes', 'nlri']);
    assert.deepEqual(plain({ ...decode() }), plain(sent));
    assert.deepEqual({ ...decode().attributes }, sent.attributes);
    assert.deepEqual(encodeMessage(decode()), bytes, 'encodes back to the same octets');
  });

  it('takes attributes set before they were read, and offers no octets then', () => {
    const m = decode();
    m.attributes = { origin: 'egp', asPath: [], nextHop: '192.0.2.9' };
    assert.equal(receivedAttributes(m), undefined);
    assert.deepEqual(m.attributes, { origin: 'egp', asPath: [], nextHop: '192.0.2.9' });
    assert.equal(receivedNlri(m)!.attributesUnread, false);
  });

  it('still finds every problem when decoding, with the attributes made for the error', () => {
    const badOrigin = Buffer.from(bytes);
    // ORIGIN is the first attribute: flags, type 1, length 1, value.
    const at = attributeOctets(badOrigin).byteOffset - badOrigin.byteOffset + 3;
    assert.equal(badOrigin[at], 0);
    badOrigin[at] = 3;
    assert.throws(
      () => decode(badOrigin),
      (e: unknown) =>
        e instanceof BgpError &&
        e.subcode === UpdateSubcode.INVALID_ORIGIN_ATTRIBUTE &&
        e.action === 'treat-as-withdraw' &&
        e.update?.attributes.med === 7,
    );
    const noNextHop = encodeMessage({ ...sent, attributes: { origin: 'igp', asPath: [] } });
    assert.throws(
      () => decode(noNextHop),
      (e: unknown) => e instanceof BgpError && e.subcode === UpdateSubcode.MISSING_WELL_KNOWN_ATTRIBUTE && e.action === 'treat-as-withdraw',
    );
    // A withdrawal alone needs no mandatory attribute.
    const withdrawal = decode(encodeMessage({ type: 'update', withdrawn: [{ prefix: '10.0.0.0/8' }], attributes: {}, nlri: [] }));
    assert.deepEqual(withdrawal.attributes, {});
  });

  it('makes MP attributes on demand too, and their lists as the eager decode does', () => {
    const mp = encodeMessage({
      type: 'update',
      withdrawn: [],
      attributes: {
        ...sent.attributes,
        nextHop: undefined,
        mpReach: { afi: 2, safi: 1, nextHop: '2001:db8::1', linkLocalNextHop: 'fe80::1', nlri: [{ prefix: '2001:db8::/32' }] },
        mpUnreach: { afi: 2, safi: 1, withdrawn: [{ prefix: '2001:db8:1::/48' }] },
      },
      nlri: [],
    });
    const m = decode(mp);
    assert.equal(attributesUnread(m), true);
    assert.equal(receivedNlri(m), undefined, 'no IPv4 prefixes');
    const octets = attributeOctets(mp);
    assert.deepEqual(m.attributes, decodeAttributes(octets, 0, octets.length, { fourOctetAs: true }, []));
    assert.equal(m.attributes.mpReach?.nlri?.[0].prefix, '2001:db8::/32');
    assert.equal(attributesUnread(m), false);
  });

  it('decodes at once MP attributes of a family it does not know or with ADD-PATH, and a 2-octet AS session', () => {
    const withPathIds = encodeMessage(
      {
        ...sent,
        attributes: {
          ...sent.attributes,
          mpReach: { afi: 2, safi: 1, nextHop: '2001:db8::1', nlri: [{ prefix: '2001:db8::/32', pathId: 1 }] },
        },
      },
      { addPath: { 'ipv6-unicast': true } },
    );
    const added = decodeMessage(withPathIds, { fourOctetAs: true, addPath: { 'ipv6-unicast': true } }) as UpdateMessage;
    assert.equal(attributesUnread(added), false);
    assert.equal(added.attributes.mpReach?.nlri?.[0].pathId, 1);
    const vpn = encodeMessage({
      ...sent,
      attributes: { ...sent.attributes, mpReach: { afi: 1, safi: 128, raw: Buffer.from([4, 192, 0, 2, 1, 0]) } },
    });
    assert.equal(attributesUnread(decode(vpn)), false);
    const twoOctet = encodeMessage(
      { ...sent, attributes: { ...sent.attributes, asPath: [{ type: 'sequence', asns: [65001] }] } },
      { fourOctetAs: false },
    );
    const m = decodeMessage(twoOctet, { fourOctetAs: false }) as UpdateMessage;
    assert.equal(receivedNlri(m)!.attributesUnread, false);
    assert.deepEqual(m.attributes.asPath, [{ type: 'sequence', asns: [65001] }]);
  });

  it('makes, for every UPDATE of a route collector dump, what the eager decode makes', function () {
    this.timeout(60_000);
    const MRT = new URL('../../data/updates.20190101.0000.gz', import.meta.url).pathname;
    let lazy = 0;
    let updates = 0;
    for (const r of readMrtFile(MRT)) {
      if (r.kind !== 'message') continue;
      const problems: Problem[] = [];
      let m: UpdateMessage;
      try {
        const d = decodeMessage(r.message, { fourOctetAs: r.fourOctetAs });
        if (d.type !== 'update') continue;
        m = d;
      } catch (e) {
        if (!(e instanceof BgpError)) throw e;
        continue;
      }
      updates++;
      const octets = attributeOctets(r.message);
      if (attributesUnread(m)) lazy++;
      const eager = decodeAttributes(octets, 0, octets.length, { fourOctetAs: r.fourOctetAs }, problems);
      assert.deepEqual(problems, [], 'a message that decoded has attributes without problems');
      assert.deepEqual(m.attributes, eager);
    }
    assert.ok(lazy > 50_000, `UPDATEs whose attributes were made on demand: ${lazy} of ${updates}`);
  });
});
