// The services half of felix, fed: every Service, EndpointSlice and pool the watch delivers is
// kept; the ServiceInput for this node (service-input.ts) is compiled into the services' part of
// the table the policy programmer owns, so policy and services change in one nft transaction.
// Events arriving together are folded into one compile. Only the Services that pass the
// cluster's address rules are given to felix (lib/services/admission.ts: cluster IPs in range
// and held by no other Service, and so on): a store may hold one that no apply checked, and a
// cluster IP of 8.8.8.8 programmed on every node would take every pod's traffic to it.
import {
  type ConntrackCleaner,
  type PolicyApplyReport,
  type PolicyProgrammer,
  programServices,
  ServiceCompileError,
  type ServiceCompileOptions,
  ServiceCompiler,
  ServiceConntrack,
  type ServiceInput,
} from '../../felix/index.js';
import type { WatchEvent } from '../datastore/index.js';
import { cidrAddress } from '../../ip/index.js';
import { type BGPConfiguration, type EndpointSlice, type IPPool, type Kind, SERVICE_NAME_LABEL, type Service } from '../resources/index.js';
import { admitServices, type ServiceVerdict } from '../services/admission.js';
import { ServiceInputBuilder, slicesByService } from '../services/service-input.js';

export interface ServiceFeedOptions {
  nodeName: string;
  /** The programmer policy uses: services are a part of its table. */
  programmer: PolicyProgrammer;
  /** This node's addresses with or without prefix length, read at each compile (they are known only once the agent started). */
  nodeAddresses: () => readonly string[];
  compile?: ServiceCompileOptions;
  /** Deletes the UDP conntrack entries a change leaves pointing at removed endpoints; absent: none are. */
  conntrack?: ConntrackCleaner;
  log: (event: string, fields: Record<string, unknown>) => void;
}

/** What `podroute node status` says of the Services: how many are programmed, and which are refused and why. */
export interface ServicesStatus {
  programmed: number;
  failures: number;
  refused: { service: string; field: string; reason: string }[];
}

export class ServiceFeed {
  static readonly kinds: readonly Kind[] = ['Service', 'EndpointSlice', 'IPPool', 'BGPConfiguration'];
  private readonly services = new Map<string, Service>();
  /** The default BGPConfiguration: its service ranges say which addresses a Service may take. */
  private config: BGPConfiguration | undefined;
  /** Which Services pass; recomputed when a Service or the configuration changed, not at every slice or pool change. */
  private verdict: ServiceVerdict = { admitted: [], refused: new Map() };
  private verdictStale = true;
  private readonly slices = new Map<string, EndpointSlice>();
  /** The slices by Service (`namespace/name`), kept as they change (sliceChanged). */
  private slicesByService = new Map<string, readonly EndpointSlice[]>();
  /** Services whose slices changed since the last build. */
  private changedServices = new Set<string>();
  /** A slice moved between Services: the grouping is made again from the slices. */
  private regroup = false;
  private readonly pools = new Map<string, IPPool>();
  private readonly builder: ServiceInputBuilder;
  private scheduled = false;
  private started = false;
  private applied: Promise<unknown> = Promise.resolve();
  private readonly conntrack: ServiceConntrack | undefined;
  /** This feed's own: it remembers the ports it compiled, so a change recompiles only those it touched. */
  private readonly compiler: ServiceCompiler;
  /** The input last handed to felix. */
  input: ServiceInput | undefined;
  /** Why felix refused the last input, if it did (the previous services stay programmed). */
  refused: string | undefined;

  constructor(private readonly options: ServiceFeedOptions) {
    this.builder = new ServiceInputBuilder(options.nodeName);
    this.compiler = new ServiceCompiler(options.compile);
    this.conntrack = options.conntrack ? new ServiceConntrack(options.conntrack) : undefined;
  }

  /** Takes one watch event; true when it concerned the feed. */
  apply(e: WatchEvent): boolean {
    if (e.type === 'synced') return false;
    if (e.kind === 'BGPConfiguration') {
      if (e.key !== 'default') return false;
      this.config = e.type === 'put' ? (e.resource as BGPConfiguration) : undefined;
      this.verdictStale = true;
      this.schedule();
      return true;
    }
    if (e.kind === 'Service') this.verdictStale = true;
    if (e.kind === 'EndpointSlice') this.sliceChanged(e.key, e.type === 'put' ? (e.resource as EndpointSlice) : undefined);
    const map =
      e.kind === 'Service' ? this.services : e.kind === 'EndpointSlice' ? this.slices : e.kind === 'IPPool' ? this.pools : undefined;
    if (!map) return false;
    if (e.type === 'put') (map as Map<string, unknown>).set(e.key, e.resource);
    else map.delete(e.key);
    this.schedule();
    return true;
  }

