// Messages the speaker builds: every kind encodes canonically and decodes back to itself.
import assert from 'node:assert/strict';
import {
  decodeMessage,
  encodeMessage,
  endOfRib,
  attributesUnread,
  endOfRibFamily,
  negotiatedOptions,
  MessageFramer,
  type BgpError,
  type BgpMessage,
  type CodecOptions,
  type OpenMessage,
  type UpdateMessage,
} from '../../../index.js';

function roundTrip(m: BgpMessage, options: CodecOptions = {}): Buffer {
  const bytes = encodeMessage(m, options);
  assert.deepEqual(decodeMessage(bytes, options), m);
  assert.deepEqual(encodeMessage(decodeMessage(bytes, options), options), bytes);
  return bytes;
}

const everyCapability: OpenMessage = {
  type: 'open',
  version: 4,
  myAs: 23456,
  holdTime: 9,
  bgpId: '192.0.2.1',
  capabilities: [
    { kind: 'multiprotocol', afi: 1, safi: 1 },
    { kind: 'multiprotocol', afi: 2, safi: 1 },
    { kind: 'route-refresh' },
    { kind: 'extended-next-hop', entries: [{ afi: 1, safi: 1, nextHopAfi: 2 }] },
    { kind: 'extended-message' },
    { kind: 'graceful-restart', restartFlags: 0x8, restartTime: 120, families: [{ afi: 1, safi: 1, flags: 0x80 }] },
    { kind: 'four-octet-as', asn: 4200000001 },
    {
      kind: 'add-path',
      families: [
        { afi: 1, safi: 1, mode: 3 },
        { afi: 2, safi: 1, mode: 1 },
      ],
    },
    { kind: 'enhanced-route-refresh' },
    { kind: 'long-lived-graceful-restart', families: [{ afi: 1, safi: 1, flags: 0, staleTime: 3600 }] },
    { kind: 'fqdn', hostname: 'node-1', domain: 'lab.example' },
    { kind: 'unknown', code: 128, value: Buffer.alloc(0) },
  ],
};

