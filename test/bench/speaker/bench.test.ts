// The speaker benchmark's own instruments: the packed UPDATEs the injector sends carry exactly
// the prefixes asked for, the monitor counts what it reads (announce, withdraw, round tags)
// exactly, and end to end 10,000 prefixes injected through `podroute bgpd` all reach the monitor.
import assert from 'node:assert/strict';
import { decodeMessage } from '../../../bgp/codec/index.js';
import { benchOne } from '../../../bench/speaker/bench.js';
import { RouteMonitor } from '../../../bench/speaker/monitor.js';
import { type PhasePlan, prefixKey, type Scenario, scenarioByName, SMOKE, SMOKE_V6, topologyOf } from '../../../bench/speaker/scenarios.js';
import {
  announceUpdates,
  announceUpdatesV6,
  NO_EXPORT,
  prefixRange,
  TAG_ASN,
  v4OfKey,
  v4Text,
  v6KeyOfText,
  v6OfKey,
  v6Range48,
  withdrawUpdates,
  withdrawUpdatesV6,
} from '../../../bench/speaker/wire.js';
import { parseIpv4Number } from '../../../ip/index.js';

const attributes = (tag = 0) => ({
  origin: 'igp' as const,
  asPath: [{ type: 'sequence' as const, asns: [65001] }],
  nextHop: '10.90.0.11',
  communities: tag ? [NO_EXPORT, ((TAG_ASN << 16) | tag) >>> 0] : [NO_EXPORT],
});

/**
 * A 10,000-prefix scenario's warm variant: three rounds of warm-up and withdraw all (20,000
 * prefixes a round, to pass 50,000), then the measured announce.
 */
function warmPhases(s: Scenario): PhasePlan[] {
  const w = scenarioByName(`${s.name}-warm`);
  const phases = w.build(topologyOf(w));
  assert.deepEqual(
    phases.map((p) => [p.name, p.measured, p.expect.size]),
    [
      ...[1, 2, 3].flatMap((r) => [
        [`announce (warm-up ${r}/3)`, false, 10_000],
        [`withdraw all ${r}/3`, false, 0],
      ]),
      ['announce', true, 10_000],
    ],
  );
  return phases;
}

