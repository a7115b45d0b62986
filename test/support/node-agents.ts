// `podroute node run` as a real process in a namespace, the way the end-to-end suites start
// agents: the flags a lab wants (short hold time, quick retries, no default pool), its status
// through its control socket, and a dead agent that says why instead of a refused socket.
// AgentCluster holds what such a suite starts (lab, Redis, agents) and takes it all down in one
// after(); a suite wires its namespaces itself and starts its agents through it.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentStatus } from '../../lib/agent/index.js';
import { callControl } from '../../lib/bgpd/control.js';
import { API_VERSION, type IPPoolSpec, type Resource } from '../../lib/resources/index.js';
import { redisDatastore, type BackendDatastore } from '../../lib/datastore/index.js';
import { assertDistCurrent } from './dist.js';
import type { ManagedProcess } from './process.js';
import { Lab, type Netns } from './netns.js';
import { startRedis, type RedisServer } from './redis.js';
import { waitFor } from './wait.js';
import { cidrAddress } from '../../ip/index.js';

export const ROOT = join(fileURLToPath(import.meta.url), '../../..');
export const PODROUTE = join(ROOT, 'bin/podroute.js');

export interface AgentProcess {
  name: string;
  ns: Netns;
  /** The node's IPv4 address, without its length (`none` on an IPv6-only node). */
  ip: string;
  /** The node's IPv6 address, without its length, when it was given one. */
  ip6?: string;
  control: string;
  proc: ManagedProcess;
}

/** A lab node's agent as spawnAgent starts it (no CNI socket, this Node.js). */
export type AgentSpawn = Omit<NodeRunArgs, 'cniSocket' | 'node'>;

/** One lab node's `podroute node run`, as the suites and the benchmarks start it. */
export interface NodeRunArgs {
  name: string;
  /** IPv4 address with its length, or `none` for an IPv6-only node. */
  ip: string;
  /** IPv6 address with its length (`--ip6`). */
  ip6?: string;
  /** `--router-id`: without it an IPv6-only node takes a hash of its name. */
  routerId?: string;
  /** Where the cluster's state is (a Redis socket or URL). */
  datastore: string;
  control: string;
  /** `--cni-socket`. Default off: agents run as root would all claim /run/podroute/cni.sock. */
  cniSocket?: string;
  /** The podroute tree to run (default this checkout). */
  root?: string;
  /** The Node.js command and its own options. Default `node`. */
  node?: readonly string[];
  /** Flags after the lab's defaults (a later flag wins). */
  flags?: readonly string[];
}

/**
 * The argv of a lab node's agent: uplink eth0, no health port, quick reconnects, no default
 * pool (the lab writes its own), then the caller's flags.
 */
export function nodeRunArgv(a: NodeRunArgs): string[] {
  return [
    ...(a.node ?? ['node']),
    join(a.root ?? ROOT, 'bin/podroute.js'),
    'node',
    'run',
    '--name',
    a.name,
    '--ip',
    a.ip,
    ...(a.ip6 ? ['--ip6', a.ip6] : []),
    ...(a.routerId ? ['--router-id', a.routerId] : []),
    '--datastore',
    a.datastore,
    '--control',
    a.control,
    '--uplink',
    'eth0',
    '--health-port',
    '0',
    '--connect-retry',
    '1',
    '--default-pool',
    'none',
    '--cni-socket',
    a.cniSocket ?? 'off',
    ...(a.flags ?? []),
  ];
}

export function spawnAgent(ns: Netns, s: AgentSpawn): AgentProcess {
  const root = s.root ?? ROOT;
  assertDistCurrent();
  // A short hold time: the suites watch sessions fail over.
  const argv = nodeRunArgv({ ...s, flags: ['--hold-time', '9', ...(s.flags ?? [])] });
  const proc = ns.spawn(argv, { name: `agent-${Date.now()}`, cwd: root });
  const ip6 = s.ip6 ? { ip6: cidrAddress(s.ip6) } : {};
  // `--ip none` (an IPv6-only node) has no IPv4 address to read.
  return { name: s.name, ns, ip: s.ip === 'none' ? s.ip : cidrAddress(s.ip), ...ip6, control: s.control, proc };
}

