// Our speaker's capabilities against FRR (and BIRD/GoBGP as route sources): a 4-octet AS
// towards 4-octet and 2-octet-only peers (AS_TRANS, AS4_PATH), ADD-PATH both ways, graceful
// restart as helper, route refresh, sessions opened from either side and after a collision,
// dynamic neighbours both ways, and 100,000 prefixes through one session.
import assert from 'node:assert/strict';
import { Bird } from '../../support/bird.js';
import { Frr } from '../../support/frr.js';
import { Gobgp } from '../../support/gobgp.js';
import type { UpdateMessage } from '../../../bgp/index.js';
import type { RibRoute } from '../../support/bgp-config.js';
import { decodeSession } from '../../support/bgp-capture.js';
import { PacketCapture } from '../../support/capture.js';
import { waitNoRoutes, waitRoutes } from '../../support/lab.js';
import { Lab, type Netns, type Segment } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const PR = { asn: 4200000010, v4: '10.95.0.10' };
const A = { asn: 65001, v4: '10.95.0.1' }; // FRR: 4-octet, ADD-PATH, GR, refresh, 100k
const B = { asn: 65002, v4: '10.95.0.2' }; // FRR: 2-octet only
const C = { asn: 65003, v4: '10.95.0.3' }; // BIRD: route source
const D = { asn: 65004, v4: '10.95.0.4' }; // GoBGP: route source
const E = { asn: 65005, v4: '10.95.0.5' }; // FRR: connects to our listen range (we have no config for it)
const F = { asn: 65006, v4: '10.95.0.6' }; // FRR: accepts us through its own listen range
const G = { asn: 65007, v4: '10.95.0.7' }; // FRR: passive (we connect)
const H = { asn: 65008, v4: '10.95.0.8' }; // FRR: connects to us while we are passive
const SHARED = '10.250.0.0/24';

