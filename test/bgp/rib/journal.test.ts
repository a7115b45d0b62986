// The change journal as the Adj-RIB-Outs see it: what counts as work for a peer, the live
// count of what it has left, readers coming and going in any order, and a lagging peer across
// compactions.
import assert from 'node:assert/strict';
import { Rib, type AdjRibOut, type RibPeer } from '../../../bgp/rib/index.js';
import { announced, drain, seq, v4Update, withdrawnOf } from '../../support/rib.js';

const NO_EXPORT = 0xffffff01;
const v4 = (n: number, from = 0): string[] => Array.from({ length: n }, (_, i) => `10.${((i + from) >> 8) & 255}.${(i + from) & 255}.0/24`);

function ribWithSources() {
  const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
  const a = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1', families: [] });
  const b = rib.addPeer({ address: '192.0.2.3', asn: 65003, routerId: '1.1.1.3', families: [] });
  return { rib, a, b };
}

function monitor(rib: Rib, i: number, options: { ibgp?: boolean; addPath?: boolean } = {}): AdjRibOut {
  const p = rib.addPeer({
    address: `198.51.100.${i}`,
    asn: options.ibgp ? 65000 : 65100,
    routerId: `2.2.2.${i}`,
    localAddress: '198.51.100.254',
    sendOptions: options.addPath ? { addPath: { 'ipv4-unicast': true } } : undefined,
  });
  return rib.adjRibOut(p)!;
}

