// A lab under test in containers (`--runtime docker`): names carry our PID, state in a
// temporary folder; the host's interfaces, iptables and nftables rulesets and the engine's
// containers are read before `up` and compared after `down`.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { labDown, labUp } from '../../../lib/lab/runner.js';
import type { LabState } from '../../../lib/lab/state.js';
import { execCommand, run } from '../../../lib/lab/system.js';
import { loadTopology, type Topology } from '../../../lib/lab/topology.js';
import { acquireDocker, ensureImages, releaseDocker } from '../../support/docker.js';
import { LABS, LabQueries } from './harness.js';

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

export class ContainerLab extends LabQueries {
  readonly topo: Topology;
  readonly prefix = `lc${process.pid}-`;
  readonly stateRoot = mkdtempSync(join(tmpdir(), 'lclab-'));
  before!: HostSnapshot;

  constructor(
    file: string,
    readonly dockerHost: string,
  ) {
    super();
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

  /** The node's container: named as its namespace. */
  container(node: string): string {
    return this.ns(node);
  }

  docker(args: string[], timeoutMs = 60_000) {
    return execCommand(['docker', '-H', this.dockerHost, ...args], { timeoutMs });
  }
}