describe('codec messages', () => {
  it('OPEN with every capability', () => {
    const bytes = roundTrip(everyCapability);
    assert.equal(bytes[28], bytes.length - 29, 'one optional parameter holds them all');
  });

  it('OPEN with capabilities in one parameter each keeps that grouping', () => {
    const m: OpenMessage = { ...everyCapability, layout: { extended: false, groups: everyCapability.capabilities.map(() => 1) } };
    roundTrip(m);
  });

  it('OPEN over 255 octets of parameters uses the RFC 9072 extended form', () => {
    const many: OpenMessage = {
      ...everyCapability,
      capabilities: Array.from({ length: 60 }, (_, i) => ({ kind: 'multiprotocol' as const, afi: 1, safi: i + 1 })),
    };
    const bytes = encodeMessage(many);
    assert.equal(bytes[28], 255);
    assert.equal(bytes[29], 255);
    const back = decodeMessage(bytes) as OpenMessage;
    assert.deepEqual(back.capabilities, many.capabilities);
    assert.deepEqual(back.layout, { extended: true, groups: [60] });
  });

  it('a malformed known capability is kept raw, so the OPEN still re-encodes', () => {
    const m: OpenMessage = { ...everyCapability, capabilities: [{ kind: 'unknown', code: 65, value: Buffer.from([1, 2]) }] };
    roundTrip(m);
  });

  it('negotiates 4-octet AS, extended messages and ADD-PATH per direction', () => {
    const peer: OpenMessage = {
      ...everyCapability,
      capabilities: [
        { kind: 'multiprotocol', afi: 1, safi: 1 },
        { kind: 'multiprotocol', afi: 2, safi: 1 },
        { kind: 'four-octet-as', asn: 65002 },
        {
          kind: 'add-path',
          families: [
            { afi: 1, safi: 1, mode: 1 },
            { afi: 2, safi: 1, mode: 2 },
          ],
        },
      ],
    };
    const n = negotiatedOptions(everyCapability, peer);
    assert.deepEqual(n.families, ['ipv4-unicast', 'ipv6-unicast']);
    assert.deepEqual(n.send, { fourOctetAs: true, extendedMessage: false, addPath: { 'ipv4-unicast': true } });
    assert.deepEqual(n.receive, { fourOctetAs: true, extendedMessage: false, addPath: { 'ipv6-unicast': true } });
  });

  it('UPDATE with every attribute, canonical', () => {
    const m: UpdateMessage = {
      type: 'update',
      withdrawn: [{ prefix: '10.9.0.0/16', pathId: undefined }],
      attributes: {
        origin: 'egp',
        asPath: [
          { type: 'sequence', asns: [65001, 4200000001] },
          { type: 'set', asns: [1, 2] },
        ],
        nextHop: '192.0.2.1',
        med: 7,
        localPref: 200,
        atomicAggregate: true,
        aggregator: { asn: 65001, address: '192.0.2.9' },
        communities: [0xffffff01, ((65001 << 16) | 5) >>> 0],
        originatorId: '192.0.2.3',
        clusterList: ['1.1.1.1', '2.2.2.2'],
        mpReach: {
          afi: 2,
          safi: 1,
          nextHop: '2001:db8::1',
          linkLocalNextHop: 'fe80::1',
          nlri: [{ prefix: '2001:db8:1::/48', pathId: undefined }],
        },
        mpUnreach: { afi: 2, safi: 1, withdrawn: [{ prefix: '2001:db8:2::/48', pathId: undefined }] },
        extendedCommunities: [Buffer.from('0002fde900000064', 'hex')],
        as4Path: [{ type: 'sequence', asns: [4200000001] }],
        as4Aggregator: { asn: 4200000001, address: '192.0.2.9' },
        largeCommunities: [[4200000001, 1, 2]],
        unknown: [{ type: 201, flags: 0xe0, value: Buffer.from([9]) }],
      },
      nlri: [
        { prefix: '10.1.0.0/16', pathId: undefined },
        { prefix: '0.0.0.0/0', pathId: undefined },
        { prefix: '10.2.3.4/32', pathId: undefined },
      ],
    };
    const bytes = roundTrip(m);
    const types: number[] = [];
    let p = 21 + bytes.readUInt16BE(19) + 2;
    const end = p + bytes.readUInt16BE(p - 2);
    while (p < end) {
      types.push(bytes[p + 1]);
      p += (bytes[p] & 0x10 ? 4 : 3) + (bytes[p] & 0x10 ? bytes.readUInt16BE(p + 2) : bytes[p + 2]);
    }
    assert.deepEqual(
      types,
      [...types].sort((a, b) => a - b),
      'attributes in ascending type order',
    );
  });

  it('ADD-PATH path identifiers in both families', () => {
    const options: CodecOptions = { addPath: { 'ipv4-unicast': true, 'ipv6-unicast': true } };
    roundTrip(
      {
        type: 'update',
        withdrawn: [{ prefix: '10.0.0.0/8', pathId: 3 }],
        attributes: {
          origin: 'igp',
          asPath: [],
          nextHop: '192.0.2.1',
          mpReach: { afi: 2, safi: 1, nextHop: '2001:db8::1', nlri: [{ prefix: '2001:db8::/32', pathId: 7 }] },
        },
        nlri: [
          { prefix: '10.1.0.0/16', pathId: 1 },
          { prefix: '10.1.0.0/16', pathId: 2 },
        ],
      },
      options,
    );
  });

  it('IPv4 NLRI with an IPv6 next hop (RFC 8950)', () => {
    roundTrip({
      type: 'update',
      withdrawn: [],
      nlri: [],
      attributes: {
        origin: 'igp',
        asPath: [],
        mpReach: { afi: 1, safi: 1, nextHop: '2001:db8::1', nlri: [{ prefix: '10.0.0.0/8', pathId: undefined }] },
      },
    });
  });

  it('a 2-octet session refuses an AS that needs four octets, naming AS_TRANS', () => {
    const m: UpdateMessage = {
      type: 'update',
      withdrawn: [],
      nlri: [],
      attributes: { asPath: [{ type: 'sequence', asns: [4200000001] }] },
    };
    assert.throws(() => encodeMessage(m, { fourOctetAs: false }), /AS_TRANS/);
  });

  it('End-of-RIB markers for both families', () => {
    for (const family of ['ipv4-unicast', 'ipv6-unicast'] as const) {
      const bytes = roundTrip(endOfRib(family));
      assert.equal(endOfRibFamily(decodeMessage(bytes) as UpdateMessage), family);
    }
    assert.equal(encodeMessage(endOfRib('ipv4-unicast')).length, 23);
    assert.equal(endOfRibFamily({ type: 'update', withdrawn: [], nlri: [], attributes: { origin: 'igp' } }), undefined);
  });

  it('End-of-RIB read from the octets of attributes not yet made, as from the objects', () => {
    const header = (length: number) => [...new Array(16).fill(0xff), length >> 8, length & 255, 2];
    const update = (attrs: number[]) => Buffer.from([...header(23 + attrs.length), 0, 0, 0, attrs.length, ...attrs]);
    const cases: Array<[string, number[], string | undefined]> = [
      ['IPv6', [0x80, 15, 3, 0, 2, 1], 'ipv6-unicast'],
      ['IPv6, extended length', [0x90, 15, 0, 3, 0, 2, 1], 'ipv6-unicast'],
      ['IPv4 in MP_UNREACH_NLRI', [0x80, 15, 3, 0, 1, 1], 'ipv4-unicast'],
      ['a withdrawn prefix', [0x80, 15, 5, 0, 2, 1, 8, 0x20], undefined],
      ['another attribute after it', [0x80, 15, 3, 0, 2, 1, 0x40, 1, 1, 0], undefined],
    ];
    for (const [what, attrs, family] of cases) {
      const m = decodeMessage(update(attrs)) as UpdateMessage;
      assert.equal(attributesUnread(m), true, `${what}: attributes left unread`);
      assert.equal(endOfRibFamily(m), family, what);
      assert.equal(attributesUnread(m), true, `${what}: the answer made no attribute object`);
      const made = decodeMessage(update(attrs)) as UpdateMessage;
      assert.ok(made.attributes !== undefined, 'attributes made');
      assert.equal(endOfRibFamily(made), family, `${what}, from the objects`);
    }
  });

  it('NOTIFICATION with an RFC 8203 shutdown communication', () => {
    const bytes = roundTrip({
      type: 'notification',
      code: 6,
      subcode: 2,
      data: Buffer.from('0f6d61696e74656e616e636520e29c93', 'hex'),
      shutdownCommunication: 'maintenance ✓',
    });
    assert.equal(bytes[21], 15);
    const long = decodeMessage(
      encodeMessage({ type: 'notification', code: 6, subcode: 2, data: Buffer.alloc(0), shutdownCommunication: 'é'.repeat(200) }),
    );
    assert.ok(long.type === 'notification' && long.shutdownCommunication === 'é'.repeat(127), 'cut to 255 octets on a character boundary');
    roundTrip({ type: 'notification', code: 3, subcode: 5, data: Buffer.from([0x40, 1, 2, 0, 0]) });
  });

  it('KEEPALIVE and ROUTE-REFRESH with BoRR/EoRR', () => {
    assert.equal(roundTrip({ type: 'keepalive' }).length, 19);
    for (const subtype of [0, 1, 2]) roundTrip({ type: 'route-refresh', afi: 2, safi: 1, subtype });
  });

  it('an UPDATE over the session limit is refused, and allowed with extended messages', () => {
    const nlri = Array.from({ length: 2000 }, (_, i) => ({ prefix: `10.${i >> 8}.${i & 255}.0/24`, pathId: undefined }));
    const m: UpdateMessage = { type: 'update', withdrawn: [], attributes: { origin: 'igp', asPath: [], nextHop: '192.0.2.1' }, nlri };
    assert.throws(() => encodeMessage(m), RangeError);
    roundTrip(m, { extendedMessage: true });
  });
});