export function agentStatus(a: Pick<AgentProcess, 'name' | 'control' | 'proc'>): Promise<AgentStatus> {
  if (!a.proc.running) throw new Error(`agent ${a.name} exited (${a.proc.logFile}): ${a.proc.tail()}`);
  return callControl<AgentStatus>(a.control, 'GET', '/status');
}

/** Waits until the agent says it is ready; throws at once if it exits. */
export async function agentReady(a: Pick<AgentProcess, 'name' | 'control' | 'proc'>, timeoutMs = 40_000): Promise<AgentStatus> {
  return (await waitFor(async () => agentStatus(a).catch((e: Error) => (a.proc.running ? undefined : Promise.reject(e))), {
    what: `agent ${a.name} ready`,
    until: (s) => s?.ready === true,
    timeoutMs,
    intervalMs: 200,
  })) as AgentStatus;
}

/** A CNI network configuration for a pod on `node`, with the cluster's Redis. */
export function podNetconf(node: string, redis: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    type: 'podroute-cni',
    nodename: node,
    datastore: { type: 'redis', url: redis },
    ...extra,
  });
}

/**
 * The cluster's Redis for agents in namespaces: on a Unix socket in `dir`, which every namespace
 * reaches (the agents get `sock` as their datastore), and the test's own datastore on it.
 */
export async function clusterRedis(
  dir: string,
  options: { persist?: boolean } = {},
): Promise<{ redis: RedisServer; sock: string; ds: BackendDatastore }> {
  const sock = join(dir, 'redis.sock');
  const redis = await startRedis({ persist: options.persist, args: ['--unixsocket', sock, '--unixsocketperm', '777'] });
  return { redis, sock, ds: await redisDatastore({ url: sock }) };
}

/**
 * A suite's cluster: a lab of namespaces, the cluster's Redis on a Unix socket in the lab's
 * folder, and the agents started in it, each with its control socket there. open() in before(),
 * close() in after(): the datastore, then the lab (the agents in it, by PID), then Redis; safe
 * after a before() that failed half-way.
 */
export class AgentCluster {
  readonly lab: Lab;
  readonly agents = new Map<string, AgentProcess>();
  private store: { redis: RedisServer; ds: BackendDatastore; sock: string } | undefined;

  constructor(tag: string) {
    this.lab = new Lab({ tag });
  }

  /** Starts the cluster's Redis; `persist` fsyncs every write, so a SIGKILL loses nothing acknowledged. */
  async open(options: { persist?: boolean } = {}): Promise<void> {
    this.store = await clusterRedis(this.lab.dir, options);
  }

  /** The test's own datastore on the cluster's Redis. */
  get ds(): BackendDatastore {
    return this.opened().ds;
  }

  /** The Redis socket the agents and the CNI plugin are given. */
  get sock(): string {
    return this.opened().sock;
  }

  get redis(): RedisServer {
    return this.opened().redis;
  }

  /** Spawns `s.name`'s agent in `ns` (already wired) without waiting for it. */
  spawnAgent(ns: Netns, s: Omit<AgentSpawn, 'datastore' | 'control'>): AgentProcess {
    const a = spawnAgent(ns, { ...s, datastore: this.sock, control: join(this.lab.dir, `${s.name}.sock`) });
    this.agents.set(s.name, a);
    return a;
  }

  /** Starts `s.name`'s agent in `ns` (already wired); resolves once it says it is ready. */
  async startAgent(ns: Netns, s: Omit<AgentSpawn, 'datastore' | 'control'>): Promise<AgentProcess> {
    const a = this.spawnAgent(ns, s);
    await agentReady(a, 60_000);
    return a;
  }

  agent(name: string): AgentProcess {
    const a = this.agents.get(name);
    if (!a) throw new Error(`no agent ${name} in this cluster`);
    return a;
  }

  async close(): Promise<void> {
    await this.store?.ds.close();
    await this.lab.destroy();
    await this.store?.redis.stop();
  }

  private opened(): { redis: RedisServer; ds: BackendDatastore; sock: string } {
    if (!this.store) throw new Error('the cluster is not open: call open() in before()');
    return this.store;
  }
}

/** An IPPool as the agent suites write them: /26 blocks, no encapsulation unless `spec` says. */
export function ipPool(name: string, cidr: string, spec: Partial<IPPoolSpec> = {}): Resource {
  return {
    apiVersion: API_VERSION,
    kind: 'IPPool',
    metadata: { name },
    spec: { cidr, blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never', ...spec },
  };
}
