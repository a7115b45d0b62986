// Flow records as the control socket serves them, and their aggregation per node over a window
// (Calico's flowLogsFileAggregationKind levels), kept in a bounded ring: a flood of distinct
// flows fills a window's table up to its limit and is then counted, not stored.

/** One end of a flow: a pod (namespace, name, labels) or just an address. Fields aggregated away are absent. */
export interface FlowEnd {
  ip?: string;
  port?: number;
  namespace?: string;
  /** The pod's name; aggregated by replica set: its prefix and `*` (`web-7d4f9-*`). */
  pod?: string;
  labels?: Record<string, string>;
  /** Destination only, when it was a Service's address: `namespace/name` and its port. */
  service?: string;
  servicePort?: number;
}

export interface FlowPolicy {
  tier: string;
  name: string;
  rule: string;
}

export interface FlowRecord {
  /** When the record last changed. */
  time: string;
  node: string;
  proto: string;
  src: FlowEnd;
  dst: FlowEnd;
  verdict: 'allow' | 'deny';
  policy: FlowPolicy | null;
  /** What staged policies would have done: their rule, and `action` allow/deny/pass. */
  staged: (FlowPolicy & { action: string })[] | null;
  bytes: number;
  packets: number;
  /** Connections started (or refused packets logged) in this record. */
  count: number;
  start: string;
  /** When its last connection ended; null while one is still open. */
  end: string | null;
}

/**
 * Calico's levels: 0 every flow its own record; 1 source ports aggregated; 2 also source pods
 * of one replica set (their name prefix), their addresses dropped; 3 also destination pods of
 * one replica set.
 */
export type AggregationKind = 0 | 1 | 2 | 3;

/** A pod's name without the suffix a ReplicaSet or a Job gave it: `web-7d4f9-x2x8k` → `web-7d4f9-*`. */
export function podPrefix(name: string): string {
  const dash = name.lastIndexOf('-');
  return dash > 0 ? `${name.slice(0, dash + 1)}*` : name;
}

function mask(end: FlowEnd, byPrefix: boolean, dropPort: boolean): FlowEnd {
  const prefixed = byPrefix && end.pod !== undefined;
  if (!prefixed && !dropPort) return end;
  // Built whole rather than copied and deleted from: records stay fast objects.
  return {
    ...(prefixed || end.ip === undefined ? {} : { ip: end.ip }),
    ...(dropPort || end.port === undefined ? {} : { port: end.port }),
    ...(end.namespace === undefined ? {} : { namespace: end.namespace }),
    ...(end.pod === undefined ? {} : { pod: prefixed ? podPrefix(end.pod) : end.pod }),
    ...(end.labels === undefined ? {} : { labels: end.labels }),
    ...(end.service === undefined ? {} : { service: end.service, servicePort: end.servicePort }),
  };
}

/** The record's ends as its level keeps them. */
export function aggregateEnds(src: FlowEnd, dst: FlowEnd, kind: AggregationKind): { src: FlowEnd; dst: FlowEnd } {
  return { src: mask(src, kind >= 2, kind >= 1), dst: mask(dst, kind >= 3, false) };
}

const endKey = (e: FlowEnd): string =>
  `${e.ip ?? ''},${e.port ?? ''},${e.namespace ?? ''},${e.pod ?? ''},${e.service ?? ''},${e.servicePort ?? ''}`;

export function recordKey(r: Pick<FlowRecord, 'proto' | 'src' | 'dst' | 'verdict' | 'policy'>): string {
  const p = r.policy;
  return `${r.proto}|${endKey(r.src)}|${endKey(r.dst)}|${r.verdict}|${p ? `${p.tier},${p.name},${p.rule}` : ''}`;
}

/** Aggregates in the window under way, and the windows before it in a ring of `capacity` records. */
export class FlowStore {
  private current = new Map<string, FlowRecord & { open: number }>();
  private ring: FlowRecord[] = [];
  private head = 0;
  /** Records not kept: the window's table was full. */
  dropped = 0;

