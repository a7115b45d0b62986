// Issue 2: BGP messages captured live from FRR, BIRD and GoBGP sessions decode and re-encode
// byte for byte. Seven sessions run at once in namespaces on one segment: eBGP over IPv4 and
// iBGP over IPv6 between each pair of daemons, both carrying IPv4 and IPv6 unicast with every
// capability each daemon offers, plus an FRR that only speaks 2-octet AS. dumpcap records
// them while the daemons announce, withdraw, refresh and shut the sessions down with an RFC
// 8203 message; the TCP streams are reassembled from the capture and cut into messages.
import assert from 'node:assert/strict';
import { encodeMessage, findCapability, type Capability, type UpdateMessage } from '../../../bgp/index.js';
import { Bird } from '../../support/bird.js';
import type { Family, RouterConfig } from '../../support/bgp-config.js';
import { decodeSession, messagesOfType, type CapturedDirection, type CapturedSession } from '../../support/bgp-capture.js';
import { PacketCapture, uniqueConnections } from '../../support/capture.js';
import { Frr } from '../../support/frr.js';
import { Gobgp } from '../../support/gobgp.js';
import { waitEstablished } from '../../support/lab.js';
import { Lab, type Netns } from '../../support/netns.js';
import type { TcpConnection } from '../../support/pcap.js';
import { waitFor } from '../../support/wait.js';

type Kind = 'frr' | 'bird' | 'gobgp';
const both: Family[] = ['ipv4', 'ipv6'];

interface Node {
  key: string;
  kind: Kind;
  asn: number;
  v4: string;
  v6: string;
  /** Originated and kept. */
  keep: string[];
  /** Originated, then withdrawn during the capture. */
  withdraw: string[];
  hostname?: string;
}

const AS4 = 4_200_000_003; // needs 4 octets: GoBGP's OPEN carries AS_TRANS
const nodes: Node[] = [
  {
    key: 'efrr',
    kind: 'frr',
    asn: 65001,
    v4: '10.99.0.1',
    v6: 'fd00:99::1',
    keep: ['10.201.0.0/24', '2001:db8:201::/48'],
    withdraw: ['10.201.1.0/24', '2001:db8:201:1::/64'],
    hostname: 'efrr',
  },
  {
    key: 'ebird',
    kind: 'bird',
    asn: 65002,
    v4: '10.99.0.2',
    v6: 'fd00:99::2',
    keep: [],
    withdraw: ['10.202.0.0/24', '2001:db8:202::/48'],
    hostname: 'ebird',
  },
  {
    key: 'egobgp',
    kind: 'gobgp',
    asn: AS4,
    v4: '10.99.0.3',
    v6: 'fd00:99::3',
    keep: ['10.203.0.0/24', '2001:db8:203::/48'],
    withdraw: ['10.203.1.0/24', '2001:db8:203:1::/64'],
  },
  {
    key: 'ifrr',
    kind: 'frr',
    asn: 65000,
    v4: '10.99.0.11',
    v6: 'fd00:99::11',
    keep: ['10.211.0.0/24', '2001:db8:211::/48'],
    withdraw: ['10.211.1.0/24', '2001:db8:211:1::/64'],
    hostname: 'ifrr',
  },
  {
    key: 'ibird',
    kind: 'bird',
    asn: 65000,
    v4: '10.99.0.12',
    v6: 'fd00:99::12',
    keep: [],
    withdraw: ['10.212.0.0/24', '2001:db8:212::/48'],
    hostname: 'ibird',
  },
  {
    key: 'igobgp',
    kind: 'gobgp',
    asn: 65000,
    v4: '10.99.0.13',
    v6: 'fd00:99::13',
    keep: ['10.213.0.0/24', '2001:db8:213::/48'],
    withdraw: ['10.213.1.0/24', '2001:db8:213:1::/64'],
  },
  { key: 'ofrr', kind: 'frr', asn: 65010, v4: '10.99.0.21', v6: 'fd00:99::21', keep: ['10.221.0.0/24'], withdraw: [], hostname: 'ofrr' },
];
const node = (key: string): Node => nodes.find((n) => n.key === key)!;

interface Pair {
  name: string;
  a: string;
  b: string;
  /** Session addresses: IPv4 (eBGP) or IPv6 (iBGP) transport. */
  transport: 'v4' | 'v6';
  /** Who ends the session with an Administrative Shutdown and this communication. */
  shutdownBy: string;
  /**
   * Who asks the other for its routes again; none where no side can (GoBGP's softresetin
   * re-runs its import policy and sends no ROUTE-REFRESH; a capability-less peer has no RR).
   */
  refreshBy?: string;
  families: Family[];
}