  /**
   * Keeps the slices grouped by Service as the builder groups them (slicesByService), in the
   * order the slices map holds them, and notes whose changed: an endpoint change then costs the
   * builder that Service's ports, not every Service's. A slice moving to another Service (its
   * label changed) regroups them all.
   */
  private sliceChanged(key: string, now: EndpointSlice | undefined): void {
    const was = this.slices.get(key);
    if (!was && !now) return;
    const owner = (s: EndpointSlice | undefined) => {
      const name = s?.metadata.labels?.[SERVICE_NAME_LABEL];
      return name ? `${s!.metadata.namespace}/${name}` : undefined;
    };
    const from = owner(was);
    const to = owner(now);
    if (from !== undefined) this.changedServices.add(from);
    if (to !== undefined) this.changedServices.add(to);
    if (was && now && from === to) {
      if (to === undefined) return;
      this.slicesByService.set(
        to,
        (this.slicesByService.get(to) ?? []).map((s) => (s === was ? now : s)),
      );
      return;
    }
    if (was && !now) {
      if (from === undefined) return;
      const rest = (this.slicesByService.get(from) ?? []).filter((s) => s !== was);
      if (rest.length) this.slicesByService.set(from, rest);
      else this.slicesByService.delete(from);
      return;
    }
    if (!was && now) {
      // A new key goes last in the slices map, so last in its Service's list.
      if (to !== undefined) this.slicesByService.set(to, [...(this.slicesByService.get(to) ?? []), now]);
      return;
    }
    this.regroup = true;
  }

  /** Programs from now on (after the first full sync of the watch). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.push();
  }

  /** Recomputes now: the node's addresses changed. */
  refresh(): void {
    this.schedule();
  }

  /** The Services that pass the address rules: the only ones programmed (and announced). */
  admitted(): readonly Service[] {
    return this.admit().admitted;
  }

  status(): ServicesStatus {
    const { admitted, refused } = this.admit();
    return {
      programmed: admitted.length,
      failures: refused.size,
      refused: [...refused].map(([service, e]) => ({ service, field: e.field, reason: e.reason })),
    };
  }

  /** The verdict on the Services as they are now; a refusal is logged when it is new or its reason changed. */
  private admit(): ServiceVerdict {
    if (!this.verdictStale) return this.verdict;
    const was = this.verdict.refused;
    const now = admitServices(this.services.values(), this.config);
    for (const [service, e] of now.refused)
      if (was.get(service)?.message !== e.message) this.options.log('service-refused', { service, field: e.field, error: e.reason });
    for (const s of now.admitted) {
      const key = `${s.metadata.namespace}/${s.metadata.name}`;
      if (was.has(key)) this.options.log('service-accepted', { service: key });
    }
    this.verdict = now;
    this.verdictStale = false;
    return now;
  }

  /** Resolves once the last input is in the kernel (or has failed and been reported). */
  settled(): Promise<void> {
    return this.applied.then(() => this.options.programmer.settled());
  }

  private schedule(): void {
    if (this.scheduled || !this.started) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.push();
    });
  }

  private push(): void {
    if (this.regroup) {
      this.slicesByService = slicesByService(this.slices.values());
      this.regroup = false;
    }
    const changed = this.changedServices;
    this.changedServices = new Set();
    const input = this.builder.build({
      services: this.admit().admitted,
      slices: this.slices.values(),
      slicesByService: this.slicesByService,
      changed,
      nodeAddresses: this.options
        .nodeAddresses()
        .filter((a) => a !== '')
        .map((a) => cidrAddress(a, 'node address')),
      clusterCidrs: [...this.pools.values()].map((p) => p.spec.cidr).sort(),
    });
    // The builder hands back the same object when nothing changed: hand felix nothing new then.
    if (input === this.input) return;
    try {
      const { table, applied } = programServices(this.options.programmer, input, this.compiler, this.conntrack);
      this.input = input;
      if (this.refused !== undefined) this.options.log('services-accepted', {});
      this.refused = undefined;
      for (const c of table.conflicts) this.options.log('service-frontend-conflict', { conflict: c });
      this.applied = applied.then(
        (r: PolicyApplyReport) => {
          if (!r.ok) this.options.log('services-apply-failed', { error: r.error });
        },
        (e: Error) => this.options.log('services-error', { error: e.message }),
      );
    } catch (e) {
      // Validation let it through but felix cannot express it (or the table refused the part):
      // the services programmed stay, and the operator is told.
      this.refused = (e as Error).message;
      this.options.log(e instanceof ServiceCompileError ? 'services-refused' : 'services-error', { error: this.refused });
    }
  }
}
