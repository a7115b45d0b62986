// Long-lived graceful restart (RFC 9494) with FRR and BIRD, both directions, over one segment.
//
// podroute bgpd killed with SIGKILL: FRR and BIRD keep our routes for our restart time (2 s),
// then, marked LLGR_STALE, for our long-lived stale time (6 s); the one we sent with NO_LLGR goes
// when that period begins; then all go.
//
// FRR killed with SIGKILL: podroute keeps its routes past FRR's restart time, marked LLGR_STALE
// and demoted below BIRD's worse path to the shared prefix; it passes the FRR-only route on to
// BIRD (an LLGR peer) with LLGR_STALE; all go when FRR's stale time has passed.
import assert from 'node:assert/strict';
import { Bird } from '../../support/bird.js';
import { Frr } from '../../support/frr.js';
import { waitEstablished, waitRoutes } from '../../support/lab.js';
import { Lab, type Netns } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const PR = { asn: 65000, v4: '10.96.0.10' };
const B = { asn: 65001, v4: '10.96.0.2' }; // BIRD
const F = { asn: 65002, v4: '10.96.0.1' }; // FRR: its path wins on ORIGIN (IGP; BIRD's static route is INCOMPLETE)
const KEPT = '10.241.0.0/24';
const NO_LLGR = '10.242.0.0/24';
const SHARED = '10.243.0.0/24'; // from FRR and BIRD
const FRR_ONLY = '10.244.0.0/24';
const LLGR_STALE = '65535:6';

interface FrrPath {
  stale?: boolean;
  community?: { string?: string };
  peer?: { peerId?: string };
}

