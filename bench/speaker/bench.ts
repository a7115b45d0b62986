// One scenario against one daemon: a fresh lab (daemon namespace ↔ tester namespace over a veth
// pair), the daemon started, every tester session Established, then each phase timed.
import { loadavg } from 'node:os';
import { Lab } from '../../test/support/netns.js';
import { cpuBetween, sampleProcesses, startDaemon, type DaemonKind } from './daemons.js';
import {
  DUT_ADDRESS,
  DUT_ADDRESS6,
  LINK_PREFIX,
  LINK_PREFIX6,
  MONITOR_ADDRESS,
  MONITOR_ADDRESS6,
  topologyOf,
  type Scenario,
} from './scenarios.js';
import { TesterProcess } from './tester-process.js';
import type { PhaseInfo } from './tester.js';

export interface PhaseFigures {
  scenario: string;
  phase: string;
  measured: boolean;
  daemon: DaemonKind;
  version: string;
  /** Seconds from the first byte sent until the daemon reported every tester prefix (poll resolution). */
  receiveSec?: number;
  /** Seconds from the first byte sent until the monitor held exactly what was expected. */
  monitorSec: number;
  /** Seconds until the injector had handed every byte to the kernel. */
  sentSec: number;
  complete: boolean;
  timedOut: boolean;
  monitorHeld: number;
  expected: number;
  /** CPU seconds of the daemon's processes during the phase. */
  cpuSec: number;
  /** Of cpuSec, what the main thread of each process took (the rest: GC, JIT, I/O threads). */
  mainThreadCpuSec: number;
  rssMb: number;
  /** RSS when the phase began. */
  rssBeforeMb: number;
  peakRssMb: number;
  /** RSS growth over the phase divided by the prefixes held at its end. */
  load: [number, number];
  info: PhaseInfo;
}

export interface BenchOptions {
  /** How long the monitor may see nothing change before the phase is declared settled short. */
  stallMs?: number;
  timeoutScale?: number;
  pollMs?: number;
  log?: (line: string) => void;
  /** podroute bgpd was started with the CPU profiler (cpu-profile.mjs): ask it for the profile. */
  profile?: boolean;
}

const MB = 1024 * 1024;

