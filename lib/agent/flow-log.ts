// The node's flow log: felix's flow events (felix/flows) named as the cluster knows them (pods
// with their namespace and labels, Services and their chosen endpoint), aggregated per window and
// kept in a bounded ring (flow-records.ts), and streamed to followers. Only flows of this node's
// own pods are kept: the node reports what its policy decided, as Calico's felix does.
import type { ServerResponse } from 'node:http';
import {
  ctMarkError,
  type Decision,
  decisionIndex,
  decisionMarks,
  FlowCorrelator,
  type FlowObservation,
  FlowReader,
  type PolicyInput,
  protocolName,
  type ServiceInput,
} from '../../felix/index.js';
import type { WorkloadEndpoint } from '../resources/index.js';
import {
  type AggregationKind,
  aggregateEnds,
  type FlowEnd,
  type FlowFilter,
  type FlowPolicy,
  type FlowRecord,
  FlowStore,
  matches,
  recordKey,
} from './flow-records.js';

export interface FlowLogSettings {
  /** nfnetlink_log group of the log rules. Default 20. */
  group?: number;
  /** Logged packets per second and rule, and its burst, limited in the kernel. Default 1,000 and 200. */
  ratePerSecond?: number;
  burst?: number;
  /** flowLogsFlushInterval: the aggregation window. Default 15 s. */
  flushIntervalMs?: number;
  /** flowLogsFileAggregationKindForAllowed / ForDenied. Default 2 and 1, as Calico. */
  aggregationAllowed?: AggregationKind;
  aggregationDenied?: AggregationKind;
  /** Records kept over past windows. Default 10,000. */
  capacity?: number;
  /** Records one window may hold; more are counted as dropped. Default 10,000. */
  maxWindowRecords?: number;
  /** The network namespace whose flows are read (a path); default the agent's own. */
  netns?: string;
  /**
   * Conntrack mark bits (one run of 2 or more, e.g. 0x00ff0000) an Allow rule writes its number
   * into instead of logging each allowed connection's first packet: a third fewer messages and
   * no join. Only where no other program of the node uses these bits of the conntrack mark
   * (podroute itself uses none). Default: none, every Allow logs.
   */
  ctMark?: number;
  /**
   * Have the kernel drop the conntrack events of IPv4 flows with no address in the IP pools
   * (the node's own traffic, host-network pods') before they are queued to the agent. Default
   * off: a pod whose address is from no pool would lose its flows.
   */
  poolsOnly?: boolean;
}

export const DEFAULT_FLOW_LOG_GROUP = 20;

interface Sources {
  nodeName: string;
  workloads: () => ReadonlyMap<string, WorkloadEndpoint>;
  services: () => ServiceInput | undefined;
  log: (event: string, fields: Record<string, unknown>) => void;
}

const FOLLOW_FLUSH_MS = 250;
/** A follower this far behind is cut off rather than buffered for. */
const FOLLOW_MAX_BUFFERED = 1 << 20;

/** A record's identity: its key in the store and the fields that make it. */
interface Named {
  key: string;
  head: Pick<FlowRecord, 'proto' | 'src' | 'dst' | 'verdict' | 'policy'>;
}

interface NamedByKey {
  readonly proto: number;
  readonly src: string;
  readonly dst: string;
  readonly dport: number;
  /** The endpoint a DNAT sent the flow to, when one did. */
  readonly via: string | undefined;
  readonly viaPort: number | undefined;
  readonly decided: Map<Decision, Named | null>;
}

/** An open connection's start that touched no pod of this node: its end is not kept either. */
const FOREIGN = null;
/** The cache's stand-in for "no policy decided". */
const NO_DECISION = {} as Decision;
const MAX_OPEN = 65_536;
const MAX_NAMED = 16_384;

interface Follower {
  res: ServerResponse;
  filter: FlowFilter;
}

