// decodeReceivedMessage hands an UPDATE back as received: the octets readable at once, the
// message made only when asked for, and then the same message decodeMessage gives.
import assert from 'node:assert/strict';
import {
  attributesUnread,
  decodeMessage,
  decodeReceivedMessage,
  encodeMessage,
  endOfRib,
  endOfRibFamily,
  receivedAttributes,
  receivedNlri,
  receivedUpdate,
  updateMessageOf,
  withoutIpv4Prefixes,
  type ReceivedUpdate,
  type UpdateMessage,
} from '../../../bgp/codec/index.js';

const options = { fourOctetAs: true };
const ipv4: UpdateMessage = {
  type: 'update',
  withdrawn: [{ prefix: '172.16.0.0/12' }],
  attributes: { origin: 'igp', asPath: [{ type: 'sequence', asns: [65001] }], nextHop: '192.0.2.1', med: 7 },
  nlri: [{ prefix: '10.0.0.0/8' }, { prefix: '192.0.2.128/25' }],
};
const ipv6: UpdateMessage = {
  type: 'update',
  withdrawn: [],
  attributes: {
    origin: 'igp',
    asPath: [{ type: 'sequence', asns: [65001] }],
    mpReach: { afi: 2, safi: 1, nextHop: '2001:db8::1', nlri: [{ prefix: '2001:db8:1::/48' }] },
  },
  nlri: [],
};

function received(m: UpdateMessage): ReceivedUpdate {
  const r = decodeReceivedMessage(encodeMessage(m, options), options);
  assert.equal(r.type, 'update');
  return r as ReceivedUpdate;
}

describe('codec: an UPDATE as received', () => {
  it('its octets are read without the message, and its message is decodeMessage’s, made once', () => {
    const r = received(ipv4);
    const fields = receivedNlri(r)!;
    assert.equal(fields.withdrawnCount, 1);
    assert.equal(fields.nlriCount, 2);
    assert.equal(fields.unread, true);
    assert.equal(attributesUnread(r), true);
    assert.equal(withoutIpv4Prefixes(r), false);
    assert.deepEqual(receivedAttributes(r), receivedAttributes(decodeMessage(encodeMessage(ipv4, options), options) as UpdateMessage));
    const m = r.message;
    assert.equal(r.message, m, 'the same message on every read');
    assert.equal(updateMessageOf(r), m);
    assert.equal(fields.unread, true, 'making the message reads no prefix list');
    assert.equal(receivedNlri(m), fields, 'the message leads back to the same octets');
    assert.deepEqual(
      m.nlri.map((n) => n.prefix),
      ['10.0.0.0/8', '192.0.2.128/25'],
    );
    assert.equal(fields.unread, false, 'a list read through the message is read');
    assert.deepEqual(m, decodeMessage(encodeMessage(ipv4, options), options));
  });

  it('a list set on the message is seen through the received UPDATE', () => {
    const r = received(ipv4);
    r.message.nlri = [{ prefix: '10.9.0.0/16' }];
    assert.equal(receivedNlri(r), undefined, 'its octets no longer say what it holds');
    assert.equal(withoutIpv4Prefixes(r), false);
    r.message.nlri = [];
    r.message.withdrawn = [];
    assert.equal(withoutIpv4Prefixes(r), true);
  });

  it('an IPv6 UPDATE has no IPv4 prefixes, told from the octets', () => {
    const r = received(ipv6);
    assert.equal(withoutIpv4Prefixes(r), true);
    assert.equal(receivedNlri(r), undefined);
    assert.equal(endOfRibFamily(r), undefined);
    assert.equal(attributesUnread(r), true, 'neither test made the attributes');
  });

  it('a withdrawal’s attributes are empty octets, read without the message', () => {
    const r = received({ type: 'update', withdrawn: [{ prefix: '10.1.0.0/16' }], attributes: {}, nlri: [] });
    assert.equal(receivedAttributes(r)?.length, 0);
    assert.equal(attributesUnread(r), true);
    assert.equal(receivedNlri(r)?.withdrawnCount, 1);
  });

  it('End-of-RIB is told from a received UPDATE as from its message', () => {
    assert.equal(endOfRibFamily(received(endOfRib('ipv4-unicast'))), 'ipv4-unicast');
    assert.equal(endOfRibFamily(received(endOfRib('ipv6-unicast'))), 'ipv6-unicast');
  });

  it('receivedUpdate: a decoded message leads to its octets, a built one stands alone', () => {
    const decoded = decodeMessage(encodeMessage(ipv4, options), options) as UpdateMessage;
    const r = receivedUpdate(decoded);
    assert.equal(r.message, decoded);
    assert.equal(receivedNlri(r)?.nlriCount, 2);
    const built = receivedUpdate(ipv4);
    assert.equal(built.message, ipv4);
    assert.equal(receivedNlri(built), undefined);
    assert.equal(receivedAttributes(built), undefined);
    assert.equal(withoutIpv4Prefixes(built), false);
    assert.equal(endOfRibFamily(receivedUpdate(endOfRib('ipv4-unicast'))), 'ipv4-unicast');
  });
});