describe('bench/speaker: injector and monitor', () => {
  const prefixes = prefixRange(parseIpv4Number('11.0.0.0'), 10_000);

  it('packs /32s into full 4096-octet UPDATEs that decode to exactly the prefixes given, in order', () => {
    const updates = announceUpdates(prefixes, attributes());
    assert.ok(
      updates.every((u) => u.length <= 4096),
      `an UPDATE over 4096 octets: longest ${Math.max(...updates.map((u) => u.length))}`,
    );
    assert.ok(
      updates.slice(0, -1).every((u) => u.length > 4096 - 5),
      'every message but the last is full',
    );
    const decoded = updates.flatMap((u) => {
      const m = decodeMessage(u);
      assert.equal(m.type, 'update');
      return m.type === 'update' ? m.nlri.map((n) => n.prefix) : [];
    });
    assert.deepEqual(decoded, prefixes.map(v4Text));
    const withdrawn = withdrawUpdates(prefixes).flatMap((u) => {
      const m = decodeMessage(u);
      return m.type === 'update' ? m.withdrawn.map((n) => n.prefix) : [];
    });
    assert.equal(withdrawn.length, 10_000);
  });

  it('the monitor counts announcements, withdrawals and round tags exactly', () => {
    const monitor = new RouteMonitor();
    monitor.expect({ size: 10_000, tag: 0 });
    const half = announceUpdates(prefixes.slice(0, 5000), attributes());
    for (const u of half) monitor.update(u);
    assert.equal(monitor.size, 5000);
    assert.equal(monitor.complete, false);
    for (const u of announceUpdates(prefixes, attributes())) monitor.update(u);
    assert.equal(monitor.size, 10_000);
    assert.equal(monitor.complete, true);
    // The next round: everything re-announced with tag 2 after a withdrawal of the first 100.
    monitor.expect({ size: 10_000, tag: 2 });
    assert.equal(monitor.complete, false);
    for (const u of withdrawUpdates(prefixes.slice(0, 100))) monitor.update(u);
    assert.equal(monitor.size, 9900);
    for (const u of announceUpdates(prefixes.slice(0, 9999), attributes(2))) monitor.update(u);
    assert.equal(monitor.complete, false, 'one prefix still carries the old tag');
    for (const u of announceUpdates(prefixes.slice(9999), attributes(2))) monitor.update(u);
    assert.equal(monitor.complete, true);
    assert.ok(monitor.routes.has(prefixKey('11.0.39.15/32')), `11.0.39.15/32 missing from the monitor (${monitor.size} routes)`);
    monitor.expect({ size: 0, tag: 0 });
    for (const u of withdrawUpdates(prefixes)) monitor.update(u);
    assert.equal(monitor.size, 0);
    assert.equal(monitor.complete, true);
  });

  it('host bits past the length do not make a second key', () => {
    assert.equal(prefixKey('11.0.0.129/25'), prefixKey('11.0.0.128/25'));
    assert.notEqual(prefixKey('11.0.0.0/24'), prefixKey('11.0.0.0/25'));
  });

  it('a warm variant runs the phases unmeasured, withdraws exactly what the testers hold, then measures them', () => {
    const cold = SMOKE.build(topologyOf(SMOKE));
    const phases = warmPhases(SMOKE);
    assert.deepEqual(phases[phases.length - 1]!.bytes, cold[0]!.bytes);
    const withdrawn = phases[1]!.bytes.flatMap((stream) => {
      const out: string[] = [];
      for (let p = 0; p < stream.length; p += stream.readUInt16BE(p + 16)) {
        const m = decodeMessage(stream.subarray(p, p + stream.readUInt16BE(p + 16)));
        if (m.type === 'update') out.push(...m.withdrawn.map((n) => n.prefix));
      }
      return out;
    });
    assert.deepEqual(withdrawn, prefixes.map(v4Text));
    // The MRT replay's held prefixes come back from the monitor's keys.
    for (const text of ['0.0.0.0/0', '11.0.0.0/8', '203.0.113.128/25', '255.255.255.255/32'])
      assert.equal(v4Text(v4OfKey(prefixKey(text))), text);
  });

  it('a scenario past the warm-up target in one round still warms up twice (announcing after a withdrawal takes other paths)', () => {
    const w = scenarioByName('1x100k-warm');
    assert.deepEqual(
      w.build(topologyOf(w)).map((p) => [p.name, p.measured, p.expect.size]),
      [
        ['announce (warm-up 1/2)', false, 100_000],
        ['withdraw all 1/2', false, 0],
        ['announce (warm-up 2/2)', false, 100_000],
        ['withdraw all 2/2', false, 0],
        ['announce', true, 100_000],
      ],
    );
  });

  describe('IPv6', () => {
    const v6 = v6Range48(0x2a00_0000_0000, 10_000);
    const { nextHop: _, ...attributes6 } = attributes();
    const decodeAll = (updates: Buffer[]) =>
      updates.map((u) => {
        const m = decodeMessage(u);
        assert.equal(m.type, 'update');
        return m.type === 'update' ? m.attributes : {};
      });

    it('packs /48s into MP_REACH_NLRI and MP_UNREACH_NLRI of full 4096-octet UPDATEs, exactly the prefixes given', () => {
      const updates = announceUpdatesV6(v6, attributes6, 'fd90::11');
      assert.ok(
        updates.every((u) => u.length <= 4096) && updates.slice(0, -1).every((u) => u.length > 4096 - 7),
        `every UPDATE at most 4096 octets and all but the last full: ${updates.map((u) => u.length).join(', ')}`,
      );
      const decoded = decodeAll(updates);
      assert.ok(
        decoded.every((a) => a.mpReach?.nextHop === 'fd90::11' && a.nextHop === undefined),
        'every UPDATE has its next hop in MP_REACH_NLRI and no NEXT_HOP',
      );
      assert.deepEqual(
        decoded.flatMap((a) => a.mpReach?.nlri ?? []).map((n) => v6KeyOfText(n.prefix)),
        v6.map(v6KeyOfText),
      );
      const withdrawals = withdrawUpdatesV6(v6);
      assert.ok(
        withdrawals.every((u) => u.length <= 4096) && withdrawals.slice(0, -1).every((u) => u.length > 4096 - 7),
        `every withdrawal at most 4096 octets and all but the last full: ${withdrawals.map((u) => u.length).join(', ')}`,
      );
      assert.deepEqual(
        decodeAll(withdrawals)
          .flatMap((a) => a.mpUnreach?.withdrawn ?? [])
          .map((n) => v6KeyOfText(n.prefix)),
        v6.map(v6KeyOfText),
      );
    });

    it('the monitor counts IPv6 announcements and withdrawals beside IPv4 ones, with their tags', () => {
      const monitor = new RouteMonitor();
      monitor.expect({ size: 20_000, tag: 0 });
      for (const u of announceUpdates(prefixes, attributes())) monitor.update(u);
      for (const u of announceUpdatesV6(v6, attributes6, 'fd90::11')) monitor.update(u);
      assert.equal(monitor.size, 20_000);
      assert.equal(monitor.complete, true);
      assert.equal(monitor.routes.has(v6KeyOfText('2a00:0:270f::/48')), true, 'the last /48 announced is held');
      assert.equal(monitor.routes.has(v6KeyOfText('2a00:0:2710::/48')), false, 'the /48 after it was never announced');
      monitor.expect({ size: 20_000, tag: 3 });
      const { nextHop: __, ...tagged } = attributes(3);
      for (const u of announceUpdatesV6(v6, tagged, 'fd90::11')) monitor.update(u);
      assert.equal(monitor.complete, false, 'the IPv4 half still carries tag 0');
      for (const u of announceUpdates(prefixes, attributes(3))) monitor.update(u);
      assert.equal(monitor.complete, true);
      monitor.expect({ size: 10_000, tag: 3 });
      for (const u of withdrawUpdatesV6(v6)) monitor.update(u);
      assert.equal(monitor.size, 10_000);
      assert.equal(monitor.complete, true);
      assert.equal(monitor.withdrawn, 10_000);
    });

    it('keys clear host bits, tell lengths apart, and come back as the same prefix', () => {
      assert.equal(v6KeyOfText('2001:db8::1/32'), v6KeyOfText('2001:db8::/32'));
      assert.equal(v6KeyOfText('2001:db8:ff80::/41'), v6KeyOfText('2001:db8:ffff::/41'));
      assert.notEqual(v6KeyOfText('2001:db8::/32'), v6KeyOfText('2001:db8::/33'));
      for (const text of ['::/0', '2001:db8::/32', '2a00:0:1::/48', 'fd90::11/128', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128'])
        assert.equal(v6KeyOfText(v6OfKey(v6KeyOfText(text))), v6KeyOfText(text), text);
      assert.equal(v6OfKey(v6KeyOfText('2001:db8::1/32')), '2001:db8::/32');
    });

    it('a warm IPv6 variant withdraws exactly the /48s it announced', () => {
      const phases = warmPhases(SMOKE_V6);
      const monitor = new RouteMonitor();
      for (const phase of phases) {
        monitor.expect(phase.expect);
        for (const stream of phase.bytes)
          for (let p = 0; p < stream.length; p += stream.readUInt16BE(p + 16))
            monitor.update(stream.subarray(p, p + stream.readUInt16BE(p + 16)));
        assert.equal(monitor.complete, true, `${phase.name}: monitor holds ${monitor.size}`);
      }
    });
  });

  for (const [scenario, what] of [
    [SMOKE, '/32s'],
    [SMOKE_V6, 'IPv6 /48s on the IPv4 sessions'],
  ] as const) {
    it(`end to end: 10,000 ${what} injected through podroute bgpd all reach the monitor`, async function () {
      this.timeout(60_000);
      const [f] = await benchOne(scenario, 'podroute', { stallMs: 5000 });
      assert.ok(f, 'one phase measured');
      assert.equal(f.complete, true, `monitor held ${f.monitorHeld} of ${f.expected}`);
      assert.equal(f.monitorHeld, 10_000);
      assert.notEqual(f.receiveSec, undefined, 'the daemon reported all 10,000 received');
      assert.ok(f.monitorSec > 0 && f.sentSec >= 0, `monitorSec ${f.monitorSec}, sentSec ${f.sentSec}`);
    });
  }
});