export class FlowLog {
  readonly store: FlowStore;
  private reader: FlowReader | undefined;
  private readonly correlator: FlowCorrelator;
  private flushTimer: NodeJS.Timeout | undefined;
  private followTimer: NodeJS.Timeout | undefined;
  private readonly followers = new Set<Follower>();
  private changed = new Map<string, FlowRecord>();
  private endpoints = new Map<string, { namespace: string; pod: string; labels: Record<string, string>; local: boolean }>();
  private endpointsFrom: ReadonlyMap<string, WorkloadEndpoint> | undefined;
  private endpointsSize = -1;
  private endpointsAt = 0;
  private servicesFrom: ServiceInput | undefined;
  private frontends = new Map<string, { service: string; port: number }>();
  /** Services by the endpoints they balance to (null: more than one Service does). */
  private backends = new Map<string, { service: string; port: number } | null>();
  /** Flows' records by what names them (see named()), and open connections' records by conntrack id. */
  private readonly namedCache = new Map<string, Map<Decision, Named | null>>();
  /** The same, by the addon's number for a flow without its client's port (FlowObservation.nameKey) and the fields it stands for. */
  private readonly namedByKey = new Map<number, NamedByKey>();
  private readonly openKeys = new Map<number, Named | null>();
  /** Observations kept, and those about no pod of this node. */
  readonly counts = { kept: 0, foreign: 0 };

  constructor(
    readonly settings: FlowLogSettings,
    private readonly sources: Sources,
  ) {
    const ctMark = settings.ctMark === undefined ? undefined : ctMarkError(settings.ctMark);
    if (ctMark) throw new RangeError(`flowLogs.ctMark: ${ctMark}`);
    this.store = new FlowStore(settings.capacity ?? 10_000, settings.maxWindowRecords ?? 10_000);
    this.correlator = new FlowCorrelator(new Map(), (o) => this.observe(o));
  }

  /** The log rules felix writes in front of each deciding rule. */
  get rules(): { group: number; ratePerSecond: number; burst: number; ctMark?: number } {
    return {
      group: this.settings.group ?? DEFAULT_FLOW_LOG_GROUP,
      ratePerSecond: this.settings.ratePerSecond ?? 1_000,
      burst: this.settings.burst ?? 200,
      ...(this.settings.ctMark !== undefined ? { ctMark: this.settings.ctMark } : {}),
    };
  }

  /** The policy input just compiled: the prefixes its log rules carry, and its Allows' mark numbers. */
  policyInput(input: PolicyInput): void {
    this.pools = input.pools.map((p) => p.cidr);
    this.filterPools();
    const ctMark = this.settings.ctMark;
    this.correlator.setDecisions(decisionIndex(input), ctMark !== undefined ? decisionMarks(input, ctMark) : undefined);
  }

  private pools: readonly string[] = [];
  private filtered: string | undefined;

  /** The kernel's filter of conntrack events set to the pools, when asked for and they changed. */
  private filterPools(): void {
    if (!this.settings.poolsOnly || !this.reader) return;
    const text = this.pools.join(' ');
    if (text === this.filtered) return;
    this.filtered = text;
    if (!this.reader.keepOnly(this.pools))
      this.sources.log('flow-logs-no-pool-filter', {
        reason: 'no IPv4 pool, or more than 16: every conntrack event is read',
        pools: this.pools,
      });
  }

  async start(): Promise<void> {
    this.flushTimer = setInterval(() => this.store.flush(), this.settings.flushIntervalMs ?? 15_000);
    this.flushTimer.unref();
    this.reader = await FlowReader.open(
      { group: this.rules.group, netns: this.settings.netns },
      (e) => this.correlator.conntrack(e),
      (p) => this.correlator.packet(p),
      {
        // Per-flow records (aggregation 0) keep the client's port: the addon's aggregates must too.
        settings: (cfg) =>
          this.correlator.foldSettings(cfg, {
            allow: (this.settings.aggregationAllowed ?? 2) === 0,
            deny: (this.settings.aggregationDenied ?? 1) === 0,
          }),
        onAggregate: (a) => this.correlator.aggregate(a),
      },
    );
    this.filterPools();
    if (!this.reader.accounting)
      this.sources.log('flow-logs-no-accounting', {
        reason: 'net.netfilter.nf_conntrack_acct could not be set: flows carry no bytes or packets',
      });
  }