describe('rib: change journal', () => {
  it('a change behind the best path is no work for a peer without ADD-PATH: not woken, nothing pending', () => {
    const { rib, a, b } = ribWithSources();
    const plain = monitor(rib, 1);
    const addPath = monitor(rib, 2, { addPath: true });
    rib.update(a, v4Update(['10.1.0.0/16'], { asPath: seq(65001) }));
    rib.update(b, v4Update(['10.1.0.0/16'], { asPath: seq(65003, 65004, 65005), nextHop: '192.0.2.3' }));
    drain(plain);
    drain(addPath, { addPath: { 'ipv4-unicast': true } });
    let woken = 0;
    plain.onReady = () => woken++;
    // b's path stays second: only its attributes change.
    rib.update(b, v4Update(['10.1.0.0/16'], { asPath: seq(65003, 65004, 65005), nextHop: '192.0.2.3', communities: [7] }));
    assert.equal(plain.hasWork, false);
    assert.equal(plain.pendingCount, 0);
    assert.equal(woken, 0);
    assert.deepEqual(plain.pull(), []);
    assert.equal(addPath.hasWork, true);
    assert.equal(addPath.pendingCount, 1);
    const got = announced(drain(addPath, { addPath: { 'ipv4-unicast': true } }).messages);
    assert.deepEqual(
      got.map((r) => [r.prefix, r.attributes.communities]),
      [['10.1.0.0/16', [7]]],
      "b's changed path only: the best path, unchanged, is not sent again",
    );
  });

  it('a busy peer counts only what concerns it, and a prefix changed again once', () => {
    const { rib, a, b } = ribWithSources();
    const out = monitor(rib, 1);
    drain(out);
    rib.update(b, v4Update(v4(3), { asPath: seq(65003, 65004, 65005), nextHop: '192.0.2.3' }));
    assert.equal(out.pendingCount, 3);
    // Reads one prefix: its first costs more than a one-octet budget.
    const first = out.pull(1);
    assert.ok(first.length > 0, 'pull(1) gave nothing: the first prefix goes out whatever its cost');
    assert.equal(out.pendingCount, 2);
    // Changing the prefix already read adds one; changing one not yet read adds none.
    rib.update(b, v4Update([v4(3)[0], v4(3)[2]], { asPath: seq(65003, 65004, 65005), nextHop: '192.0.2.3', communities: [1] }));
    assert.equal(out.pendingCount, 3);
    // a's better path takes over the second prefix, not yet read: still one entry.
    rib.update(a, v4Update([v4(3)[1]], { asPath: seq(65001) }));
    assert.equal(out.pendingCount, 3);
    // A change behind a's best path: no work for this peer.
    rib.update(b, v4Update([v4(3)[1]], { asPath: seq(65003, 65004, 65005), nextHop: '192.0.2.3', communities: [9] }));
    assert.equal(out.pendingCount, 3);
    const got = announced(drain(out).messages);
    assert.equal(out.pendingCount, 0);
    assert.equal(out.hasWork, false);
    assert.deepEqual(got.map((r) => r.prefix).sort(), [...v4(3)].sort());
    assert.deepEqual(got.find((r) => r.prefix === v4(3)[1])!.attributes.asPath, seq(65000, 65001));
    assert.deepEqual(got.find((r) => r.prefix === v4(3)[0])!.attributes.communities, [1]);
  });

  it('update groups interleaved in the idle list each decide for their own members', () => {
    const { rib, a } = ribWithSources();
    const outs = Array.from({ length: 12 }, (_, i) => monitor(rib, i + 1, { ibgp: i % 2 === 0 }));
    for (const o of outs) drain(o);
    rib.update(a, v4Update(['10.9.0.0/16'], { communities: [NO_EXPORT] }));
    outs.forEach((o, i) => {
      assert.equal(o.hasWork, i % 2 === 0, `monitor ${i + 1} (${i % 2 === 0 ? 'iBGP' : 'eBGP'})`);
    });
    rib.update(a, v4Update(['10.10.0.0/16']));
    outs.forEach((o, i) => {
      const got = announced(drain(o).messages).map((r) => r.prefix);
      assert.deepEqual(got.sort(), i % 2 === 0 ? ['10.10.0.0/16', '10.9.0.0/16'] : ['10.10.0.0/16']);
    });
  });

  it('a change like the last one, which woke no one, still wakes a peer that went idle since', () => {
    const { rib, a } = ribWithSources();
    const ebgp = monitor(rib, 1);
    drain(ebgp);
    rib.update(a, v4Update(['10.1.0.0/16'], { communities: [NO_EXPORT] }));
    assert.equal(ebgp.hasWork, false);
    const ibgp = monitor(rib, 2, { ibgp: true });
    assert.deepEqual(
      announced(drain(ibgp).messages).map((r) => r.prefix),
      ['10.1.0.0/16'],
    );
    // Same attributes, next hop and peer as the change that woke no one.
    rib.update(a, v4Update(['10.2.0.0/16'], { communities: [NO_EXPORT] }));
    assert.equal(ebgp.hasWork, false);
    assert.equal(ibgp.hasWork, true);
    assert.deepEqual(
      announced(drain(ibgp).messages).map((r) => r.prefix),
      ['10.2.0.0/16'],
    );
  });

  it('sessions closing in any order leave the others reading: idle, busy, first, last', () => {
    const { rib, a } = ribWithSources();
    const peers: RibPeer[] = [];
    const outs: AdjRibOut[] = [];
    for (let i = 1; i <= 30; i++) {
      outs.push(monitor(rib, i));
      peers.push(rib.peers().at(-1)!);
    }
    rib.update(a, v4Update(v4(10)));
    // Half idle, half with work.
    outs.forEach((o, i) => {
      if (i % 2 === 0) drain(o);
    });
    for (const i of [0, 29, 1, 14, 15, 7, 22]) rib.peerDown(peers[i]);
    rib.update(a, v4Update(v4(5, 10)));
    rib.withdraw(
      a,
      'ipv4-unicast',
      v4(2).map((prefix) => ({ prefix })),
    );
    const closed = new Set([0, 29, 1, 14, 15, 7, 22]);
    outs.forEach((o, i) => {
      if (closed.has(i)) {
        assert.deepEqual(o.pull(), []);
        return;
      }
      const { messages } = drain(o);
      const got = announced(messages).map((r) => r.prefix);
      if (i % 2 === 0) {
        assert.deepEqual(got.sort(), v4(5, 10).sort(), `idle monitor ${i + 1}`);
        assert.deepEqual(
          withdrawnOf(messages)
            .map((n) => n.prefix)
            .sort(),
          v4(2).sort(),
        );
      } else {
        assert.deepEqual(got.sort(), v4(13, 2).sort(), `busy monitor ${i + 1} never had the withdrawn ones`);
        assert.deepEqual(withdrawnOf(messages), []);
      }
    });
    // The same peers come back and get the table again.
    rib.peerUp(peers[14]);
    assert.deepEqual(
      announced(drain(rib.adjRibOut(peers[14])!).messages)
        .map((r) => r.prefix)
        .sort(),
      v4(13, 2).sort(),
    );
  });

  it('a peer that never pulls, across many compactions, gets each prefix once with its last state', () => {
    const { rib, a } = ribWithSources();
    const fast = monitor(rib, 1);
    const slow = monitor(rib, 2);
    const n = 20_000;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < n; i += 500) {
        rib.update(a, v4Update(v4(500, i), { communities: [round] }));
        drain(fast);
      }
    }
    rib.withdraw(
      a,
      'ipv4-unicast',
      v4(1000).map((prefix) => ({ prefix })),
    );
    assert.equal(slow.pendingCount, n);
    const { messages } = drain(slow);
    const got = announced(messages);
    assert.equal(got.length, n - 1000);
    assert.equal(new Set(got.map((r) => r.prefix)).size, n - 1000);
    assert.ok(
      got.every((r) => r.attributes.communities?.[0] === 2),
      `${got.filter((r) => r.attributes.communities?.[0] !== 2).length} of ${got.length} routes without community 2`,
    );
    assert.deepEqual(withdrawnOf(messages), [], 'it never had the withdrawn ones');
    assert.equal(slow.sentCount('ipv4-unicast'), n - 1000);
    assert.equal(withdrawnOf(drain(fast).messages).length, 1000);
    assert.equal(fast.sentCount('ipv4-unicast'), n - 1000);
  });
});
