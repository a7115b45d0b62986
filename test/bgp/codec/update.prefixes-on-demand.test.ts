// A decoded UPDATE's prefix lists are made when first read. Until then the message must look,
// to every way of reading it, like the plain object it always was; the octets must have been
// checked at decode time all the same.
import assert from 'node:assert/strict';
import {
  BgpError,
  ErrorCode,
  UpdateSubcode,
  decodeMessage,
  encodeMessage,
  endOfRibFamily,
  receivedAttributes,
  receivedNlri,
  type UpdateMessage,
} from '../../../bgp/codec/index.js';

const sent: UpdateMessage = {
  type: 'update',
  withdrawn: [{ prefix: '172.16.0.0/12' }],
  attributes: { origin: 'igp', asPath: [{ type: 'sequence', asns: [65001] }], nextHop: '192.0.2.1' },
  nlri: [{ prefix: '10.0.0.0/8' }, { prefix: '192.0.2.128/25' }],
};
const bytes = encodeMessage(sent);
const decode = () => decodeMessage(bytes, { fourOctetAs: true }) as UpdateMessage;
const plain = (m: UpdateMessage) => JSON.parse(JSON.stringify(m));

describe('codec: prefix lists made on demand', () => {
  it('counts the prefixes without making them, and makes them once when read', () => {
    const m = decode();
    const fields = receivedNlri(m)!;
    assert.equal(fields.unread, true);
    assert.equal(fields.withdrawnCount, 1);
    assert.equal(fields.nlriCount, 2);
    assert.equal(endOfRibFamily(m), undefined);
    assert.equal(fields.unread, true, 'the End-of-RIB test reads the counts');
    const list = m.nlri;
    assert.equal(fields.unread, false);
    assert.equal(m.nlri, list, 'the same array on every read');
    assert.deepEqual(list, [
      { prefix: '10.0.0.0/8', pathId: undefined },
      { prefix: '192.0.2.128/25', pathId: undefined },
    ]);
  });

  it('reads as the plain message: keys, spread, JSON, deep equality', () => {
    assert.deepEqual(Object.keys(decode()), ['type', 'withdrawn', 'attributes', 'nlri']);
    assert.deepEqual(plain({ ...decode() }), plain(sent));
    assert.deepEqual(plain(decode()), plain(sent));
    const m = decode();
    assert.deepEqual(
      { ...m, attributes: { ...m.attributes } },
      { ...sent, withdrawn: [{ prefix: '172.16.0.0/12', pathId: undefined }], nlri: m.nlri },
    );
    assert.deepEqual(encodeMessage(decode()), bytes, 'encodes back to the same octets');
  });

  it('leaves the octets behind in a copy, which says what it holds only through its lists', () => {
    const m = decode();
    assert.ok(receivedNlri(m) !== undefined, 'the decoded message has its octets');
    assert.equal(receivedNlri({ ...m }), undefined);
    assert.equal(receivedNlri(structuredClone(m)), undefined);
    assert.equal(receivedAttributes({ ...m }), undefined);
  });

  it('takes a list set before it was read, and forgets the octets then', () => {
    const m = decode();
    m.nlri = [{ prefix: '198.51.100.0/24' }];
    assert.equal(receivedNlri(m), undefined);
    assert.deepEqual(m.nlri, [{ prefix: '198.51.100.0/24' }]);
    assert.equal(m.withdrawn.length, 1);
  });

  it('still refuses a bad prefix field when decoding', () => {
    const bad = Buffer.from(bytes);
    // The last prefix (/25, 4 octets) claims 33 bits: Invalid Network Field, at decode time.
    bad[bad.length - 5] = 33;
    assert.throws(
      () => decodeMessage(bad, { fourOctetAs: true }),
      (e: unknown) => e instanceof BgpError && e.code === ErrorCode.UPDATE_MESSAGE && e.subcode === UpdateSubcode.INVALID_NETWORK_FIELD,
    );
  });

  it('gives a message with problems its lists made, as before', () => {
    const noNextHop = encodeMessage({ ...sent, attributes: { origin: 'igp', asPath: [] } });
    try {
      decodeMessage(noNextHop, { fourOctetAs: true });
      assert.fail('decoded an announcement without NEXT_HOP');
    } catch (e) {
      assert.ok(e instanceof BgpError && e.update !== undefined, `want a BgpError carrying the UPDATE, got ${String(e)}`);
      assert.equal(receivedNlri(e.update), undefined);
      assert.deepEqual(
        e.update.nlri.map((n) => n.prefix),
        ['10.0.0.0/8', '192.0.2.128/25'],
      );
    }
  });
});
