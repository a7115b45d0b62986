// One test per error case of RFC 4271 §6.1–6.3 and RFC 7606 §7: the code, the subcode,
// the NOTIFICATION data where the RFC gives it, and the action the session must take.
import assert from 'node:assert/strict';
import { BgpError, decodeMessage, encodeMessage, type CodecOptions, type ErrorAction, type OpenMessage } from '../../../index.js';
import { checkPeerOpen } from '../../../bgp/fsm/index.js';
import { asPath4, attr, header, mandatory, nextHop, nlri16, origin, rawUpdate } from './build.js';

function expectError(
  bytes: Buffer,
  code: number,
  subcode: number,
  action: ErrorAction,
  options: CodecOptions = {},
  data?: Buffer,
): BgpError {
  try {
    decodeMessage(bytes, options);
  } catch (e) {
    assert.ok(e instanceof BgpError, `expected a BgpError, got ${String(e)}`);
    assert.equal(`${e.code}/${e.subcode}`, `${code}/${subcode}`, e.message);
    assert.equal(e.action, action, e.message);
    if (data) assert.deepEqual(e.data, data);
    return e;
  }
  assert.fail('decoded without an error');
}

const validOpen: OpenMessage = {
  type: 'open',
  version: 4,
  myAs: 65001,
  holdTime: 90,
  bgpId: '10.0.0.1',
  capabilities: [
    { kind: 'multiprotocol', afi: 1, safi: 1 },
    { kind: 'four-octet-as', asn: 65001 },
  ],
};

describe('codec errors: RFC 4271 §6.1 message header', () => {
  it('a marker that is not all ones is 1/1 Connection Not Synchronized', () => {
    const m = encodeMessage({ type: 'keepalive' });
    m[3] = 0;
    expectError(m, 1, 1, 'session-reset');
  });
  it('a length under 19 is 1/2 Bad Message Length with the length as data', () => {
    expectError(header(4, Buffer.alloc(0), 18).subarray(0, 19), 1, 2, 'session-reset', {}, Buffer.from([0, 18]));
  });
  it('a length over 4096 is 1/2, but not once extended messages are agreed', () => {
    const body = Buffer.alloc(5000 - 19);
    const big = rawUpdate(Buffer.alloc(0), Buffer.alloc(0), Buffer.alloc(0));
    const m = header(2, Buffer.concat([big.subarray(19), body.subarray(4)]));
    expectError(m, 1, 2, 'session-reset', {}, Buffer.from([0x13, 0x88]));
    assert.throws(
      () => decodeMessage(m, { extendedMessage: true }),
      (e: BgpError) => e.subcode !== 2 || e.code !== 1,
    );
  });
  it('an OPEN shorter than 29 octets is 1/2', () => expectError(header(1, Buffer.alloc(9)), 1, 2, 'session-reset'));
  it('an UPDATE shorter than 23 octets is 1/2', () => expectError(header(2, Buffer.alloc(3)), 1, 2, 'session-reset'));
  it('a NOTIFICATION shorter than 21 octets is 1/2', () => expectError(header(3, Buffer.alloc(1)), 1, 2, 'session-reset'));
  it('a KEEPALIVE that is not 19 octets is 1/2', () =>
    expectError(header(4, Buffer.alloc(1)), 1, 2, 'session-reset', {}, Buffer.from([0, 20])));
  it('an unknown message type is 1/3 Bad Message Type with the type as data', () => {
    expectError(header(9, Buffer.alloc(0)), 1, 3, 'session-reset', {}, Buffer.from([9]));
  });
  it('a header that says another length than the octets given is 1/2', () => {
    expectError(Buffer.concat([encodeMessage({ type: 'keepalive' }), Buffer.alloc(1)]), 1, 2, 'session-reset');
  });
  it('a ROUTE-REFRESH BoRR of the wrong length is 7/1 with the message as data (RFC 7313)', () => {
    const m = header(5, Buffer.from([0, 1, 1, 1, 0]));
    expectError(m, 7, 1, 'session-reset', {}, m);
  });
});