describe('MessageFramer', () => {
  const msgs = [encodeMessage({ type: 'keepalive' }), encodeMessage(endOfRib('ipv6-unicast')), encodeMessage(everyCapability)];
  const stream = Buffer.concat(msgs);

  it('cuts a stream delivered one octet at a time', () => {
    const f = new MessageFramer();
    const out: Buffer[] = [];
    for (let i = 0; i < stream.length; i++) out.push(...f.push(stream.subarray(i, i + 1)));
    assert.deepEqual(out, msgs);
    assert.equal(f.buffered, 0);
  });

  it('cuts many messages from one chunk, keeping a partial tail', () => {
    const f = new MessageFramer();
    assert.deepEqual(f.push(Buffer.concat([stream, stream.subarray(0, 10)])), msgs);
    assert.equal(f.buffered, 10);
    assert.deepEqual(f.push(stream.subarray(10)), msgs);
  });

  it('refuses a length over 4096 before the message arrives, and accepts it at 65535', () => {
    const h = Buffer.alloc(19, 0xff);
    h.writeUInt16BE(5000, 16);
    h[18] = 2;
    assert.throws(
      () => new MessageFramer().push(h),
      (e: BgpError) => e.code === 1 && e.subcode === 2,
    );
    assert.deepEqual(new MessageFramer({ maxLength: 65535 }).push(h), []);
  });

  it('refuses a bad marker at once', () => {
    assert.throws(
      () => new MessageFramer().push(Buffer.alloc(19)),
      (e: BgpError) => e.code === 1 && e.subcode === 1,
    );
  });
});
