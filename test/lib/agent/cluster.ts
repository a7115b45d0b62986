// An in-process cluster for agent tests: agents on 127.0.0.x (one BGP port, each listening
// on its own address), one memory or Redis datastore, in-memory dataplanes. The dataplane is
// the in-memory one here because these tests need no root; the kernel path is covered by the
// namespace tests.
import { MemoryDataplane } from '../../../felix/index.js';
import { NodeAgent, type NodeAgentOptions } from '../../../lib/agent/index.js';
import type { BackendDatastore } from '../../../lib/datastore/index.js';

export class TestCluster {
  readonly agents = new Map<string, NodeAgent>();
  readonly dataplanes = new Map<string, MemoryDataplane>();
  constructor(
    readonly ds: BackendDatastore,
    readonly port: number,
  ) {}

  async add(name: string, index: number, extra: Partial<NodeAgentOptions> = {}, dataplane?: MemoryDataplane): Promise<NodeAgent> {
    const dp = dataplane ?? new MemoryDataplane({ links: ['lo'] });
    const agent = new NodeAgent({
      nodeName: name,
      datastore: this.ds,
      dataplane: dp,
      ipv4Address: `127.0.0.${index}/8`,
      uplink: 'lo',
      bgpPort: this.port,
      holdTime: 9,
      connectRetryTime: 1,
      felix: { resyncIntervalMs: 0, sysctls: false },
      ...extra,
    });
    this.agents.set(name, agent);
    this.dataplanes.set(name, dp);
    await agent.start();
    return agent;
  }

  async remove(name: string): Promise<void> {
    await this.agents.get(name)?.stop();
    this.agents.delete(name);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.agents.values()].map((a) => a.stop()));
    this.agents.clear();
  }

  /** Routes programmed on a node's dataplane, as `ip route` text, sorted. */
  routes(name: string): string[] {
    return [...this.dataplanes.get(name)!.routes.values()]
      .map((r) => {
        if (r.type === 'blackhole') return `blackhole ${r.dst}`;
        return `${r.dst} ${r.nextHops.map((h) => `${h.gateway ? `via ${h.gateway} ` : ''}dev ${h.dev}`).join(' ')}`;
      })
      .sort();
  }
}
