// `podroute demo` (and `npm start`): builds the cluster phase by phase, shows it converging,
// and stops every agent on Ctrl-C, then exits 130 (143 on SIGTERM) as a shell and npm report
// an interrupted command. With --once it exits after the last phase converged, or with 1 and
// the reason when a phase did not within --timeout.
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePort } from '../../bgp/session/free-port.js';
import { DemoCluster, type DemoEvent } from './cluster.js';
import type { DemoOptions } from './options.js';
import { takeSnapshot, type Snapshot } from './snapshot.js';
import { Screen } from './screen.js';
import { frrNote } from './tor.js';
import { progressLine, renderView } from './view.js';

const REFLECTOR_CLUSTER_ID = '244.0.0.1';
const TOR_ADDRESS = '127.0.0.254';
const TOR_ASN = 65000;
/** Agent events worth a line in the view. */
const SHOWN_EVENTS = new Set([
  'peer-added',
  'peer-removed',
  'peer-up',
  'peer-down',
  'speaker-rebuilt',
  'pod-added',
  'pod-deleted',
  'agent-error',
]);

export interface DemoIo {
  stdout: NodeJS.WriteStream | NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

interface Phase {
  name: string;
  run: () => Promise<void>;
}

interface PhaseResult {
  phase: string;
  converged: boolean;
  /** ms from the phase's start to convergence (or to giving up). */
  ms: number;
}

/** Each node listens on its own loopback address: Linux answers for all of 127.0.0.0/8, others may not. */
function checkLoopback(address: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', (e: NodeJS.ErrnoException) =>
      reject(
        new Error(
          e.code === 'EADDRNOTAVAIL'
            ? `${address} is not a local address here: each node listens on its own 127.0.0.x, which Linux provides for all of 127.0.0.0/8 (elsewhere, add them to the loopback interface)`
            : `cannot listen on ${address}: ${e.message}`,
        ),
      ),
    );
    s.listen(0, address, () => s.close(() => resolve()));
  });
}

