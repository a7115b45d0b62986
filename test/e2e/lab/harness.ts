// A lab under test: brought up through the runner with namespaces named with our prefix and
// PID, state in a temporary folder, and checked to leave nothing behind when it comes down.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { redisDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { birdSessions } from '../../../lib/lab/bird.js';
import { podAdd } from '../../../lib/lab/pods.js';
import { labDown, labUp, vtysh } from '../../../lib/lab/runner.js';
import type { LabPod, LabState } from '../../../lib/lab/state.js';
import { agentSessions, frrSessions, type BgpSession } from '../../../lib/lab/status.js';
import { execCommand, isOurs, run } from '../../../lib/lab/system.js';
import { loadTopology, type Topology } from '../../../lib/lab/topology.js';
import { waitFor } from '../../support/wait.js';

export const LABS = join(fileURLToPath(import.meta.url), '../../../../containerlab');
export const ROOT = join(LABS, '..');

async function hostLinks(): Promise<string[]> {
  return (await run(['ip', '-o', 'link', 'show']))
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(':')[1]!.trim().split('@')[0]!)
    .sort();
}

/**
 * What a test asks of a lab, on either runtime: a node's network namespace is named
 * `<prefix><node>` in both (a container's is linked under that name), so the same queries serve.
 */
export abstract class LabQueries {
  abstract readonly topo: Topology;
  abstract readonly prefix: string;
  state!: LabState;

  ns(node: string): string {
    return `${this.prefix}${node}`;
  }

  podExec(pod: LabPod, argv: string[], timeoutMs?: number) {
    return execCommand(['ip', 'netns', 'exec', pod.namespace, ...argv], { timeoutMs });
  }

  pod(node: string, name: string): Promise<LabPod> {
    return podAdd(this.state, node, name);
  }

  async sessions(node: string): Promise<BgpSession[]> {
    const role = this.topo.nodes.find((n) => n.name === node)!.role;
    return role === 'frr'
      ? frrSessions(this.state, node)
      : role === 'bird'
        ? birdSessions(this.state, node)
        : agentSessions(this.state, node);
  }

  /** Waits until every named node has exactly `count` sessions, all Established. */
  async waitSessions(nodes: string[], count: number, timeoutMs = 45_000): Promise<void> {
    await waitFor(() => Promise.all(nodes.map((n) => this.sessions(n))), {
      what: `${nodes.join(',')}: ${count} Established sessions each`,
      until: (all) => all.every((s) => s.length === count && s.every((x) => x.state === 'Established')),
      timeoutMs,
      intervalMs: 250,
    });
  }

  /** Prefixes in an FRR node's BGP RIB (vtysh in its namespace or its container). */
  async frrRib(node: string): Promise<string[]> {
    const r = JSON.parse(await vtysh(this.state, node, 'show ip bgp json')) as { routes?: Record<string, unknown> };
    return Object.keys(r.routes ?? {}).sort();
  }

  /** Every node's affine blocks, from the lab's datastore. */
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
    return (await run(['ip', '-n', this.ns(node), '-4', 'route', 'show']))
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
  }

  /** One ping from every pod to every other pod; the pairs that failed. */
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

  /** Waits (bounded) until every pod reaches every other pod. */
  async waitAllPing(timeoutMs = 30_000): Promise<void> {
    await waitFor(() => this.pingFailures(), {
      what: 'every pod pings every other pod',
      until: (f) => f.length === 0,
      timeoutMs,
      intervalMs: 500,
    });
  }
}

export class LabUnderTest extends LabQueries {
  readonly topo: Topology;
  readonly prefix = `lb${process.pid}-`;
  readonly stateRoot = mkdtempSync(join(tmpdir(), 'lblab-'));
  private linksBefore: string[] = [];

  constructor(file: string) {
    super();
    this.topo = loadTopology(join(LABS, file));
  }

  async up(): Promise<LabState> {
    if (this.linksBefore.length === 0) this.linksBefore = await hostLinks();
    this.state = await labUp(this.topo, { stateRoot: this.stateRoot, prefix: this.prefix });
    return this.state;
  }

  /** Takes the lab down and checks that no namespace, process or host interface of it remains. */
  async downAndCheck(): Promise<void> {
    const recorded = this.state?.processes ?? [];
    await labDown(this.topo.name, { stateRoot: this.stateRoot });
    const left = (await run(['ip', 'netns', 'list'])).split('\n').filter((l) => l.startsWith(this.prefix));
    rmSync(this.stateRoot, { recursive: true, force: true });
    assert.deepEqual(left, [], 'namespaces left behind');
    assert.deepEqual(
      recorded.filter((p) => isOurs(p)).map((p) => `${p.node}/${p.what}:${p.pid}`),
      [],
      'processes left behind',
    );
    if (this.linksBefore.length) {
      const now = await hostLinks();
      assert.deepEqual(
        now.filter((l) => !this.linksBefore.includes(l)),
        [],
        'host interfaces left behind',
      );
    }
  }

  exec(node: string, argv: string[]) {
    return execCommand(['ip', 'netns', 'exec', this.ns(node), ...argv]);
  }
}