export async function benchOne(scenario: Scenario, kind: DaemonKind, options: BenchOptions = {}): Promise<PhaseFigures[]> {
  const log = options.log ?? (() => undefined);
  const topo = topologyOf(scenario);
  const lab = new Lab({ tag: 'bs' });
  try {
    const dutNs = await lab.namespace('dut');
    const tstNs = await lab.namespace('tst');
    const v6 = (a: string) => (topo.ipv6 ? `${a}/${LINK_PREFIX6}` : undefined);
    await lab.link(dutNs, { ifname: 'eth0', v4: `${DUT_ADDRESS}/${LINK_PREFIX}`, v6: v6(DUT_ADDRESS6) }, tstNs, {
      ifname: 'eth0',
      v4: `10.90.0.2/${LINK_PREFIX}`,
      v6: v6('fd90::2'),
    });
    for (const a of [...topo.testers.map((t) => t.address), MONITOR_ADDRESS])
      await tstNs.ip('addr', 'add', `${a}/${LINK_PREFIX}`, 'dev', 'eth0');
    // The IPv6 next hops the testers announce must be on the daemon's link (BIRD checks).
    if (topo.ipv6)
      for (const a of [...topo.testers.map((t) => t.address6), MONITOR_ADDRESS6])
        await tstNs.ip('-6', 'addr', 'add', `${a}/${LINK_PREFIX6}`, 'dev', 'eth0', 'nodad');
    const tester = new TesterProcess(tstNs);
    const prepared = await tester.call({ op: 'prepare', scenario: scenario.name }, 'prepared', 300_000);
    log(
      `  ${kind}: phases built in ${(prepared.buildMs / 1000).toFixed(1)} s (${prepared.phases.map((p) => `${p.name}: ${p.messages} msgs, ${p.prefixes} prefixes, ${(p.octets / MB).toFixed(1)} MB`).join('; ')})`,
    );
    const dut = await startDaemon(kind, dutNs, topo);
    await tester.call({ op: 'connect' }, 'connected', 90_000);
    // Let the daemon finish what it does at session start (End-of-RIB, timers) before the clock.
    await new Promise((r) => setTimeout(r, 1000));
    const figures: PhaseFigures[] = [];
    for (let i = 0; i < prepared.phases.length; i++) {
      const info = prepared.phases[i]!;
      const before = sampleProcesses(dut.pids);
      const timeoutMs = scenario.timeoutSec * 1000 * (options.timeoutScale ?? 1);
      const ran = tester.call({ op: 'run', phase: i, stallMs: options.stallMs ?? 10_000, timeoutMs }, 'ran', timeoutMs + 30_000);
      let testerDone = false;
      void ran.then(
        () => (testerDone = true),
        () => (testerDone = true),
      );
      const started = Date.now();
      let receivedAt: number | undefined;
      if (info.dutReceived !== undefined && options.pollMs !== 0) {
        // Poll the daemon's own counters until it holds every tester prefix, or the monitor is done
        // and the daemon has had a little longer.
        let doneSince: number | undefined;
        while (receivedAt === undefined) {
          const n = await dut.received().catch(() => -1);
          if (n === info.dutReceived) receivedAt = performance.timeOrigin + performance.now();
          else if (testerDone && Date.now() - (doneSince ??= Date.now()) > 5000) break;
          else if (Date.now() - started > timeoutMs) break;
          // Finer in the first second, where the fast daemons finish.
          else
            await new Promise((r) =>
              setTimeout(r, Date.now() - started < 1000 ? Math.min(50, options.pollMs ?? 200) : (options.pollMs ?? 200)),
            );
        }
      }
      const { result } = await ran;
      const after = sampleProcesses(dut.pids);
      const cpu = cpuBetween(before, after);
      const f: PhaseFigures = {
        scenario: scenario.name,
        phase: info.name,
        measured: info.measured,
        daemon: kind,
        version: dut.version,
        receiveSec: receivedAt === undefined ? undefined : (receivedAt - result.t0) / 1000,
        monitorSec: (result.done - result.t0) / 1000,
        sentSec: (result.sent - result.t0) / 1000,
        complete: result.complete,
        timedOut: result.timedOut,
        monitorHeld: result.monitorHeld,
        expected: info.expectSize,
        cpuSec: cpu.cpu,
        mainThreadCpuSec: cpu.mainThread,
        rssMb: after.rss / MB,
        rssBeforeMb: before.rss / MB,
        peakRssMb: after.peakRss / MB,
        load: [loadavg()[0]!, loadavg()[1]!],
        info,
      };
      figures.push(f);
      if (result.sessionsDown.length > 0) log(`  ${kind} ${info.name}: sessions down: ${result.sessionsDown.join('; ')}`);
      log(
        `  ${kind} ${info.name}: monitor ${f.monitorSec.toFixed(2)} s${f.complete ? '' : ` (INCOMPLETE ${f.monitorHeld}/${f.expected}${f.timedOut ? ', timed out' : ''})`}, daemon ${f.receiveSec?.toFixed(2) ?? '-'} s, sent ${f.sentSec.toFixed(2)} s, cpu ${f.cpuSec.toFixed(3)} s (main thread ${f.mainThreadCpuSec.toFixed(3)} s), rss ${f.rssMb.toFixed(0)} MB, peak ${f.peakRssMb.toFixed(0)} MB`,
      );
      if (f.timedOut) break;
    }
    if (options.profile && kind === 'podroute') {
      for (const pid of dut.pids) process.kill(pid, 'SIGHUP');
      await new Promise((r) => setTimeout(r, 2000));
    }
    await dut.stop().catch(() => undefined);
    await tester.call({ op: 'exit' }, 'ran', 1000).catch(() => undefined);
    return figures;
  } finally {
    await lab.destroy();
  }
}
