// The table keys an UPDATE's IPv4 prefixes, and those of its MP_REACH_NLRI and MP_UNREACH_NLRI,
// from the octets as received; it must hold exactly what it holds when keyed from the text the
// codec made of them (an UPDATE built in code or copied carries no octets and takes that path).
import assert from 'node:assert/strict';
import {
  attributesUnread,
  decodeMessage,
  decodeReceivedMessage,
  receivedAttributes,
  receivedNlri,
  type ReceivedUpdate,
  type UpdateMessage,
} from '../../../bgp/codec/index.js';
import { Rib, type RibPeer } from '../../../bgp/rib/index.js';
import { receivedMp } from '../../../bgp/rib/attr-set.js';
import { v4Key, v4KeysFromWire, v6Key, v6KeysFromWire } from '../../../bgp/rib/prefix.js';

/** An UPDATE message on the wire: withdrawn field, ORIGIN/AS_PATH/NEXT_HOP, NLRI field. */
function updateBytes(withdrawn: number[], nlri: number[]): Buffer {
  const attrs = [0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe9, 0x40, 3, 4, 192, 0, 2, 1];
  const body = [withdrawn.length >> 8, withdrawn.length & 255, ...withdrawn, 0, nlri.length > 0 ? attrs.length : 0];
  if (nlri.length > 0) body.push(...attrs, ...nlri);
  const len = 19 + body.length;
  return Buffer.from([...new Array(16).fill(0xff), len >> 8, len & 255, 2, ...body]);
}

/** A prefix field entry: optional path id, length, significant octets (host bits as given). */
function entry(length: number, octets: number[], pathId?: number): number[] {
  const id = pathId === undefined ? [] : [pathId >>> 24, (pathId >> 16) & 255, (pathId >> 8) & 255, pathId & 255];
  return [...id, length, ...octets.slice(0, (length + 7) >> 3)];
}

function tableOf(updates: UpdateMessage[], addPath: boolean): string[] {
  const rib = new Rib({ localAs: 65000, routerId: '192.0.2.254', collectChanges: false });
  const peer: RibPeer = rib.addPeer({
    address: '192.0.2.1',
    asn: 65001,
    routerId: '192.0.2.1',
    families: ['ipv4-unicast'],
    addPath: addPath ? ['ipv4-unicast'] : undefined,
  } as never);
  for (const u of updates) rib.update(peer, u);
  return [...rib.routes('ipv4-unicast')].map((r) => `${r.prefix} ${r.pathId}`).sort();
}

describe('rib: IPv4 prefixes keyed from the wire', () => {
  for (const addPath of [false, true]) {
    it(`holds what the text keys hold${addPath ? ' (ADD-PATH)' : ''}, host bits and /0 and /32 included`, () => {
      const id = (n: number) => (addPath ? n : undefined);
      const wire = [
        updateBytes(
          [],
          [
            ...entry(24, [10, 1, 2, 99], id(1)), // host bits past the length are set on the wire
            ...entry(0, [], id(2)),
            ...entry(32, [255, 255, 255, 255], id(0xffffffff)),
            ...entry(25, [10, 9, 8, 255], id(3)),
            ...entry(8, [172], id(4)),
            ...entry(1, [0xff], id(5)),
          ],
        ),
        updateBytes(entry(8, [172, 16], id(4)), entry(16, [192, 168], id(6))),
      ];
      const decode = () => wire.map((b) => decodeMessage(b, { fourOctetAs: true, addPath: { 'ipv4-unicast': addPath } }) as UpdateMessage);
      const decoded = decode();
      assert.ok(receivedNlri(decoded[0]) !== undefined, 'the decoded UPDATE offers its prefix fields');
      const fromWire = tableOf(decoded, addPath);
      // Without ADD-PATH the table takes the octets alone and never makes the prefix lists.
      for (const m of decoded) assert.equal(receivedNlri(m)!.unread, !addPath);
      const copied = decode().map((m) => ({ ...m }));
      assert.equal(receivedNlri(copied[0]), undefined);
      assert.deepEqual(fromWire, tableOf(copied, addPath));
      const read = decode();
      for (const m of read) assert.ok(m.nlri.length + m.withdrawn.length > 0, 'an UPDATE decoded with neither NLRI nor withdrawn prefixes');
      assert.equal(receivedNlri(read[0])!.unread, false);
      assert.deepEqual(tableOf(read, addPath), fromWire, 'the lists read, then keyed from the octets');
      const p = (s: string, n: number) => `${s} ${addPath ? n : 0}`;
      assert.deepEqual(
        fromWire,
        [
          p('0.0.0.0/0', 2),
          p('10.1.2.0/24', 1),
          p('10.9.8.128/25', 3),
          p('128.0.0.0/1', 5),
          p('192.168.0.0/16', 6),
          p('255.255.255.255/32', 0xffffffff),
        ].sort(),
      );
    });
  }

  it('keys a message whose prefix list was changed after decoding from the list', () => {
    const m = decodeMessage(updateBytes([], entry(24, [10, 0, 0])), { fourOctetAs: true }) as UpdateMessage;
    m.nlri.push({ prefix: '10.0.1.0/24' });
    assert.deepEqual(tableOf([m], false), ['10.0.0.0/24 0', '10.0.1.0/24 0']);
    const replaced = decodeMessage(updateBytes(entry(8, [10]), entry(24, [10, 0, 0])), { fourOctetAs: true }) as UpdateMessage;
    replaced.nlri = [{ prefix: '10.0.2.0/24' }];
    assert.deepEqual(tableOf([replaced], false), ['10.0.2.0/24 0']);
  });

  it('gives an import policy the prefixes as text', () => {
    const rib = new Rib({ localAs: 65000, routerId: '192.0.2.254', collectChanges: false });
    const seen: string[] = [];
    const peer = rib.addPeer({
      address: '192.0.2.1',
      asn: 65001,
      routerId: '192.0.2.1',
      importPolicy: (r) => {
        seen.push(r.prefix);
        return r.prefix !== '10.0.1.0/24';
      },
    });
    const m = decodeMessage(updateBytes([], [...entry(24, [10, 0, 0]), ...entry(24, [10, 0, 1])]), { fourOctetAs: true }) as UpdateMessage;
    rib.update(peer, m);
    assert.deepEqual(seen, ['10.0.0.0/24', '10.0.1.0/24']);
    assert.deepEqual(
      [...rib.routes('ipv4-unicast')].map((r) => r.prefix),
      ['10.0.0.0/24'],
    );
  });

  it('gives the key v4Key gives for every length and for host bits', () => {
    const out: number[] = [];
    for (let len = 0; len <= 32; len++) {
      const octets = [203, 0, 113, 77].map((o, i) => (i * 8 < len ? o : 0));
      const field = Buffer.from(entry(len, [203, 0, 113, 77]));
      assert.equal(v4KeysFromWire(field, false, out), 1);
      assert.equal(out[0], v4Key(`${octets.join('.')}/${len}`), `/${len}`);
    }
  });
});

