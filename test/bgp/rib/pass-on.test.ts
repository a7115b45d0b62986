// RFC 4271 §5 and §9: an optional attribute we do not recognise is passed on with its Partial
// bit set when it is transitive, and not at all when it is not; one we originate goes as given.
// Checked on the bytes of the UPDATEs the Adj-RIB-Out hands to the socket.
import assert from 'node:assert/strict';
import { decodeMessage, encodeMessage, type RawAttribute, type UpdateMessage } from '../../../bgp/codec/index.js';
import { Rib } from '../../../bgp/rib/index.js';
import { drain, seq } from '../../support/rib.js';

/** Each path attribute of an encoded UPDATE as it is on the wire: flags, type, value. */
function wireAttributes(update: Buffer): { flags: number; type: number; value: Buffer }[] {
  const withdrawnLength = update.readUInt16BE(19);
  let p = 21 + withdrawnLength;
  const end = p + 2 + update.readUInt16BE(p);
  p += 2;
  const out: { flags: number; type: number; value: Buffer }[] = [];
  while (p < end) {
    const flags = update[p];
    const type = update[p + 1];
    const extended = (flags & 0x10) !== 0;
    const length = extended ? update.readUInt16BE(p + 2) : update[p + 2];
    const vs = p + (extended ? 4 : 3);
    out.push({ flags, type, value: update.subarray(vs, vs + length) });
    p = vs + length;
  }
  return out;
}

/** An UPDATE as a peer would send it, decoded from its bytes as the session decodes it. */
function received(prefix: string, unknown: RawAttribute[]): UpdateMessage {
  const bytes = encodeMessage({
    type: 'update',
    withdrawn: [],
    attributes: { origin: 'igp', asPath: seq(65001), nextHop: '192.0.2.1', unknown },
    nlri: [{ prefix }],
  });
  return decodeMessage(bytes) as UpdateMessage;
}

function setup() {
  const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
  const peer = (address: string, asn: number) =>
    rib.addPeer({ address, asn, routerId: address, localAddress: '192.0.2.100', families: ['ipv4-unicast'] });
  const from = peer('192.0.2.1', 65001);
  const ebgp = peer('192.0.2.2', 65002);
  const ibgp = peer('10.0.0.2', 65000);
  for (const p of [from, ebgp, ibgp]) drain(rib.adjRibOut(p)!);
  return { rib, from, ebgp, ibgp };
}

const sentUpdates = (rib: Rib, p: Parameters<Rib['adjRibOut']>[0]) =>
  drain(rib.adjRibOut(p)!).raw.filter((b) => wireAttributes(b).some((a) => a.type === 1));

describe('rib: unrecognised optional attributes passed on', () => {
  const long = Buffer.alloc(300, 0xab);
  const unknown: RawAttribute[] = [
    { type: 99, flags: 0xc0, value: Buffer.from([1, 2, 3, 4]) }, // optional transitive
    { type: 100, flags: 0x80, value: Buffer.from([5]) }, // optional non-transitive
    { type: 101, flags: 0xe0, value: Buffer.from([6, 7]) }, // already partial
    { type: 102, flags: 0xd0, value: long }, // transitive, extended length
  ];

  it('to eBGP and iBGP peers: transitive ones with Partial set and the value unchanged, non-transitive ones dropped', () => {
    const { rib, from, ebgp, ibgp } = setup();
    rib.update(from, received('10.9.0.0/16', unknown));
    for (const to of [ebgp, ibgp]) {
      const [update, ...more] = sentUpdates(rib, to);
      assert.equal(more.length, 0);
      const attrs = wireAttributes(update);
      const byType = new Map(attrs.map((a) => [a.type, a]));
      assert.equal(byType.get(99)?.flags, 0xe0, `type 99 to ${to.address}`);
      assert.deepEqual([...byType.get(99)!.value], [1, 2, 3, 4]);
      assert.equal(byType.has(100), false, 'an unrecognised non-transitive attribute is not passed along');
      assert.equal(byType.get(101)?.flags, 0xe0);
      assert.deepEqual([...byType.get(101)!.value], [6, 7]);
      assert.equal(byType.get(102)?.flags, 0xf0, 'Partial with Extended Length');
      assert.ok(byType.get(102)!.value.equals(long), `type 102 changed: ${byType.get(102)!.value.length} octets, sent ${long.length}`);
      // The attributes we understand keep the flags the RFCs give them.
      assert.equal(byType.get(1)?.flags, 0x40);
      assert.equal(byType.get(2)?.flags, 0x40);
    }
    // The Loc-RIB keeps what the peer sent, as it sent it.
    const kept = rib.lookup('10.9.0.0/16')!.best.attributes.unknown!;
    assert.deepEqual(
      kept.map((u) => [u.type, u.flags]),
      [
        [99, 0xc0],
        [100, 0x80],
        [101, 0xe0],
        [102, 0xd0],
      ],
    );
  });

  it('an attribute we originate ourselves goes with the flags it was given', () => {
    const { rib, ebgp } = setup();
    rib.originate('10.8.0.0/16', { nextHop: '192.0.2.100', attributes: { unknown: [{ type: 99, flags: 0xc0, value: Buffer.from([9]) }] } });
    const [update] = sentUpdates(rib, ebgp);
    const a = wireAttributes(update).find((x) => x.type === 99);
    assert.equal(a?.flags, 0xc0);
  });

  it('a route with only a non-transitive unrecognised attribute goes without it', () => {
    const { rib, from, ebgp } = setup();
    rib.update(from, received('10.7.0.0/16', [{ type: 100, flags: 0x80, value: Buffer.from([5]) }]));
    const [update] = sentUpdates(rib, ebgp);
    assert.deepEqual(
      wireAttributes(update).map((a) => a.type),
      [1, 2, 3],
    );
  });
});