  stop(): void {
    clearInterval(this.flushTimer);
    clearInterval(this.followTimer);
    this.reader?.close();
    this.reader = undefined;
    this.correlator.close();
    for (const f of this.followers) f.res.end();
    this.followers.clear();
  }

  status(): Record<string, unknown> {
    return {
      reader: this.reader ? { ...this.reader.stats, accounting: this.reader.accounting } : null,
      records: this.store.size,
      dropped: this.store.dropped,
      ...this.counts,
      ...this.correlator.sizes,
      unknownPrefixes: this.correlator.unknownPrefixes,
    };
  }

  records(filter: FlowFilter): FlowRecord[] {
    return this.store.records().filter((r) => matches(r, filter));
  }

  /** Streams the matching records, then each one as it changes, as newline-delimited JSON. */
  follow(res: ServerResponse, filter: FlowFilter): void {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    for (const r of this.records(filter)) res.write(`${JSON.stringify(r)}\n`);
    const f: Follower = { res, filter };
    this.followers.add(f);
    res.on('close', () => this.followers.delete(f));
  }

  private lastTime = -1;
  private lastTimeText = '';
  private second = -1;
  private secondText = '';

  /** ISO text of a time in ms; flows come many to a millisecond, and a thousand to a second. */
  private iso(ms: number): string {
    if (ms !== this.lastTime) {
      this.lastTime = ms;
      const second = Math.floor(ms / 1000);
      if (second !== this.second) {
        this.second = second;
        // "2026-01-02T03:04:05." of "2026-01-02T03:04:05.678Z"
        this.secondText = new Date(second * 1000).toISOString().slice(0, -4);
      }
      const milli = ms - second * 1000;
      this.lastTimeText = `${this.secondText}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
    }
    return this.lastTimeText;
  }

  /** The change an observation makes to its record: one object, filled anew each time (the store reads it at once). */
  private readonly change = { count: 0, bytes: 0, packets: 0, opened: 0, closed: 0, at: '' };

  private observe(o: FlowObservation): void {
    const at = this.iso(o.timeMs);
    const change = this.change;
    change.at = at;
    // A connection's end adds its counts to the record its start went to, when this window has it.
    if (o.phase === 'end' && o.id >= 0) {
      const id = o.id | 0;
      const open = this.openKeys.get(id);
      if (open !== undefined) {
        this.openKeys.delete(id);
        if (open === FOREIGN) {
          this.counts.foreign++;
          return;
        }
        change.count = 0;
        change.bytes = o.bytes;
        change.packets = o.packets;
        change.opened = 0;
        change.closed = 1;
        const r = this.store.change(open.key, change);
        if (r) {
          this.counts.kept++;
          return this.changedRecord(open.key, r);
        }
      }
    }
    const named = this.named(o);
    if (o.phase === 'start' && o.id >= 0) {
      // Bounded as the correlator's live connections are; an end forgotten here takes the long way.
      if (this.openKeys.size >= MAX_OPEN) this.openKeys.delete(this.openKeys.keys().next().value as number);
      this.openKeys.set(o.id | 0, named ?? FOREIGN);
    }
    if (!named) {
      this.counts.foreign += o.count ?? 1;
      return;
    }
    // An aggregate of the addon's stands for `count` flows.
    const n = o.count ?? 1;
    this.counts.kept += n;
    change.count = o.phase === 'end' ? 0 : n;
    // A connection's counts come with its end (and with its start, what its first packets carried).
    change.bytes = o.phase === 'start' ? 0 : o.bytes;
    change.packets = o.phase === 'start' ? 0 : o.packets;
    change.opened = o.phase === 'start' ? n : 0;
    change.closed = o.phase === 'end' ? n : 0;
    const r =
      this.store.change(named.key, change) ??
      this.store.add(
        named.key,
        () => ({
          time: at,
          node: this.sources.nodeName,
          ...named.head,
          staged: o.staged.length ? o.staged.map((d) => ({ ...policyOf(d), action: stagedAction(d) })) : null,
          bytes: 0,
          packets: 0,
          count: 0,
          start: this.iso(o.startMs ?? o.timeMs),
          end: null,
        }),
        change,
      );
    if (r) this.changedRecord(named.key, r);
  }

  private changedRecord(key: string, r: FlowRecord): void {
    if (this.followers.size === 0) return;
    if (this.changed.size < 10_000) this.changed.set(key, r);
    this.followTimer ??= setTimeout(() => this.pushToFollowers(), FOLLOW_FLUSH_MS);
  }

  /**
   * The record an observation belongs to (its ends named and aggregated, and its key), or
   * undefined when it touches no pod of this node. Cached by what decides it: flows come many
   * to a pair of pods, and the cache is dropped when the pods or the Services change.
   */
  private named(o: FlowObservation): Named | undefined {
    this.refreshEndpoints();
    const input = this.sources.services();
    if (input !== this.servicesFrom) this.indexServices(input);
    const deny = o.verdict === 'deny';
    const kind = (deny ? (this.settings.aggregationDenied ?? 1) : (this.settings.aggregationAllowed ?? 2)) as AggregationKind;
    const t = o.tuple;
    const ep = o.endpoint;
    const decision = o.decision ?? NO_DECISION;
    // The addon's number for the flow without its client's port: no text to build, and the
    // fields compared on a match (a kind-0 record keeps the port: those take the text).
    let decided: Map<Decision, Named | null> | undefined;
    const byNumber = kind !== 0 && o.nameKey !== undefined;
    if (byNumber) {
      const k = o.nameKey! | 0;
      const e = this.namedByKey.get(k);
      if (
        e &&
        e.proto === t.proto &&
        e.src === t.src &&
        e.dst === t.dst &&
        e.dport === t.dport &&
        e.via === ep?.address &&
        e.viaPort === ep?.port
      )
        decided = e.decided;
      else if (!e) {
        if (this.namedByKey.size >= MAX_NAMED) this.namedByKey.clear();
        decided = new Map();
        this.namedByKey.set(k, { proto: t.proto, src: t.src, dst: t.dst, dport: t.dport, via: ep?.address, viaPort: ep?.port, decided });
      }
    }
    if (!decided) {
      const by = `${t.proto} ${t.src} ${kind === 0 ? t.sport : ''} ${t.dst} ${t.dport} ${ep ? `${ep.address} ${ep.port}` : ''}`;
      decided = this.namedCache.get(by);
      if (!decided) {
        if (this.namedCache.size >= MAX_NAMED) this.namedCache.clear();
        decided = new Map();
        this.namedCache.set(by, decided);
      }
    }
    const cached = decided.get(decision);
    if (cached !== undefined) return cached ?? undefined;
    const named = this.name(o, kind);
    decided.set(decision, named ?? null);
    return named;
  }

  private name(o: FlowObservation, kind: AggregationKind): Named | undefined {
    const srcEp = this.endpoints.get(o.tuple.src);
    const dstAddress = o.endpoint?.address ?? o.tuple.dst;
    const dstEp = this.endpoints.get(dstAddress);
    // Denied packets come from this node's own rules; a connection must touch one of its pods.
    if (o.phase !== 'denied' && !srcEp?.local && !dstEp?.local) return undefined;
    const proto = protocolName(o.tuple.proto);
    const src: FlowEnd = {
      ip: o.tuple.src,
      port: o.tuple.sport,
      ...(srcEp ? { namespace: srcEp.namespace, pod: srcEp.pod, labels: srcEp.labels } : {}),
    };
    const dst: FlowEnd = {
      ip: dstAddress,
      port: o.endpoint?.port ?? o.tuple.dport,
      ...(dstEp ? { namespace: dstEp.namespace, pod: dstEp.pod, labels: dstEp.labels } : {}),
    };
    // A refused packet a DNAT sent is seen at its endpoint: the Service is the one that balances to it.
    const svc = o.endpoint
      ? (this.frontends.get(`${proto} ${o.tuple.dst} ${o.tuple.dport}`) ?? this.frontends.get(`${proto} * ${o.tuple.dport}`))
      : o.dnat
        ? this.backends.get(`${proto} ${dstAddress} ${dst.port}`)
        : undefined;
    if (svc) {
      dst.service = svc.service;
      dst.servicePort = svc.port;
    }
    const ends = aggregateEnds(src, dst, kind);
    const head = { proto, ...ends, verdict: o.verdict, policy: o.decision ? policyOf(o.decision) : null };
    return { key: recordKey(head), head };
  }

  private pushToFollowers(): void {
    this.followTimer = undefined;
    const changed = [...this.changed.values()];
    this.changed = new Map();
    for (const f of this.followers) {
      if (f.res.writableLength > FOLLOW_MAX_BUFFERED) {
        f.res.destroy();
        this.followers.delete(f);
        continue;
      }
      for (const r of changed) if (matches(r, f.filter)) f.res.write(`${JSON.stringify(r)}\n`);
    }
  }

  /** Addresses of every pod in the cluster, rebuilt when the workloads changed (at most once a second). */
  private refreshEndpoints(): void {
    const all = this.sources.workloads();
    const now = Date.now();
    if (all === this.endpointsFrom && all.size === this.endpointsSize && now - this.endpointsAt < 1_000) return;
    this.endpointsFrom = all;
    this.endpointsSize = all.size;
    this.endpointsAt = now;
    const m = new Map<string, { namespace: string; pod: string; labels: Record<string, string>; local: boolean }>();
    for (const w of all.values()) {
      const labels = Object.fromEntries(Object.entries(w.metadata.labels ?? {}).filter(([k]) => !k.startsWith('projectcalico.org/')));
      const ep = { namespace: w.metadata.namespace ?? '', pod: w.spec.pod, labels, local: w.spec.node === this.sources.nodeName };
      for (const net of w.spec.ipNetworks) m.set(net.split('/')[0]!, ep);
    }
    this.endpoints = m;
    this.namedCache.clear();
    this.namedByKey.clear();
  }

  private indexServices(input: ServiceInput | undefined): void {
    this.servicesFrom = input;
    const m = new Map<string, { service: string; port: number }>();
    const backends = new Map<string, { service: string; port: number } | null>();
    for (const p of input?.services ?? []) {
      const service = p.id.split('/').slice(0, 2).join('/');
      for (const a of [...p.clusterIPs, ...p.externalIPs, ...p.loadBalancerIPs])
        m.set(`${p.protocol} ${a} ${p.port}`, { service, port: p.port });
      if (p.nodePort) m.set(`${p.protocol} * ${p.nodePort}`, { service, port: p.port });
      for (const e of p.endpoints) {
        const key = `${p.protocol} ${e.address} ${e.port}`;
        const known = backends.get(key);
        // An endpoint two Services balance to names neither: which one the client used is not known.
        backends.set(key, known === undefined || (known?.service === service && known.port === p.port) ? { service, port: p.port } : null);
      }
    }
    this.frontends = m;
    this.backends = backends;
    this.namedCache.clear();
    this.namedByKey.clear();
  }
}

function policyOf(d: Decision): FlowPolicy {
  return { tier: d.tier, name: d.policy, rule: d.rule };
}

function stagedAction(d: Decision): string {
  return d.code === 'SA' ? 'allow' : d.code === 'SD' ? 'deny' : 'pass';
}
