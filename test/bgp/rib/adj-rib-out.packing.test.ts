// UPDATE packing out of the Adj-RIB-Out: every prefix exactly once, as few messages as the
// size limit allows, withdrawals packed too, the latest state for a slow peer, End-of-RIB,
// route refresh.
import assert from 'node:assert/strict';
import { decodeMessage, type BgpMessage } from '../../../bgp/codec/index.js';
import { Rib, type RibPeerConfig } from '../../../bgp/rib/index.js';
import { announced, drain, isEor, seq, updatesOf, v4Update, v6Update, withdrawnOf } from '../../support/rib.js';

const v4 = (n: number): string[] => Array.from({ length: n }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.0/24`);
const v6 = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `2001:db8:${((i >> 8) + 1).toString(16)}:${((i & 255) + 1).toString(16)}::/64`);

function setup(monitor: Partial<RibPeerConfig> = {}) {
  const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
  const src = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1', families: [] });
  const mon = rib.addPeer({
    address: '192.0.2.2',
    asn: 65002,
    routerId: '1.1.1.2',
    localAddress: '192.0.2.100',
    localAddressV6: '2001:db8::100',
    families: ['ipv4-unicast', 'ipv6-unicast'],
    ...monitor,
  });
  return { rib, src, mon, out: rib.adjRibOut(mon)! };
}

function checkExactlyOnce(messages: BgpMessage[], expected: string[]): void {
  const got = announced(messages).map((r) => r.prefix);
  assert.equal(got.length, expected.length, 'no prefix twice');
  assert.deepEqual([...got].sort(), [...expected].sort());
}

describe('rib: UPDATE packing', () => {
  for (const [limit, extendedMessage] of [
    [4096, false],
    [65535, true],
  ] as const) {
    it(`IPv4, ${limit}-octet messages: every prefix once, in the fewest messages one attribute set allows`, () => {
      const { rib, src, out } = setup({ sendOptions: { extendedMessage } });
      const prefixes = v4(20000);
      for (let i = 0; i < prefixes.length; i += 1000) rib.update(src, v4Update(prefixes.slice(i, i + 1000), { asPath: seq(65001) }));
      const { raw, messages } = drain(out, { extendedMessage });
      checkExactlyOnce(messages, prefixes);
      for (const b of raw) assert.ok(b.length <= limit, `message of ${b.length} octets`);
      const updates = updatesOf(messages);
      const attrLength = raw[0].readUInt16BE(21);
      const perMessage = Math.floor((limit - 23 - attrLength) / 4); // a /24 takes 4 octets
      assert.equal(updates.length, Math.ceil(prefixes.length / perMessage));
      assert.equal(messages.filter(isEor).length, 2, 'End-of-RIB for IPv4 and IPv6');
    });

    it(`IPv6, ${limit}-octet messages: MP_REACH packed the same way`, () => {
      const { rib, src, out } = setup({ sendOptions: { extendedMessage } });
      const prefixes = v6(5000);
      for (let i = 0; i < prefixes.length; i += 500) rib.update(src, v6Update(prefixes.slice(i, i + 500), { asPath: seq(65001) }));
      const { raw, messages } = drain(out, { extendedMessage });
      checkExactlyOnce(messages, prefixes);
      for (const b of raw) assert.ok(b.length <= limit, `a ${b.length}-octet message: limit ${limit}`);
      const updates = updatesOf(messages);
      const full = updates.length - 1;
      // Every message but the last is full: another /64 (9 octets) would not have fit.
      for (const b of raw.filter((_, i) => updatesOf([messages[i]]).length === 1).slice(0, full))
        assert.ok(b.length + 9 > limit, `a ${b.length}-octet message had room for another /64 (limit ${limit})`);
    });
  }

  it('prefixes with different attributes go in different messages, each set encoded once', () => {
    const { rib, src, out } = setup();
    rib.update(src, v4Update(v4(300).slice(0, 150), { asPath: seq(65001), communities: [1] }));
    rib.update(src, v4Update(v4(300).slice(150), { asPath: seq(65001), communities: [2] }));
    const { raw, messages } = drain(out);
    checkExactlyOnce(messages, v4(300));
    const updates = updatesOf(messages);
    assert.equal(updates.length, 2);
    assert.deepEqual(updates.map((u) => u.attributes.communities).sort(), [[1], [2]]);
    assert.equal(updates[0].nlri.length, 150);
    assert.ok(raw.length >= 2, `${raw.length} messages: want at least 2`);
  });

  it('withdrawals are packed too, IPv4 and IPv6', () => {
    const { rib, src, out } = setup();
    const p4 = v4(3000);
    const p6 = v6(1000);
    rib.update(src, v4Update(p4));
    rib.update(src, v6Update(p6));
    drain(out);
    rib.withdraw(
      src,
      'ipv4-unicast',
      p4.map((prefix) => ({ prefix })),
    );
    rib.withdraw(
      src,
      'ipv6-unicast',
      p6.map((prefix) => ({ prefix })),
    );
    const { raw, messages } = drain(out);
    const w = withdrawnOf(messages).map((n) => n.prefix);
    assert.deepEqual([...w].sort(), [...p4, ...p6].sort());
    // 3000 × 4 octets fit in 3 messages of 4096; 1000 × 9 octets in 3.
    assert.equal(raw.length, 6);
  });

  it('ADD-PATH: path ids on the wire, two paths of one prefix in one message', () => {
    const opts = { addPath: { 'ipv4-unicast': true as const } };
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const a = rib.addPeer({ address: '10.0.0.1', asn: 65000, routerId: '1.1.1.1', families: [] });
    const b = rib.addPeer({ address: '10.0.0.2', asn: 65000, routerId: '1.1.1.2', families: [] });
    const mon = rib.addPeer({ address: '192.0.2.2', asn: 65002, routerId: '1.1.1.9', localAddress: '192.0.2.100', sendOptions: opts });
    rib.update(a, v4Update(v4(100), { localPref: 100 }));
    rib.update(b, v4Update(v4(100), { localPref: 100 }));
    const { messages } = drain(rib.adjRibOut(mon)!, opts);
    const got = announced(messages);
    assert.equal(got.length, 200);
    assert.equal(updatesOf(messages).length, 1, 'both paths export to the same attributes (eBGP: next hop self)');
    for (const p of v4(100)) {
      const ids = got.filter((r) => r.prefix === p).map((r) => r.pathId);
      assert.equal(new Set(ids).size, 2);
    }
  });

  it('a slow peer gets the latest state of a prefix once, not every change in between', () => {
    const { rib, src, out } = setup();
    rib.update(src, v4Update(['10.1.0.0/16', '10.2.0.0/16'], { asPath: seq(65001) }));
    drain(out);
    for (let med = 0; med < 50; med++)
      rib.update(src, v4Update(['10.1.0.0/16', '10.2.0.0/16'], { asPath: seq(65001), communities: [med] }));
    rib.withdraw(src, 'ipv4-unicast', [{ prefix: '10.2.0.0/16' }]);
    assert.equal(out.pendingCount, 2);
    const { messages } = drain(out);
    const got = announced(messages);
    assert.deepEqual(
      got.map((r) => [r.prefix, r.attributes.communities]),
      [['10.1.0.0/16', [49]]],
    );
    assert.deepEqual(
      withdrawnOf(messages).map((n) => n.prefix),
      ['10.2.0.0/16'],
    );
  });

  it('an announced-then-withdrawn prefix the peer never saw sends nothing at all', () => {
    const { rib, src, out } = setup();
    drain(out);
    rib.update(src, v4Update(['10.1.0.0/16']));
    rib.withdraw(src, 'ipv4-unicast', [{ prefix: '10.1.0.0/16' }]);
    assert.deepEqual(drain(out).raw, []);
  });

  it('back-pressure: pull returns about maxBytes at a time and the rest stays queued', () => {
    const { rib, src, out } = setup();
    rib.update(src, v4Update(v4(10000)));
    let calls = 0;
    const all: BgpMessage[] = [];
    for (;;) {
      const batch = out.pull(8192);
      if (batch.length === 0) break;
      const octets = batch.reduce((n, b) => n + b.length, 0);
      assert.ok(octets <= 8192 + 4096, `${octets} octets in one pull`);
      all.push(...batch.map((b) => decodeMessage(b)));
      calls++;
    }
    assert.ok(calls >= 5, `${calls} pulls: want at least 5`);
    checkExactlyOnce(all, v4(10000));
    assert.equal(out.hasWork, false);
  });

  it('onReady fires once when the queue gets work, and again only after it was emptied', () => {
    const { rib, src, out } = setup();
    drain(out);
    let ready = 0;
    out.onReady = () => ready++;
    rib.update(src, v4Update(['10.1.0.0/16']));
    rib.update(src, v4Update(['10.2.0.0/16']));
    assert.equal(ready, 1);
    drain(out);
    rib.update(src, v4Update(['10.3.0.0/16']));
    assert.equal(ready, 2);
  });

  it('End-of-RIB follows the initial table, per family', () => {
    const { rib, src } = setup();
    rib.update(src, v4Update(v4(10)));
    const late = rib.addPeer({ address: '192.0.2.3', asn: 65003, routerId: '1.1.1.3', localAddress: '192.0.2.100' });
    const { messages } = drain(rib.adjRibOut(late)!);
    assert.equal(messages.length, 2);
    assert.equal(announced([messages[0]]).length, 10);
    assert.ok(isEor(messages[1]), `the second message is a ${messages[1]?.type}, not End-of-RIB`);
  });

  it('route refresh sends the whole table again; enhanced refresh wraps it in BoRR/EoRR', () => {
    for (const enhanced of [false, true]) {
      const { rib, src, out } = setup({ enhancedRouteRefresh: enhanced });
      rib.update(src, v4Update(v4(10)));
      drain(out);
      out.refresh('ipv4-unicast');
      const { messages } = drain(out);
      checkExactlyOnce(messages, v4(10));
      const kinds = messages.map((m) => (m.type === 'route-refresh' ? `rr${m.subtype}` : m.type));
      assert.deepEqual(kinds, enhanced ? ['rr1', 'update', 'rr2'] : ['update']);
    }
  });

  it('attributes too large for a 4096-octet message are counted, not sent, and do not stop the rest', () => {
    const { rib, src, out } = setup();
    drain(out);
    const huge = Array.from({ length: 1100 }, (_, i) => i + 1);
    rib.update(src, v4Update(['10.1.0.0/16'], { communities: huge }));
    rib.update(src, v4Update(['10.2.0.0/16']));
    const { messages } = drain(out);
    assert.deepEqual(
      announced(messages).map((r) => r.prefix),
      ['10.2.0.0/16'],
    );
    assert.equal(out.stats.tooLarge, 1);
  });
});