describe('codec errors: RFC 4271 §6.2 OPEN', () => {
  const open = encodeMessage(validOpen);
  it('version 3 is 2/1 Unsupported Version Number, data the version we support', () => {
    const m = Buffer.from(open);
    m[19] = 3;
    expectError(m, 2, 1, 'session-reset', {}, Buffer.from([0, 4]));
  });
  it('a peer AS other than the configured one is 2/2 Bad Peer AS (session check)', () => {
    const peer = { holdTime: 90, asNumber: 65001, bgpIdentifier: 0x0a000001 };
    assert.equal(checkPeerOpen(peer, { peerAs: 65001, localAs: 65000, localBgpId: 0x0a000002 }), null);
    const e = checkPeerOpen(peer, { peerAs: 65002, localAs: 65000, localBgpId: 0x0a000002 });
    assert.equal(`${e?.code}/${e?.subcode}`, '2/2');
  });
  it('BGP identifier 0.0.0.0 is 2/3 Bad BGP Identifier', () => {
    const m = Buffer.from(open);
    m.writeUInt32BE(0, 24);
    expectError(m, 2, 3, 'session-reset');
  });
  it('an iBGP peer with our own BGP identifier is 2/3 (session check, RFC 6286)', () => {
    const e = checkPeerOpen(
      { holdTime: 90, asNumber: 65001, bgpIdentifier: 0x0a000009 },
      { peerAs: 65001, localAs: 65001, localBgpId: 0x0a000009 },
    );
    assert.equal(`${e?.code}/${e?.subcode}`, '2/3');
  });
  it('an optional parameter other than capabilities is 2/4 Unsupported Optional Parameter', () => {
    const body = Buffer.from([4, 0xfd, 0xe9, 0, 90, 10, 0, 0, 1, 3, 1, 1, 0]);
    expectError(header(1, body), 2, 4, 'session-reset');
  });
  it('hold time 1 or 2 is 2/6 Unacceptable Hold Time', () => {
    for (const hold of [1, 2]) {
      const m = Buffer.from(open);
      m.writeUInt16BE(hold, 22);
      expectError(m, 2, 6, 'session-reset');
    }
  });
  it('optional parameters that overrun the message are 2/0', () => {
    const m = Buffer.from(open);
    m[28] += 1;
    expectError(m, 2, 0, 'session-reset');
  });
});