  constructor(
    private readonly capacity: number,
    private readonly maxWindowRecords: number,
  ) {}

  /** Adds to the record of `key` in this window (made from `fresh` if new); returns it, or undefined when the window is full. */
  add(
    key: string,
    fresh: () => FlowRecord,
    change: { count: number; bytes: number; packets: number; opened: number; closed: number; at: string },
  ): FlowRecord | undefined {
    if (this.current.has(key)) return this.change(key, change);
    if (this.current.size >= this.maxWindowRecords) {
      this.dropped++;
      return undefined;
    }
    this.current.set(key, { ...fresh(), open: 0 });
    return this.change(key, change);
  }

  /** Adds to the record of `key` if this window has one; returns it, or undefined when it has none. */
  change(
    key: string,
    change: { count: number; bytes: number; packets: number; opened: number; closed: number; at: string },
  ): FlowRecord | undefined {
    const r = this.current.get(key);
    if (!r) return undefined;
    r.count += change.count;
    r.bytes += change.bytes;
    r.packets += change.packets;
    r.open = Math.max(0, r.open + change.opened - change.closed);
    r.time = change.at;
    if (change.closed > 0) r.end = change.at;
    if (r.open > 0) r.end = null;
    return r;
  }

  /** Closes the window: its records go to the ring (the oldest out first). */
  flush(): void {
    for (const r of this.current.values()) {
      const { open: _open, ...record } = r;
      if (this.ring.length < this.capacity) this.ring.push(record);
      else {
        this.ring[this.head] = record;
        this.head = (this.head + 1) % this.capacity;
      }
    }
    this.current = new Map();
  }

  /** Every record, oldest first: the ring, then the window under way. */
  records(): FlowRecord[] {
    const ring = [...this.ring.slice(this.head), ...this.ring.slice(0, this.head)];
    return [...ring, ...[...this.current.values()].map(({ open: _open, ...r }) => r)];
  }

  get size(): { ring: number; window: number } {
    return { ring: this.ring.length, window: this.current.size };
  }
}

export interface FlowFilter {
  namespace?: string;
  pod?: string;
  verdict?: 'allow' | 'deny';
  /** Epoch ms: records that changed since. */
  sinceMs?: number;
}

const podMatches = (e: FlowEnd, pod: string): boolean =>
  e.pod !== undefined && (e.pod === pod || (e.pod.endsWith('*') && pod.startsWith(e.pod.slice(0, -1))));

export function matches(r: FlowRecord, f: FlowFilter): boolean {
  if (f.verdict && r.verdict !== f.verdict) return false;
  if (f.namespace && r.src.namespace !== f.namespace && r.dst.namespace !== f.namespace) return false;
  if (f.pod && !podMatches(r.src, f.pod) && !podMatches(r.dst, f.pod)) return false;
  if (f.sinceMs !== undefined && Date.parse(r.time) < f.sinceMs) return false;
  return true;
}

/** A query's filter, or an error naming the parameter. */
export function parseFlowFilter(q: URLSearchParams, now = Date.now()): FlowFilter {
  const f: FlowFilter = {};
  const ns = q.get('namespace');
  if (ns) f.namespace = ns;
  const pod = q.get('pod');
  if (pod) f.pod = pod;
  const verdict = q.get('verdict');
  if (verdict) {
    if (verdict !== 'allow' && verdict !== 'deny') throw new Error(`verdict: ${JSON.stringify(verdict)} is not allow or deny`);
    f.verdict = verdict;
  }
  const since = q.get('since');
  if (since) {
    const ago = /^(\d+)(s|m|h)$/.exec(since);
    const at = ago ? now - Number(ago[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[ago[2] as 's' | 'm' | 'h'] : Date.parse(since);
    if (Number.isNaN(at)) throw new Error(`since: ${JSON.stringify(since)} is not a time (ISO 8601) or a duration like 30s, 5m, 1h`);
    f.sinceMs = at;
  }
  return f;
}
