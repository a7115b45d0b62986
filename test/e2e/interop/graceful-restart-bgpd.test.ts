// `podroute bgpd` restarting gracefully (RFC 4724) with BIRD and FRR as helpers: killed with
// SIGKILL and started again from the same file, it knows from its run marker that it did not
// stop cleanly, sends R=1 and F=1, holds its table back until both helpers' End-of-RIBs are in,
// then sends it and its own End-of-RIB. Neither helper sees a flap: the route ages BIRD and FRR
// show for our routes, and for the route each learnt from the other through us, do not move.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Bird } from '../../support/bird.js';
import { Frr } from '../../support/frr.js';
import { waitEstablished, waitRoutes } from '../../support/lab.js';
import { Lab, type Netns } from '../../support/netns.js';
import { Podroute, type PodrouteOptions } from '../../support/podroute.js';
import { sleep, waitFor } from '../../support/wait.js';

const PR = { asn: 65000, v4: '10.97.0.10' };
const B = { asn: 65001, v4: '10.97.0.1', prefix: '10.235.0.0/24' }; // BIRD
const F = { asn: 65002, v4: '10.97.0.2', prefix: '10.236.0.0/24' }; // FRR
const OURS = ['10.232.0.0/24', '10.233.0.0/24'];

interface FrrPath {
  version?: number;
  valid?: boolean;
  stale?: boolean;
  lastUpdate?: { epoch: number; string: string };
  peer?: { peerId?: string };
}

