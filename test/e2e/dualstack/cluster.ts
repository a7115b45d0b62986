// The cluster the dual-stack agent suites build: the cluster's Redis on a Unix socket in a lab of
// namespaces, and `podroute node run` agents in namespaces the suite has wired, each with its
// control socket in the lab's folder. close() in after(): the datastore, then the lab (the
// agents in it, by PID), then Redis; it is safe after a before() that failed half-way.
import { join } from 'node:path';
import type { BackendDatastore } from '../../../lib/datastore/public.js';
import { Lab, type Netns } from '../../support/netns.js';
import { agentReady, type AgentProcess, type AgentSpawn, clusterRedis, spawnAgent } from '../../support/node-agents.js';
import type { RedisServer } from '../../support/redis.js';

/** An agent started with an IPv6 address (or, on eth0, one to be given later). */
export type Agent6 = AgentProcess & { ip6: string };

export class AgentCluster {
  readonly lab: Lab;
  readonly agents = new Map<string, AgentProcess>();
  private redis: RedisServer | undefined;
  private store: { ds: BackendDatastore; sock: string } | undefined;

  constructor(tag: string) {
    this.lab = new Lab({ tag });
  }

  async open(): Promise<void> {
    const { redis, sock, ds } = await clusterRedis(this.lab.dir);
    this.redis = redis;
    this.store = { ds, sock };
  }

  /** The test's own datastore on the cluster's Redis. */
  get ds(): BackendDatastore {
    return this.opened().ds;
  }

  /** The Redis socket the agents and the CNI plugin are given. */
  get sock(): string {
    return this.opened().sock;
  }

  /** Starts `s.name`'s agent in `ns` (already wired); resolves once it says it is ready. */
  async startAgent(ns: Netns, s: Omit<AgentSpawn, 'datastore' | 'control'>): Promise<AgentProcess> {
    const a = spawnAgent(ns, { ...s, datastore: this.sock, control: join(this.lab.dir, `${s.name}.sock`) });
    this.agents.set(s.name, a);
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
    await this.redis?.stop();
  }

  private opened(): { ds: BackendDatastore; sock: string } {
    if (!this.store) throw new Error('the cluster is not open: call open() in before()');
    return this.store;
  }
}

/** `ip route` lines of podroute's protocol (81) in a namespace's kernel, of one family. */
export async function ourRoutes(ns: Netns, family: '-4' | '-6'): Promise<string[]> {
  return (await ns.ip(family, 'route', 'show', 'proto', '81'))
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

interface Pingable {
  name: string;
  ns: Netns;
  ip?: string;
  ip6: string;
}

/** Each pod pings each other one over each family asked for; what did not answer, and why. */
export async function pingFailures(pods: readonly Pingable[], families: readonly (4 | 6)[] = [6]): Promise<string[]> {
  const failures: string[] = [];
  for (const from of pods) {
    for (const to of pods) {
      if (from === to) continue;
      for (const family of families) {
        const address = family === 6 ? to.ip6 : to.ip;
        if (!address) throw new Error(`${to.name} has no IPv${family} address to ping`);
        const r = await from.ns.exec(['ping', `-${family}`, '-c', '1', '-W', '2', address]);
        if (r.code !== 0) failures.push(`${from.name} -> ${to.name} ${address}: ${r.stdout}${r.stderr}`);
      }
    }
  }
  return failures;
}
