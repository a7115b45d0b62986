// BFD at scale: 1,000 single-hop sessions at 300 ms × 3 between podroute's BFD endpoint (in
// its own process, its sessions on their own thread, as bgpd runs it) and FRR's bfdd, in two namespaces on one veth: bfdd on
// one address with a thousand peers, podroute on a thousand addresses (bfdd keeps one session
// per peer address, so the thousand cannot all be ours on one address). Both ends
// run the same sessions at the same rate, so the CPU each spends over the same window is the
// comparison: podroute's process against bfdd, with the ratio printed. The process's CPU counts
// every thread of it.
//
// Sessions that go down are counted at both ends, with where packets were lost: bfdd's socket
// drops (its namespace's RcvbufErrors) and, with BFD_CAPTURE=1, the gaps between a session's
// packets on the wire at bfdd's interface (a sender late by a detection time shows there).
//   npx tsx bench/bfd.ts [sessions] [interval_ms] [seconds]
//   BFD_THREAD=main   the endpoint on the main loop; both: half the sessions in a process of each kind, side by side
//   BFD_LOAD=N        N busy loops from Up to the window's end, each in a session of its own
//                     (the scheduler shares the CPU between sessions); BFD_LOAD_GROUPED=1: all in one
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBfdd } from '../test/support/frr.js';
import { Lab } from '../test/support/netns.js';
import type { ManagedProcess } from '../test/support/process.js';
import { waitFor } from '../test/support/wait.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const N = Number(process.argv[2] ?? 1000);
const INTERVAL = Number(process.argv[3] ?? 300);
const SECONDS = Number(process.argv[4] ?? 30);
const MULT = 3;
const FRR = '10.77.0.1';
const FIRST = (((10 * 256 + 77) * 256 + 1) * 256 + 1) >>> 0;
const MODE = process.env.BFD_THREAD ?? 'worker';
const LOAD = Number(process.env.BFD_LOAD ?? 0);
const GROUPED = Boolean(process.env.BFD_LOAD_GROUPED);
const CAPTURE = Boolean(process.env.BFD_CAPTURE);
if (!['worker', 'main', 'both'].includes(MODE)) throw new Error(`BFD_THREAD: "${MODE}" is not worker, main or both`);

/** The i-th address of our side: 10.77.1.1 onwards, in a /16 with FRR's. */
function ourAddress(i: number): string {
  const n = FIRST + i;
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

function ourIndex(a: string): number {
  return a.split('.').reduce((n, o) => n * 256 + Number(o), 0) - FIRST;
}

/** utime + stime of a process (every thread), in seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ
}

interface ThreadTimes {
  /** ns on a CPU, ns runnable but waiting for one, times it was given one. */
  run: number;
  wait: number;
  slices: number;
}

/** Each thread's schedstat: how long it ran and how long it waited, runnable, for a CPU. */
function threadTimes(pid: number): Map<number, ThreadTimes> {
  const m = new Map<number, ThreadTimes>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const [run, wait, slices] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(' ').map(Number);
      m.set(Number(tid), { run: run!, wait: wait!, slices: slices! });
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return m;
}

/** The thread that ran most between two readings: the one doing the process's work. */
function busiest(before: Map<number, ThreadTimes>, after: Map<number, ThreadTimes>): string {
  let best: ThreadTimes | undefined;
  for (const [tid, a] of after) {
    const b = before.get(tid);
    if (!b) continue;
    const d = { run: a.run - b.run, wait: a.wait - b.wait, slices: a.slices - b.slices };
    if (!best || d.run > best.run) best = d;
  }
  if (!best) return 'no thread';
  return `its busiest thread ran ${(best.run / 1e9).toFixed(2)} s and waited ${(best.wait / 1e9).toFixed(2)} s for a CPU (${(best.wait / 1e6 / Math.max(1, best.slices)).toFixed(2)} ms a wake-up)`;
}

