// The encoder's fast paths (IPv4 prefixes read in one pass, path identifiers and AS numbers
// written octet by octet) against the general rules they stand in for: the same octets, and
// the same refusals, at every edge.
import assert from 'node:assert/strict';
import { type CodecOptions, decodeMessage, encodeMessage, type Nlri, parsePrefix, type UpdateMessage } from '../../../index.js';
import { attr, mandatory, rawUpdate } from './build.js';

const HEADER = 19;

function update(nlri: Nlri[], attributes: UpdateMessage['attributes'] = {}): UpdateMessage {
  return { type: 'update', withdrawn: [], attributes, nlri };
}

/** The NLRI entry the general parser gives: the length octet and the significant octets. */
function entryOf(prefix: string): Buffer {
  const p = parsePrefix(prefix);
  return Buffer.concat([Buffer.from([p.length]), p.bytes.subarray(0, (p.length + 7) >> 3)]);
}

/** The NLRI field of an UPDATE encoded with no attributes and nothing withdrawn. */
function nlriField(prefixes: string[], options?: CodecOptions): Buffer {
  return encodeMessage(update(prefixes.map((prefix) => ({ prefix }))), options).subarray(HEADER + 4);
}

describe('codec encode fast paths', () => {
  it('IPv4 prefixes of every length, host bits kept as given', () => {
    for (let length = 0; length <= 32; length++) {
      for (const address of ['0.0.0.0', '255.255.255.255', '10.1.2.3', '192.168.129.77', '128.0.0.1']) {
        const prefix = `${address}/${length}`;
        assert.deepEqual(nlriField([prefix]), entryOf(prefix), prefix);
      }
    }
    // /0 is the length octet alone; /32 all four octets; odd lengths carry their last partial octet.
    assert.deepEqual(nlriField(['10.0.0.0/0']), Buffer.from([0]));
    assert.deepEqual(nlriField(['10.1.2.3/32']), Buffer.from([32, 10, 1, 2, 3]));
    assert.deepEqual(nlriField(['10.255.0.0/9']), Buffer.from([9, 10, 255]));
    assert.deepEqual(nlriField(['10.1.2.3/25']), Buffer.from([25, 10, 1, 2, 3]));
  });

  it('agrees with the general parser on random prefixes, and decodes back to them', () => {
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed >>> 8;
    };
    const prefixes: string[] = [];
    for (let i = 0; i < 2000; i++) {
      const length = next() % 33;
      prefixes.push(`${next() & 255}.${next() & 255}.${next() & 255}.${next() & 255}/${length}`);
    }
    assert.deepEqual(nlriField(prefixes, { extendedMessage: true }), Buffer.concat(prefixes.map(entryOf)));
    const m: UpdateMessage = { type: 'update', withdrawn: prefixes.map((prefix) => ({ prefix })), attributes: {}, nlri: [] };
    const bytes = encodeMessage(m, { extendedMessage: true });
    const back = decodeMessage(bytes, { extendedMessage: true }) as UpdateMessage;
    // Decoding prints only the octets sent: host bits past the last one read back as zeros.
    assert.deepEqual(
      back.withdrawn.map((n) => n.prefix),
      prefixes.map((p) => {
        const e = entryOf(p);
        const o = [1, 2, 3, 4].map((i) => e[i] ?? 0);
        return `${o.join('.')}/${e[0]}`;
      }),
    );
  });

  it('forms the fast path leaves to the general parser still read as before', () => {
    // A zero-padded length is accepted by the general rules; the fast path hands it over.
    assert.deepEqual(nlriField(['10.0.0.0/08']), Buffer.from([8, 10]));
    assert.deepEqual(nlriField(['10.1.2.3/032']), Buffer.from([32, 10, 1, 2, 3]));
    assert.deepEqual(nlriField(['10.1.0.0/00']), Buffer.from([0]));
  });

  it('refuses what is not an IPv4 prefix, naming it', () => {
    const bad: [string, RegExp][] = [
      ['10.0.0.0', /no "\/length"/],
      ['10.0.0.0/', /bad prefix length/],
      ['10.0.0.0/33', /bad prefix length/],
      ['10.0.0.0/3a', /bad prefix length/],
      ['10.0.0.0/1234', /bad prefix length/],
      ['010.0.0.0/8', /not an IPv4 address/],
      ['10.0.0/8', /not an IPv4 address/],
      ['10.0.0.0.0/8', /not an IPv4 address/],
      ['256.0.0.0/8', /not an IPv4 address/],
      ['1..2.3/8', /not an IPv4 address/],
      [' 10.0.0.0/8', /not an IPv4 address/],
      ['2001:db8::/32', /is not IPv4/],
    ];
    for (const [prefix, why] of bad) {
      assert.throws(
        () => encodeMessage(update([{ prefix }])),
        (e: Error) => e instanceof TypeError && why.test(e.message),
        prefix,
      );
    }
  });

  it('IPv6 prefixes at /0, /128 and odd lengths, in MP_REACH and MP_UNREACH', () => {
    const prefixes = ['::/0', '2001:db8::1/128', '2001:db8:ffff::/47', 'ff02::1:ff00:0/104', '::ffff:10.0.0.1/127', '8000::/1'];
    const nlri = prefixes.map((prefix) => ({ prefix, pathId: undefined }));
    const m: UpdateMessage = {
      type: 'update',
      withdrawn: [],
      nlri: [],
      attributes: { origin: 'igp', asPath: [], mpReach: { afi: 2, safi: 1, nextHop: '2001:db8::1', nlri } },
    };
    const bytes = encodeMessage(m);
    assert.deepEqual(decodeMessage(bytes), m);
    assert.ok(bytes.includes(Buffer.concat(prefixes.map(entryOf))), 'the entries as the general parser writes them');
    const w: UpdateMessage = { type: 'update', withdrawn: [], nlri: [], attributes: { mpUnreach: { afi: 2, safi: 1, withdrawn: nlri } } };
    assert.deepEqual(decodeMessage(encodeMessage(w)), w);
  });

  it('IPv6 forms left to the general parser, and the refusals', () => {
    const mp = (prefix: string): UpdateMessage =>
      update([], { mpUnreach: { afi: 2, safi: 1, withdrawn: [{ prefix }, { prefix: '2001:db8::/32' }] } });
    const tail = (prefix: string) => {
      const b = encodeMessage(mp(prefix));
      return b.subarray(HEADER + 4 + 3 + 3);
    };
    assert.deepEqual(tail('2001:db8::/064'), Buffer.concat([entryOf('2001:db8::/64'), entryOf('2001:db8::/32')]));
    assert.deepEqual(tail('::/00'), Buffer.concat([Buffer.from([0]), entryOf('2001:db8::/32')]));
    const bad: [string, RegExp][] = [
      ['2001:db8::/129', /bad prefix length/],
      ['2001:db8::', /no "\/length"/],
      ['2001:db8::/', /bad prefix length/],
      ['10.0.0.0/8', /is not IPv6/],
      ['2001:db8:::/32', /not an IPv6 address/],
      ['gggg::/16', /is not IPv6|not an IPv6 address/],
      ['2001:db8::/6/4', /bad prefix length|not an IPv6 address/],
    ];
    for (const [prefix, why] of bad) {
      assert.throws(
        () => encodeMessage(mp(prefix)),
        (e: Error) => e instanceof TypeError && why.test(e.message),
        prefix,
      );
    }
  });

  it('ADD-PATH identifiers from 0 to 2^32-1 in both families; others are refused', () => {
    const options: CodecOptions = { addPath: { 'ipv4-unicast': true, 'ipv6-unicast': true } };
    const ids = [0, 1, 255, 256, 65536, 0x7fffffff, 0x80000000, 0xffffffff];
    const m: UpdateMessage = {
      type: 'update',
      withdrawn: ids.map((pathId) => ({ prefix: '10.0.0.0/8', pathId })),
      attributes: {
        origin: 'igp',
        asPath: [],
        nextHop: '192.0.2.1',
        mpReach: { afi: 2, safi: 1, nextHop: '2001:db8::1', nlri: ids.map((pathId) => ({ prefix: '2001:db8::/32', pathId })) },
      },
      nlri: ids.map((pathId) => ({ prefix: '10.1.2.3/32', pathId })),
    };
    const bytes = encodeMessage(m, options);
    assert.deepEqual(decodeMessage(bytes, options), m);
    assert.deepEqual(bytes.subarray(HEADER + 2, HEADER + 2 + 6), Buffer.from([0, 0, 0, 0, 8, 10]), 'path id 0 then 10.0.0.0/8');
    assert.deepEqual(nlriField(['10.0.0.0/8'], options), Buffer.from([0, 0, 0, 0, 8, 10]), 'no identifier given is 0');
    for (const pathId of [-1, 2 ** 32]) {
      assert.throws(() => encodeMessage(update([{ prefix: '10.0.0.0/8', pathId }]), options), RangeError, String(pathId));
    }
  });

  it('AS numbers at the edges of 2 and 4 octets, and segments longer than 255', () => {
    const asns = [0, 1, 23456, 65535, 65536, 0x7fffffff, 0x80000000, 4294967295];
    const long = Array.from({ length: 600 }, (_, i) => 4200000000 + i);
    const attributes: UpdateMessage['attributes'] = {
      origin: 'igp',
      asPath: [
        { type: 'sequence', asns },
        { type: 'set', asns: [64512, 64513] },
      ],
      nextHop: '192.0.2.1',
    };
    const m = update([{ prefix: '10.0.0.0/8', pathId: undefined }], attributes);
    assert.deepEqual(decodeMessage(encodeMessage(m)), m);
    const split = update([], { origin: 'igp', asPath: [{ type: 'sequence', asns: long }] });
    const back = decodeMessage(encodeMessage(split)) as UpdateMessage;
    assert.deepEqual(
      back.attributes.asPath?.map((s) => s.asns.length),
      [255, 255, 90],
    );
    assert.deepEqual(
      back.attributes.asPath?.flatMap((s) => s.asns),
      long,
    );
    const two = update([], { origin: 'igp', asPath: [{ type: 'sequence', asns: [1, 65535] }] });
    assert.deepEqual(decodeMessage(encodeMessage(two, { fourOctetAs: false }), { fourOctetAs: false }), two);
    for (const asn of [-1, 2 ** 32]) {
      assert.throws(() => encodeMessage(update([], { asPath: [{ type: 'sequence', asns: [asn] }] })), RangeError, String(asn));
    }
    assert.throws(() => encodeMessage(update([], { asPath: [{ type: 'sequence', asns: [65536] }] }), { fourOctetAs: false }), /AS_TRANS/);
  });

  it('COMMUNITIES take an int32 or a uint32 and refuse anything else, naming the attribute', () => {
    const bytes = encodeMessage(update([], { communities: [0, -1, -0x80000000, 0xffffffff, (65001 << 16) | 7] }));
    assert.deepEqual(bytes.subarray(bytes.length - 20), Buffer.from('00000000' + 'ffffffff' + '80000000' + 'ffffffff' + 'fde90007', 'hex'));
    for (const c of [2 ** 32, -0x80000001, 1.5, Number.NaN]) {
      assert.throws(() => encodeMessage(update([], { communities: [c] })), /COMMUNITIES: .* is not a 32-bit value/, String(c));
    }
  });

  it('an attribute over 255 octets takes the extended length; a short one sent extended stays so', () => {
    const communities = Array.from({ length: 64 }, (_, i) => (65000 << 16) | i);
    const m = update([{ prefix: '10.0.0.0/8', pathId: undefined }], { origin: 'igp', asPath: [], nextHop: '192.0.2.1', communities });
    const bytes = encodeMessage(m);
    const at = bytes.indexOf(Buffer.from([0xd0, 8, 1, 0])); // optional transitive extended, type 8, length 256
    assert.ok(at > 0, 'COMMUNITIES with the extended length flag and a 2-octet length');
    assert.deepEqual(decodeMessage(bytes), { ...m, attributes: { ...m.attributes, communities: communities.map((c) => c >>> 0) } });

    const received = rawUpdate(Buffer.alloc(0), Buffer.concat([mandatory(), attr(0xd0, 8, [0xfd, 0xe8, 0, 1])]), Buffer.from([16, 10, 1]));
    assert.deepEqual(encodeMessage(decodeMessage(received)), received, 'the extended flag on a 4-octet value is written back');
  });

  it('attribute order: canonical with unknown codes interleaved, a decoded layout kept, changes after decoding', () => {
    const typesOf = (bytes: Buffer): number[] => {
      const types: number[] = [];
      let p = 21 + bytes.readUInt16BE(19) + 2;
      const end = p + bytes.readUInt16BE(p - 2);
      while (p < end) {
        types.push(bytes[p + 1]);
        p += (bytes[p] & 0x10 ? 4 : 3) + (bytes[p] & 0x10 ? bytes.readUInt16BE(p + 2) : bytes[p + 2]);
      }
      return types;
    };
    const raw = (type: number) => ({ type, flags: 0xc0, value: Buffer.from([type]) });
    const canonical: UpdateMessage = update([], {
      largeCommunities: [[1, 2, 3]],
      unknown: [raw(250), raw(19), raw(33), raw(31)],
      med: 5,
      origin: 'igp',
      atomicAggregate: false,
      communities: [1],
    });
    // 32 (LARGE_COMMUNITY) after 31 and before 33; atomicAggregate false is no attribute.
    assert.deepEqual(typesOf(encodeMessage(canonical)), [1, 4, 8, 19, 31, 32, 33, 250]);
    assert.deepEqual(typesOf(encodeMessage(update([], { largeCommunities: [[1, 2, 3]], origin: 'igp', localPref: 1 }))), [1, 5, 32]);

    const received = rawUpdate(
      Buffer.alloc(0),
      Buffer.concat([
        attr(0xc0, 32, Buffer.alloc(12)),
        attr(0xc0, 99, [1]),
        attr(0x40, 3, [10, 0, 0, 1]),
        attr(0x40, 2, []),
        attr(0x40, 1, [0]),
      ]),
      Buffer.from([8, 10]),
    );
    const m = decodeMessage(received) as UpdateMessage;
    assert.deepEqual(encodeMessage(m), received, 'the wire order 32, 99, 3, 2, 1 is kept');
    m.attributes.med = 9;
    m.attributes.unknown?.push(raw(20));
    delete m.attributes.nextHop;
    m.attributes.atomicAggregate = true;
    // What the layout names and the set still carries, in its order; then the rest ascending.
    assert.deepEqual(typesOf(encodeMessage(m)), [32, 99, 2, 1, 4, 6, 20]);
  });

  it('an UPDATE of exactly 4096 octets is sent, one octet more is refused; the same at 65535 with extended messages', () => {
    // 23 octets of header and empty fields, then withdrawn /32 entries of 5 octets and /0 entries of 1.
    const fill = (total: number) => {
      const body = total - HEADER - 4;
      const n32 = Math.floor(body / 5);
      const prefixes = [...Array.from({ length: n32 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`)];
      for (let i = 0; i < body - 5 * n32; i++) prefixes.push('0.0.0.0/0');
      const m: UpdateMessage = {
        type: 'update',
        withdrawn: prefixes.map((prefix) => ({ prefix, pathId: undefined })),
        attributes: {},
        nlri: [],
      };
      return m;
    };
    const at4096 = fill(4096);
    assert.equal(encodeMessage(at4096).length, 4096);
    assert.deepEqual(decodeMessage(encodeMessage(at4096)), at4096);
    assert.throws(() => encodeMessage(fill(4097)), /4097 octets, more than the 4096-octet limit/);
    const extended = { extendedMessage: true };
    assert.equal(encodeMessage(fill(4097), extended).length, 4097);
    const at65535 = fill(65535);
    assert.equal(encodeMessage(at65535, extended).length, 65535);
    assert.deepEqual(decodeMessage(encodeMessage(at65535, extended), extended), at65535);
    assert.throws(() => encodeMessage(fill(65536), extended), /65536 octets, more than the 65535-octet limit/);
    // The writer's scratch space is reused: a message after a refused one is whole and right.
    assert.deepEqual(decodeMessage(encodeMessage(at4096)), at4096);
  });

  it('UPDATEs handed out as views of a shared slab stay as written while later ones are encoded', () => {
    const extended = { extendedMessage: true };
    const sent: { bytes: Buffer; copy: Buffer; m: UpdateMessage }[] = [];
    for (let i = 0; i < 3000; i++) {
      // Mostly small messages, now and then one of 4096 or ~60,000 octets (a slab overflows
      // mid-message and grows), and a refused one that must leave no trace.
      const count = i % 97 === 0 ? 12000 : i % 31 === 0 ? 814 : 1 + (i % 7);
      const withdrawn = Array.from({ length: count }, (_, j) => ({
        prefix: `10.${i & 255}.${(j >> 8) & 255}.${j & 255}/32`,
        pathId: undefined,
      }));
      const m: UpdateMessage = { type: 'update', withdrawn, attributes: {}, nlri: [] };
      if (count > 1000) assert.throws(() => encodeMessage(m), RangeError);
      const bytes = encodeMessage(m, extended);
      sent.push({ bytes, copy: Buffer.from(bytes), m });
    }
    for (const { bytes, copy, m } of sent) {
      assert.equal(bytes.readUInt16BE(16), bytes.length);
      assert.deepEqual(bytes, copy);
      assert.deepEqual(decodeMessage(bytes, extended), m);
    }
    const a = encodeMessage(update([{ prefix: '10.0.0.0/8' }]));
    const b = encodeMessage(update([{ prefix: '10.0.0.0/8' }]));
    a[a.length - 1] = 11;
    assert.equal(b[b.length - 1], 10, 'writing into one message does not touch another');
  });
});