const pairs: Pair[] = [
  { name: 'eBGP FRR–BIRD', a: 'efrr', b: 'ebird', transport: 'v4', shutdownBy: 'efrr', refreshBy: 'efrr', families: both },
  { name: 'eBGP FRR–GoBGP', a: 'efrr', b: 'egobgp', transport: 'v4', shutdownBy: 'egobgp', refreshBy: 'efrr', families: both },
  { name: 'eBGP BIRD–GoBGP', a: 'ebird', b: 'egobgp', transport: 'v4', shutdownBy: 'ebird', refreshBy: 'ebird', families: both },
  { name: 'iBGP FRR–BIRD over IPv6', a: 'ifrr', b: 'ibird', transport: 'v6', shutdownBy: 'ibird', refreshBy: 'ifrr', families: both },
  { name: 'iBGP FRR–GoBGP over IPv6', a: 'ifrr', b: 'igobgp', transport: 'v6', shutdownBy: 'ifrr', refreshBy: 'ifrr', families: both },
  { name: 'iBGP BIRD–GoBGP over IPv6', a: 'ibird', b: 'igobgp', transport: 'v6', shutdownBy: 'igobgp', refreshBy: 'ibird', families: both },
  { name: '2-octet-only FRR–BIRD', a: 'ofrr', b: 'ebird', transport: 'v4', shutdownBy: 'ofrr', families: ['ipv4'] },
];
const addressOf = (key: string, transport: 'v4' | 'v6'): string => node(key)[transport];
const shutdownMessage = (pair: Pair): string => `podroute capture: ${pair.shutdownBy} closes ${pair.name}`;

function routerConfig(n: Node): RouterConfig {
  const peers = pairs
    .filter((p) => p.a === n.key || p.b === n.key)
    .map((p) => {
      const other = node(p.a === n.key ? p.b : p.a);
      const twoOctet = n.key === 'ofrr';
      return {
        address: addressOf(other.key, p.transport),
        remoteAs: other.asn,
        families: p.families,
        ...(twoOctet ? { fourOctetAs: false } : { addPath: 'both' as const }),
        ...(p.transport === 'v6' && n.kind !== 'gobgp' ? { extendedNextHop: true } : {}),
        ...(n.kind === 'bird' ? { extendedMessage: true } : {}),
      };
    });
  const twoOctet = n.key === 'ofrr';
  return {
    routerId: n.v4,
    asn: n.asn,
    ...(n.hostname ? { hostname: n.hostname } : {}),
    nextHopV6: n.v6,
    peers,
    networks: [...n.keep, ...n.withdraw].map((prefix, i) => (i === 0 ? { prefix, med: 10, communities: [`${n.asn & 0xffff}:1`] } : prefix)),
    ...(twoOctet ? {} : { gracefulRestart: { restartTime: 120 }, longLivedGracefulRestart: { staleTime: 300 } }),
  };
}

type Daemon = Frr | Bird | Gobgp;