/** An UPDATE whose only prefixes are in MP_UNREACH_NLRI (withdrawn) and MP_REACH_NLRI (nlri), of one AFI. */
function mpUpdateBytes(afi: 1 | 2, withdrawn: number[], nlri: number[]): Buffer {
  const attr = (type: number, value: number[]) => [0x90, type, value.length >> 8, value.length & 255, ...value];
  const nextHop = afi === 1 ? [192, 0, 2, 1] : [0x20, 0x01, 0x0d, 0xb8, ...new Array(11).fill(0), 1];
  const attrs: number[] = [];
  if (withdrawn.length > 0) attrs.push(...attr(15, [0, afi, 1, ...withdrawn]));
  if (nlri.length > 0)
    attrs.push(0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe9, ...attr(14, [0, afi, 1, nextHop.length, ...nextHop, 0, ...nlri]));
  const body = [0, 0, attrs.length >> 8, attrs.length & 255, ...attrs];
  const len = 19 + body.length;
  return Buffer.from([...new Array(16).fill(0xff), len >> 8, len & 255, 2, ...body]);
}

describe('rib: MP_REACH_NLRI and MP_UNREACH_NLRI prefixes keyed from the octets', () => {
  const ones = new Array(16).fill(0xff);

  it('gives the key v6Key gives for the text the codec makes, for every length, host bits set', () => {
    const field: number[] = [];
    for (let len = 0; len <= 128; len++) field.push(...entry(len, ones));
    const m = decodeMessage(mpUpdateBytes(2, [], field), { fourOctetAs: true }) as UpdateMessage;
    const list = m.attributes.mpReach!.nlri!;
    assert.equal(list.length, 129);
    const out: string[] = [];
    assert.equal(v6KeysFromWire(receivedMp(receivedAttributes(m)!, 14)!.prefixes, false, out), 129);
    for (let len = 0; len <= 128; len++) assert.equal(out[len], v6Key(list[len].prefix), list[len].prefix);
  });

  for (const afi of [2, 1] as const) {
    for (const addPath of [false, true]) {
      it(`holds what the text keys hold: ${afi === 2 ? 'IPv6' : 'IPv4 in MP attributes'}${addPath ? ', ADD-PATH' : ''}`, () => {
        const family = afi === 2 ? 'ipv6-unicast' : 'ipv4-unicast';
        const id = (n: number) => (addPath ? n : undefined);
        const max = afi === 2 ? 128 : 32;
        const lengths = [0, 1, 7, 8, 9, 24, 25, max - 1, max];
        // Each prefix its own first octet, every octet past it all ones, host bits included.
        const octetsOf = (i: number) => [0x20 + i, ...ones.slice(1)];
        const announce = lengths.flatMap((len, i) => entry(len, octetsOf(i), id(i + 1)));
        const gone = [1, 25, max].map((len) => lengths.indexOf(len));
        const withdraw = gone.flatMap((i) => entry(lengths[i], octetsOf(i), id(i + 1)));
        const wire = [mpUpdateBytes(afi, [], announce), mpUpdateBytes(afi, withdraw, [])];
        const options = { fourOctetAs: true, addPath: { [family]: addPath } };
        const tableOf = (updates: UpdateMessage[]) => {
          const rib = new Rib({ localAs: 65000, routerId: '192.0.2.254', collectChanges: false });
          const peer = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '192.0.2.1', families: [family] });
          const held: string[][] = [];
          for (const u of updates) {
            rib.update(peer, u);
            held.push([...rib.routes(family)].map((r) => `${r.prefix} ${r.pathId}`).sort());
          }
          return held;
        };
        const decoded = wire.map((b) => decodeMessage(b, options) as UpdateMessage);
        assert.ok(receivedAttributes(decoded[0]) !== undefined, 'the decoded UPDATE offers its attribute octets');
        const copied = wire.map((b) => {
          const m = decodeMessage(b, options) as UpdateMessage;
          return { ...m, attributes: { ...m.attributes } };
        });
        assert.equal(receivedAttributes(copied[0]), undefined);
        const fromWire = tableOf(decoded);
        assert.deepEqual(fromWire, tableOf(copied));
        assert.equal(fromWire[0].length, lengths.length, 'every prefix announced');
        assert.equal(fromWire[1].length, lengths.length - 3, 'three withdrawn, host bits and all');
      });
    }
  }

  it('applies an UPDATE with IPv4 prefixes and MP attributes both, from the octets, as from copies', () => {
    // IPv4 NLRI with ORIGIN, AS_PATH and NEXT_HOP; IPv6 withdrawn and announced in MP attributes.
    const attr = (type: number, value: number[]) => [0x90, type, value.length >> 8, value.length & 255, ...value];
    const v6NextHop = [0x20, 0x01, 0x0d, 0xb8, ...new Array(11).fill(0), 1];
    const attrs = [
      ...[0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe9, 0x40, 3, 4, 192, 0, 2, 1],
      ...attr(15, [0, 2, 1, ...entry(48, [0x20, 0x01, 0x0d, 0xb8, 0, 9])]),
      ...attr(14, [0, 2, 1, 16, ...v6NextHop, 0, ...entry(48, [0x20, 0x01, 0x0d, 0xb8, 0, 1])]),
    ];
    const body = [0, 0, attrs.length >> 8, attrs.length & 255, ...attrs, ...entry(24, [10, 0, 0])];
    const bytes = Buffer.from([...new Array(16).fill(0xff), (19 + body.length) >> 8, (19 + body.length) & 255, 2, ...body]);
    const first = mpUpdateBytes(2, [], entry(48, [0x20, 0x01, 0x0d, 0xb8, 0, 9]));
    const tableOf = (updates: Array<UpdateMessage | ReceivedUpdate>) => {
      const rib = new Rib({ localAs: 65000, routerId: '192.0.2.254', collectChanges: false });
      const peer = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '192.0.2.1', families: ['ipv4-unicast', 'ipv6-unicast'] });
      for (const u of updates) rib.update(peer, u);
      return (['ipv4-unicast', 'ipv6-unicast'] as const).flatMap((f) => [...rib.routes(f)].map((r) => `${r.prefix} via ${r.nextHop}`));
    };
    const decoded = [first, bytes].map((b) => decodeMessage(b, { fourOctetAs: true }) as UpdateMessage);
    assert.equal(attributesUnread(decoded[1]), true, 'the attributes are left to be read from the octets');
    const fromOctets = tableOf(decoded);
    const copies = [first, bytes].map((b) => {
      const m = decodeMessage(b, { fourOctetAs: true }) as UpdateMessage;
      return { ...m, attributes: { ...m.attributes }, nlri: [...m.nlri] };
    });
    assert.deepEqual(fromOctets, tableOf(copies));
    assert.deepEqual(fromOctets, ['10.0.0.0/24 via 192.0.2.1', '2001:db8:1::/48 via 2001:db8::1']);
    // As a session hands them over: received, no message made unless the table asks for it.
    const received = [first, bytes].map((b) => decodeReceivedMessage(b, { fourOctetAs: true }) as ReceivedUpdate);
    assert.deepEqual(tableOf(received), fromOctets);
    assert.equal(attributesUnread(received[1]), true, 'the table read the attributes from their octets');
    assert.equal(receivedNlri(received[1])?.unread, true, 'and the IPv4 prefixes');
    // A withdrawal has no attributes to read: none are made for it.
    const withdrawal = decodeReceivedMessage(updateBytes(entry(24, [10, 0, 0]), []), { fourOctetAs: true }) as ReceivedUpdate;
    assert.deepEqual(tableOf([...received, withdrawal]), ['2001:db8:1::/48 via 2001:db8::1']);
    assert.equal(attributesUnread(withdrawal), true, 'the withdrawal was applied from its octets alone');
  });
});