describe('podroute bgpd graceful restart: SIGKILL and start again, BIRD and FRR as helpers', function () {
  this.timeout(150_000);
  let lab: Lab;
  let nsPr: Netns;
  let pr: Podroute;
  let bird: Bird;
  let frr: Frr;
  const config = {
    routerId: PR.v4,
    asn: PR.asn,
    gracefulRestart: { restartTime: 120 },
    peers: [
      { address: B.v4, remoteAs: B.asn },
      { address: F.v4, remoteAs: F.asn },
    ],
    networks: OURS,
  };
  const options: PodrouteOptions = { gracefulRestart: { restartTime: 120, selectDeferTime: 60 } };

  /** BIRD's `show route all` line of each prefix: the protocol and the time the route was last changed. */
  async function birdSince(prefixes: string[]): Promise<Record<string, string>> {
    const text = await bird.birdc('show route all');
    const out: Record<string, string> = {};
    for (const p of prefixes) {
      const m = new RegExp(`^${p.replace(/[./]/g, '\\$&')}\\s+unicast\\s+\\[(\\S+) ([^\\]\\s]+)`, 'm').exec(text);
      if (m) out[p] = `${m[1]} ${m[2]}`;
    }
    return out;
  }

  /** Two of birdSince's entries: the same protocol and a time within 50 ms (BIRD's printing jitters by a millisecond). */
  function sameLearnt(a: string, b: string): boolean {
    const [pa, ta] = a.split(' ');
    const [pb, tb] = b.split(' ');
    const ms = (t: string | undefined) => {
      const m = /^(\d+):(\d+):(\d+)(?:\.(\d+))?$/.exec(t ?? '');
      return m ? ((+m[1]! * 60 + +m[2]!) * 60 + +m[3]!) * 1000 + +(m[4] ?? '0').padEnd(3, '0').slice(0, 3) : Number.NaN;
    };
    return pa === pb && Math.abs(ms(ta) - ms(tb)) <= 50;
  }

  /** FRR's path from us for each prefix: when it last changed (epoch s) and whether it is stale. */
  async function frrPaths(prefixes: string[]): Promise<Record<string, FrrPath>> {
    const out: Record<string, FrrPath> = {};
    for (const p of prefixes) {
      const r = await frr.json<{ paths?: FrrPath[] }>(`show bgp ipv4 unicast ${p} json`);
      const path = r.paths?.find((x) => x.peer?.peerId === PR.v4);
      if (path) out[p] = path;
    }
    return out;
  }

  const frrCounters = async () => {
    const n = await frr.neighbor(PR.v4);
    const af = (n.addressFamilyInfo as Record<string, Record<string, unknown>> | undefined)?.ipv4Unicast ?? {};
    return { accepted: af.acceptedPrefixCounter, updatesRecv: (n.messageStats as Record<string, number> | undefined)?.updatesRecv };
  };

  before(async () => {
    lab = new Lab({ tag: 'grb' });
    const sw = await lab.segment();
    nsPr = await lab.namespace('pr');
    const [nsB, nsF] = await Promise.all([lab.namespace('b'), lab.namespace('f')]);
    await sw.attach(nsPr, { v4: `${PR.v4}/24` });
    await sw.attach(nsB, { v4: `${B.v4}/24` });
    await sw.attach(nsF, { v4: `${F.v4}/24` });
    const helper = (x: typeof B) => ({
      routerId: x.v4,
      asn: x.asn,
      gracefulRestart: { restartTime: 120 },
      peers: [{ address: PR.v4, remoteAs: PR.asn }],
      networks: [x.prefix],
    });
    [bird, frr] = await Promise.all([Bird.start(nsB, helper(B)), Frr.start(nsF, helper(F), { zebra: false })]);
    pr = await Podroute.start(nsPr, config, options);
  });

  after(async () => {
    await lab?.destroy();
  });

  it('first start: not restarting; both helpers hold our routes and each the other’s through us', async () => {
    await waitEstablished(pr);
    await waitRoutes(bird, 'ipv4', [...OURS, F.prefix]);
    await waitRoutes(frr, 'ipv4', [...OURS, B.prefix]);
    assert.match(readFileSync(pr.process.logFile, 'utf8'), /"event":"started".*"restarting":false/);
    const gr = (await frr.neighbor(PR.v4)).gracefulRestartInfo as { rBit?: boolean; ipv4Unicast?: { fBit?: boolean } } | undefined;
    assert.equal(gr?.rBit, false, 'no Restart State bit on a first start');
    assert.equal(gr?.ipv4Unicast?.fBit, true, 'our routes are configuration: forwarding preserved');
  });

  it('after SIGKILL and a start from the same file: R and F set, and no route age or counter moves at BIRD or FRR', async () => {
    const watched = [...OURS, F.prefix];
    const watchedAtFrr = [...OURS, B.prefix];
    // Everything settled: FRR's paths are not stale, the last update is in.
    await waitFor(() => frrPaths(watchedAtFrr), {
      what: 'FRR holding our three paths, none stale',
      until: (ps) => watchedAtFrr.every((p) => ps[p] && !ps[p]!.stale),
    });
    const birdBefore = await birdSince(watched);
    const frrBefore = await frrPaths(watchedAtFrr);
    const countersBefore = await frrCounters();
    assert.equal(Object.keys(birdBefore).length, 3, `BIRD's routes: ${JSON.stringify(birdBefore)}`);

    // Every 200 ms until the end: each route present at both helpers.
    let watching = true;
    const gaps: string[] = [];
    const watcher = (async () => {
      while (watching) {
        const [atBird, atFrr] = await Promise.all([birdSince(watched), frrPaths(watchedAtFrr)]);
        for (const p of watched) if (!atBird[p]) gaps.push(`BIRD ${p} ${new Date().toISOString()}`);
        for (const p of watchedAtFrr) if (!atFrr[p]) gaps.push(`FRR ${p} ${new Date().toISOString()}`);
        await sleep(200);
      }
    })();
    await pr.process.stop(0, 'SIGKILL');
    // Both helpers see the TCP session end without a NOTIFICATION and keep our routes as stale.
    const stale = await waitFor(() => frrPaths(watchedAtFrr), {
      what: 'FRR marking our paths stale',
      until: (ps) => watchedAtFrr.every((p) => ps[p]?.stale === true),
      timeoutMs: 20_000,
    });
    assert.equal(Object.keys(stale).length, 3);
    await waitFor(async () => (await bird.protocols()).find((p) => p.name === 'peer0')?.state, {
      what: 'BIRD noticing the session is gone',
      until: (s) => s !== undefined && !/Established/i.test(String(s)),
      timeoutMs: 20_000,
    });
    // Down for a while, as a real restart is; BIRD still holds our routes as they were.
    await sleep(1500);
    assert.deepEqual(await birdSince(watched), birdBefore, 'BIRD kept our routes while we were down');

    pr = await Podroute.start(nsPr, config, options);
    await waitEstablished(pr);
    const log = readFileSync(pr.process.logFile, 'utf8');
    assert.match(log, /"event":"started".*"restarting":true/);

    // What the helpers read in our OPEN.
    const n = await frr.neighbor(PR.v4);
    const gr = n.gracefulRestartInfo as { rBit?: boolean; ipv4Unicast?: { fBit?: boolean } } | undefined;
    assert.equal(gr?.rBit, true, `FRR's view of our capability: ${JSON.stringify(gr)}`);
    assert.equal(gr?.ipv4Unicast?.fBit, true, `FRR's view of our capability: ${JSON.stringify(gr)}`);
    assert.match(await bird.birdc('show protocols all peer0'), /Neighbor graceful restart active/);

    // The stale marks go once our End-of-RIB is in; nothing was withdrawn or replaced.
    const after = await waitFor(() => frrPaths(watchedAtFrr), {
      what: 'FRR: our paths fresh again',
      until: (ps) => watchedAtFrr.every((p) => ps[p] && !ps[p]!.stale),
      timeoutMs: 60_000,
    });
    for (const p of watchedAtFrr) {
      // FRR restamps a path's age when it marks it stale and again when the mark goes, so its
      // age is no witness here; the prefix's version (bumped when its best path is recomputed
      // to a different answer) and its presence throughout are.
      assert.equal(
        after[p]!.version,
        frrBefore[p]!.version,
        `FRR recomputed ${p}: before ${JSON.stringify(frrBefore[p])}, after ${JSON.stringify(after[p])}`,
      );
    }
    watching = false;
    await watcher;
    assert.deepEqual(gaps, [], 'a route missing at BIRD or FRR at some moment of the restart');
    // BIRD prints a route's time from its monotonic clock through the wall clock's offset read at
    // print time, so one time can print a millisecond apart on two reads; a route learnt again
    // would print the restart's time, seconds later.
    const birdAfter = await birdSince(watched);
    assert.deepEqual(Object.keys(birdAfter).sort(), Object.keys(birdBefore).sort(), 'BIRD: the same routes');
    for (const [prefix, was] of Object.entries(birdBefore))
      assert.ok(
        sameLearnt(was, birdAfter[prefix]!),
        `BIRD: ${prefix} keeps the time it was learnt (before ${was}, after ${birdAfter[prefix]})`,
      );
    const countersAfter = await frrCounters();
    assert.equal(countersAfter.accepted, countersBefore.accepted);
  });

  it('a clean stop (a Cease to every peer) is no graceful restart: the next start sends R=0', async () => {
    await pr.stop('maintenance');
    pr = await Podroute.start(nsPr, config, options);
    await waitEstablished(pr);
    assert.match(readFileSync(pr.process.logFile, 'utf8'), /"event":"started".*"restarting":false/);
    const gr = (await frr.neighbor(PR.v4)).gracefulRestartInfo as { rBit?: boolean } | undefined;
    assert.equal(gr?.rBit, false);
    await waitRoutes(bird, 'ipv4', OURS);
  });
});
