// dual-tor.clab.yml: two racks (each its own AS), two nodes a rack, each node with a link on two
// planes, each plane a ToR a rack; the two racks' ToRs of a plane peer with each other. Three ToRs
// are FRR, rack 2's plane-B ToR is BIRD. BGPPeers with BFD (100 ms x 3) and long-lived graceful
// restart. Measured with real packets between pods of the two racks (ping every 10-20 ms):
// - one plane cut at rack 1's ToR (silent to the nodes): BFD takes the sessions down within
//   500 ms, traffic goes on over the other plane losing under 1 s of packets, the other rack's
//   ToR on that plane and every kernel hold one path; restored, both paths are back;
// - kill -9 of every node's agent, one a rack at a time: every ToR, FRR and BIRD, keeps its
//   block marked LLGR_STALE, pod traffic to it loses nothing; started again, its block is fresh
//   everywhere; one agent left dead: its block goes at every ToR when its maxRestartTime has
//   passed, and from every kernel, and its pod is out of reach;
// - a node drained (`podroute node drain`), its agent stopped and its links taken down: every
//   ToR sees its block marked GRACEFUL_SHUTDOWN (LOCAL_PREF 0) while its sessions are still up,
//   then loses it, no kernel keeps a route into it, and traffic across the racks loses nothing.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { AgentStatus } from '../../../lib/agent/index.js';
import { callControl } from '../../../lib/bgpd/control.js';
import { dispatch } from '../../../lib/cli/args.js';
import { nodeDrainCommands } from '../../../lib/cli/datastore.js';
import { redisDatastore } from '../../../lib/datastore/index.js';
import { birdc } from '../../../lib/lab/bird.js';
import { controlSocket, labRestartAgents, vtysh } from '../../../lib/lab/runner.js';
import type { LabPod } from '../../../lib/lab/state.js';
import { execCommand, isOurs, run, stopProcess } from '../../../lib/lab/system.js';
import { parseBirdRoutes } from '../../support/bird.js';
import { waitFor } from '../../support/wait.js';
import { LabUnderTest } from './harness.js';

const NODES = ['n1', 'n2', 'n3', 'n4'] as const;
type Node = (typeof NODES)[number];
const RACK: Record<Node, 'r1' | 'r2'> = { n1: 'r1', n2: 'r1', n3: 'r2', n4: 'r2' };
/** Each node's address on its rack's planes (A on eth1, B on eth2). */
const HOST: Record<Node, number> = { n1: 11, n2: 12, n3: 13, n4: 14 };
interface Plane {
  tor: string;
  gateway: string;
  dev: 'eth1' | 'eth2';
  subnet: string;
}
/** Each rack's two planes: its ToR there, the ToR's address, the nodes' interface on it. */
const PLANES: Record<'r1' | 'r2', [Plane, Plane]> = {
  r1: [
    { tor: 'tor1a', gateway: '10.60.1.1', dev: 'eth1', subnet: '10.60.1' },
    { tor: 'tor1b', gateway: '10.60.2.1', dev: 'eth2', subnet: '10.60.2' },
  ],
  r2: [
    { tor: 'tor2a', gateway: '10.60.3.1', dev: 'eth1', subnet: '10.60.3' },
    { tor: 'tor2b', gateway: '10.60.4.1', dev: 'eth2', subnet: '10.60.4' },
  ],
};
const BIRD_TOR = 'tor2b';
const TORS = ['tor1a', 'tor1b', 'tor2a', BIRD_TOR] as const;
/** BIRD names a path by its protocol; these are the sessions of tor2b.bird.conf. */
const BIRD_PROTOCOLS: Record<string, string> = { n3: '10.60.4.13', n4: '10.60.4.14', tor1b: '10.60.12.1' };
const hop = (p: Plane) => `via ${p.gateway} dev ${p.dev}`;
const bothPlanes = (n: Node) => PLANES[RACK[n]].map(hop).sort();
const ms = (t: number) => new Promise((r) => setTimeout(r, t));

interface KernelRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  nexthops?: { gateway?: string; dev: string }[];
}