describe('live captures: FRR, BIRD and GoBGP messages decode and re-encode byte for byte', function () {
  this.timeout(120_000);
  let lab: Lab;
  const daemons = new Map<string, Daemon>();
  const sessions = new Map<string, CapturedSession[]>();

  const sessionsOf = (pair: Pair, connections: TcpConnection[]): CapturedSession[] => {
    const ends = new Set([addressOf(pair.a, pair.transport), addressOf(pair.b, pair.transport)]);
    return connections
      .filter((c) => ends.has(c.client.address) && ends.has(c.server.address))
      .filter((c) => c.clientToServer.bytes.length + c.serverToClient.bytes.length > 0)
      .map(decodeSession);
  };

  /** The side of a session that `key` sent. */
  const sentBy = (session: CapturedSession, key: string, pair: Pair): CapturedDirection =>
    session.client.from.address === addressOf(key, pair.transport) ? session.client : session.server;

  /** The connection that carried the session: OPENs both ways, the most messages. */
  const mainSession = (pair: Pair): CapturedSession => {
    const candidates = (sessions.get(pair.name) ?? []).filter((s) => s.client.open && s.server.open);
    assert.ok(candidates.length > 0, `${pair.name}: no captured connection with OPENs both ways`);
    return candidates.sort(
      (x, y) => y.client.messages.length + y.server.messages.length - (x.client.messages.length + x.server.messages.length),
    )[0]!;
  };

  const anyRouteRefresh = (connections: TcpConnection[], pair: Pair): boolean =>
    !pair.refreshBy ||
    sessionsOf(pair, connections).some((s) => messagesOfType(sentBy(s, pair.refreshBy!, pair), 'route-refresh').length > 0);
  const notified = (connections: TcpConnection[], pair: Pair): boolean =>
    sessionsOf(pair, connections).some((s) => messagesOfType(sentBy(s, pair.shutdownBy, pair), 'notification').length > 0);

  before(async () => {
    lab = new Lab({ tag: 'cap' });
    const sw = await lab.segment();
    const namespaces = new Map<string, Netns>();
    for (const n of nodes) {
      const ns = await lab.namespace(n.key);
      await sw.attach(ns, { v4: `${n.v4}/24`, v6: `${n.v6}/64` });
      namespaces.set(n.key, ns);
    }
    // One capture per FRR and BIRD namespace sees every session (GoBGP's are all with one of them).
    const captures = await Promise.all(['efrr', 'ebird', 'ifrr', 'ibird'].map((key) => PacketCapture.start(namespaces.get(key)!)));
    const started = await Promise.all(
      nodes.map(async (n): Promise<[string, Daemon]> => {
        const ns = namespaces.get(n.key)!;
        const config = routerConfig(n);
        if (n.kind === 'frr') return [n.key, await Frr.start(ns, config)];
        if (n.kind === 'bird') return [n.key, await Bird.start(ns, config)];
        return [n.key, await Gobgp.start(ns, config)];
      }),
    );
    for (const [key, daemon] of started) daemons.set(key, daemon);
    await Promise.all([...daemons.values()].map((d) => waitEstablished(d)));

    const current = async (): Promise<TcpConnection[]> =>
      uniqueConnections(await Promise.all(captures.map((c) => c.waitFor('readable', () => true))));
    // The initial tables: every originated prefix has gone out on every session.
    await captures[0]!.waitFor('initial UPDATEs', () => true);
    const allSent = async (): Promise<string[]> => {
      const connections = await current();
      return pairs.flatMap((pair) =>
        [pair.a, pair.b].flatMap((key) => {
          const want = [...node(key).keep, ...node(key).withdraw].filter((p) => pair.families.includes(p.includes(':') ? 'ipv6' : 'ipv4'));
          const sent = new Set(sessionsOf(pair, connections).flatMap((s) => announced(sentBy(s, key, pair))));
          return want.filter((p) => !sent.has(p)).map((p) => `${pair.name}: ${key} ${p}`);
        }),
      );
    };
    await waitUntil(allSent, 'every originated prefix announced on every session');

    // Withdrawals.
    for (const n of nodes) {
      const d = daemons.get(n.key)!;
      if (d instanceof Frr) for (const p of n.withdraw) await d.withdraw(p);
      if (d instanceof Gobgp) for (const p of n.withdraw) await d.withdraw(p);
      if (d instanceof Bird) for (const proto of ['static4', 'static6']) await d.birdc(`disable ${proto}`);
    }
    await waitUntil(async () => {
      const connections = await current();
      return pairs.flatMap((pair) =>
        [pair.a, pair.b].flatMap((key) => {
          const want = node(key).withdraw.filter((p) => pair.families.includes(p.includes(':') ? 'ipv6' : 'ipv4'));
          const gone = new Set(sessionsOf(pair, connections).flatMap((s) => withdrawn(sentBy(s, key, pair))));
          return want.filter((p) => !gone.has(p)).map((p) => `${pair.name}: ${key} ${p}`);
        }),
      );
    }, 'every withdrawal sent on every session');

    // Route refresh, asked by one side of each session.
    for (const pair of pairs) {
      if (!pair.refreshBy) continue;
      const asker = daemons.get(pair.refreshBy)!;
      const other = pair.refreshBy === pair.a ? pair.b : pair.a;
      const peer = addressOf(other, pair.transport);
      if (asker instanceof Frr) await asker.vtysh(`clear bgp ${peer} soft in`);
      if (asker instanceof Bird) await asker.birdc(`reload in ${asker.protocolFor(peer)}`);
      if (asker instanceof Gobgp) for (const f of pair.families) await asker.softResetIn(peer, f);
    }
    await waitUntil(async () => {
      const connections = await current();
      return pairs.filter((pair) => !anyRouteRefresh(connections, pair)).map((p) => p.name);
    }, 'a ROUTE-REFRESH on every session');

    // Administrative shutdown with a communication, from one side of each session.
    for (const pair of pairs) {
      const closer = daemons.get(pair.shutdownBy)!;
      const other = pair.shutdownBy === pair.a ? pair.b : pair.a;
      const peer = addressOf(other, pair.transport);
      if (closer instanceof Frr) await closer.shutdownNeighbor(peer, shutdownMessage(pair));
      if (closer instanceof Bird) await closer.disable(closer.protocolFor(peer), shutdownMessage(pair));
      if (closer instanceof Gobgp) await closer.disableNeighbor(peer, shutdownMessage(pair));
    }
    await waitUntil(async () => {
      const connections = await current();
      return pairs.filter((pair) => !notified(connections, pair)).map((p) => p.name);
    }, 'a NOTIFICATION on every session');

    const connections = uniqueConnections(await Promise.all(captures.map((c) => c.connections())));
    for (const pair of pairs) sessions.set(pair.name, sessionsOf(pair, connections));
  });

  after(async () => {
    await lab?.destroy();
  });

  it('captured every session, with nothing missing from the streams', () => {
    for (const pair of pairs) {
      const all = sessions.get(pair.name) ?? [];
      assert.ok(all.length > 0, `${pair.name}: no connection captured`);
      for (const s of all) {
        for (const d of [s.client, s.server]) {
          const where = `${pair.name} ${d.from.address}→${d.to.address}`;
          assert.deepEqual(d.stream.gaps, [], `${where}: bytes missing from the capture`);
          assert.equal(d.framingError, undefined, `${where}: ${d.framingError?.message}`);
          assert.equal(d.trailing, 0, `${where}: a message cut off at the end`);
        }
      }
    }
    if (process.env.PODROUTE_CAPTURE_DUMP === '1') {
      for (const pair of pairs)
        for (const s of sessions.get(pair.name) ?? [])
          for (const d of [s.client, s.server])
            for (const m of d.messages)
              console.log(pair.name, d.from.address, m.error ? `ERROR ${m.error.message}` : JSON.stringify(m.message));
    }
  });

  for (const pair of pairs) {
    describe(pair.name, () => {
      it('every message decodes and re-encodes byte for byte', () => {
        const counts: Record<string, number> = {};
        for (const s of sessions.get(pair.name) ?? []) {
          for (const d of [s.client, s.server]) {
            d.messages.forEach((m, i) => {
              const where = `${pair.name} ${d.from.address}→${d.to.address} message ${i}`;
              assert.ok(m.message, `${where} did not decode: ${m.error?.message} (${m.raw.toString('hex')})`);
              counts[m.message.type] = (counts[m.message.type] ?? 0) + 1;
              const again = encodeMessage(m.message, d.options);
              assert.equal(again.toString('hex'), m.raw.toString('hex'), `${where} (${m.message.type}) re-encodes differently`);
              if (!d.options.extendedMessage) assert.ok(m.raw.length <= 4096, `${where}: ${m.raw.length} octets without extended messages`);
            });
          }
        }
        for (const type of ['open', 'keepalive', 'update', 'notification', ...(pair.refreshBy ? ['route-refresh'] : [])]) {
          assert.ok((counts[type] ?? 0) > 0, `${pair.name}: no ${type} captured (${JSON.stringify(counts)})`);
        }
      });

      for (const key of [pair.a, pair.b]) {
        it(`${key}'s OPEN carries the capabilities it was configured with`, () => {
          const open = sentBy(mainSession(pair), key, pair).open!;
          const n = node(key);
          assert.equal(open.holdTime, 9);
          assert.equal(open.bgpId, n.v4);
          assert.equal(open.myAs, n.asn > 0xffff ? 23456 : n.asn);
          if (key === 'ofrr') {
            assert.deepEqual(open.capabilities, [], 'dont-capability-negotiate sends an OPEN without capabilities');
            return;
          }
          for (const [kind, value] of expectedCapabilities(n, pair)) {
            const found = open.capabilities.filter((c) => c.kind === kind);
            assert.ok(found.length > 0, `${key}: no ${kind} capability in ${JSON.stringify(open.capabilities)}`);
            if (value !== undefined) assert.deepEqual(kind === 'multiprotocol' ? found : found[0], value, `${key}: ${kind}`);
          }
        });

        it(`${key}'s UPDATEs announce and withdraw its prefixes with the right next hops`, () => {
          const n = node(key);
          const inFamilies = (p: string): boolean => pair.families.includes(p.includes(':') ? 'ipv6' : 'ipv4');
          const own = [...n.keep, ...n.withdraw].filter(inFamilies);
          const directions = (sessions.get(pair.name) ?? []).map((s) => sentBy(s, key, pair));
          const updates = directions.flatMap((d) => messagesOfType(d, 'update'));
          const ibgp = node(pair.a).asn === node(pair.b).asn;
          for (const prefix of own) {
            const update = updates.find((u) => announcedIn(u).includes(prefix));
            assert.ok(update, `${key}: ${prefix} never announced`);
            const a = update.attributes;
            if (!prefix.includes(':') && pair.transport === 'v4') {
              assert.equal(a.nextHop, n.v4, `${key}: next hop of ${prefix}`);
            } else {
              // IPv6 routes, and IPv4 routes over an IPv6 session (RFC 8950 extended next hop).
              assert.equal(a.mpReach?.afi, prefix.includes(':') ? 2 : 1);
              assert.equal(a.mpReach?.nextHop, n.v6, `${key}: next hop of ${prefix}`);
            }
            assert.equal(a.origin, 'igp');
            const path = (a.asPath ?? []).flatMap((seg) => seg.asns);
            assert.deepEqual(path, ibgp ? [] : [n.asn], `${key}: AS_PATH of ${prefix}`);
            if (ibgp) assert.equal(a.localPref, 100);
          }
          const first = own.find((p) => p === n.keep[0] || p === n.withdraw[0] || false);
          if (first && first === [...n.keep, ...n.withdraw][0]) {
            const update = updates.find((u) => announcedIn(u).includes(first))!;
            assert.equal(update.attributes.med, 10, `${key}: MED of ${first}`);
            assert.deepEqual(
              update.attributes.communities,
              [((n.asn & 0xffff) << 16) + 1].map((c) => c >>> 0),
              `${key}: communities of ${first}`,
            );
          }
          const gone = new Set(updates.flatMap(withdrawnIn));
          for (const prefix of n.withdraw.filter(inFamilies)) assert.ok(gone.has(prefix), `${key}: ${prefix} never withdrawn`);
        });
      }

      it(`${pair.shutdownBy}'s shutdown sends Cease / Administrative Shutdown with its RFC 8203 communication`, () => {
        const notifications = (sessions.get(pair.name) ?? []).flatMap((s) =>
          messagesOfType(sentBy(s, pair.shutdownBy, pair), 'notification'),
        );
        const notification = notifications.find((m) => m.code === 6 && m.subcode === 2);
        assert.ok(notification, `${pair.shutdownBy}: no Cease/2 in ${JSON.stringify(notifications)}`);
        assert.equal(notification.shutdownCommunication, shutdownMessage(pair));
      });

      if (pair.refreshBy) {
        const asker = pair.refreshBy;
        const responder = asker === pair.a ? pair.b : pair.a;
        it(`${asker} asks for a route refresh in every family, and ${responder} answers`, () => {
          const all = sessions.get(pair.name) ?? [];
          const requests = all.flatMap((s) => messagesOfType(sentBy(s, asker, pair), 'route-refresh')).filter((m) => m.subtype === 0);
          const families = new Set(requests.map((m) => `${m.afi}/${m.safi}`));
          const expected = node(asker).kind === 'bird' ? ['1/1', '2/1'] : pair.families.map((f) => (f === 'ipv4' ? '1/1' : '2/1'));
          for (const f of expected) assert.ok(families.has(f), `${asker}: no ROUTE-REFRESH for ${f} (${[...families].join(', ')})`);
          // With enhanced route refresh on both sides, the answer is framed by BoRR and EoRR (RFC 7313).
          const enhanced = all.every((s) =>
            s.client.open && s.server.open
              ? [s.client.open, s.server.open].every((o) => findCapability(o, 'enhanced-route-refresh'))
              : true,
          );
          if (enhanced) {
            const answer = all.flatMap((s) => messagesOfType(sentBy(s, responder, pair), 'route-refresh')).map((m) => m.subtype);
            assert.ok(answer.includes(1) && answer.includes(2), `${responder}: BoRR/EoRR expected, saw subtypes ${answer.join(',')}`);
          }
        });
      }
    });
  }

  it('BIRD speaks to the 2-octet-only FRR with AS_TRANS in AS_PATH and the real AS in AS4_PATH', () => {
    const pair = pairs.find((p) => p.a === 'ofrr')!;
    // Only sessions that carried UPDATEs: a connection cut before both OPENs were captured (a
    // collision, a retry) negotiated nothing, and is decoded with the defaults.
    const fromBird = (sessions.get(pair.name) ?? [])
      .map((s) => sentBy(s, 'ebird', pair))
      .filter((d) => messagesOfType(d, 'update').length > 0);
    assert.ok(fromBird.length > 0, 'BIRD sent no UPDATE to the 2-octet peer');
    const fourOctet = fromBird.map((d) => d.options.fourOctetAs);
    assert.ok(
      fourOctet.every((f) => f === false),
      `BIRD's sessions to the 2-octet peer decoded with fourOctetAs ${fourOctet.join(', ')}`,
    );
    const update = fromBird.flatMap((d) => messagesOfType(d, 'update')).find((u) => announcedIn(u).includes('10.203.0.0/24'));
    assert.ok(update, "GoBGP's 10.203.0.0/24 never reached the 2-octet peer");
    assert.deepEqual(
      update.attributes.asPath?.flatMap((s) => s.asns),
      [65002, 23456],
    );
    assert.deepEqual(
      update.attributes.as4Path?.flatMap((s) => s.asns),
      [65002, AS4],
    );
  });
});