describe('speaker features against FRR, BIRD, GoBGP', function () {
  this.timeout(120_000);
  let lab: Lab;
  let sw: Segment;
  let pr: Podroute;
  let frrA: Frr;
  let frrB: Frr;
  let captureB: PacketCapture;
  const ns: Record<string, Netns> = {};

  const configA = (networks: string[]) => ({
    routerId: A.v4,
    asn: A.asn,
    gracefulRestart: { restartTime: 60 },
    peers: [
      { address: PR.v4, remoteAs: PR.asn, addPath: 'both' as const },
      { address: C.v4, remoteAs: C.asn },
      { address: D.v4, remoteAs: D.asn },
    ],
    networks,
  });

  before(async () => {
    lab = new Lab({ tag: 'ft' });
    sw = await lab.segment();
    for (const [name, x] of Object.entries({ pr: PR, a: A, b: B, c: C, d: D, e: E, f: F, g: G, h: H })) {
      ns[name] = await lab.namespace(name);
      await sw.attach(ns[name]!, { v4: `${x.v4}/24` });
    }
    const source = (x: { asn: number; v4: string }) => ({
      routerId: x.v4,
      asn: x.asn,
      peers: [
        { address: PR.v4, remoteAs: PR.asn },
        { address: A.v4, remoteAs: A.asn },
      ],
      networks: [SHARED],
    });
    captureB = await PacketCapture.start(ns.b!, {});
    [frrA, frrB] = await Promise.all([
      Frr.start(ns.a!, configA(['10.241.0.0/24', '10.242.0.0/24']), { zebra: false }),
      Frr.start(
        ns.b!,
        { routerId: B.v4, asn: B.asn, peers: [{ address: PR.v4, remoteAs: PR.asn, fourOctetAs: false }], networks: ['10.243.0.0/24'] },
        { zebra: false },
      ),
      Bird.start(ns.c!, source(C)),
      Gobgp.start(ns.d!, source(D)),
    ]);
    const frrE = await Frr.start(
      ns.e!,
      { routerId: E.v4, asn: E.asn, peers: [{ address: PR.v4, remoteAs: PR.asn }], networks: ['10.245.0.0/24'] },
      { zebra: false },
    );
    const frrF = await Frr.start(ns.f!, { routerId: F.v4, asn: F.asn, peers: [], networks: ['10.246.0.0/24'] }, { zebra: false });
    await frrF.configureBgp(
      'neighbor RANGE peer-group',
      `neighbor RANGE remote-as ${PR.asn}`,
      'neighbor RANGE timers 3 9',
      'bgp listen range 10.95.0.0/24 peer-group RANGE',
      'address-family ipv4 unicast',
      'neighbor RANGE activate',
    );
    await Frr.start(
      ns.g!,
      { routerId: G.v4, asn: G.asn, peers: [{ address: PR.v4, remoteAs: PR.asn, passive: true }], networks: ['10.247.0.0/24'] },
      { zebra: false },
    );
    await Frr.start(
      ns.h!,
      { routerId: H.v4, asn: H.asn, peers: [{ address: PR.v4, remoteAs: PR.asn }], networks: ['10.248.0.0/24'] },
      { zebra: false },
    );
    void frrE;
    pr = await Podroute.start(
      ns.pr!,
      {
        routerId: PR.v4,
        asn: PR.asn,
        peers: [
          { address: A.v4, remoteAs: A.asn, addPath: 'both' },
          { address: B.v4, remoteAs: B.asn },
          { address: C.v4, remoteAs: C.asn },
          { address: D.v4, remoteAs: D.asn },
          { address: F.v4, remoteAs: F.asn },
          { address: G.v4, remoteAs: G.asn },
          { address: H.v4, remoteAs: H.asn, passive: true },
        ],
        networks: ['10.240.0.0/24'],
      },
      { dynamicNeighbors: [{ range: '10.95.0.0/28', asn: [E.asn] }], stalePathTime: 30 },
    );
  });

  after(async () => {
    await lab?.destroy();
  });

  it('comes up with every peer: we connect, they connect, both connect (collision), and through ranges', async () => {
    await waitFor(() => pr.peers(), {
      what: 'all eight sessions Established (seven configured, one dynamic)',
      until: (peers) => peers.length === 8 && peers.every((p) => p.established),
      timeoutMs: 60_000,
    });
    const status = await pr.status();
    assert.ok(status.peers.find((p) => p.address === E.v4)?.dynamic, 'the range peer is dynamic');
    for (const [x, prefix] of [
      [E, '10.245.0.0/24'],
      [F, '10.246.0.0/24'],
      [G, '10.247.0.0/24'],
      [H, '10.248.0.0/24'],
    ] as const) {
      const routes = await waitRoutes(pr, 'ipv4', [prefix]);
      assert.deepEqual(routes.find((r) => r.prefix === prefix)!.asPath, [x.asn]);
    }
  });

  it('a 4-octet peer sees our 4-octet AS; a 2-octet peer gets AS_TRANS in AS_PATH and the real path in AS4_PATH', async () => {
    const direct = (r: RibRoute) => r.prefix === '10.240.0.0/24' && r.from === PR.v4 && r.asPath.length === 1;
    const onA = await waitRoutes(frrA, 'ipv4', ['10.240.0.0/24'], { where: direct });
    assert.deepEqual(onA.find(direct)!.asPath, [PR.asn]);
    // FRR's only 2-octet mode (dont-capability-negotiate) keeps AS_TRANS: it reads AS4_PATH
    // as a 2-octet speaker would not, so the wire is checked in the capture below.
    const onB = await waitRoutes(frrB, 'ipv4', ['10.240.0.0/24']);
    assert.deepEqual(onB.find((r) => r.prefix === '10.240.0.0/24')!.asPath, [23456]);
    const ours = await waitRoutes(pr, 'ipv4', ['10.243.0.0/24']);
    assert.deepEqual(ours.find((r) => r.prefix === '10.243.0.0/24')!.asPath, [B.asn]);
    const sent = await waitFor(
      async () => {
        const updates: UpdateMessage[] = [];
        for (const c of await captureB.connections()) {
          const s = decodeSession(c);
          const ourSide = s.client.from.address === PR.v4 ? s.client : s.server;
          if (ourSide.from.address !== PR.v4) continue;
          for (const m of ourSide.messages) if (m.message?.type === 'update') updates.push(m.message);
        }
        return updates;
      },
      {
        what: 'our UPDATE for 10.240.0.0/24 to the 2-octet peer, captured',
        until: (us) => us.some((u) => u.nlri.some((n) => n.prefix === '10.240.0.0/24')),
      },
    );
    const u = sent.find((x) => x.nlri.some((n) => n.prefix === '10.240.0.0/24'))!;
    assert.deepEqual(u.attributes.asPath, [{ type: 'sequence', asns: [23456] }]);
    assert.deepEqual(u.attributes.as4Path, [{ type: 'sequence', asns: [PR.asn] }]);
  });

  it('ADD-PATH: FRR sends us both of its paths for one prefix, and we send FRR every path we hold that is not its own', async () => {
    const viaA = (r: { from?: string }) => r.from === A.v4;
    const ours = await waitFor(() => pr.routes('ipv4'), {
      what: `two paths to ${SHARED} from FRR with different path ids`,
      until: (rs) => rs.filter((r) => r.prefix === SHARED && viaA(r)).length === 2,
    });
    const paths = ours.filter((r) => r.prefix === SHARED && viaA(r));
    assert.notEqual(paths[0]!.pathId, paths[1]!.pathId);
    assert.deepEqual(paths.map((p) => p.asPath.join(' ')).sort(), [`${A.asn} ${C.asn}`, `${A.asn} ${D.asn}`]);
    // Every path we hold that did not come from FRR itself: via BIRD, via GoBGP, and via the
    // 2-octet FRR (which passes the prefix on to us as well).
    const fromUs = (rs: RibRoute[]) => rs.filter((r) => r.prefix === SHARED && r.asPath[0] === PR.asn);
    const theirs = await waitFor(() => frrA.routes('ipv4'), {
      what: `FRR holding our three paths to ${SHARED}`,
      until: (rs) => fromUs(rs).length === 3,
    });
    const got = fromUs(theirs);
    assert.equal(new Set(got.map((r) => r.pathId)).size, 3, 'distinct path identifiers');
    assert.deepEqual(got.map((r) => r.asPath.join(' ')).sort(), [
      `${PR.asn} ${B.asn} 23456 ${C.asn}`,
      `${PR.asn} ${C.asn}`,
      `${PR.asn} ${D.asn}`,
    ]);
  });

  it('route refresh: FRR asks with `clear bgp soft in` and gets our table again', async () => {
    const before = await frrA.neighbor(PR.v4);
    const stats = (n: typeof before) => (n as unknown as { messageStats: { updatesRecv: number; routeRefreshSent?: number } }).messageStats;
    await frrA.vtysh(`clear bgp ipv4 unicast ${PR.v4} soft in`);
    const after = await waitFor(() => frrA.neighbor(PR.v4), {
      what: 'FRR receiving UPDATEs again after its ROUTE-REFRESH',
      until: (n) => stats(n).updatesRecv > stats(before).updatesRecv,
      timeoutMs: 15_000,
    });
    assert.ok(
      stats(after).updatesRecv > stats(before).updatesRecv,
      `updatesRecv ${stats(after).updatesRecv}, before ${stats(before).updatesRecv}: want more`,
    );
    await waitRoutes(frrA, 'ipv4', ['10.240.0.0/24']);
  });

  it('graceful restart: FRR killed keeps its routes as stale; after its End-of-RIB only what it re-sent stays', async () => {
    await waitRoutes(pr, 'ipv4', ['10.241.0.0/24', '10.242.0.0/24']);
    await frrA.bgpd.stop(0, 'SIGKILL');
    const stale = await waitFor(() => pr.paths('ipv4'), {
      what: "FRR's routes marked stale after it died",
      until: (ps) => ps.some((p) => p.prefix === '10.241.0.0/24' && p.stale),
      timeoutMs: 30_000,
    });
    assert.ok(
      stale.some((p) => p.prefix === '10.242.0.0/24' && p.stale),
      'both routes kept as stale',
    );
    frrA = await Frr.start(ns.a!, configA(['10.241.0.0/24']), { zebra: false });
    await waitNoRoutes(pr, 'ipv4', ['10.242.0.0/24'], 40_000);
    const fresh = await waitFor(() => pr.paths('ipv4'), {
      what: '10.241.0.0/24 fresh again',
      until: (ps) => ps.some((p) => p.prefix === '10.241.0.0/24' && !p.stale && p.from === A.v4),
      timeoutMs: 30_000,
    });
    assert.equal(fresh.filter((p) => p.prefix === '10.241.0.0/24' && p.from === A.v4).length, 1, 'no duplicate path');
  });

  it('100,000 prefixes through one session all reach FRR', async function () {
    this.timeout(120_000);
    const prefixes: string[] = [];
    for (let i = 0; i < 100_000; i++) prefixes.push(`100.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32`);
    await pr.originateMany(prefixes);
    const summary = await waitFor(() => frrB.summary('ipv4'), {
      what: 'FRR (2-octet session) counting 100,000 more prefixes from us',
      until: (s) => (s.peers?.[PR.v4]?.pfxRcd ?? 0) >= 100_000,
      timeoutMs: 100_000,
      intervalMs: 1000,
    });
    const received = summary.peers![PR.v4]!.pfxRcd!;
    // Ours, the 100,000, and what we pass on from the others (one best path each).
    const others = (await pr.routes('ipv4')).filter((r) => r.best && r.from !== B.v4).length;
    assert.equal(received, others);
    const sample = await frrB.json<Record<string, unknown>>('show bgp ipv4 unicast 100.65.134.159/32 json');
    assert.equal((sample as { prefix?: string }).prefix, '100.65.134.159/32');
  });
});