/** A path at a ToR, FRR's or BIRD's, in the terms the checks need. */
interface TorPath {
  from?: string;
  llgrStale: boolean;
  gracefulShutdown: boolean;
  localPref?: number;
}

interface FrrPath {
  locPrf?: number;
  community?: { string?: string };
  peer?: { peerId?: string };
}

/** A ping flood from one pod to another, read when it ends. */
class Flood {
  private out = '';
  private readonly child: ChildProcess;
  readonly done: Promise<void>;

  constructor(from: LabPod, to: LabPod, intervalS: number, count = 5_000) {
    this.child = spawn(
      'ip',
      ['netns', 'exec', from.namespace, 'ping', '-D', '-O', '-i', String(intervalS), '-c', String(count), '-W', '1', to.ip!],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    this.child.stdout!.on('data', (b: Buffer) => (this.out += b.toString()));
    // 'close', not 'exit': the summary ping prints as it ends may still be in the pipe at its exit.
    this.done = new Promise((resolve) => this.child.once('close', () => resolve()));
  }

  /**
   * Packets sent and lost, and how much time the lost ones stand for at the interval ping kept.
   * ping stopped by SIGINT counts the echoes still on their way as lost: on a loaded machine
   * (round trips longer than the interval) that is a few packets that were never dropped. So a
   * packet is lost when a later one was answered and it was not; the unanswered tail counts as
   * in flight only while it is shorter than ping's own wait for a reply (-W 1).
   */
  async result(): Promise<{ sent: number; lost: number; lostMs: number; inFlight: number; text: string }> {
    await this.done;
    const m = /(\d+) packets transmitted, (\d+) received.*time (\d+)ms/.exec(this.out);
    assert.ok(m, `ping's summary: ${this.out.slice(-300)}`);
    const [sent, , t] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const answered = new Set([...this.out.matchAll(/bytes from .* icmp_seq=(\d+)/g)].map((a) => Number(a[1])));
    const last = Math.max(0, ...answered);
    let lost = 0;
    for (let seq = 1; seq <= last; seq++) if (!answered.has(seq)) lost++;
    const perPacketMs = t / Math.max(1, sent - 1);
    const tail = sent - last;
    const inFlight = last > 0 && tail * perPacketMs < 1_000 ? tail : 0;
    lost += tail - inFlight;
    const text = inFlight ? `${m[0]} (${inFlight} still in flight when ping was stopped)` : m[0];
    return { sent, lost, lostMs: Math.round(lost * perPacketMs), inFlight, text };
  }

  /** When ping gave up on a packet or was told it cannot be delivered (ms since the epoch, as ping -D prints). */
  failedAt(): number[] {
    return [...this.out.matchAll(/^\[(\d+\.\d+)\] (?:no answer yet|From .* Unreachable)/gm)].map((m) => Number(m[1]) * 1000);
  }

  /** What ping said of the packets it lost (first few), for a failure's message. */
  failures(): string {
    return this.out
      .split('\n')
      .filter((l) => /no answer yet|Unreachable/.test(l))
      .slice(0, 6)
      .join('; ');
  }

  /** Ends it now (SIGINT: ping prints its summary) and reads it. */
  finish(): ReturnType<Flood['result']> {
    this.child.kill('SIGINT');
    return this.result();
  }

  stop(): void {
    if (this.child.exitCode === null) this.child.kill();
  }
}

describe('lab dual-tor.clab.yml: two racks on two planes, FRR and BIRD ToRs, BFD and long-lived graceful restart', function () {
  this.timeout(240_000);
  const lab = new LabUnderTest('dual-tor.clab.yml');
  const pods = {} as Record<Node, LabPod>;
  const floods: Flood[] = [];
  let blocks: Record<Node, string>;
  let allBlocks: string[];

  const flood = (from: Node, to: Node, intervalS: number) => {
    const f = new Flood(pods[from], pods[to], intervalS);
    floods.push(f);
    return f;
  };

  async function kernelPaths(node: string, dst: string): Promise<string[]> {
    const all = JSON.parse(await run(['ip', '-n', lab.ns(node), '-j', 'route', 'show', 'proto', '81'])) as KernelRoute[];
    const r = all.find((x) => x.dst === dst);
    if (!r) return [];
    return (r.nexthops ?? [{ gateway: r.gateway, dev: r.dev! }]).map((h) => `via ${h.gateway} dev ${h.dev}`).sort();
  }

  /**
   * Waits (bounded) until each of `nodes` holds each of `targets`' blocks over the paths `want`
   * says (both its rack's planes unless told), all at once.
   */
  async function waitKernels(
    nodes: readonly Node[],
    targets: readonly Node[] = NODES,
    want: (node: Node, target: Node) => string[] = (n) => bothPlanes(n),
    timeoutMs = 20_000,
  ): Promise<void> {
    const pairs = nodes.flatMap((n) => targets.filter((t) => t !== n).map((t) => [n, t] as const));
    await waitFor(() => Promise.all(pairs.map(([n, t]) => kernelPaths(n, blocks[t]))), {
      what: `${nodes.join(',')}: the blocks of ${targets.join(',')} over the expected planes`,
      until: (all) => all.every((p, i) => JSON.stringify(p) === JSON.stringify(want(...pairs[i]!))),
      timeoutMs,
      intervalMs: 100,
    });
  }

  async function torPaths(tor: string, prefix: string): Promise<TorPath[]> {
    if (tor === BIRD_TOR) {
      // birdc says "Network not found" (exit 1) for a prefix it has no route to.
      const text = await birdc(lab.state, tor, `show route all ${prefix}`).catch((e: Error) => {
        if (/Network not found/.test(e.message)) return '';
        throw e;
      });
      const routes = parseBirdRoutes(text).filter((r) => r.prefix === prefix);
      return routes.map((r) => ({
        from: BIRD_PROTOCOLS[r.protocol],
        llgrStale: r.communities.includes('65535:6'),
        gracefulShutdown: r.communities.includes('65535:0'),
        localPref: r.localPref,
      }));
    }
    const r = JSON.parse(await vtysh(lab.state, tor, `show bgp ipv4 unicast ${prefix} json`)) as { paths?: FrrPath[] };
    return (r.paths ?? []).map((p) => ({
      from: p.peer?.peerId,
      llgrStale: p.community?.string?.includes('llgr-stale') === true,
      gracefulShutdown: p.community?.string?.includes('graceful-shutdown') === true,
      localPref: p.locPrf,
    }));
  }

  /** The prefixes in a ToR's BGP RIB. */
  async function torRib(tor: string): Promise<string[]> {
    if (tor !== BIRD_TOR) return lab.frrRib(tor);
    const routes = parseBirdRoutes(await birdc(lab.state, tor, 'show route all table master4'));
    return [...new Set(routes.filter((r) => r.attributes.as_path !== undefined).map((r) => r.prefix))].sort();
  }

  /** Waits until every ToR's paths for `node`'s block pass `until`; returns when it saw that. */
  async function waitTors(node: Node, what: string, until: (p: TorPath[]) => boolean, timeoutMs = 20_000): Promise<number> {
    await Promise.all(
      TORS.map((tor) =>
        waitFor(() => torPaths(tor, blocks[node]), {
          what: `${tor}: ${blocks[node]} (${node}) ${what}`,
          until,
          timeoutMs,
          intervalMs: 100,
        }),
      ),
    );
    return Date.now();
  }

  const agentStatus = (node: string) => callControl<AgentStatus>(controlSocket(lab.state, node), 'GET', '/status');
  const agentOf = (node: string) => lab.state.processes.find((p) => p.node === node && p.what === 'agent')!;

  /** The first `peer-down` the node's agent logged for `peer` at or after `since` (ms since the epoch), for `reason`. */
  function peerDownAt(node: string, peer: string, since: number, reason = /./): { at: number; reason: string } | undefined {
    for (const line of readFileSync(agentOf(node).log, 'utf8').split('\n')) {
      if (!line.includes('"peer-down"') || !line.includes(`"${peer}"`)) continue;
      const e = JSON.parse(line) as { time: string; reason: string };
      const at = Date.parse(e.time);
      if (at >= since && reason.test(e.reason)) return { at, reason: e.reason };
    }
    return undefined;
  }

  before(async () => {
    await lab.up();
  });
  after(async () => {
    for (const f of floods) f.stop();
    await lab.downAndCheck();
  });

  it('every node peers with its rack’s two ToRs with BFD Up (FRR and BIRD), and holds every other block over both planes', async () => {
    await Promise.all([lab.waitSessions([...NODES], 2), lab.waitSessions([...TORS], 3)]);
    const made = await Promise.all(NODES.map((n) => lab.pod(n, `p${n}`)));
    for (const [i, n] of NODES.entries()) pods[n] = made[i]!;
    const owned = await lab.blocks([...NODES]);
    blocks = Object.fromEntries(NODES.map((n) => [n, owned[n]![0]!])) as Record<Node, string>;
    allBlocks = NODES.map((n) => blocks[n]).sort();
    await Promise.all(
      TORS.map((tor) =>
        waitFor(() => torRib(tor), {
          what: `${tor} RIB = the four blocks`,
          until: (r) => JSON.stringify(r) === JSON.stringify(allBlocks),
          timeoutMs: 20_000,
        }),
      ),
    );
    // A ToR takes a block of its rack from its owner alone (what a node passes on of the others'
    // is refused), and the other rack's from its peer ToR on the same plane.
    // One ToR's checks in turn (vtysh answers one at a time), the ToRs at once.
    await Promise.all(
      TORS.map(async (tor, p) => {
        for (const n of NODES) {
          const plane = PLANES[RACK[n]][p % 2]!;
          const from = RACK[n] === (p < 2 ? 'r1' : 'r2') ? `${plane.subnet}.${HOST[n]}` : p % 2 === 0 ? '10.60.11.' : '10.60.12.';
          const paths = await torPaths(tor, blocks[n]);
          assert.equal(paths.length, 1, `${tor}: one path to ${blocks[n]} (${n})`);
          assert.ok(paths[0]!.from?.startsWith(from), `${tor}: ${blocks[n]} (${n}) from ${paths[0]!.from}, not ${from}…`);
        }
      }),
    );
    // Waited for, not read once: on a loaded machine a session may be coming back from a BFD flap.
    await Promise.all(
      NODES.map((n) => {
        const want = JSON.stringify(PLANES[RACK[n]].map((p) => `${p.gateway} Established BFD Up`));
        return waitFor(async () => (await agentStatus(n)).peers.map((p) => `${p.address} ${p.state} BFD ${p.bfd}`).sort(), {
          what: `${n}: both sessions Established with BFD Up`,
          until: (s) => JSON.stringify(s) === want,
          timeoutMs: 15_000,
        });
      }),
    );
    // BIRD's side of BFD: Up with both its nodes and with the FRR ToR across.
    await waitFor(
      async () => [...(await birdc(lab.state, BIRD_TOR, 'show bfd sessions')).matchAll(/^(\S+)\s+\S+\s+Up\b/gm)].map((m) => m[1]).sort(),
      {
        what: `${BIRD_TOR}: BFD Up with n3, n4 and tor1b`,
        until: (up) => JSON.stringify(up) === JSON.stringify(['10.60.12.1', '10.60.4.13', '10.60.4.14']),
        timeoutMs: 15_000,
      },
    );
    await waitKernels(NODES);
    await lab.waitAllPing();
  });

  it('a plane cut at rack 1’s ToR: BFD takes the sessions down within 500 ms, pods across the racks lose under 1 s of packets, one path left; restored, both back', async () => {
    // The plane n1's pod reaches n3's pod over (the kernel's hash of this flow): that one is cut.
    const cali = (await run(['ip', '-n', lab.ns('n1'), '-o', 'link', 'show'])).match(/cali[0-9a-f]+/)![0];
    const via = await run(['ip', '-n', lab.ns('n1'), 'route', 'get', pods.n3.ip!, 'from', pods.n1.ip!, 'iif', cali]);
    const i = PLANES.r1.findIndex((p) => via.includes(`dev ${p.dev}`));
    assert.ok(i >= 0, `the flow's path: ${via}`);
    const [cut, other] = [PLANES.r1[i]!, PLANES.r1[1 - i]!];
    const [farCut, farOther] = [PLANES.r2[i]!, PLANES.r2[1 - i]!];
    try {
      const f13 = flood('n1', 'n3', 0.01);
      const f31 = flood('n3', 'n1', 0.01);
      await ms(500);
      const asked = Date.now();
      await run(['ip', '-n', lab.ns(cut.tor), 'link', 'set', 'eth1', 'down']);
      // The link is down when `ip` returns; started, `ip` can take a few hundred ms on a loaded machine.
      const t0 = Date.now();
      // Rack 1 reaches everything over the other plane alone; rack 2 reaches rack 1 so, its own rack over both.
      const rack1 = new Set<Node>(['n1', 'n2']);
      await waitKernels(NODES, NODES, (n, t) => (rack1.has(n) ? [hop(other)] : rack1.has(t) ? [hop(farOther)] : bothPlanes(n)), 10_000);
      const down = await waitFor(() => peerDownAt('n1', cut.gateway, t0), {
        what: `n1's session to ${cut.tor} down`,
        until: (d) => d !== undefined,
        timeoutMs: 5_000,
        intervalMs: 50,
      });
      await ms(500);
      const [r13, r31] = await Promise.all([f13.finish(), f31.finish()]);
      console.log(
        `      plane of ${cut.tor} cut (ip took ${t0 - asked} ms): n1's BFD down after ${down!.at - t0} ms (${down!.reason}); n1 -> n3 ${r13.text}, ${r13.lostMs} ms lost; n3 -> n1 ${r31.lostMs} ms lost`,
      );
      assert.match(down!.reason, /BFD down/, 'BFD, not the hold timer, took the session down');
      assert.ok(down!.at - t0 < 500, `BFD took ${down!.at - t0} ms`);
      for (const [what, r] of [
        ['n1 -> n3', r13],
        ['n3 -> n1', r31],
      ] as const)
        assert.ok(r.lostMs < 1_000, `${what}: ${r.lost} packets lost (${r.lostMs} ms): ${r.text}`);
      // The other rack's ToR on the cut plane has no path left to rack 1; the other plane's ToRs keep all.
      const rack1Blocks = [blocks.n1, blocks.n2];
      assert.deepEqual(
        (await torRib(farCut.tor)).filter((b) => rack1Blocks.includes(b)),
        [],
        `${farCut.tor}: no path to rack 1 across a cut plane`,
      );
      assert.deepEqual(await torRib(farOther.tor), allBlocks, `${farOther.tor}: every block over the plane that stands`);
      await lab.waitSessions([other.tor], 3, 5_000);
      assert.ok(
        (await lab.sessions(cut.tor)).filter((s) => s.peer.startsWith(cut.subnet)).every((s) => s.state !== 'Established'),
        `${cut.tor} has no session left with a node on a plane it cannot reach`,
      );
    } finally {
      // Restored even when a check failed, so the tests after this one find both planes.
      await run(['ip', '-n', lab.ns(cut.tor), 'link', 'set', 'eth1', 'up']);
    }
    await lab.waitSessions(['n1', 'n2'], 2, 30_000);
    await waitKernels(NODES);
    await lab.waitAllPing();
  });

  it('kill -9 of every node agent, one a rack at a time: each block stays at every ToR, FRR and BIRD (LLGR_STALE), no ping lost; restarted, all fresh; n4 left dead: its block goes once maxRestartTime has passed', async () => {
    const stale = (p: TorPath[]) => p.length === 1 && p[0]!.llgrStale;
    const fresh = (p: TorPath[]) => p.length === 1 && !p[0]!.llgrStale;
    /** Pings to the victim's pod from the other node of its rack and from a node of the other rack not killed now. */
    const floodsTo = (victim: Node, round: readonly Node[]) =>
      [
        NODES.find((n) => n !== victim && RACK[n] === RACK[victim])!,
        NODES.find((n) => RACK[n] !== RACK[victim] && !round.includes(n))!,
      ].map((from) => ({ from, f: flood(from, victim, 0.02) }));
    /** Kills the victims' agents; resolves when every ToR holds their blocks marked LLGR_STALE. */
    async function kill(victims: readonly Node[]): Promise<number> {
      await ms(200);
      const t0 = Date.now();
      for (const v of victims) process.kill(agentOf(v).pid, 'SIGKILL');
      // Its restart time (2 s, the node's restartTime) runs out: the long-lived phase, marked.
      await Promise.all(victims.map((v) => waitTors(v, 'kept, marked LLGR_STALE', stale, 15_000)));
      // Every other node keeps both paths into the dead agents' nodes, whose kernels still forward.
      await waitKernels(
        NODES.filter((n) => !victims.includes(n)),
        victims,
        undefined,
        1_000,
      );
      return t0;
    }
    /** Starts the victims' agents again; their blocks are fresh at every ToR; no ping to them was lost. */
    async function restart(victims: readonly Node[], floods: { from: Node; f: Flood }[][]): Promise<void> {
      lab.state = await labRestartAgents(lab.topo, { stateRoot: lab.stateRoot }, victims);
      await Promise.all(victims.map((v) => waitTors(v, 'fresh again', fresh, 30_000)));
      await lab.waitSessions([...victims], 2);
      const running = NODES.filter((n) => lab.state.processes.some((p) => p.node === n && p.what === 'agent' && isOurs(p)));
      await waitKernels(running, running);
      for (const [i, v] of victims.entries())
        for (const { from, f } of floods[i]!) {
          const r = await f.finish();
          console.log(`      ${v}'s agent killed and restarted: ${from} -> ${v} ${r.text}`);
          assert.equal(r.lost, 0, `${from} -> ${v} while ${v}'s agent was dead and restarting: ${r.text} (${f.failures()})`);
        }
    }

    // A node of each rack at a time: rack 1's ToRs are FRR, rack 2's FRR and BIRD.
    const round1 = ['n1', 'n3'] as const;
    const f1 = round1.map((v) => floodsTo(v, round1));
    await kill(round1);
    await restart(round1, f1);

    // n2 restarted as the others were; n4 left dead past its restart and long-lived stale times.
    const round2 = ['n2', 'n4'] as const;
    const f2 = round2.map((v) => floodsTo(v, round2));
    const t0 = await kill(round2);
    const n4Gone = (async () => {
      // The last moment every ToR was seen holding n4's block: no ping to it may be lost before.
      let held = Date.now();
      await waitFor(
        async () => {
          // The time the ToRs were asked, not when they had all answered: they held it then.
          const asked = Date.now();
          const all = await Promise.all(TORS.map((tor) => torPaths(tor, blocks.n4)));
          if (all.every((p) => p.length === 1)) held = asked;
          return all;
        },
        {
          what: `${blocks.n4} (n4) gone from every ToR`,
          until: (all) => all.every((p) => p.length === 0),
          timeoutMs: 60_000,
          intervalMs: 200,
        },
      );
      return { held, gone: Date.now() };
    })();
    await restart(['n2'], [f2[0]!]);
    const { held, gone } = await n4Gone;
    // restartTime (2 s), then its BGPPeers' maxRestartTime (10 s): not the ToRs' own 120 s.
    console.log(`      n4 dead: its block held at every ToR until ${held - t0} ms, gone everywhere by ${gone - t0} ms`);
    // Seen gone only after it went: a ToR that dropped it at its restart time would be seen by about 5 s.
    assert.ok(gone - t0 >= 11_000, `the ToRs dropped n4's block by ${gone - t0} ms, before its maxRestartTime`);
    assert.ok(gone - t0 < 25_000, `n4's block outlived its maxRestartTime: ${gone - t0} ms`);
    await waitFor(() => Promise.all(['n1', 'n2', 'n3'].map((n) => kernelPaths(n, blocks.n4))), {
      what: `no route into ${blocks.n4} left on n1, n2, n3`,
      until: (all) => all.every((p) => p.length === 0),
      timeoutMs: 10_000,
    });
    const lone = await execCommand(['ip', 'netns', 'exec', pods.n1.namespace, 'ping', '-c', '1', '-W', '1', pods.n4.ip!]);
    assert.notEqual(lone.code, 0, `n4's pod still answers n1's: ${lone.stdout}`);
    for (const { from, f } of f2[1]!) {
      const r = await f.finish();
      const early = f.failedAt().filter((t) => t < held);
      console.log(`      n4 dead: ${from} -> n4 ${early.length} pings lost while the ToRs held its block (${r.text})`);
      assert.deepEqual(early, [], `${from} -> n4: pings lost while the ToRs still had its block`);
    }
  });

  it('n2 drained, its agent stopped, its links down: GRACEFUL_SHUTDOWN at every ToR first, its block gone everywhere, no ping lost across the racks', async () => {
    const f13 = flood('n1', 'n3', 0.02);
    const f31 = flood('n3', 'n1', 0.02);
    // n2's own pod, from the other rack: reachable until n2's sessions close (no ToR has another path to its block).
    const f32 = flood('n3', 'n2', 0.02);
    const ds = await redisDatastore({ url: lab.state.redisSocket! });
    try {
      const io = { stdout: () => undefined, stderr: () => undefined };
      const node = { name: 'node', summary: '', subcommands: nodeDrainCommands(io, ds) };
      assert.equal(await dispatch(node, ['drain', 'n2'], io), 0, 'podroute node drain n2');
    } finally {
      await ds.close();
    }
    await waitTors('n2', 'marked GRACEFUL_SHUTDOWN', (p) => p[0]?.gracefulShutdown === true);
    // LOCAL_PREF 0 where n2's marked path comes in, at its rack's ToRs, and at BIRD across (its
    // import filter); the other rack's FRR ToR is logged (seen at 0, and once without one).
    const prefs = await Promise.all(TORS.map(async (tor) => `${tor} ${(await torPaths(tor, blocks.n2))[0]?.localPref ?? '-'}`));
    console.log(`      n2 drained: LOCAL_PREF of its block at ${prefs.join(', ')}`);
    for (const tor of ['tor1a', 'tor1b', BIRD_TOR])
      assert.equal((await torPaths(tor, blocks.n2))[0]?.localPref, 0, `${tor}: GRACEFUL_SHUTDOWN taken as LOCAL_PREF 0`);
    assert.ok(
      (await lab.sessions('n2')).every((s) => s.state === 'Established'),
      'n2 closed a session before every ToR had the block marked',
    );
    await waitTors('n2', 'gone', (p) => p.length === 0, 30_000);
    const closed = await waitFor(() => peerDownAt('n2', PLANES.r1[0].gateway, 0, /node drain/), {
      what: "n2's drained session's Cease in its log",
      until: (d) => d !== undefined,
      timeoutMs: 5_000,
    });
    // Drained: a stop is no restart (the ToRs keep nothing of it), and the node may go.
    await stopProcess(agentOf('n2'), 10_000, 'SIGTERM');
    for (const dev of ['eth1', 'eth2']) await run(['ip', '-n', lab.ns('n2'), 'link', 'set', dev, 'down']);
    await waitFor(() => Promise.all(['n1', 'n3'].map((n) => kernelPaths(n, blocks.n2))), {
      what: `no route into ${blocks.n2} left on n1 and n3`,
      until: (all) => all.every((p) => p.length === 0),
      timeoutMs: 10_000,
    });
    assert.ok(!(await torRib('tor1a')).includes(blocks.n2), 'nothing of n2 came back at tor1a');
    for (const [what, f] of [
      ['n1 -> n3', f13],
      ['n3 -> n1', f31],
    ] as const) {
      const r = await f.finish();
      console.log(`      n2 drained and stopped: ${what} ${r.text}`);
      assert.equal(r.lost, 0, `${what} while n2 drained: ${r.text}`);
    }
    const r32 = await f32.finish();
    const early = f32.failedAt().filter((t) => t < closed!.at);
    console.log(`      n2 drained: n3 -> n2 ${early.length} pings lost before n2's sessions closed (${r32.text})`);
    assert.deepEqual(early, [], "pings to n2's pod lost while the ToRs still had its block");
    await waitKernels(['n1', 'n3'], ['n1', 'n3']);
  });
});