function expectedCapabilities(n: Node, pair: Pair): [Capability['kind'], unknown][] {
  const afis = pair.families.map((f) => (f === 'ipv4' ? 1 : 2));
  const expected: [Capability['kind'], unknown][] = [
    ['multiprotocol', afis.map((afi) => ({ kind: 'multiprotocol', afi, safi: 1 }))],
    ['route-refresh', { kind: 'route-refresh' }],
    ['four-octet-as', { kind: 'four-octet-as', asn: n.asn }],
    ['add-path', { kind: 'add-path', families: afis.map((afi) => ({ afi, safi: 1, mode: 3 })) }],
    // FRR sets the F bit (forwarding state kept) in LLGR; BIRD and GoBGP do not.
    [
      'long-lived-graceful-restart',
      {
        kind: 'long-lived-graceful-restart',
        families: afis.map((afi) => ({ afi, safi: 1, flags: n.kind === 'frr' ? 0x80 : 0, staleTime: 300 })),
      },
    ],
    ['graceful-restart', undefined],
    ['fqdn', undefined],
  ];
  if (n.kind !== 'gobgp') {
    expected.push(
      ['enhanced-route-refresh', undefined],
      ['extended-message', undefined],
      ['fqdn', { kind: 'fqdn', hostname: n.hostname, domain: '' }],
    );
  }
  // GoBGP offers extended next hop on every session; FRR and BIRD where configured (IPv6 sessions here).
  if (n.kind === 'gobgp' || pair.transport === 'v6') {
    expected.push(['extended-next-hop', { kind: 'extended-next-hop', entries: [{ afi: 1, safi: 1, nextHopAfi: 2 }] }]);
  }
  return expected;
}

function announcedIn(u: UpdateMessage): string[] {
  return [...u.nlri.map((n) => n.prefix), ...(u.attributes.mpReach?.nlri ?? []).map((n) => n.prefix)];
}

function withdrawnIn(u: UpdateMessage): string[] {
  return [...u.withdrawn.map((n) => n.prefix), ...(u.attributes.mpUnreach?.withdrawn ?? []).map((n) => n.prefix)];
}

function announced(direction: CapturedDirection): string[] {
  return messagesOfType(direction, 'update').flatMap((u) => [
    ...u.nlri.map((n) => n.prefix),
    ...(u.attributes.mpReach?.nlri ?? []).map((n) => n.prefix),
  ]);
}

function withdrawn(direction: CapturedDirection): string[] {
  return messagesOfType(direction, 'update').flatMap((u) => [
    ...u.withdrawn.map((n) => n.prefix),
    ...(u.attributes.mpUnreach?.withdrawn ?? []).map((n) => n.prefix),
  ]);
}

/** Waits until `missing` lists nothing; on timeout the message lists what was still missing. */
async function waitUntil(missing: () => Promise<string[]>, what: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(missing, { what, timeoutMs, intervalMs: 300, until: (left) => left.length === 0 });
}
