// The daemons under test, each started in its own namespace from one RouterConfig with the
// harness of test/support, with what the runner needs of them: the PIDs to measure and how many
// prefixes the daemon says it has taken in from the testers.
import { readdirSync, readFileSync } from 'node:fs';
import { Bird } from '../../test/support/bird.js';
import type { Family, RouterConfig } from '../../test/support/bgp-config.js';
import { Frr } from '../../test/support/frr.js';
import { Gobgp } from '../../test/support/gobgp.js';
import type { Netns } from '../../test/support/netns.js';
import { Podroute } from '../../test/support/podroute.js';
import { DUT_ADDRESS, DUT_ADDRESS6, MONITOR_ADDRESS, type Topology } from './scenarios.js';

export const DAEMONS = ['podroute', 'bird', 'frr', 'frr-zebra', 'gobgp'] as const;
export type DaemonKind = (typeof DAEMONS)[number];

export interface DaemonUnderTest {
  kind: DaemonKind;
  version: string;
  /** Every process whose CPU and memory count (bgpd and zebra for FRR). */
  pids: number[];
  /** Prefixes the daemon holds from the testers (Adj-RIB-In, after import), summed. */
  received(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Node flags for `podroute bgpd` (--bgpd-node-options, --profile, --alloc-profile). None by default: Node 20's
 * default heap limit here (4,144 MB) holds 10×100k with room to spare (the peak is ~400 MB),
 * so bgpd is measured as it ships.
 */
export const podrouteNodeOptions: string[] = [];

/** The families every session carries: IPv6 rides the IPv4 sessions, as on a dual-stack Calico node's. */
function familiesOf(topo: Topology): Family[] {
  return topo.ipv6 ? ['ipv4', 'ipv6'] : ['ipv4'];
}

export function routerConfig(topo: Topology): RouterConfig {
  // Long timers: a daemon busy with a million routes must not drop a session over a late keepalive.
  const timers = { holdTime: 90, keepaliveTime: 30, passive: true };
  const session = { ...timers, families: familiesOf(topo) };
  return {
    routerId: DUT_ADDRESS,
    asn: topo.dutAs,
    peers: [
      ...topo.testers.map((t) => ({ address: t.address, remoteAs: t.asn, ...session })),
      { address: MONITOR_ADDRESS, remoteAs: topo.monitorAs, ...session },
    ],
    nextHopV6: topo.ipv6 ? DUT_ADDRESS6 : undefined,
  };
}

const versions: Record<string, string> = {};
async function versionOf(ns: Netns, kind: DaemonKind): Promise<string> {
  const argv = {
    podroute: ['node', '--version'],
    bird: ['bird', '--version'],
    frr: ['/usr/lib/frr/bgpd', '--version'],
    'frr-zebra': ['/usr/lib/frr/bgpd', '--version'],
    gobgp: ['gobgpd', '--version'],
  }[kind];
  if (versions[kind]) return versions[kind]!;
  const r = await ns.exec(argv);
  const text = `${r.stdout}${r.stderr}`.split('\n')[0]!.trim();
  versions[kind] = kind === 'podroute' ? `podroute (Node ${text})` : text;
  return versions[kind]!;
}

export async function startDaemon(kind: DaemonKind, ns: Netns, topo: Topology): Promise<DaemonUnderTest> {
  const config = routerConfig(topo);
  const testers = new Set(topo.testers.map((t) => t.address));
  const version = await versionOf(ns, kind);
  switch (kind) {
    case 'podroute': {
      const d = await Podroute.start(ns, config, { peerDefaults: { gracefulRestart: false }, nodeArgs: podrouteNodeOptions });
      return {
        kind,
        version,
        pids: [d.process.pid],
        received: async () => (await d.status()).peers.filter((p) => testers.has(p.address)).reduce((n, p) => n + p.prefixesReceived, 0),
        stop: () => d.stop('benchmark over'),
      };
    }
    case 'bird': {
      const d = await Bird.start(ns, config, { kernel: false });
      return {
        kind,
        version,
        pids: [d.process.pid],
        received: async () => {
          let n = 0;
          for (const p of await d.protocols()) {
            if (!p.neighborAddress || !testers.has(p.neighborAddress)) continue;
            for (const line of p.details) {
              const m = /^Routes:\s+(\d+) imported/.exec(line);
              if (m) n += Number(m[1]);
            }
          }
          return n;
        },
        stop: () => d.stop(),
      };
    }
    case 'frr':
    case 'frr-zebra': {
      const d = await Frr.start(ns, config, { zebra: kind === 'frr-zebra' });
      return {
        kind,
        version: kind === 'frr' ? `${version} (bgpd -Z)` : `${version} (bgpd + zebra)`,
        pids: d.processes.map((p) => p.pid),
        received: async () => {
          let n = 0;
          for (const family of familiesOf(topo))
            for (const [address, p] of Object.entries((await d.summary(family)).peers ?? {})) if (testers.has(address)) n += p.pfxRcd ?? 0;
          return n;
        },
        stop: () => d.stop(),
      };
    }
    case 'gobgp': {
      const d = await Gobgp.start(ns, config);
      return {
        kind,
        version,
        pids: [d.process.pid],
        received: async () => {
          let n = 0;
          for (const nb of (await d.neighbors()) as unknown as GobgpNeighborJson[]) {
            if (!testers.has(nb.conf?.neighbor_address ?? '')) continue;
            for (const af of nb.afi_safis ?? []) n += af.state?.accepted ?? af.state?.received ?? 0;
          }
          return n;
        },
        stop: () => d.stop(),
      };
    }
  }
}

interface GobgpNeighborJson {
  conf?: { neighbor_address?: string };
  afi_safis?: { state?: { received?: number; accepted?: number } }[];
}

/**
 * Resident and peak resident set (VmRSS, VmHWM) in octets, and CPU seconds: of the whole
 * process, and of its main thread alone (a Node daemon's GC and JIT threads, or FRR's I/O
 * threads, are the difference).
 *
 * CPU is the scheduler's own count per thread (/proc/<pid>/task/<tid>/schedstat, in ns), not
 * the user and system ticks of /proc/<pid>/stat: those are 10 ms samples, and a `calico` phase
 * is a few of them. A thread that ends within a phase takes its time since the phase began
 * with it (none of the daemons here does; /proc/<pid>/stat's ticks stay the fallback).
 */
export interface ProcessSample {
  rss: number;
  peakRss: number;
  /** CPU seconds of each thread, by "pid/tid". */
  threads: Map<string, number>;
  /** The main threads' keys. */
  mainThreads: Set<string>;
}

const TICKS = 100; // USER_HZ on Linux

function ticksCpu(statFile: string): number {
  const stat = readFileSync(statFile, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

function threadCpu(pid: number, tid: string): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e9;
  } catch {
    return ticksCpu(`/proc/${pid}/task/${tid}/stat`);
  }
}

export function sampleProcesses(pids: readonly number[]): ProcessSample {
  const s: ProcessSample = { rss: 0, peakRss: 0, threads: new Map(), mainThreads: new Set() };
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      s.rss += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
      s.peakRss += Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        try {
          s.threads.set(`${pid}/${tid}`, threadCpu(pid, tid));
        } catch {
          /* the thread ended meanwhile */
        }
      }
      s.mainThreads.add(`${pid}/${pid}`);
    } catch {
      /* exited: counts nothing */
    }
  }
  return s;
}

/** CPU seconds between two samples: all threads, and the main threads alone. */
export function cpuBetween(before: ProcessSample, after: ProcessSample): { cpu: number; mainThread: number } {
  let cpu = 0;
  let mainThread = 0;
  for (const [t, sec] of after.threads) {
    const d = sec - (before.threads.get(t) ?? 0);
    cpu += d;
    if (after.mainThreads.has(t)) mainThread += d;
  }
  return { cpu, mainThread };
}
