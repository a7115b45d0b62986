// The agent's Prometheus metrics: peers by state, routes learned and programmed, how long a
// BGP change takes to reach the dataplane, datastore and programming errors.
import type { ApplyReport } from '../../felix/index.js';
import { Registry, type Counter, type Histogram } from './metrics.js';
import type { NodeAgent } from './agent.js';

const STATES = ['Idle', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Established'];

export class AgentMetrics {
  readonly registry = new Registry();
  readonly datastoreErrors: Counter;
  readonly programmingFailures: Counter;
  readonly programmingLatency: Histogram;
  private changedAt: number | undefined;

  constructor(agent: NodeAgent) {
    const r = this.registry;
    r.gauge('podroute_bgp_peers', 'BGP peers of this node by session state', () => {
      const peers = agent.status().peers;
      return STATES.map((state) => ({ labels: { state }, value: peers.filter((p) => p.state === state).length }));
    });
    r.gauge('podroute_bgp_routes_learned', 'Prefixes learned over BGP and handed to felix', () => [
      { value: agent.status().routes.learned },
    ]);
    r.gauge('podroute_bgp_routes_advertised', 'Prefixes this node announces, by kind', () => {
      const a = agent.status().advertised;
      return [
        { labels: { kind: 'block' }, value: a.blocks.length },
        { labels: { kind: 'borrowed' }, value: a.borrowed.length },
        { labels: { kind: 'service' }, value: a.services.length },
        { labels: { kind: 'service-address' }, value: a.serviceAddresses.length },
      ];
    });
    r.gauge('podroute_routes_programmed', 'Routes felix holds in the dataplane (desired minus failed)', () => [
      { value: agent.status().routes.programmed },
    ]);
    r.gauge('podroute_routes_unresolved', 'Learned and static routes not programmed: none of their next hops is usable', () => [
      { value: agent.felix.unresolved.size },
    ]);
    r.gauge('podroute_ready', '1 when the datastore is synced and felix has done its first resync', () => [{ value: agent.ready ? 1 : 0 }]);
    this.programmingLatency = r.histogram(
      'podroute_programming_latency_seconds',
      'Time from a best-path change to the end of the dataplane apply that includes it',
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    );
    this.datastoreErrors = r.counter('podroute_datastore_errors_total', 'Datastore calls or watch reads that failed');
    this.programmingFailures = r.counter('podroute_programming_failures_total', 'Dataplane writes that failed (retried with backoff)');
  }

  markRoutesChanged(): void {
    this.changedAt ??= performance.now();
  }

  onReport(r: ApplyReport): void {
    if (r.failures.length) this.programmingFailures.inc(undefined, r.failures.length);
    if (this.changedAt !== undefined) {
      this.programmingLatency.observe((performance.now() - this.changedAt) / 1000);
      this.changedAt = undefined;
    }
  }

  render(): string {
    return this.registry.render();
  }
}
