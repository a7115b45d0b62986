// Flow records for the web page's tests, and a provider the test feeds: the records it keeps
// (the list form), and a live feed to every follower until its signal aborts, each filtered by
// its query as a real provider would.
import type { FlowProvider, FlowQuery, FlowRecord } from '../../../../lib/agent/web/flows.js';

export const record = (n: number, over: Partial<FlowRecord> = {}): FlowRecord => ({
  time: new Date(Date.UTC(2026, 0, 2, 3, 4, n)).toISOString(),
  node: 'w1',
  proto: 'tcp',
  src: { ip: `10.65.0.${n}`, port: 40000, namespace: 'shop', pod: `web-${n}`, labels: {} },
  dst: { ip: '10.65.1.1', port: 80, namespace: 'shop', pod: 'api-0' },
  verdict: 'allow',
  policy: null,
  staged: null,
  bytes: n,
  packets: 1,
  count: 1,
  start: new Date(Date.UTC(2026, 0, 2, 3, 4, n)).toISOString(),
  end: null,
  ...over,
});

/** A provider fed by the test: what it keeps, and a live feed each follower gets. */
export class FedFlows {
  readonly kept: FlowRecord[] = [];
  readonly queries: FlowQuery[] = [];
  readonly aborted: FlowQuery[] = [];
  private readonly followers = new Set<(r: FlowRecord) => void>();

  get open(): number {
    return this.followers.size;
  }

  push(r: FlowRecord): void {
    for (const f of this.followers) f(r);
  }

  readonly provider: FlowProvider = (query, signal) => {
    this.queries.push(query);
    const matches = (r: FlowRecord) =>
      (!query.namespace || r.src.namespace === query.namespace || r.dst.namespace === query.namespace) &&
      (!query.verdict || r.verdict === query.verdict);
    if (!query.follow)
      return (async function* (kept: FlowRecord[]) {
        yield* kept.filter(matches);
      })(this.kept);
    const self = this;
    return (async function* () {
      const queue: FlowRecord[] = [];
      let wake: (() => void) | undefined;
      const take = (r: FlowRecord) => {
        if (matches(r)) queue.push(r);
        wake?.();
      };
      self.followers.add(take);
      signal.addEventListener('abort', () => wake?.());
      try {
        while (!signal.aborted) {
          if (queue.length) yield queue.shift()!;
          else await new Promise<void>((resolve) => (wake = resolve));
        }
      } finally {
        self.followers.delete(take);
        self.aborted.push(query);
      }
    })();
  };
}
