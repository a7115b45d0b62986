// The tester process, run inside the testers' network namespace: K injector sessions and one
// monitor session towards the daemon under test, driven by the runner over Node's IPC channel.
// Injectors write pre-encoded bytes only; the monitor reads UPDATE bytes without decoding.
import { RouteMonitor } from './monitor.js';
import { DUT_ADDRESS, MONITOR_ADDRESS, scenarioByName, topologyOf, type PhasePlan } from './scenarios.js';
import { TesterSession } from './session.js';

export type TesterCommand =
  | { op: 'prepare'; scenario: string }
  | { op: 'connect' }
  | { op: 'run'; phase: number; stallMs: number; timeoutMs: number }
  | { op: 'exit' };

export interface PhaseInfo {
  name: string;
  measured: boolean;
  dutReceived?: number;
  expectSize: number;
  messages: number;
  prefixes: number;
  octets: number;
}

export interface PhaseResult {
  /** Epoch ms (performance.timeOrigin + now) when the first byte was written. */
  t0: number;
  /** Epoch ms when the kernel had taken every tester's bytes. */
  sent: number;
  /** Epoch ms when the monitor held exactly what was expected (or last changed, if it settled short). */
  done: number;
  complete: boolean;
  timedOut: boolean;
  monitorHeld: number;
  monitorMessages: number;
  /** Sessions that closed during the phase, with why (a NOTIFICATION, a reset). */
  sessionsDown: string[];
}

export type TesterReply =
  | { ev: 'prepared'; phases: PhaseInfo[]; buildMs: number }
  | { ev: 'connected' }
  | { ev: 'ran'; result: PhaseResult }
  | { ev: 'error'; message: string };

const HOLD_TIME = 90;
const epoch = (t: number) => performance.timeOrigin + t;

let phases: PhasePlan[] = [];
let injectors: TesterSession[] = [];
let monitorSession: TesterSession | undefined;
const monitor = new RouteMonitor();
let scenarioName = '';

function reply(m: TesterReply): void {
  process.send!(m);
}

async function handle(c: TesterCommand): Promise<void> {
  switch (c.op) {
    case 'prepare': {
      const start = performance.now();
      const scenario = scenarioByName(c.scenario);
      scenarioName = scenario.name;
      phases = scenario.build(topologyOf(scenario));
      reply({
        ev: 'prepared',
        buildMs: performance.now() - start,
        phases: phases.map((p) => ({
          name: p.name,
          measured: p.measured,
          dutReceived: p.dutReceived,
          expectSize: p.expect.size,
          messages: p.messages,
          prefixes: p.prefixes,
          octets: p.bytes.reduce((n, b) => n + b.length, 0),
        })),
      });
      return;
    }
    case 'connect': {
      const topo = topologyOf(scenarioByName(scenarioName));
      monitorSession = new TesterSession({
        localAddress: MONITOR_ADDRESS,
        remoteAddress: DUT_ADDRESS,
        asn: topo.monitorAs,
        routerId: MONITOR_ADDRESS,
        holdTime: HOLD_TIME,
      });
      monitorSession.onUpdate = (m) => monitor.update(m);
      injectors = topo.testers.map(
        (t) =>
          new TesterSession({ localAddress: t.address, remoteAddress: DUT_ADDRESS, asn: t.asn, routerId: t.address, holdTime: HOLD_TIME }),
      );
      await Promise.all([monitorSession, ...injectors].map((s) => s.establish()));
      reply({ ev: 'connected' });
      return;
    }
    case 'run': {
      reply({ ev: 'ran', result: await runPhase(phases[c.phase]!, c.stallMs, c.timeoutMs) });
      return;
    }
    case 'exit':
      for (const s of [monitorSession, ...injectors]) s?.close();
      process.exit(0);
  }
}

async function runPhase(p: PhasePlan, stallMs: number, timeoutMs: number): Promise<PhaseResult> {
  monitor.expect(p.expect);
  const messagesBefore = monitor.messages;
  const start = performance.now();
  monitor.lastChange = start;
  const flushed = Promise.all(injectors.map((s, i) => (p.bytes[i]!.length ? s.send(p.bytes[i]!) : Promise.resolve(start))));
  let sent = start;
  let allSent = false;
  void flushed.then((times) => {
    sent = Math.max(start, ...times);
    allSent = true;
  });
  // The monitor checks completeness on every UPDATE it reads; this loop only watches for the
  // end (complete, settled short of the expectation, or out of time).
  const result = await new Promise<{ done: number; complete: boolean; timedOut: boolean }>((resolve) => {
    const check = () => {
      const now = performance.now();
      if (monitor.complete && allSent)
        return resolve({ done: Math.max(monitor.completeAt ?? now, start), complete: true, timedOut: false });
      if (allSent && now - monitor.lastChange > stallMs && now - start > stallMs)
        return resolve({ done: monitor.lastChange, complete: false, timedOut: false });
      if (now - start > timeoutMs) return resolve({ done: now, complete: false, timedOut: true });
      setTimeout(check, 5);
    };
    check();
  });
  await Promise.race([flushed, new Promise((r) => setTimeout(r, 1000))]);
  return {
    t0: epoch(start),
    sent: epoch(sent),
    done: epoch(result.done),
    complete: result.complete,
    timedOut: result.timedOut,
    monitorHeld: monitor.size,
    monitorMessages: monitor.messages - messagesBefore,
    sessionsDown: [monitorSession, ...injectors]
      .filter((x) => x && !x.established)
      .map((x) => `${x!.config.localAddress}: ${x!.closedReason}`),
  };
}

process.on('message', (c: TesterCommand) => {
  handle(c).catch((e: Error) => reply({ ev: 'error', message: e.stack ?? e.message }));
});
process.on('disconnect', () => process.exit(0));