describe('codec errors: RFC 4271 §6.3 UPDATE and RFC 7606', () => {
  it('a withdrawn routes length that overruns the message is 3/1, session reset', () => {
    const m = rawUpdate(Buffer.alloc(0), Buffer.alloc(0), Buffer.alloc(0));
    m.writeUInt16BE(10, 19);
    expectError(m, 3, 1, 'session-reset');
  });
  it('a total path attribute length that overruns the message is 3/1, session reset', () => {
    const m = rawUpdate(Buffer.alloc(0), mandatory(), Buffer.alloc(0));
    m.writeUInt16BE(200, 21);
    expectError(m, 3, 1, 'session-reset');
  });
  it('an unrecognized well-known attribute is 3/2, session reset, data the attribute', () => {
    const bad = attr(0x40, 99, [1, 2]);
    expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([mandatory(), bad]), nlri16), 3, 2, 'session-reset', {}, bad);
  });
  it('a missing well-known attribute is 3/3, treat-as-withdraw, and the prefixes come with the error', () => {
    const e = expectError(
      rawUpdate(Buffer.alloc(0), Buffer.concat([origin(), asPath4(65001)]), nlri16),
      3,
      3,
      'treat-as-withdraw',
      {},
      Buffer.from([3]),
    );
    assert.deepEqual(e.update?.nlri, [{ prefix: '10.1.0.0/16', pathId: undefined }]);
  });
  it('no NEXT_HOP is not an error when there is no IPv4 NLRI (RFC 7606 §3 (d))', () => {
    const m = decodeMessage(rawUpdate(Buffer.from([8, 10]), Buffer.concat([origin(), asPath4(65001)]), Buffer.alloc(0)));
    assert.equal(m.type, 'update');
  });
  it('well-known flags on an optional attribute are 3/4, handled as that attribute is', () => {
    expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([mandatory(), attr(0x40, 4, [0, 0, 0, 1])]), nlri16), 3, 4, 'treat-as-withdraw');
    const e = expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([mandatory(), attr(0xc0, 6, [])]), nlri16), 3, 4, 'attribute-discard');
    assert.equal(e.update?.attributes.atomicAggregate, undefined);
    assert.equal(e.update?.attributes.nextHop, '10.0.0.1');
  });
  it('ORIGIN of length 2 is 3/5 and an ORIGIN value of 3 is 3/6; both treat-as-withdraw (§7.1)', () => {
    const base = [asPath4(65001), nextHop(10, 0, 0, 1)];
    expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([attr(0x40, 1, [0, 0]), ...base]), nlri16), 3, 5, 'treat-as-withdraw');
    expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([origin(3), ...base]), nlri16), 3, 6, 'treat-as-withdraw');
  });
  it('NEXT_HOP of length 5 is 3/5 and NEXT_HOP 0.0.0.0 is 3/8; both treat-as-withdraw (§7.3)', () => {
    const base = [origin(), asPath4(65001)];
    expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([...base, nextHop(10, 0, 0, 1, 1)]), nlri16), 3, 5, 'treat-as-withdraw');
    expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([...base, nextHop(0, 0, 0, 0)]), nlri16), 3, 8, 'treat-as-withdraw');
    expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([...base, nextHop(224, 0, 0, 5)]), nlri16), 3, 8, 'treat-as-withdraw');
  });
  it('an invalid network field (prefix length 33) is 3/10, session reset', () => {
    expectError(rawUpdate(Buffer.alloc(0), mandatory(), Buffer.from([33, 10, 0, 0, 0, 0])), 3, 10, 'session-reset');
    expectError(rawUpdate(Buffer.from([24, 10, 0]), Buffer.alloc(0), Buffer.alloc(0)), 3, 10, 'session-reset');
  });
  it('a malformed AS_PATH is 3/11, treat-as-withdraw (§7.2): bad segment type, zero length, overrun', () => {
    for (const v of [
      [5, 1, 0, 0, 0, 1],
      [2, 0],
      [2, 2, 0, 0, 0, 1],
    ]) {
      const attrs = Buffer.concat([origin(), attr(0x40, 2, v), nextHop(10, 0, 0, 1)]);
      expectError(rawUpdate(Buffer.alloc(0), attrs, nlri16), 3, 11, 'treat-as-withdraw');
    }
  });
  it('AS_PATH read with 2-octet ASes when the session has no 4-octet AS', () => {
    const attrs = Buffer.concat([origin(), attr(0x40, 2, [2, 2, 0xfd, 0xe9, 0xfd, 0xea]), nextHop(10, 0, 0, 1)]);
    const m = decodeMessage(rawUpdate(Buffer.alloc(0), attrs, nlri16), { fourOctetAs: false });
    assert.ok(m.type === 'update', `decoded a ${m.type}, not an update`);
    assert.deepEqual(m.attributes.asPath, [{ type: 'sequence', asns: [65001, 65002] }]);
  });
  const lengthCases: Array<[string, Buffer, number, ErrorAction]> = [
    ['MED of length 3 (§7.4)', attr(0x80, 4, [0, 0, 1]), 5, 'treat-as-withdraw'],
    ['LOCAL_PREF of length 2 (§7.5)', attr(0x40, 5, [0, 1]), 5, 'treat-as-withdraw'],
    ['ATOMIC_AGGREGATE of length 1 (§7.6)', attr(0x40, 6, [1]), 5, 'attribute-discard'],
    ['AGGREGATOR of length 7 (§7.7)', attr(0xc0, 7, [0, 0, 0, 1, 10, 0, 0]), 5, 'attribute-discard'],
    ['COMMUNITIES of length 5 (§7.8)', attr(0xc0, 8, [0, 0, 0, 1, 2]), 5, 'treat-as-withdraw'],
    ['ORIGINATOR_ID of length 3 (§7.9)', attr(0x80, 9, [10, 0, 0]), 5, 'treat-as-withdraw'],
    ['CLUSTER_LIST of length 6 (§7.10)', attr(0x80, 10, [10, 0, 0, 1, 0, 0]), 5, 'treat-as-withdraw'],
    ['EXTENDED_COMMUNITIES of length 7 (§7.14)', attr(0xc0, 16, [0, 2, 0, 0, 0, 0, 1]), 5, 'treat-as-withdraw'],
    ['LARGE_COMMUNITY of length 11 (RFC 8092)', attr(0xc0, 32, Array(11).fill(1)), 5, 'treat-as-withdraw'],
    ['AS4_PATH with a bad segment (RFC 6793 §6)', attr(0xc0, 17, [9, 1, 0, 0, 0, 1]), 9, 'attribute-discard'],
    ['AS4_AGGREGATOR of length 6 (RFC 6793 §6)', attr(0xc0, 18, [0, 1, 10, 0, 0, 1]), 5, 'attribute-discard'],
  ];
  for (const [name, bad, subcode, action] of lengthCases) {
    it(`${name} is 3/${subcode}, ${action}, data the attribute`, () => {
      const e = expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([mandatory(), bad]), nlri16), 3, subcode, action, {}, bad);
      assert.deepEqual(
        e.update?.nlri.map((n) => n.prefix),
        ['10.1.0.0/16'],
        'the prefixes are not lost',
      );
    });
  }
  it('MP_REACH_NLRI with an impossible next hop length is 3/9, session reset (§7.11)', () => {
    const mp = attr(0x80, 14, [0, 2, 1, 7, 1, 2, 3, 4, 5, 6, 7, 0]);
    expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([origin(), asPath4(65001), mp]), Buffer.alloc(0)), 3, 9, 'session-reset');
  });
  it('MP_REACH_NLRI whose prefix overruns it is 3/9, session reset (§7.11)', () => {
    const nh = Array(16)
      .fill(0)
      .map((_, i) => (i === 0 ? 0x20 : i === 15 ? 1 : 0));
    const mp = attr(0x80, 14, [0, 2, 1, 16, ...nh, 0, 64, 0x20, 1]);
    expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([origin(), asPath4(65001), mp]), Buffer.alloc(0)), 3, 9, 'session-reset');
  });
  it('an attribute that appears twice is discarded; the first one stays (§3 (g))', () => {
    const e = expectError(
      rawUpdate(Buffer.alloc(0), Buffer.concat([mandatory(), attr(0x80, 4, [0, 0, 0, 5]), attr(0x80, 4, [0, 0, 0, 6])]), nlri16),
      3,
      1,
      'attribute-discard',
    );
    assert.equal(e.update?.attributes.med, 5);
  });
  it('MP_UNREACH_NLRI twice is a session reset (§3 (g))', () => {
    const mp = attr(0x80, 15, [0, 2, 1]);
    expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([mp, mp]), Buffer.alloc(0)), 3, 1, 'session-reset');
  });
  it('an attribute that overruns the attribute field is treat-as-withdraw; the NLRI is still found (§4)', () => {
    const overrun = Buffer.from([0x80, 4, 200, 0, 0]);
    const e = expectError(rawUpdate(Buffer.alloc(0), Buffer.concat([mandatory(), overrun]), nlri16), 3, 5, 'treat-as-withdraw');
    assert.deepEqual(
      e.update?.nlri.map((n) => n.prefix),
      ['10.1.0.0/16'],
    );
  });
  it('the most severe problem of several decides the action', () => {
    const attrs = Buffer.concat([mandatory(), attr(0x40, 6, [1]), attr(0x80, 4, [0, 1])]);
    expectError(rawUpdate(Buffer.alloc(0), attrs, nlri16), 3, 5, 'treat-as-withdraw');
  });
  it('an unknown optional transitive attribute is kept and re-encoded as received', () => {
    const unknown = attr(0xe0, 200, [1, 2, 3]);
    const bytes = rawUpdate(Buffer.alloc(0), Buffer.concat([mandatory(), unknown]), nlri16);
    const m = decodeMessage(bytes);
    assert.ok(m.type === 'update', `decoded a ${m.type}, not an update`);
    assert.deepEqual(m.attributes.unknown, [{ type: 200, flags: 0xe0, value: Buffer.from([1, 2, 3]) }]);
    assert.deepEqual(encodeMessage(m), bytes);
  });
});