/** A process's network namespace's UDP counters, read through /proc/PID/net. */
function udpCounters(pid: number): Record<string, number> {
  const lines = readFileSync(`/proc/${pid}/net/snmp`, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('Udp:'));
  const keys = lines[0]!.split(/\s+/);
  const values = lines[1]!.split(/\s+/).map(Number);
  return Object.fromEntries(keys.map((k, i) => [k, values[i]!]));
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** A BFD packet as it crossed an interface: when (ms), from and to (IPv4 as numbers), and whether it said Up. */
interface Frame {
  t: number;
  src: number;
  dst: number;
  up: boolean;
}

/** The IPv4 BFD Control packets of a classic pcap of Ethernet. */
function readPcap(b: Buffer): Frame[] {
  const out: Frame[] = [];
  for (let o = 24; o + 16 <= b.length; ) {
    const f = o + 16;
    if (b.readUInt16BE(f + 12) === 0x0800) {
      const bfd = f + 14 + (b[f + 14]! & 0x0f) * 4 + 8;
      out.push({
        t: b.readUInt32LE(o) * 1000 + b.readUInt32LE(o + 4) / 1000,
        src: b.readUInt32BE(f + 26),
        dst: b.readUInt32BE(f + 30),
        up: b[bfd + 1]! >> 6 === 3,
      });
    }
    o = f + b.readUInt32LE(o + 8);
  }
  return out;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
}

/** Ends the busy loops, each by its process group (a group already gone is fine). */
function stopLoad(groups: number[]): void {
  for (const pid of groups.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // It ended at its bound.
    }
  }
}

/** One podroute process: its kind, its share of the sessions, what it last printed. */
interface Side {
  mode: 'worker' | 'main';
  first: number;
  count: number;
  node: ManagedProcess;
  up: number;
  downs: number;
  diags: string;
}

