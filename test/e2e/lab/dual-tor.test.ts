// dual-tor.clab.yml: one rack, three nodes, each with a link on two planes, each plane an FRR
// ToR; BGPPeers with BFD (100 ms x 3) and long-lived graceful restart. Measured with real
// packets (ping every 10-20 ms between pods on different nodes):
// - one plane cut at its ToR (silent to the nodes): BFD takes the sessions down within 500 ms,
//   traffic goes on over the other plane losing under 1 s of packets, the kernels hold one path;
//   restored, both paths are back;
// - kill -9 of a node's agent: the ToRs keep its block (LLGR_STALE once its restart time is
//   over), pod traffic to it loses nothing; started again, its block is fresh everywhere;
// - a node drained (`podroute node drain`), its agent stopped and its links taken down: the
//   ToRs see its block marked GRACEFUL_SHUTDOWN while its sessions are still up, then lose it,
//   no kernel keeps a route into it, and traffic between the other nodes' pods loses nothing.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { AgentStatus } from '../../../lib/agent/index.js';
import { callControl } from '../../../lib/bgpd/control.js';
import { dispatch } from '../../../lib/cli/args.js';
import { nodeDrainCommands } from '../../../lib/cli/datastore.js';
import { redisDatastore } from '../../../lib/datastore/index.js';
import { controlSocket, labUp, vtysh } from '../../../lib/lab/runner.js';
import type { LabPod } from '../../../lib/lab/state.js';
import { run, stopProcess } from '../../../lib/lab/system.js';
import { waitFor } from '../../support/wait.js';
import { LabUnderTest } from './harness.js';

const NODES = ['n1', 'n2', 'n3'] as const;
const TORS = ['tor1', 'tor2'] as const;
/** Each plane: its ToR, the ToR's address, the nodes' interface on it and their addresses. */
const PLANES = [
  { tor: 'tor1', gateway: '10.60.1.1', dev: 'eth1', node: (i: number) => `10.60.1.1${i}` },
  { tor: 'tor2', gateway: '10.60.2.1', dev: 'eth2', node: (i: number) => `10.60.2.1${i}` },
] as const;
const BOTH = PLANES.map((p) => `via ${p.gateway} dev ${p.dev}`);

interface KernelRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  nexthops?: { gateway?: string; dev: string }[];
}

interface FrrPath {
  stale?: boolean;
  locPrf?: number;
  community?: { string?: string };
  peer?: { peerId?: string };
}

/** A ping flood from one pod to another, read when it ends. */
class Flood {
  private out = '';
  private readonly child: ChildProcess;
  readonly done: Promise<void>;