describe('long-lived graceful restart with FRR and BIRD: SIGKILL on either side', function () {
  this.timeout(180_000);
  let lab: Lab;
  let nsPr: Netns;
  let nsF: Netns;
  let pr: Podroute;
  let bird: Bird;
  let frr: Frr;

  const prConfig = {
    routerId: PR.v4,
    asn: PR.asn,
    gracefulRestart: { restartTime: 2 },
    peers: [
      { address: B.v4, remoteAs: B.asn },
      { address: F.v4, remoteAs: F.asn },
    ],
    networks: [KEPT, { prefix: NO_LLGR, communities: ['65535:7'] }],
  };
  const prOptions = { peerDefaults: { longLivedGracefulRestart: { staleTime: 6 } }, gracefulRestart: { selectDeferTime: 5 } };
  const frrConfig = {
    routerId: F.v4,
    asn: F.asn,
    gracefulRestart: { restartTime: 2 },
    longLivedGracefulRestart: { staleTime: 5 },
    peers: [{ address: PR.v4, remoteAs: PR.asn }],
    networks: [SHARED, FRR_ONLY],
  };

  /** FRR's path from us to a prefix, or undefined. */
  async function frrPath(prefix: string): Promise<FrrPath | undefined> {
    const r = await frr.json<{ paths?: FrrPath[] }>(`show bgp ipv4 unicast ${prefix} json`);
    return r.paths?.find((p) => p.peer?.peerId === PR.v4);
  }

  async function birdRoute(prefix: string) {
    return (await bird.routes('ipv4')).find((r) => r.prefix === prefix && r.from === PR.v4);
  }

  before(async () => {
    lab = new Lab({ tag: 'llgr' });
    const sw = await lab.segment();
    nsPr = await lab.namespace('pr');
    const nsB = await lab.namespace('b');
    nsF = await lab.namespace('f');
    await sw.attach(nsPr, { v4: `${PR.v4}/24` });
    await sw.attach(nsB, { v4: `${B.v4}/24` });
    await sw.attach(nsF, { v4: `${F.v4}/24` });
    [bird, frr] = await Promise.all([
      Bird.start(nsB, {
        routerId: B.v4,
        asn: B.asn,
        gracefulRestart: { restartTime: 2 },
        longLivedGracefulRestart: { staleTime: 5 },
        peers: [{ address: PR.v4, remoteAs: PR.asn }],
        networks: [SHARED],
      }),
      Frr.start(nsF, frrConfig, { zebra: false }),
    ]);
    pr = await Podroute.start(nsPr, prConfig, prOptions);
  });

  after(async () => {
    await lab?.destroy();
  });

  it('the sessions come up with the LLGR capability both ways, and every route is where it should be', async () => {
    await waitEstablished(pr);
    await waitRoutes(frr, 'ipv4', [KEPT, NO_LLGR]);
    await waitRoutes(bird, 'ipv4', [KEPT, NO_LLGR, FRR_ONLY]);
    const n = await frr.neighbor(PR.v4);
    const caps = n.neighborCapabilities as Record<string, unknown> | undefined;
    assert.equal(caps?.longLivedGracefulRestart, 'advertisedAndReceived', `FRR's capabilities: ${JSON.stringify(caps)}`);
    const shared = await waitFor(async () => (await pr.paths('ipv4')).filter((p) => p.prefix === SHARED), {
      what: 'both paths to the shared prefix at podroute',
      until: (ps) => ps.length === 2,
    });
    assert.equal(shared.find((p) => p.best)?.from, F.v4, 'FRR’s path (ORIGIN IGP) is the best');
  });

  it('podroute killed: FRR and BIRD keep our route as LLGR_STALE past our restart time, drop the NO_LLGR one, then drop it after the stale time', async () => {
    await pr.process.stop(0, 'SIGKILL');
    const killed = performance.now();
    // The restart time: stale, not yet marked.
    await waitFor(() => frrPath(KEPT), { what: 'FRR marking our route stale', until: (p) => p?.stale === true, timeoutMs: 10_000 });
    const marked = await waitFor(() => frrPath(KEPT), {
      what: 'FRR marking our route LLGR_STALE',
      until: (p) => p?.community?.string?.includes('llgr-stale') === true,
      timeoutMs: 15_000,
      intervalMs: 200,
    });
    assert.equal(marked!.stale, true);
    const atBird = await waitFor(() => birdRoute(KEPT), {
      what: 'BIRD marking our route LLGR_STALE',
      until: (r) => r?.communities.includes(LLGR_STALE) === true,
      timeoutMs: 15_000,
      intervalMs: 200,
    });
    assert.equal(atBird?.stale, true, 'BIRD does not show our route as stale');
    assert.equal(await frrPath(NO_LLGR), undefined, 'FRR kept the NO_LLGR route into the long-lived period');
    await waitFor(() => birdRoute(NO_LLGR), { what: 'BIRD dropping the NO_LLGR route', until: (r) => r === undefined, timeoutMs: 5_000 });
    // Restart time 2 s + stale time 6 s, from when each noticed.
    await waitFor(() => frrPath(KEPT), {
      what: 'FRR dropping our route',
      until: (p) => p === undefined,
      timeoutMs: 20_000,
      intervalMs: 250,
    });
    await waitFor(() => birdRoute(KEPT), {
      what: 'BIRD dropping our route',
      until: (r) => r === undefined,
      timeoutMs: 20_000,
      intervalMs: 250,
    });
    const gone = (performance.now() - killed) / 1000;
    assert.ok(gone >= 7, `our route went after ${gone.toFixed(1)} s, before restart time + stale time (8 s)`);
  });

  it('FRR killed: podroute keeps FRR’s routes as LLGR_STALE, prefers BIRD’s worse path, passes the LLGR_STALE route to BIRD, and drops them after FRR’s stale time', async () => {
    pr = await Podroute.start(nsPr, prConfig, prOptions);
    await waitEstablished(pr);
    await waitRoutes(bird, 'ipv4', [KEPT, FRR_ONLY]);
    await waitFor(async () => (await pr.paths('ipv4')).find((p) => p.prefix === SHARED && p.best)?.from, {
      what: 'FRR’s path best again',
      until: (f) => f === F.v4,
    });
    await frr.bgpd.stop(0, 'SIGKILL');
    const killed = performance.now();
    const fromFrr = async (prefix: string) => (await pr.paths('ipv4')).find((p) => p.prefix === prefix && p.from === F.v4);
    await waitFor(() => fromFrr(SHARED), {
      what: 'podroute keeping FRR’s path as stale',
      until: (p) => p?.stale === true,
      timeoutMs: 15_000,
    });
    const sharedNow = (await pr.paths('ipv4')).filter((p) => p.prefix === SHARED);
    assert.equal(sharedNow.find((p) => p.best)?.from, F.v4, 'during FRR’s restart time its stale path keeps its rank');
    const demoted = await waitFor(async () => (await pr.paths('ipv4')).filter((p) => p.prefix === SHARED), {
      what: 'FRR’s path demoted below BIRD’s',
      until: (ps) => ps.find((p) => p.best)?.from === B.v4,
      timeoutMs: 15_000,
      intervalMs: 100,
    });
    const frrShared = demoted.find((p) => p.from === F.v4);
    assert.ok(frrShared, 'FRR’s path was dropped, not demoted');
    assert.ok(frrShared.attributes.communities?.includes(LLGR_STALE), `communities: ${JSON.stringify(frrShared.attributes.communities)}`);
    const only = await fromFrr(FRR_ONLY);
    assert.ok(only?.best && only.stale, 'the FRR-only route stays the best path, stale');
    await waitFor(() => birdRoute(FRR_ONLY), {
      what: 'BIRD getting the FRR-only route with LLGR_STALE',
      until: (r) => r?.communities.includes(LLGR_STALE) === true,
      timeoutMs: 10_000,
    });
    await waitFor(() => fromFrr(FRR_ONLY), {
      what: 'FRR’s routes to go',
      until: (p) => p === undefined,
      timeoutMs: 20_000,
      intervalMs: 250,
    });
    const gone = (performance.now() - killed) / 1000;
    assert.ok(gone >= 6, `FRR's routes went after ${gone.toFixed(1)} s, before restart time + stale time (7 s)`);
    assert.equal(await fromFrr(SHARED), undefined);
    await waitFor(() => birdRoute(FRR_ONLY), { what: 'BIRD to lose the FRR-only route', until: (r) => r === undefined, timeoutMs: 5_000 });
  });
});
