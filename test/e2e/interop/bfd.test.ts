// BFD (RFC 5880/5881) with BGP (RFC 5882) against FRR's bfdd and BIRD's bfd protocol, IPv4
// and IPv6 sessions side by side, 100 ms × 3. Each end's BFD must come Up with the other's,
// and a cut of the path (nftables drops every frame the segment's bridge would forward to or
// from the daemon's port: packets vanish, and no interface of either end loses its carrier) must take both BGP sessions down on both ends by BFD,
// ours within 500 ms, long before the 9 s hold time: the routes leave our RIB and the
// daemon's kernel. Restored, everything comes back.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PeerStatus } from '../../../bgp/index.js';
import type { PeerConfig, RouterConfig } from '../../support/bgp-config.js';
import { Bird } from '../../support/bird.js';
import { Frr } from '../../support/frr.js';
import { Lab, type Netns, type Segment } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const FAST = { minRxInterval: 100, minTxInterval: 100, multiplier: 3 };
/** Every frame to or from bridge port p1 (the daemon's) dropped, in the segment's namespace. */
const CUT =
  'table bridge bfdcut {\n chain cut {\n  type filter hook forward priority -200; policy accept;\n  iifname "p1" drop\n  oifname "p1" drop\n }\n}\n';

interface Daemon {
  stop(): Promise<void>;
  /** Whether its two sessions are Established. */
  established(): Promise<boolean>;
  /** Its BFD sessions' states, by neighbour address. */
  bfd(): Promise<Record<string, string>>;
  /** Why its sessions last went down, as it says it. */
  downReasons(): Promise<string>;
}

interface Case {
  name: string;
  tag: string;
  third: number;
  start(ns: Netns, config: RouterConfig): Promise<Daemon>;
  /** The daemon's words for a session BFD ended. */
  bfdReason: RegExp;
}

const CASES: Case[] = [
  {
    name: "FRR's bfdd",
    tag: 'bfdf',
    third: 97,
    bfdReason: /"lastNotificationReason":"Cease\/BFD Down"/,
    async start(ns, config) {
      const frr = await Frr.start(ns, config);
      return {
        stop: () => frr.stop(),
        established: async () => (await frr.peers()).every((p) => p.established),
        bfd: async () => Object.fromEntries((await frr.bfdPeers()).map((p) => [p.peer, p.status])),
        downReasons: async () => JSON.stringify(await frr.json('show bgp neighbors json')),
      };
    },
  },
  {
    name: "BIRD's bfd",
    tag: 'bfdb',
    third: 98,
    bfdReason: /BFD session down/i,
    async start(ns, config) {
      const bird = await Bird.start(ns, config);
      return {
        stop: () => bird.stop(),
        established: async () => (await bird.peers()).every((p) => p.established),
        bfd: async () => Object.fromEntries((await bird.bfdSessions()).map((s) => [s.address, s.state.toLowerCase()])),
        downReasons: () => bird.birdc('show protocols all'),
      };
    },
  },
];

