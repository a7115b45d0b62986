// A lab under test in containers (`--runtime docker`): names carry our PID, state in a
// temporary folder; the host's interfaces, iptables and nftables rulesets and the engine's
// containers are read before `up` and compared after `down`.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisDatastore } from '../../lib/datastore/public.js';
import { Ipam } from '../../lib/ipam/index.js';
import { podAdd } from '../../lib/lab/pods.js';
import { labDown, labUp, vtysh } from '../../lib/lab/runner.js';
import type { LabPod, LabState } from '../../lib/lab/state.js';
import { agentSessions, frrSessions, type BgpSession } from '../../lib/lab/status.js';
import { execCommand, run } from '../../lib/lab/system.js';
import { loadTopology, type Topology } from '../../lib/lab/topology.js';
import { acquireDocker, ensureImages, releaseDocker } from '../support/docker.js';
import { waitFor } from '../support/wait.js';
import { LABS } from './harness.js';

let engine: Promise<{ host: string } | string> | undefined;
let held = false;

async function startEngine(): Promise<{ host: string } | string> {
  const given = process.env.PODROUTE_TEST_DOCKER_HOST;
  if (given) return { host: given };
  const got = await acquireDocker();
  if (!got.docker) return `no container engine can start here: ${got.reason}`;
  held = true;
  // An engine that runs but cannot build the images is a failure, not a skip.
  await ensureImages(got.docker);
  return { host: got.docker.host };
}

/**
 * The engine the container labs run on, with the lab images built in it, or why there is none
 * (the tests then skip, saying it): one for every suite of the run, given back after the last.
 * PODROUTE_TEST_DOCKER_HOST names an engine already running (images built by
 * containerlab/build-images.sh); otherwise a private one is started.
 */
export function labEngine(): Promise<{ host: string } | string> {
  engine ??= startEngine();
  return engine;
}

after(async () => {
  if (!held) return;
  held = false;
  engine = undefined;
  await releaseDocker();
});

export interface HostSnapshot {
  links: string[];
  iptables: string;
  ip6tables: string;
  nft: string;
  containers: string[];
}

const strip = (rules: string) =>
  rules
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .map((l) => l.replace(/\[\d+:\d+\]/g, ''))
    .join('\n');

/** What a lab could leave behind in the host and the engine. */
export async function hostSnapshot(dockerHost: string): Promise<HostSnapshot> {
  const links = (await run(['ip', '-o', 'link', 'show']))
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(':')[1]!.trim().split('@')[0]!)
    .sort();
  return {
    links,
    iptables: strip(await run(['iptables-save'])),
    ip6tables: strip(await run(['ip6tables-save'])),
    nft: await run(['nft', 'list', 'ruleset']),
    containers: (await run(['docker', '-H', dockerHost, 'ps', '-a', '--format', '{{.ID}} {{.Names}}'])).split('\n').filter(Boolean).sort(),
  };
}

export class ContainerLab {
  readonly topo: Topology;
  readonly prefix = `lc${process.pid}-`;
  readonly stateRoot = mkdtempSync(join(tmpdir(), 'lclab-'));
  state!: LabState;
  before!: HostSnapshot;

  constructor(
    file: string,
    readonly dockerHost: string,
  ) {
    this.topo = loadTopology(join(LABS, file));
  }

  async up(): Promise<LabState> {
    this.before ??= await hostSnapshot(this.dockerHost);
    this.state = await labUp(this.topo, { stateRoot: this.stateRoot, prefix: this.prefix, runtime: 'docker', dockerHost: this.dockerHost });
    return this.state;
  }

  /** Takes the lab down (again: idempotent) and checks the host and the engine are as they were. */
  async downAndCheck(): Promise<void> {
    await labDown(this.topo.name, { stateRoot: this.stateRoot });
    rmSync(this.stateRoot, { recursive: true, force: true });
    if (!this.before) return;
    const after = await hostSnapshot(this.dockerHost);
    const netns = (await run(['ip', 'netns', 'list'])).split('\n').filter((l) => l.startsWith(this.prefix));
    assert.deepEqual(netns, [], 'namespaces left behind');
    assert.deepEqual(
      after.links.filter((l) => !this.before.links.includes(l)),
      [],
      'host interfaces left behind',
    );
    assert.deepEqual(after.containers, this.before.containers, 'containers left behind');
    assert.equal(after.iptables, this.before.iptables, 'iptables changed');
    assert.equal(after.ip6tables, this.before.ip6tables, 'ip6tables changed');
    assert.equal(after.nft, this.before.nft, 'nftables changed');
  }

  container(node: string): string {
    return `${this.prefix}${node}`;
  }

  docker(args: string[], timeoutMs = 60_000) {
    return execCommand(['docker', '-H', this.dockerHost, ...args], { timeoutMs });
  }

  podExec(pod: LabPod, argv: string[], timeoutMs?: number) {
    return execCommand(['ip', 'netns', 'exec', pod.namespace, ...argv], { timeoutMs });
  }

  pod(node: string, name: string): Promise<LabPod> {
    return podAdd(this.state, node, name);
  }

  async sessions(node: string): Promise<BgpSession[]> {
    const frr = this.topo.nodes.find((n) => n.name === node)!.role === 'frr';
    return frr ? frrSessions(this.state, node) : agentSessions(this.state, node);
  }

  async waitSessions(nodes: string[], count: number, timeoutMs = 45_000): Promise<void> {
    await waitFor(() => Promise.all(nodes.map((n) => this.sessions(n))), {
      what: `${nodes.join(',')}: ${count} Established sessions each`,
      until: (all) => all.every((s) => s.length === count && s.every((x) => x.state === 'Established')),
      timeoutMs,
      intervalMs: 500,
    });
  }

  /** Prefixes in an FRR node's BGP RIB, read with vtysh inside its container. */
  async frrRib(node: string): Promise<string[]> {
    const r = JSON.parse(await vtysh(this.state, node, 'show ip bgp json')) as { routes?: Record<string, unknown> };
    return Object.keys(r.routes ?? {}).sort();
  }

  async blocks(nodes: string[]): Promise<Record<string, string[]>> {
    const ds = await redisDatastore({ url: this.state.redisSocket! });
    try {
      const ipam = new Ipam(ds);
      return Object.fromEntries(
        await Promise.all(nodes.map(async (n) => [n, (await ipam.blocksForNode(n)).map((b) => b.cidr).sort()] as const)),
      );
    } finally {
      await ds.close();
    }
  }

  async kernelRoutes(node: string): Promise<string[]> {
    return (await run(['ip', '-n', this.container(node), '-4', 'route', 'show']))
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
  }

  async pingFailures(): Promise<string[]> {
    const pods = this.state.pods;
    const failed: string[] = [];
    await Promise.all(
      pods.map(async (from) => {
        for (const to of pods) {
          if (to === from) continue;
          const r = await this.podExec(from, ['ping', '-c', '1', '-W', '1', to.ip!]);
          if (r.code !== 0) failed.push(`${from.name}(${from.node}) -> ${to.name}(${to.node}) ${to.ip}`);
        }
      }),
    );
    return failed.sort();
  }

  async waitAllPing(timeoutMs = 30_000): Promise<void> {
    await waitFor(() => this.pingFailures(), {
      what: 'every pod pings every other pod',
      until: (f) => f.length === 0,
      timeoutMs,
      intervalMs: 500,
    });
  }
}
