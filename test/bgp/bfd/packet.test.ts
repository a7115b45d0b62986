// The Control packet of RFC 5880 §4.1, and the discard rules of §6.8.6 that a packet fails alone.
import assert from 'node:assert/strict';
import { decodeControlPacket, encodeControlPacket, type BfdControlPacket } from '../../../bgp/bfd/index.js';
import { remote } from './helpers.js';

const hex = (s: string) => Buffer.from(s.replace(/\s/g, ''), 'hex');

/** A valid packet as on the wire: v1, diag 0, Up, P, mult 3, my 1, your 2, 300 ms / 300 ms / 0. */
const WIRE = hex('20 e0 03 18 00000001 00000002 000493e0 000493e0 00000000');

function withByte(b: Buffer, i: number, v: number): Buffer {
  const c = Buffer.from(b);
  c[i] = v;
  return c;
}

describe('BFD Control packet (RFC 5880 §4.1, §6.8.6)', () => {
  it('§4.1: decodes every field of a packet as on the wire', () => {
    const r = decodeControlPacket(WIRE);
    assert.equal(r.error, undefined);
    const p = r.packet!;
    assert.equal(p.state, 'Up');
    assert.equal(p.poll, true);
    assert.equal(p.final, false);
    assert.equal(p.detectMult, 3);
    assert.equal(p.myDiscriminator, 1);
    assert.equal(p.yourDiscriminator, 2);
    assert.equal(p.desiredMinTxInterval, 300_000);
    assert.equal(p.requiredMinRxInterval, 300_000);
    assert.equal(p.requiredMinEchoRxInterval, 0);
  });

  it('§4.1: encodes the same octets it decodes, flags and all', () => {
    const p = decodeControlPacket(WIRE).packet!;
    assert.deepEqual(encodeControlPacket(p), WIRE);
    for (const over of [
      { final: true, poll: false },
      { diag: 7, state: 'AdminDown' as const },
      { demand: true, controlPlaneIndependent: true },
    ]) {
      const q: BfdControlPacket = { ...remote('Up'), ...over };
      assert.deepEqual(decodeControlPacket(encodeControlPacket(q)).packet, q, JSON.stringify(over));
    }
  });

  it('§4.1: 32-bit fields keep their top bit', () => {
    const q: BfdControlPacket = { ...remote('Up'), myDiscriminator: 0xfffffffe, desiredMinTxInterval: 0xffffffff };
    assert.deepEqual(decodeControlPacket(encodeControlPacket(q)).packet, q);
  });

  it('§6.8.6: a Length below the received octets is taken (trailing octets ignored)', () => {
    assert.equal(decodeControlPacket(Buffer.concat([WIRE, Buffer.alloc(8)])).error, undefined);
  });

  const discards: [string, Buffer, RegExp][] = [
    ['a datagram shorter than 24 octets', WIRE.subarray(0, 23), /shorter/],
    ['an empty datagram', Buffer.alloc(0), /shorter/],
    ['version 0', withByte(WIRE, 0, 0x00), /version 0/],
    ['version 2', withByte(WIRE, 0, 0x40), /version 2/],
    ['a Length field below 24', withByte(WIRE, 3, 23), /Length 23/],
    ['a Length field beyond the datagram', withByte(WIRE, 3, 25), /more than/],
    ['Detect Mult zero', withByte(WIRE, 2, 0), /Detect Mult/],
    ['the Multipoint bit', withByte(WIRE, 1, 0xe1), /Multipoint/],
    ['My Discriminator zero', Buffer.concat([WIRE.subarray(0, 4), Buffer.alloc(4), WIRE.subarray(8)]), /My Discriminator/],
    [
      'Your Discriminator zero in Up',
      Buffer.concat([WIRE.subarray(0, 8), Buffer.alloc(4), WIRE.subarray(12)]),
      /Your Discriminator is zero in state Up/,
    ],
    [
      'Your Discriminator zero in Init',
      withByte(Buffer.concat([WIRE.subarray(0, 8), Buffer.alloc(4), WIRE.subarray(12)]), 1, 0x80),
      /state Init/,
    ],
    ['the A bit with a Length below 26', withByte(WIRE, 1, 0xe4), /less than 26/],
    ['the A bit, authentication not in use', withByte(withByte(Buffer.concat([WIRE, Buffer.alloc(4)]), 3, 28), 1, 0xe4), /Authentication/],
  ];
  for (const [what, b, reason] of discards) {
    it(`§6.8.6: discards ${what}`, () => {
      const r = decodeControlPacket(b);
      assert.equal(r.packet, undefined, `${what} is not taken`);
      assert.match(r.error ?? '', reason);
    });
  }

  it('§6.8.6: Your Discriminator zero is taken in Down and AdminDown', () => {
    for (const state of [0x40, 0x00]) {
      const b = withByte(Buffer.concat([WIRE.subarray(0, 8), Buffer.alloc(4), WIRE.subarray(12)]), 1, state);
      assert.equal(decodeControlPacket(b).error, undefined, `state octet ${state}`);
    }
  });

  it('never throws on random octets, and what it takes re-encodes to its first 24 octets', () => {
    let x = 12345;
    const rnd = () => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>> 0) & 0xff;
    };
    let taken = 0;
    for (let i = 0; i < 20000; i++) {
      const b = Buffer.from(Array.from({ length: 20 + (rnd() % 16) }, rnd));
      if (i % 2 === 0 && b.length >= 24) {
        b[0] = 0x20 | (b[0] & 0x1f);
        b[3] = 24;
        b[1] &= ~0x05;
      }
      const r = decodeControlPacket(b);
      if (r.packet) {
        taken++;
        // Our Length is always 24: a longer one (trailing octets) is the only difference.
        const expected = Buffer.from(b.subarray(0, 24));
        expected[3] = 24;
        assert.deepEqual(encodeControlPacket(r.packet), expected, 'a taken packet re-encodes to itself');
      }
    }
    assert.ok(taken > 100, `some random packets are valid (${taken})`);
  });
});