for (const c of CASES) {
  describe(`BFD interop: ${c.name}`, function () {
    this.timeout(180_000);
    let lab: Lab;
    let sw: Segment;
    let pr: Podroute;
    let daemon: Daemon;
    let daemonNs: Netns;
    const P = { v4: `10.${c.third}.0.1`, v6: `fd00:${c.third}::1`, asn: 65020 };
    const D = { v4: `10.${c.third}.0.2`, v6: `fd00:${c.third}::2`, asn: 65021 };
    const OURS = { v4: `10.${c.third + 100}.1.0/24`, v6: `fd00:${c.third + 100}:1::/48` };
    const THEIRS = { v4: `10.${c.third + 100}.2.0/24`, v6: `fd00:${c.third + 100}:2::/48` };

    before(async () => {
      lab = new Lab({ tag: c.tag });
      sw = await lab.segment();
      const nsP = await lab.namespace('pr');
      daemonNs = await lab.namespace('d');
      await sw.attach(nsP, { v4: `${P.v4}/24`, v6: `${P.v6}/64` }); // bridge port p0
      await sw.attach(daemonNs, { v4: `${D.v4}/24`, v6: `${D.v6}/64` }); // bridge port p1
      const peer = (address: string, remoteAs: number, family: 'ipv4' | 'ipv6'): PeerConfig => ({
        address,
        remoteAs,
        families: [family],
        bfd: FAST,
      });
      daemon = await c.start(daemonNs, {
        routerId: D.v4,
        asn: D.asn,
        peers: [peer(P.v4, P.asn, 'ipv4'), peer(P.v6, P.asn, 'ipv6')],
        networks: [THEIRS.v4, THEIRS.v6],
      });
      pr = await Podroute.start(nsP, {
        routerId: P.v4,
        asn: P.asn,
        peers: [peer(D.v4, D.asn, 'ipv4'), peer(D.v6, D.asn, 'ipv6')],
        networks: [OURS.v4, OURS.v6],
      });
    });

    after(async () => {
      await pr?.stop();
      await daemon?.stop();
      await lab?.destroy();
    });

    const ours = async (): Promise<PeerStatus[]> => (await pr.status()).peers;
    const kernelHas = async (): Promise<boolean> => {
      const v4 = await daemonNs.ip('route', 'show', OURS.v4);
      const v6 = await daemonNs.ip('-6', 'route', 'show', OURS.v6);
      return v4.trim() !== '' && v6.trim() !== '';
    };

    async function allUp(what: string): Promise<void> {
      await waitFor(async () => (await ours()).every((p) => p.state === 'Established' && p.bfd?.state === 'Up'), {
        what: `${what}: our two sessions Established with BFD Up`,
        timeoutMs: 60_000,
        intervalMs: 200,
      });
      await waitFor(
        async () => {
          const b = await daemon.bfd();
          return (await daemon.established()) && b[P.v4] === 'up' && b[P.v6] === 'up';
        },
        { what: `${what}: ${c.name} with both sessions Established and BFD up`, timeoutMs: 30_000, intervalMs: 200 },
      );
      await waitFor(kernelHas, { what: `${what}: our routes in ${c.name}'s kernel`, timeoutMs: 30_000, intervalMs: 200 });
      await waitFor(async () => [...(await pr.routes('ipv4')), ...(await pr.routes('ipv6'))].map((r) => r.prefix), {
        what: `${what}: their routes in our RIB`,
        until: (routes) => routes.includes(THEIRS.v4) && routes.includes(THEIRS.v6),
        timeoutMs: 30_000,
        intervalMs: 200,
      });
    }

    it('BFD comes Up on both ends, v4 and v6, at 100 ms × 3, beside Established sessions', async () => {
      await allUp('start');
      for (const p of await ours()) {
        assert.equal(p.bfd?.detectionTime, 300, `${p.address}: detection time 3 × 100 ms`);
        assert.equal(p.bfd?.remoteState, 'Up', `${p.address}: the remote says Up`);
      }
    });

    it('a cut path takes both sessions down on both ends by BFD, ours within 500 ms, and the routes go', async () => {
      const cut = performance.now();
      // Not `link set down`: the daemon's veth would lose its carrier, and BIRD ends a session
      // on that alone ("Link down"). The bridge dropping its frames is a path that fails silently.
      const file = join(lab.dir, 'bfd-cut.nft');
      writeFileSync(file, CUT);
      await sw.ns.run(['nft', '-f', file]);
      const cutDone = performance.now();
      await waitFor(async () => (await ours()).filter((p) => p.state !== 'Established').length, {
        what: 'our two sessions down',
        until: (n) => n === 2,
        timeoutMs: 5000,
        intervalMs: 10,
      });
      const wall = performance.now() - cut;
      // The path died after the last packet our BFD took from it: from then to the session's
      // end is the failure-to-down time, whatever the cut's own command took to run.
      for (const p of await ours()) {
        const ms = p.since - p.bfd!.lastReceived;
        assert.ok(ms > 0 && ms < 500, `${p.address}: session down ${ms} ms after the last packet came through (detection 300 ms)`);
      }
      assert.ok(wall < 1500, `down ${wall.toFixed(0)} ms after the cut began (${(cutDone - cut).toFixed(0)} ms of it running nft)`);
      const statuses = await ours();
      for (const p of statuses)
        assert.match(p.lastError, /BFD down: control detection time expired|NOTIFICATION 6\/10/, `${p.address}: ${p.lastError}`);
      const routes = [...(await pr.routes('ipv4')), ...(await pr.routes('ipv6'))].map((r) => r.prefix);
      assert.ok(!routes.includes(THEIRS.v4) && !routes.includes(THEIRS.v6), `their routes left our RIB: ${routes.join(', ')}`);
      // The daemon's side: its BFD too, well before its 9 s hold time; our routes leave its kernel.
      await waitFor(async () => !(await kernelHas()), { what: `our routes gone from ${c.name}'s kernel`, timeoutMs: 3000, intervalMs: 50 });
      const took = performance.now() - cut;
      assert.ok(took < 3000, `${c.name} dropped our routes ${took.toFixed(0)} ms after the cut (hold time 9 s)`);
      const reasons = await daemon.downReasons();
      assert.match(reasons, c.bfdReason, `${c.name} says BFD ended the sessions: ${reasons.slice(0, 4000)}`);
    });

    it('the path restored, sessions, BFD and routes come back on both ends', async () => {
      await sw.ns.run(['nft', 'delete', 'table', 'bridge', 'bfdcut']);
      await allUp('restored');
    });
  });
}