export async function runDemo(o: DemoOptions, io: DemoIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  let port: number;
  try {
    await checkLoopback('127.0.0.2');
    port = o.port || (await freePort());
  } catch (e) {
    io.stderr.write(`podroute demo: ${(e as Error).message}\n`);
    return 1;
  }
  const events: DemoEvent[] = [];
  const cluster = new DemoCluster({
    port,
    pool: o.pool,
    onEvent: (e) => {
      if (!SHOWN_EVENTS.has(e.event) && !e.event.endsWith('error')) return;
      events.push(e);
      if (events.length > 6) events.shift();
    },
  });
  const jsonToStdout = o.json === '-';
  const screen = new Screen(jsonToStdout ? io.stderr : io.stdout, {
    live: !jsonToStdout && (io.stdout as NodeJS.WriteStream).isTTY === true,
  });
  const notes: string[] = [];
  const results: PhaseResult[] = [];
  let phaseName = 'starting';
  let phaseStart = Date.now();
  let last: Snapshot | undefined;
  let stopping = false;
  /** 128 + the signal's number, the code a shell gives a command the signal ended. */
  let stoppedCode = 0;
  let stopRequested: () => void = () => undefined;
  const stopSignal = new Promise<'stop'>((resolve) => {
    stopRequested = () => resolve('stop');
  });
  const stopOn = (code: number) => () => {
    stopping = true;
    stoppedCode = code;
    stopRequested();
  };
  const onInt = stopOn(130);
  const onTerm = stopOn(143);
  process.once('SIGINT', onInt);
  process.once('SIGTERM', onTerm);

  const title = (nodes: number) =>
    `podroute demo: ${nodes} nodes in one process; memory datastore, in-memory dataplanes, BGP over 127.0.0.x port ${port}`;
  const header = (running = false) => ({
    title: title(cluster.nodes.size),
    phase: running ? `${phaseName}; running until Ctrl-C` : phaseName,
    elapsed: ((last?.time ?? Date.now()) - phaseStart) / 1000,
    notes,
    events: [...events],
  });
  const look = async (): Promise<Snapshot> => (last = await takeSnapshot(cluster));
  // Into a pipe the title is printed once and each phase's line as it begins, so the snapshots
  // leave out both (a terminal's redrawn view keeps them).
  const view = (s: Snapshot, h: ReturnType<typeof header>): string[] => {
    const lines = renderView(s, h, screen.width);
    return screen.live ? lines : lines.slice(2);
  };
  let drawing = false;
  const draw = async (running = false) => {
    if (drawing || stopping) return;
    drawing = true;
    try {
      const s = await look();
      if (screen.live) screen.frame(renderView(s, header(running), screen.width));
      else screen.progress(progressLine(s.progress, (s.time - phaseStart) / 1000));
    } finally {
      drawing = false;
    }
  };
  const timer = setInterval(() => void draw().catch(() => undefined), o.interval);

  /** Resolves true once converged, false on timeout, 'stop' on Ctrl-C. */
  const converge = async (): Promise<boolean | 'stop'> => {
    const deadline = Date.now() + o.timeout * 1000;
    for (;;) {
      const s = await look();
      if (s.progress.converged) return true;
      if (Date.now() > deadline) return false;
      const r = await Promise.race([stopSignal, new Promise<'tick'>((r) => setTimeout(() => r('tick'), 100))]);
      if (r === 'stop') return 'stop';
    }
  };

  const nodeCount = o.nodes;
  // One pod after another on a node, as a kubelet's CNI calls for one node usually arrive: the
  // first claims a block, the next ones fill it. (Concurrent first pods may each claim one.)
  const pods = async (node: string) => {
    for (let i = 0; i < o.podsPerNode; i++) await cluster.addPod(node, `${node.replace('node-', 'web-')}-${i}`);
  };
  const phases: Phase[] = [
    {
      name: `full mesh: ${nodeCount} nodes, each peering with every other; ${o.podsPerNode} pods per node`,
      run: async () => {
        await cluster.init();
        for (let i = 0; i < nodeCount; i++) await cluster.addNode();
        await Promise.all([...cluster.nodes.keys()].map(pods));
      },
    },
    {
      name: `route reflector: node-1 gets routeReflectorClusterID ${REFLECTOR_CLUSTER_ID}, then the node-to-node mesh is turned off`,
      run: async () => {
        await cluster.makeReflector('node-1', REFLECTOR_CLUSTER_ID);
        await cluster.setMesh(false);
      },
    },
    {
      name: `top of rack: tor (AS ${TOR_ASN}, ${TOR_ADDRESS}) peers with every node through a global BGPPeer`,
      run: async () => {
        notes.push(frrNote());
        await cluster.addTopOfRack(TOR_ADDRESS, TOR_ASN);
      },
    },
    {
      name: `live change: a pod on node-2 is deleted, node-${nodeCount + 1} joins with ${o.podsPerNode} pods`,
      run: async () => {
        await cluster.deletePod('web-2-0');
        const n = await cluster.addNode();
        await pods(n.name);
      },
    },
  ];

  let code = 0;
  // A phase interrupted by Ctrl-C may be starting an agent: it finishes (or fails) before the stop.
  let inflight: Promise<void> = Promise.resolve();
  try {
    if (!screen.live) screen.line(title(o.nodes));
    for (const [i, p] of phases.entries()) {
      phaseName = `phase ${i + 1}/${phases.length}: ${p.name}`;
      phaseStart = Date.now();
      if (!screen.live) screen.line(phaseName);
      inflight = p.run();
      const done = inflight.then(() => 'done' as const);
      // Handled here too: after a Ctrl-C nobody awaits it, and its failure must not crash the stop.
      done.catch(() => undefined);
      const run = await Promise.race([done, stopSignal]);
      if (run === 'stop') break;
      const ok = await converge();
      if (ok === 'stop') break;
      results.push({ phase: p.name, converged: ok, ms: Date.now() - phaseStart });
      if (!ok) {
        const why = `phase ${i + 1} (${p.name.split(':')[0]}) did not converge within ${o.timeout} s: ${progressLine(last!.progress, o.timeout)}`;
        if (o.once) {
          screen.final(view(last!, header()));
          io.stderr.write(`podroute demo: ${why}\n`);
          code = 1;
          break;
        }
        notes.push(why);
      }
      // With --once the last phase's view is the final one, printed below with the JSON's numbers.
      if (!screen.live && !(o.once && i === phases.length - 1)) screen.block(view(last!, header()));
    }
    if (!stopping && code === 0 && !o.once) {
      // Keep watching: the cluster runs until Ctrl-C.
      clearInterval(timer);
      const watch = setInterval(() => void draw(true).catch(() => undefined), screen.live ? o.interval : 5000);
      await stopSignal;
      clearInterval(watch);
    }
  } catch (e) {
    io.stderr.write(`podroute demo: ${(e as Error).message}\n`);
    code = 1;
  } finally {
    clearInterval(timer);
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  }
  if (o.once && last && !stopping) {
    const final = code === 0 ? await look() : last;
    if (code === 0) {
      // On a terminal too the final view is printed whole, below what was drawn in place.
      screen.final(view(final, header()));
    }
    if (o.json) {
      const doc = `${JSON.stringify({ converged: code === 0, port, phases: results, notes, ...final }, null, 2)}\n`;
      if (jsonToStdout) io.stdout.write(doc);
      else writeFileSync(o.json, doc);
    }
  }
  screen.end();
  await Promise.race([inflight.catch(() => undefined), new Promise((r) => setTimeout(r, 5000).unref())]);
  await cluster.stop();
  if (stopping) io.stderr.write(`podroute demo: stopped ${cluster.nodes.size} agents${cluster.tor ? ' and the top-of-rack' : ''}\n`);
  return stopping && code === 0 ? stoppedCode : code;
}