async function main(): Promise<void> {
  const lab = new Lab({ tag: 'benchbfd' });
  const loaders: number[] = [];
  try {
    const ours = await lab.namespace('pr');
    const frrNs = await lab.namespace('frr');
    await lab.link(ours, {}, frrNs, { v4: `${FRR}/16` });
    // Our thousand addresses, in one batch.
    const batch = Array.from({ length: N }, (_, i) => `address add ${ourAddress(i)}/16 dev eth0`).join('\n');
    const batchFile = join(lab.dir, 'addresses.batch');
    writeFileSync(batchFile, `${batch}\n`);
    await ours.run(['ip', '-batch', batchFile]);
    // bfdd sends to a thousand neighbours: learnt by ARP they would fill the kernel's neighbour
    // table (gc_thresh3, 1,024 entries for the whole host), so they are written in, permanent
    // entries, which the table does not count.
    const mac = (ns: typeof ours) => ns.run(['cat', '/sys/class/net/eth0/address']).then((m) => m.trim());
    const ourMac = await mac(ours);
    const neigh = Array.from({ length: N }, (_, i) => `neigh replace ${ourAddress(i)} lladdr ${ourMac} dev eth0 nud permanent`).join('\n');
    const neighFile = join(lab.dir, 'neighbours.batch');
    writeFileSync(neighFile, `${neigh}\n`);
    await frrNs.run(['ip', '-batch', neighFile]);
    await ours.run(['ip', 'neigh', 'replace', FRR, 'lladdr', await mac(frrNs), 'dev', 'eth0', 'nud', 'permanent']);

    const dir = join(lab.dir, 'frr');
    mkdirSync(dir, { recursive: true });
    const peers = Array.from({ length: N }, (_, i) =>
      [
        ` peer ${ourAddress(i)} local-address ${FRR}`,
        `  detect-multiplier ${MULT}`,
        `  receive-interval ${INTERVAL}`,
        `  transmit-interval ${INTERVAL}`,
        ' !',
      ].join('\n'),
    );
    const bfdd = await startBfdd(frrNs, dir, peers);
    const half = Math.floor(N / 2);
    const plan: [Side['mode'], number, number][] =
      MODE === 'both'
        ? [
            ['worker', 0, half],
            ['main', half, N - half],
          ]
        : [[MODE as Side['mode'], 0, N]];
    const sides = plan.map(([mode, first, count]): Side => {
      const node = ours.spawn(
        ['node', '--import', 'tsx', join(ROOT, 'bench/bfd-node.ts'), FRR, ourAddress(first), String(count), String(INTERVAL), String(MULT)],
        { name: `podroute-bfd-${mode}`, cwd: ROOT, env: { ...process.env, BFD_THREAD: mode } },
      );
      const side: Side = { mode, first, count, node, up: 0, downs: 0, diags: '' };
      node.onOutput((text) => {
        for (const m of text.matchAll(/up (\d+) downs (\d+) ?(\S*)/g)) {
          side.up = Number(m[1]);
          side.downs = Number(m[2]);
          side.diags = m[3] ?? '';
        }
      });
      return side;
    });
    const sideOf = (address: number): Side | undefined =>
      sides.find((s) => address - FIRST >= s.first && address - FIRST < s.first + s.count);
    // bfdd's own count of sessions that went down, summed over each side's peers.
    const frrDowns = async (): Promise<number[]> => {
      const text = await frrNs.run(['vtysh', '--vty_socket', dir, '-c', 'show bfd peers counters json']);
      const per = sides.map(() => 0);
      for (const p of JSON.parse(text) as { peer: string; 'session-down'?: number }[]) {
        const k = sides.findIndex((s) => ourIndex(p.peer) >= s.first && ourIndex(p.peer) < s.first + s.count);
        if (k >= 0) per[k]! += p['session-down'] ?? 0;
      }
      return per;
    };
    const t0 = performance.now();
    try {
      await waitFor(() => sides.reduce((n, s) => n + s.up, 0), {
        what: `${N} sessions Up`,
        until: (n) => n === N,
        timeoutMs: Number(process.env.BFD_UP_TIMEOUT ?? 180_000),
        intervalMs: 500,
      });
    } catch (e) {
      const brief = await frrNs.run(['vtysh', '--vty_socket', dir, '-c', 'show bfd peers brief']).catch((x: Error) => x.message);
      console.error(`bfdd's sessions:\n${brief.split('\n').slice(0, 20).join('\n')}\nours: ${sides.map((s) => s.node.tail()).join('\n')}`);
      throw e;
    }
    const upAfter = (performance.now() - t0) / 1000;
    // Let the Polls of reaching Up settle before measuring.
    await new Promise((r) => setTimeout(r, 3000));
    // Load: busy loops, bounded by `timeout` should this process die, each group in a session of
    // its own as other work on a machine is (with autogroup, CPU is shared between sessions).
    const loop = '(while :; do :; done) &';
    for (let i = 0; i < (GROUPED ? Math.min(LOAD, 1) : LOAD); i++) {
      const script = `${Array.from({ length: GROUPED ? LOAD : 1 }, () => loop).join(' ')} wait`;
      const c = spawn('timeout', [String(SECONDS + 60), 'sh', '-c', script], { detached: true, stdio: 'ignore' });
      c.unref();
      if (c.pid) loaders.push(c.pid);
    }
    if (LOAD > 0) await new Promise((r) => setTimeout(r, 5000));
    const rcvbuf = (await frrNs.run(['ss', '-uanm', 'sport', '=', ':3784'])).match(/rb(\d+)/)?.[1];
    const capFile = join(lab.dir, 'window.pcap');
    const capture = CAPTURE
      ? frrNs.spawn(['dumpcap', '-q', '-P', '-i', 'eth0', '-a', `duration:${SECONDS}`, '-f', 'udp port 3784', '-w', capFile], {
          name: 'dumpcap',
        })
      : undefined;
    // bfdd's count first (vtysh is slow on a loaded machine), then what can be read at once.
    const snapshot = async () => {
      const frr = await frrDowns();
      return {
        frrDowns: frr,
        downs: sides.map((s) => s.downs),
        cpu: sides.map((s) => cpuSeconds(s.node.pid)),
        threads: sides.map((s) => threadTimes(s.node.pid)),
        frrCpu: cpuSeconds(bfdd.pid),
        frrThreads: threadTimes(bfdd.pid),
        frrUdp: udpCounters(bfdd.pid),
        ourUdp: udpCounters(sides[0]!.node.pid),
        load: loadAverage(),
      };
    };
    const before = await snapshot();
    // Each second with a loss: bfdd's socket drops, its CPU, each side's downs.
    const seconds: string[] = [];
    let last = { drops: before.frrUdp.RcvbufErrors!, cpu: before.frrCpu, downs: before.downs };
    const w0 = performance.now();
    const tick = setInterval(() => {
      const now = { drops: udpCounters(bfdd.pid).RcvbufErrors!, cpu: cpuSeconds(bfdd.pid), downs: sides.map((s) => s.downs) };
      const downs = now.downs.map((d, i) => d - last.downs[i]!);
      if (now.drops > last.drops || downs.some((d) => d > 0)) {
        seconds.push(
          `${((performance.now() - w0) / 1000).toFixed(0)} s: bfdd dropped ${now.drops - last.drops}, ran ${((now.cpu - last.cpu) * 100).toFixed(0)} %; downs ${downs.join('/')}`,
        );
      }
      last = now;
    }, 1000);
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    clearInterval(tick);
    const wall = (performance.now() - w0) / 1000;
    const after = await snapshot();
    stopLoad(loaders);

    const pps = (N * 1000) / (INTERVAL * 0.875); // packets sent a second by each end (jitter: 75–100 %)
    const where =
      MODE === 'both'
        ? 'half on their own thread, half on the main loop, in two processes'
        : MODE === 'main'
          ? 'the main loop'
          : 'their own thread';
    console.log(
      `bfd: ${N} sessions at ${INTERVAL} ms × ${MULT} (podroute's on ${where}), all Up after ${upAfter.toFixed(1)} s; window ${wall.toFixed(1)} s, load ${before.load} → ${after.load}${LOAD > 0 ? ` with ${LOAD} busy loops${GROUPED ? ' in one session' : ', each in a session of its own'}` : ''}`,
    );
    console.log(`  each end sends ~${Math.round(pps)} packets/s and takes as many`);
    const oursCpu = after.cpu.reduce((t, c, k) => t + c - before.cpu[k]!, 0);
    const frrCpu = after.frrCpu - before.frrCpu;
    for (const [k, s] of sides.entries()) {
      const cpu = after.cpu[k]! - before.cpu[k]!;
      console.log(
        `  podroute, ${s.count} sessions on ${s.mode === 'main' ? 'the main loop' : 'their own thread'}: ${cpu.toFixed(2)} CPU s = ${((cpu / wall) * 100).toFixed(1)} % of a core, ${((cpu * 1e6) / ((wall * pps * 2 * s.count) / N)).toFixed(1)} µs a packet in or out; ${busiest(before.threads[k]!, after.threads[k]!)}`,
      );
      console.log(
        `    downs during the window: ours ${after.downs[k]! - before.downs[k]!}, bfdd's ${after.frrDowns[k]! - before.frrDowns[k]!} (ours so far by diagnostic: ${s.diags || 'none'})`,
      );
    }
    console.log(
      `  FRR bfdd: ${frrCpu.toFixed(2)} CPU s = ${((frrCpu / wall) * 100).toFixed(1)} % of a core; ${busiest(before.frrThreads, after.frrThreads)}`,
    );
    console.log(`  ratio podroute / bfdd: ${(oursCpu / Math.max(frrCpu, 0.01)).toFixed(2)}×`);
    const lost = (u: Record<string, number>, v: Record<string, number>) => (v.RcvbufErrors ?? 0) - (u.RcvbufErrors ?? 0);
    console.log(
      `  packets dropped for a full receive buffer: bfdd's socket (${rcvbuf ?? '?'} bytes) ${lost(before.frrUdp, after.frrUdp)} of ${after.frrUdp.InDatagrams! - before.frrUdp.InDatagrams! + lost(before.frrUdp, after.frrUdp)}, ours ${lost(before.ourUdp, after.ourUdp)}`,
    );
    if (seconds.length > 0) console.log(`  seconds with a loss: ${seconds.join('; ')}`);
    if (capture) {
      await capture.exited;
      // Per session and direction, the gaps between its packets as they crossed bfdd's interface.
      const frames = readPcap(readFileSync(capFile));
      const frr = ourIndex(FRR) + FIRST;
      for (const s of sides) {
        for (const outbound of [true, false]) {
          const lastAt = new Map<number, Frame>();
          const gaps: number[] = [];
          // A session that is not Up sends once a second (§6.8.3): only gaps after an Up count.
          let lateWhileUp = 0;
          for (const f of frames) {
            const peer = outbound ? f.src : f.dst;
            if ((outbound ? f.dst : f.src) !== frr || sideOf(peer) !== s) continue;
            const l = lastAt.get(peer);
            if (l !== undefined) {
              gaps.push(f.t - l.t);
              if (l.up && f.t - l.t > INTERVAL * MULT) lateWhileUp++;
            }
            lastAt.set(peer, f);
          }
          gaps.sort((x, y) => x - y);
          console.log(
            `  ${s.mode} ${outbound ? 'ours → bfdd' : 'bfdd → ours'} on the wire: ${gaps.length + lastAt.size} packets; a session's gap p50 ${quantile(gaps, 0.5).toFixed(0)}, p99.9 ${quantile(gaps, 0.999).toFixed(0)}, max ${(gaps.at(-1) ?? 0).toFixed(0)} ms; over ${(INTERVAL * 2) / 1000} s ${gaps.filter((g) => g > INTERVAL * 2).length}, over a detection time ${gaps.filter((g) => g > INTERVAL * MULT).length}, of them after an Up ${lateWhileUp}`,
          );
        }
      }
    }
  } finally {
    stopLoad(loaders);
    await lab.destroy();
  }
}

await main();
