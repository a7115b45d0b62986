// maxPrefixes: the counting and the once-per-crossing warnings of the guard, the RFC 4486
// bytes of the Cease 6/1, the checks, and two speakers over real TCP on loopback: the one
// with the limit stops the session, drops the routes, refuses the peer until its restart
// time, then takes it back; with no restart time, until cleared.
import assert from 'node:assert/strict';
import { BgpSpeaker, type MaxPrefixEvent, type SessionDown } from '../../../index.js';
import { checkMaxPrefixes, MaxPrefixGuard, maxPrefixData } from '../../../bgp/session/max-prefix.js';
import { waitFor } from '../../support/wait.js';

describe('maxPrefixes', () => {
  describe('the guard', () => {
    it('warns once on crossing the threshold, again only after falling back under it', () => {
      const g = new MaxPrefixGuard({ 'ipv4-unicast': { limit: 10, warningThreshold: 50 } });
      let n = 4;
      const count = () => n;
      assert.deepEqual(g.check(count), []);
      n = 5;
      const [w] = g.check(count);
      assert.equal(w?.kind, 'threshold');
      assert.equal(w?.action, 'warning');
      assert.equal(w?.count, 5);
      n = 9;
      assert.deepEqual(g.check(count), [], 'no second warning while still above');
      n = 4;
      assert.deepEqual(g.check(count), []);
      n = 6;
      assert.equal(g.check(count)[0]?.kind, 'threshold');
      n = 10;
      assert.deepEqual(g.check(count), [], 'the limit itself is allowed');
    });

    it('the default threshold is 75% (rounded up); the limit exceeded is a shutdown once', () => {
      const g = new MaxPrefixGuard({ 'ipv6-unicast': { limit: 10, restartAfter: 30 } });
      let n = 7;
      const count = (f: string) => (f === 'ipv6-unicast' ? n : 1000);
      assert.deepEqual(g.check(count), [], 'ipv4 has no limit; 7 < 7.5');
      n = 8;
      assert.equal(g.check(count)[0]?.kind, 'threshold');
      n = 11;
      const [e] = g.check(count);
      assert.equal(e?.kind, 'exceeded');
      assert.equal(e?.action, 'shutdown');
      assert.equal(e?.restartAfter, 30);
      assert.equal(e?.family, 'ipv6-unicast');
      assert.match(e!.message, /11 ipv6-unicast paths, limit 10; session down for 30 s/);
      assert.deepEqual(g.check(count), []);
    });

    it('warningOnly warns beyond the limit and keeps going', () => {
      const g = new MaxPrefixGuard({ 'ipv4-unicast': { limit: 2, warningOnly: true } });
      const events = g.check(() => 3);
      assert.deepEqual(
        events.map((e) => [e.kind, e.action]),
        [['exceeded', 'warning']],
      );
      assert.equal(events[0]!.restartAfter, undefined);
    });

    it('a hold-down restarts after restartAfter, or waits to be cleared', async () => {
      const g = new MaxPrefixGuard({ 'ipv4-unicast': { limit: 1, restartAfter: 0 } });
      const [e] = g.check(() => 2);
      let restarted = 0;
      g.holdDown(e!, () => restarted++);
      assert.equal(g.status().heldDown?.restartAt, undefined);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(restarted, 0);
      assert.equal(g.clear(), true);
      assert.equal(g.clear(), false);
      const h = new MaxPrefixGuard({ 'ipv4-unicast': { limit: 1, restartAfter: 1 } });
      const [f] = h.check(() => 2);
      const t0 = Date.now();
      const done = new Promise<number>((resolve) => h.holdDown(f!, () => resolve(Date.now() - t0)));
      assert.ok(h.status().heldDown!.restartAt! >= t0 + 1000, `restartAt ${h.status().heldDown?.restartAt}: want >= ${t0 + 1000}`);
      const waited = await done;
      assert.ok(waited >= 990, `restarted after ${waited} ms`);
      assert.equal(h.tripped, undefined);
    });
  });

  it('the Cease data is AFI (2), SAFI (1) and the upper bound (4), RFC 4486', () => {
    assert.deepEqual([...maxPrefixData('ipv4-unicast', 100)], [0, 1, 1, 0, 0, 0, 100]);
    assert.deepEqual([...maxPrefixData('ipv6-unicast', 0x01020304)], [0, 2, 1, 1, 2, 3, 4]);
  });

  it('refuses bad limits naming the field', () => {
    const bad: [unknown, RegExp][] = [
      [{ ipv4: { limit: 1 } }, /maxPrefixes\.ipv4: unknown family/],
      [{ 'ipv4-unicast': 5 }, /maxPrefixes\.ipv4-unicast: \{ limit/],
      [{ 'ipv4-unicast': {} }, /maxPrefixes\.ipv4-unicast\.limit: undefined/],
      [{ 'ipv4-unicast': { limit: 0 } }, /\.limit: 0 is not a whole number in 1\.\.4294967295/],
      [{ 'ipv4-unicast': { limit: 5, warningThreshold: 101 } }, /\.warningThreshold: 101/],
      [{ 'ipv4-unicast': { limit: 5, restartAfter: -1 } }, /\.restartAfter: -1/],
      [{ 'ipv4-unicast': { limit: 5, warningOnly: 'yes' } }, /\.warningOnly: "yes" is not true or false/],
      [{ 'ipv4-unicast': { limit: 5, warningOnly: true, restartAfter: 5 } }, /\.restartAfter: a warningOnly limit never stops/],
      [{ 'ipv4-unicast': { limit: 5, max: 1 } }, /\.max: unknown field/],
      [[], /maxPrefixes: a mapping/],
    ];
    for (const [v, re] of bad) assert.throws(() => checkMaxPrefixes('peer 10.0.0.2 maxPrefixes', v), re, JSON.stringify(v));
    const s = new BgpSpeaker({ asn: 65001, routerId: '127.0.0.1', listen: false });
    assert.throws(
      () => s.addPeer({ address: '127.0.0.2', asn: 65002, maxPrefixes: { 'ipv4-unicast': { limit: -3 } } }),
      /peer 127\.0\.0\.2 maxPrefixes\.ipv4-unicast\.limit: -3/,
    );
    assert.throws(
      () =>
        s.addDynamicNeighbors({ range: '127.0.0.0/24', asn: 65002, maxPrefixes: { 'ipv6-unicast': { limit: 1, warningThreshold: 0 } } }),
      /dynamic neighbors 127\.0\.0\.0\/24 maxPrefixes\.ipv6-unicast\.warningThreshold: 0/,
    );
  });
});

let nextPort = 26000 + (process.pid % 4000) * 4;
const port = () => nextPort++;

describe('maxPrefixes between two speakers over loopback', function () {
  this.timeout(60_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });

  /** `a` sends, `b` has the limit. */
  async function pair(ip: string, maxPrefixes: NonNullable<Parameters<BgpSpeaker['addPeer']>[0]['maxPrefixes']>) {
    const [ipA, ipB] = [`${ip}.1`, `${ip}.2`];
    const [pa, pb] = [port(), port()];
    const a = new BgpSpeaker({ asn: 65001, routerId: ipA, listen: { host: ipA, port: pa } });
    const b = new BgpSpeaker({ asn: 65002, routerId: ipB, listen: { host: ipB, port: pb } });
    speakers.push(a, b);
    await a.start();
    await b.start();
    // a retries every second, so a b that let it in early would show it.
    const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2, gracefulRestart: false };
    a.addPeer({ address: ipB, asn: 65002, port: pb, localAddress: ipA, ...common });
    b.addPeer({ address: ipA, asn: 65001, port: pa, localAddress: ipB, ...common, maxPrefixes });
    return { a, b, ipA, ipB };
  }

  const state = (s: BgpSpeaker) => s.peerStatus()[0]!.state;
  const established = (s: BgpSpeaker, what: string) =>
    waitFor(() => state(s), { what, until: (st) => st === 'Established', timeoutMs: 15_000, intervalMs: 20 });
  const originate = (s: BgpSpeaker, from: number, to: number) => {
    for (let i = from; i < to; i++) s.originate(`10.77.${i}.0/24`);
  };

  it('past the limit: Cease 6/1 with the RFC 4486 data, no routes kept, the peer refused until restartAfter, then back', async () => {
    const { a, b, ipA, ipB } = await pair('127.0.31', { 'ipv4-unicast': { limit: 10, warningThreshold: 50, restartAfter: 3 } });
    const events: MaxPrefixEvent[] = [];
    let tripped = 0;
    b.on('maxPrefix', (_, e) => {
      events.push(e);
      if (e.kind === 'exceeded') tripped = Date.now();
    });
    let upAgain = 0;
    b.on('peerUp', () => (upAgain = Date.now()));
    const downsA: SessionDown[] = [];
    a.on('peerDown', (_, d) => downsA.push(d));
    const downsB: SessionDown[] = [];
    b.on('peerDown', (_, d) => downsB.push(d));
    await established(b, 'first session');
    originate(a, 0, 6);
    await waitFor(() => b.adjRibIn(ipA).length, { what: '6 routes at b', until: (n) => n === 6, timeoutMs: 10_000 });
    // The six may come in one UPDATE or several: one warning either way, at 5 or 6 of 10.
    assert.equal(events.length, 1, 'one warning');
    assert.equal(events[0]!.kind, 'threshold');
    assert.ok(events[0]!.count >= 5 && events[0]!.count <= 6, `warned at ${events[0]?.count}: want 5 or 6`);

    originate(a, 6, 11);
    await waitFor(() => downsA.length, { what: 'a sees the session go', until: (n) => n > 0, timeoutMs: 10_000 });
    const received = downsA[0]!.reason.received!;
    assert.equal(received.code, 6);
    assert.equal(received.subcode, 1);
    assert.deepEqual([...(received.data ?? [])], [0, 1, 1, 0, 0, 0, 10]);
    assert.equal(events.at(-1)!.kind, 'exceeded');
    assert.equal(events.at(-1)!.action, 'shutdown');
    assert.equal(b.adjRibIn(ipA).length, 0);
    assert.equal(b.routes('ipv4-unicast').length, 0);
    assert.match(downsB[0]!.message, /maximum prefixes exceeded: 11 ipv4-unicast paths, limit 10; session down for 3 s/);
    const st = b.peerStatus()[0]!;
    assert.equal(st.state, 'Idle');
    assert.match(st.lastError, /maximum prefixes exceeded/);
    assert.equal(st.maxPrefixes?.heldDown?.family, 'ipv4-unicast');
    assert.ok(
      st.maxPrefixes!.heldDown!.restartAt! >= tripped + 2500,
      `restartAt ${st.maxPrefixes?.heldDown?.restartAt}: want >= ${tripped + 2500}`,
    );

    // a keeps trying (idle hold 0.2 s, connect retry 1 s); b must not let it in before its 3 s.
    a.withdraw('10.77.10.0/24');
    a.withdraw('10.77.9.0/24');
    await waitFor(() => state(b), { what: 'b back in session', until: (s) => s === 'Established', timeoutMs: 10_000, intervalMs: 20 });
    const downFor = upAgain - tripped;
    assert.ok(downFor >= 2990, `b took the peer back after ${downFor} ms`);
    assert.ok(downFor < 6000, `b took the peer back after ${downFor} ms`);
    await waitFor(() => b.adjRibIn(ipA).length, { what: '9 routes back', until: (n) => n === 9, timeoutMs: 10_000 });
    assert.equal(state(b), 'Established');
    assert.equal(b.peerStatus()[0]!.maxPrefixes?.heldDown, undefined);
    assert.equal(b.peerStatus()[0]!.lastError, '');
    void ipB;
  });

  it('restartAfter 0 stays down until clearMaxPrefix; warningOnly keeps the session', async () => {
    const { a, b, ipA } = await pair('127.0.32', { 'ipv4-unicast': { limit: 3, restartAfter: 0 } });
    await established(b, 'first session');
    originate(a, 0, 4);
    await waitFor(() => state(b), { what: 'b stops the session', until: (s) => s === 'Idle', timeoutMs: 10_000, intervalMs: 20 });
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(state(b), 'Idle', 'still down 2 s later');
    assert.equal(b.peerStatus()[0]!.maxPrefixes?.heldDown?.restartAt, undefined);
    assert.equal(b.adjRibIn(ipA).length, 0);
    a.withdraw('10.77.3.0/24');
    assert.equal(b.clearMaxPrefix(ipA), true);
    assert.equal(b.clearMaxPrefix(ipA), false);
    await established(b, 'back after the clear');
    await waitFor(() => b.adjRibIn(ipA).length, { what: '3 routes', until: (n) => n === 3, timeoutMs: 10_000 });
    // A reset (FRR's clear bgp) of a held peer starts it too, and its limit holds again afterwards.
    a.originate('10.77.3.0/24');
    await waitFor(() => b.peerStatus()[0]!.maxPrefixes?.heldDown, { what: 'held again', until: (h) => h !== undefined, timeoutMs: 10_000 });
    a.withdraw('10.77.3.0/24');
    assert.equal(await b.resetPeer(ipA), true);
    assert.equal(b.peerStatus()[0]!.maxPrefixes?.heldDown, undefined);
    await established(b, 'back after the reset');
    a.originate('10.77.3.0/24');
    await waitFor(() => b.peerStatus()[0]!.maxPrefixes?.heldDown, {
      what: 'held a third time',
      until: (h) => h !== undefined,
      timeoutMs: 10_000,
    });

    const w = await pair('127.0.33', { 'ipv4-unicast': { limit: 3, warningOnly: true } });
    const events: MaxPrefixEvent[] = [];
    w.b.on('maxPrefix', (_, e) => events.push(e));
    await established(w.b, 'warningOnly session');
    originate(w.a, 0, 5);
    await waitFor(() => w.b.adjRibIn(w.ipA).length, { what: '5 routes kept', until: (n) => n === 5, timeoutMs: 10_000 });
    assert.equal(state(w.b), 'Established');
    assert.deepEqual(
      events.map((e) => [e.kind, e.action]),
      events.length === 2
        ? [
            ['threshold', 'warning'],
            ['exceeded', 'warning'],
          ]
        : [['exceeded', 'warning']],
    );
  });
  it('a dynamic neighbour that exceeds its limit is held (its connections refused) until restartAfter, then made anew', async () => {
    const [ipA, ipB] = ['127.0.34.1', '127.0.34.2'];
    const [pa, pb] = [port(), port()];
    const a = new BgpSpeaker({ asn: 65001, routerId: ipA, listen: { host: ipA, port: pa } });
    const b = new BgpSpeaker({ asn: 65002, routerId: ipB, listen: { host: ipB, port: pb } });
    speakers.push(a, b);
    await a.start();
    await b.start();
    a.addPeer({
      address: ipB,
      asn: 65002,
      port: pb,
      localAddress: ipA,
      holdTime: 9,
      connectRetryTime: 1,
      idleHoldTime: 0.2,
      gracefulRestart: false,
    });
    b.addDynamicNeighbors({
      range: '127.0.34.0/24',
      asn: 65001,
      holdTime: 9,
      maxPrefixes: { 'ipv4-unicast': { limit: 2, restartAfter: 2 } },
    });
    await established(b, 'dynamic session');
    originate(a, 0, 3);
    const held = await waitFor(() => b.peerStatus()[0], {
      what: 'the dynamic neighbour held down',
      until: (p) => p?.maxPrefixes?.heldDown !== undefined,
      timeoutMs: 10_000,
      intervalMs: 20,
    });
    assert.equal(held!.dynamic, true);
    assert.equal(held!.state, 'Idle');
    assert.equal(b.routes('ipv4-unicast').length, 0);
    const restartAt = held!.maxPrefixes!.heldDown!.restartAt!;
    a.withdraw('10.77.2.0/24');
    let upAgain = 0;
    b.on('peerUp', () => (upAgain = Date.now()));
    await waitFor(() => upAgain, { what: 'the neighbour back', until: (t) => t > 0, timeoutMs: 10_000, intervalMs: 20 });
    assert.ok(upAgain >= restartAt, `back ${restartAt - upAgain} ms before its restart time`);
    assert.equal(b.peerStatus().length, 1);
    await waitFor(() => b.adjRibIn(ipA).length, { what: '2 routes', until: (n) => n === 2, timeoutMs: 10_000 });
  });
  it("past the speaker's maxRoutes (every peer's paths together) the peer that tipped it gets Cease 6/8 and is held down; the others keep theirs", async () => {
    const ip = (i: number) => `127.0.35.${i}`;
    const ports = [port(), port(), port()];
    const b = new BgpSpeaker({
      asn: 65002,
      routerId: ip(2),
      listen: { host: ip(2), port: ports[0]! },
      maxRoutes: { limit: 5, restartAfter: 30 },
    });
    const a1 = new BgpSpeaker({ asn: 65001, routerId: ip(1), listen: { host: ip(1), port: ports[1]! } });
    const a3 = new BgpSpeaker({ asn: 65003, routerId: ip(3), listen: { host: ip(3), port: ports[2]! } });
    speakers.push(b, a1, a3);
    await Promise.all([b.start(), a1.start(), a3.start()]);
    const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2, gracefulRestart: false };
    for (const [a, i, p] of [
      [a1, 1, ports[1]!],
      [a3, 3, ports[2]!],
    ] as const) {
      a.addPeer({ address: ip(2), asn: 65002, port: ports[0]!, localAddress: ip(i), ...common });
      b.addPeer({ address: ip(i), asn: a.asn, port: p, localAddress: ip(2), ...common });
    }
    await waitFor(() => b.peerStatus(), {
      what: 'both sessions',
      until: (ps) => ps.every((p) => p.state === 'Established'),
      timeoutMs: 15_000,
    });
    // Originated routes are not received ones: they do not count.
    for (let i = 0; i < 4; i++) b.originate(`10.80.${i}.0/24`);
    const downs: SessionDown[] = [];
    a3.on('peerDown', (_, d) => downs.push(d));
    for (let i = 0; i < 3; i++) a1.originate(`10.78.${i}.0/24`);
    await waitFor(() => b.adjRibIn(ip(1)).length, { what: "a1's 3 routes", until: (n) => n === 3, timeoutMs: 10_000 });
    for (let i = 0; i < 3; i++) a3.originate(`10.79.${i}.0/24`);
    await waitFor(() => downs.length, { what: 'a3 stopped', until: (n) => n > 0, timeoutMs: 10_000 });
    assert.equal(downs[0]!.reason.received?.code, 6);
    assert.equal(downs[0]!.reason.received?.subcode, 8);
    assert.deepEqual(b.adjRibIn(ip(3)), []);
    assert.equal(b.adjRibIn(ip(1)).length, 3);
    assert.equal(b.rib.receivedPaths, 3);
    const held = b.peerStatus().find((p) => p.address === ip(3))!;
    assert.equal(held.state, 'Idle');
    assert.match(held.lastError, /Adj-RIB-In full: 6 paths from all peers, maxRoutes 5; session down for 30 s/);
    assert.equal(b.peerStatus().find((p) => p.address === ip(1))!.state, 'Established');
    assert.throws(() => new BgpSpeaker({ asn: 1, routerId: '1.1.1.1', maxRoutes: { limit: 0 } }), /maxRoutes\.limit: 0/);
  });
});