  constructor(from: LabPod, to: LabPod, intervalS: number, count = 3_000) {
    this.child = spawn(
      'ip',
      ['netns', 'exec', from.namespace, 'ping', '-D', '-O', '-i', String(intervalS), '-c', String(count), '-W', '1', to.ip!],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    this.child.stdout!.on('data', (b: Buffer) => (this.out += b.toString()));
    this.done = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  /** Packets sent and lost, and how much time the lost ones stand for at the interval ping kept. */
  async result(): Promise<{ sent: number; lost: number; lostMs: number; text: string }> {
    await this.done;
    const m = /(\d+) packets transmitted, (\d+) received.*time (\d+)ms/.exec(this.out);
    assert.ok(m, `ping's summary: ${this.out.slice(-300)}`);
    const [sent, received, ms] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const lost = sent - received;
    return { sent, lost, lostMs: Math.round((lost * ms) / Math.max(1, sent - 1)), text: m[0] };
  }

  /** When ping gave up on a packet or was told it cannot be delivered (ms since the epoch, as ping -D prints). */
  failedAt(): number[] {
    return [...this.out.matchAll(/^\[(\d+\.\d+)\] (?:no answer yet|From .* Unreachable)/gm)].map((m) => Number(m[1]) * 1000);
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

describe('lab dual-tor.clab.yml: a rack on two planes, BFD and long-lived graceful restart', function () {
  this.timeout(240_000);
  const lab = new LabUnderTest('dual-tor.clab.yml');
  const pods: Record<string, LabPod> = {};
  const floods: Flood[] = [];
  let blocks: Record<string, string>;

  const flood = (from: string, to: string, intervalS: number, count?: number) => {
    const f = new Flood(pods[from]!, pods[to]!, intervalS, count);
    floods.push(f);
    return f;
  };

  async function kernelPaths(node: string, dst: string): Promise<string[]> {
    const all = JSON.parse(await run(['ip', '-n', lab.ns(node), '-j', 'route', 'show', 'proto', '81'])) as KernelRoute[];
    const r = all.find((x) => x.dst === dst);
    if (!r) return [];
    return (r.nexthops ?? [{ gateway: r.gateway, dev: r.dev! }]).map((h) => `via ${h.gateway} dev ${h.dev}`).sort();
  }

  /** Waits (bounded) until every node holds every other node's block over exactly `paths`. */
  async function waitKernels(paths: readonly string[], nodes: readonly string[] = NODES, timeoutMs = 20_000): Promise<void> {
    const want = JSON.stringify([...paths].sort());
    await waitFor(() => Promise.all(nodes.flatMap((n) => nodes.filter((o) => o !== n).map((o) => kernelPaths(n, blocks[o]!)))), {
      what: `every node: the other blocks over ${paths.join(' and ')}`,
      until: (all) => all.every((p) => JSON.stringify(p) === want),
      timeoutMs,
      intervalMs: 100,
    });
  }

  async function frrPaths(tor: string, prefix: string): Promise<FrrPath[]> {
    const r = JSON.parse(await vtysh(lab.state, tor, `show bgp ipv4 unicast ${prefix} json`)) as { paths?: FrrPath[] };
    return r.paths ?? [];
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

  it('every node peers with both ToRs on their plane addresses with BFD Up, and holds every other block over both planes', async () => {
    await lab.waitSessions([...NODES], 2);
    await lab.waitSessions([...TORS], 3);
    for (const n of NODES) pods[n] = await lab.pod(n, `p${n}`);
    const owned = await lab.blocks([...NODES]);
    blocks = Object.fromEntries(NODES.map((n) => [n, owned[n]![0]!]));
    const expected = NODES.map((n) => blocks[n]!).sort();
    for (const tor of TORS)
      await waitFor(() => lab.frrRib(tor), {
        what: `${tor} RIB = the three blocks`,
        until: (r) => JSON.stringify(r) === JSON.stringify(expected),
        timeoutMs: 20_000,
      });
    // Each ToR takes a block from its owner alone: what a node passes on of the others' is refused.
    for (const [i, n] of NODES.entries())
      for (const p of PLANES) {
        const paths = await frrPaths(p.tor, blocks[n]!);
        assert.deepEqual(
          paths.map((x) => x.peer?.peerId),
          [p.node(i + 1)],
          `${p.tor}: ${blocks[n]} from ${n} only`,
        );
      }
    // Waited for, not read once: on a loaded machine a session may be coming back from a BFD flap.
    const want = JSON.stringify(PLANES.map((p) => `${p.gateway} Established BFD Up`));
    for (const n of NODES)
      await waitFor(async () => (await agentStatus(n)).peers.map((p) => `${p.address} ${p.state} BFD ${p.bfd}`).sort(), {
        what: `${n}: both sessions Established with BFD Up`,
        until: (s) => JSON.stringify(s) === want,
        timeoutMs: 15_000,
      });
    await waitKernels(BOTH);
    await lab.waitAllPing();
  });

  it('one plane cut at its ToR: BFD takes the sessions down within 500 ms, pods lose under 1 s of packets, one path left; restored, both back', async () => {
    // The plane n1's pod reaches n2's pod over (the kernel's hash of this flow): that one is cut.
    const cali = (await run(['ip', '-n', lab.ns('n1'), '-o', 'link', 'show'])).match(/cali[0-9a-f]+/)![0];
    const via = await run(['ip', '-n', lab.ns('n1'), 'route', 'get', pods.n2!.ip!, 'from', pods.n1!.ip!, 'iif', cali]);
    const cut = PLANES.find((p) => via.includes(`dev ${p.dev}`))!;
    const other = PLANES.find((p) => p !== cut)!;
    assert.ok(cut, `the flow's path: ${via}`);
    const f = flood('n1', 'n2', 0.01);
    await new Promise((r) => setTimeout(r, 500));
    const t0 = Date.now();
    await run(['ip', '-n', lab.ns(cut.tor), 'link', 'set', 'eth1', 'down']);
    await waitKernels([`via ${other.gateway} dev ${other.dev}`], NODES, 10_000);
    const down = await waitFor(() => peerDownAt('n1', cut.gateway, t0), {
      what: `n1's session to ${cut.tor} down`,
      until: (d) => d !== undefined,
      timeoutMs: 5_000,
      intervalMs: 50,
    });
    await new Promise((r) => setTimeout(r, 500));
    const r = await f.finish();
    console.log(
      `      plane ${cut.tor} cut: n1's BFD down after ${down!.at - t0} ms (${down!.reason}); ${r.text}, ${r.lost} lost = ${r.lostMs} ms`,
    );
    assert.match(down!.reason, /BFD down/, 'BFD, not the hold timer, took the session down');
    assert.ok(down!.at - t0 < 500, `BFD took ${down!.at - t0} ms`);
    assert.ok(r.lostMs < 1_000, `${r.lost} packets lost (${r.lostMs} ms): ${r.text}`);
    // The other ToR kept its three sessions; the cut one has none.
    await lab.waitSessions([other.tor], 3, 5_000);
    assert.ok(
      (await lab.sessions(cut.tor)).every((s) => s.state !== 'Established'),
      `${cut.tor} has no session left on a plane it cannot reach`,
    );

    await run(['ip', '-n', lab.ns(cut.tor), 'link', 'set', 'eth1', 'up']);
    await lab.waitSessions([...NODES], 2, 30_000);
    await waitKernels(BOTH, NODES, 20_000);
    await lab.waitAllPing();
  });

  it('kill -9 of a node agent: its block stays at both ToRs (LLGR_STALE), no ping to its pod lost; restarted, all fresh', async () => {
    const f1 = flood('n1', 'n2', 0.02);
    const f3 = flood('n3', 'n2', 0.02);
    await new Promise((r) => setTimeout(r, 300));
    process.kill(agentOf('n2').pid, 'SIGKILL');
    // Its restart time (3 s, the node's restartTime) runs out: the long-lived phase, marked.
    for (const tor of TORS)
      await waitFor(() => frrPaths(tor, blocks.n2!), {
        what: `${tor}: ${blocks.n2} kept, marked LLGR_STALE`,
        until: (p) => p.length === 1 && p[0]!.community?.string?.includes('llgr-stale') === true,
        timeoutMs: 15_000,
        intervalMs: 200,
      });
    // Every other node keeps both paths into the dead agent's node, whose kernel still forwards.
    await waitKernels(BOTH, ['n1', 'n3'], 1_000);

    await labUp(lab.topo, { stateRoot: lab.stateRoot, prefix: lab.prefix });
    for (const tor of TORS)
      await waitFor(() => frrPaths(tor, blocks.n2!), {
        what: `${tor}: ${blocks.n2} fresh again`,
        until: (p) => p.length === 1 && !p[0]!.stale && !(p[0]!.community?.string ?? '').includes('llgr-stale'),
        timeoutMs: 30_000,
      });
    await lab.waitSessions([...NODES], 2);
    await waitKernels(BOTH);
    // Across the kill, the long-lived stale phase and the restart.
    for (const [from, f] of [
      ['n1', f1],
      ['n3', f3],
    ] as const) {
      const r = await f.finish();
      console.log(`      n2's agent killed and restarted: ${from} -> n2 ${r.text}`);
      assert.equal(r.lost, 0, `${from} -> n2 while n2's agent was dead and restarting: ${r.text}`);
    }
  });

  it('n3 drained, its agent stopped, its links down: GRACEFUL_SHUTDOWN at the ToRs first, its block gone everywhere, no ping lost between n1 and n2', async () => {
    const f12 = flood('n1', 'n2', 0.02);
    const f21 = flood('n2', 'n1', 0.02);
    // n3's own pod: reachable until n3's sessions close (no ToR has another path to its block).
    const f13 = flood('n1', 'n3', 0.02);
    const ds = await redisDatastore({ url: lab.state.redisSocket! });
    try {
      const io = { stdout: () => undefined, stderr: () => undefined };
      const node = { name: 'node', summary: '', subcommands: nodeDrainCommands(io, ds) };
      assert.equal(await dispatch(node, ['drain', 'n3'], io), 0, 'podroute node drain n3');
    } finally {
      await ds.close();
    }
    for (const tor of TORS) {
      const marked = await waitFor(() => frrPaths(tor, blocks.n3!), {
        what: `${tor}: ${blocks.n3} marked GRACEFUL_SHUTDOWN`,
        until: (p) => p[0]?.community?.string?.includes('graceful-shutdown') === true,
        timeoutMs: 20_000,
        intervalMs: 100,
      });
      assert.equal(marked[0]!.locPrf, 0, `${tor}: GRACEFUL_SHUTDOWN taken as LOCAL_PREF 0`);
    }
    assert.ok(
      (await lab.sessions('n3')).every((s) => s.state === 'Established'),
      'n3 closed a session before both ToRs had the block marked',
    );
    for (const tor of TORS)
      await waitFor(() => lab.frrRib(tor), {
        what: `${tor}: ${blocks.n3} gone`,
        until: (r) => !r.includes(blocks.n3!) && r.length === 2,
        timeoutMs: 30_000,
      });
    const closed = await waitFor(() => peerDownAt('n3', PLANES[0].gateway, 0, /node drain/), {
      what: "n3's drained session's Cease in its log",
      until: (d) => d !== undefined,
      timeoutMs: 5_000,
    });
    // Drained: a stop is no restart (the ToRs keep nothing of it), and the node may go.
    await stopProcess(agentOf('n3'), 10_000, 'SIGTERM');
    for (const dev of ['eth1', 'eth2']) await run(['ip', '-n', lab.ns('n3'), 'link', 'set', dev, 'down']);
    await waitFor(() => Promise.all(['n1', 'n2'].map((n) => kernelPaths(n, blocks.n3!))), {
      what: `no route into ${blocks.n3} left on n1 and n2`,
      until: (all) => all.every((p) => p.length === 0),
      timeoutMs: 10_000,
    });
    assert.deepEqual(await lab.frrRib('tor1'), [blocks.n1!, blocks.n2!].sort(), 'nothing of n3 came back at tor1');
    for (const [what, f] of [
      ['n1 -> n2', f12],
      ['n2 -> n1', f21],
    ] as const) {
      const r = await f.finish();
      console.log(`      n3 drained and stopped: ${what} ${r.text}`);
      assert.equal(r.lost, 0, `${what} while n3 drained: ${r.text}`);
    }
    const r13 = await f13.finish();
    const early = f13.failedAt().filter((t) => t < closed!.at);
    console.log(`      n3 drained: n1 -> n3 ${early.length} pings lost before n3's sessions closed (${r13.text})`);
    assert.deepEqual(early, [], "pings to n3's pod lost while the ToRs still had its block");
    await waitKernels(BOTH, ['n1', 'n2']);
  });
});
