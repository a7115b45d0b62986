// Our speaker (`podroute bgpd`) against FRR, BIRD and GoBGP, both sides active, brought up
// again and again at random offsets, so that their connections cross (RFC 4271 §6.8) at
// different stages: every trial must come up by the collision rules, not by our connect-retry
// timer (60 s here). podroute's namespace has two addresses and listens on the second, by
// which the daemons know it. With localAddress, podroute is told to dial from it; without, it
// must pick it itself: the kernel's pick is the first, which the daemons would refuse.
import assert from 'node:assert/strict';
import { callControl } from '../../../lib/bgpd/control.js';
import { Bird } from '../../support/bird.js';
import type { RouterConfig } from '../../support/bgp-config.js';
import { Frr } from '../../support/frr.js';
import { Gobgp } from '../../support/gobgp.js';
import type { BgpDaemon } from '../../support/lab.js';
import { Lab } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { prng } from '../../support/prng.js';
import { sleep, waitFor } from '../../support/wait.js';

// Per variant, the three daemons at once. One: the offset is drawn anew each run (RACE_SEED
// replays one), the in-process race (test/bgp) runs hundreds, and a second trial here costs the
// 8 s GoBGP's idle hold and our IdleHold back-off take, whatever the offset.
const TRIALS = 1;
/** Above the daemons' own delays before they dial (BIRD's connect delay, 1 s), far below our connect retry. */
const BOUND_MS = 20_000;
const PR = { asn: 65010, primary: '10.97.0.10', bgp: '10.97.0.11' };
const DAEMONS = [
  { kind: 'frr', asn: 65001, address: '10.97.0.1' },
  { kind: 'bird', asn: 65002, address: '10.97.0.2' },
  { kind: 'gobgp', asn: 65003, address: '10.97.0.3' },
] as const;

interface Side {
  kind: string;
  asn: number;
  address: string;
  daemon: BgpDaemon;
  down(): Promise<unknown>;
  up(): Promise<unknown>;
}

describe('collision race: podroute bgpd against FRR, BIRD and GoBGP, all active', function () {
  this.timeout(300_000);
  let lab: Lab;
  let pr: Podroute;
  const sides: Side[] = [];

  before(async () => {
    lab = new Lab({ tag: 'cr' });
    const sw = await lab.segment();
    const nsPr = await lab.namespace('pr');
    const ifname = await sw.attach(nsPr, { v4: `${PR.primary}/24` });
    await nsPr.ip('addr', 'add', `${PR.bgp}/24`, 'dev', ifname);
    const nss = await Promise.all(DAEMONS.map((d) => lab.namespace(d.kind)));
    await Promise.all(DAEMONS.map((d, i) => sw.attach(nss[i]!, { v4: `${d.address}/24` })));
    const config = (d: (typeof DAEMONS)[number]): RouterConfig => ({
      routerId: d.address,
      asn: d.asn,
      peers: [{ address: PR.bgp, remoteAs: PR.asn, connectRetry: 5 }],
      networks: [],
    });
    const [frr, bird, gobgp] = await Promise.all([
      Frr.start(nss[0]!, config(DAEMONS[0])),
      Bird.start(nss[1]!, config(DAEMONS[1])),
      Gobgp.start(nss[2]!, config(DAEMONS[2])),
    ]);
    const proto = bird.protocolFor(PR.bgp);
    sides.push(
      {
        ...DAEMONS[0],
        daemon: frr,
        down: () => frr.shutdownNeighbor(PR.bgp),
        up: () => frr.configureBgp(`no neighbor ${PR.bgp} shutdown`),
      },
      { ...DAEMONS[1], daemon: bird, down: () => bird.disable(proto), up: () => bird.enable(proto) },
      { ...DAEMONS[2], daemon: gobgp, down: () => gobgp.disableNeighbor(PR.bgp), up: () => gobgp.cli('neighbor', PR.bgp, 'enable') },
    );
    // No peers at first: each trial adds its own. It listens on the second address only.
    pr = await Podroute.start(nsPr, { routerId: PR.bgp, asn: PR.asn, peers: [] }, { listen: { host: PR.bgp, port: 179 } });
  });
  after(() => lab?.destroy());

  const prState = async (address: string) =>
    (await callControl<{ address: string; state: string }[]>(pr.control, 'GET', '/neighbors')).find((p) => p.address === address)?.state;
  const daemonUp = async (s: Side) => (await s.daemon.peers()).some((p) => p.established);

  /** Both ends down: podroute forgets the peer, the daemon stops its neighbour. */
  async function down(s: Side): Promise<void> {
    if ((await prState(s.address)) !== undefined) await callControl(pr.control, 'POST', '/peers/remove', { address: s.address });
    await s.down();
    await waitFor(() => daemonUp(s), { what: `${s.kind}: session down`, until: (up) => !up, timeoutMs: 10_000, intervalMs: 100 });
  }

  /** Both ends started `offset` ms apart (the daemon first when positive); resolves with the time to Established on both. */
  async function race(s: Side, offset: number, localAddress: boolean): Promise<number> {
    const peer = {
      address: s.address,
      asn: s.asn,
      holdTime: 9,
      connectRetryTime: 60,
      idleHoldTime: 1,
      ...(localAddress ? { localAddress: PR.bgp } : {}),
    };
    const t0 = performance.now();
    const addPeer = async () => {
      if (offset > 0) await sleep(offset);
      await callControl(pr.control, 'POST', '/peers', peer);
    };
    const enable = async () => {
      if (offset < 0) await sleep(-offset);
      await s.up();
    };
    await Promise.all([addPeer(), enable()]);
    await waitFor(async () => (await prState(s.address)) === 'Established' && (await daemonUp(s)), {
      what: `${s.kind} and podroute Established (${localAddress ? 'with' : 'without'} localAddress, offset ${offset.toFixed(0)} ms)`,
      until: (up) => up,
      timeoutMs: BOUND_MS,
      intervalMs: 50,
    });
    return performance.now() - t0;
  }

  for (const localAddress of [true, false]) {
    it(`${TRIALS === 1 ? 'a trial' : `${TRIALS} trials`} ${localAddress ? 'with' : 'without'} localAddress: every session Established each time, without our connect retry`, async () => {
      const seed = Number(process.env.RACE_SEED ?? Date.now() % 1e9);
      const rand = prng(seed);
      const times: Record<string, number[]> = {};
      for (let i = 0; i < TRIALS; i++) {
        await Promise.all(sides.map((s) => down(s)));
        await Promise.all(
          sides.map(async (s) => {
            const t = await race(s, rand() * 600 - 300, localAddress);
            (times[s.kind] ??= []).push(Math.round(t));
          }),
        );
      }
      // A trial that did not come up threw above; every one came up well before our connect retry.
      assert.equal(Object.values(times).flat().length, TRIALS * sides.length, `every trial timed (seed ${seed}): ${JSON.stringify(times)}`);
      assert.ok(
        Object.values(times)
          .flat()
          .every((t) => t < BOUND_MS),
        `times (ms, seed ${seed}): ${JSON.stringify(times)}`,
      );
    });
  }
});
