// UDP has no connection to close: a conntrack entry that DNATed a client to an endpoint outlives
// the endpoint (30 s, 120 s once it saw replies), and a client that keeps its source port (a DNS
// resolver, a statsd sender) goes on sending to it. After a services change is in the kernel,
// felix deletes those entries, as kube-proxy does:
// - an endpoint address gone from a UDP port: the entries to each of the port's frontends
//   (and to its nodePort on any address) whose reply comes from that address;
// - a UDP port going from no endpoint to some: the entries to its frontends that no DNAT
//   touched (their reply source is the frontend itself), made while it had none.
// TCP and SCTP are left alone: their endpoints' kernels reset or time out what they no longer know.
import type { ServiceCompileChange } from './compile.js';
import type { ServiceInput, ServicePort } from './input.js';

/** Entries to delete: the UDP entries of this family that match every field given. */
export interface ConntrackFilter {
  readonly family: 4 | 6;
  readonly protocol: 'udp';
  /** The original direction's destination: a frontend; absent for a nodePort (any address). */
  readonly origDst?: string;
  readonly origDstPort: number;
  /** The reply direction's source: where the entry DNATed to (the frontend itself: no DNAT). */
  readonly replySrc: string;
}

/** Deletes conntrack entries; never rejects (a failure is the cleaner's to report). */
export interface ConntrackCleaner {
  /** Resolves with the number of entries deleted. */
  clear(filters: readonly ConntrackFilter[]): Promise<number>;
}

/** For dataplanes without a kernel (the memory dataplane). */
export const NO_CONNTRACK_CLEANER: ConntrackCleaner = { clear: async () => 0 };

const familyOf = (address: string): 4 | 6 => (address.includes(':') ? 6 : 4);
const frontends = (p: ServicePort): string[] => [...p.clusterIPs, ...p.externalIPs, ...p.loadBalancerIPs];

/** The filters that delete what `next` leaves stale after `previous` (undefined: nothing known before). */
export function staleConntrackFilters(previous: ServiceInput | undefined, next: ServiceInput): ConntrackFilter[] {
  const out = new Filters();
  const before = new Map((previous?.services ?? []).filter((p) => p.protocol === 'udp').map((p) => [p.id, p]));
  const seen = new Set<string>();
  for (const p of next.services) {
    if (p.protocol !== 'udp') continue;
    seen.add(p.id);
    out.port(before.get(p.id), p, next.nodeAddresses);
  }
  // A port gone altogether took its endpoints with it.
  for (const [id, old] of before) if (!seen.has(id)) out.port(old, undefined, next.nodeAddresses);
  return out.list();
}

/** The filters of a change, each once. */
class Filters {
  private readonly out = new Map<string, ConntrackFilter>();

  list(): ConntrackFilter[] {
    return [...this.out.values()];
  }

  /** What one port's change from `old` to `now` (either undefined or not UDP: none) leaves stale. */
  port(old: ServicePort | undefined, now: ServicePort | undefined, nodeAddresses: readonly string[]): void {
    if (old?.protocol !== 'udp') old = undefined;
    if (now?.protocol !== 'udp') now = undefined;
    if (old === now) return;
    if (old) {
      const kept = new Set(now?.endpoints.map((e) => e.address));
      for (const a of new Set(old.endpoints.map((e) => e.address))) if (!kept.has(a)) this.endpointGone(old, a);
    }
    if (now && (!old || old.endpoints.length === 0) && now.endpoints.length > 0) {
      for (const f of frontends(now)) this.add({ family: familyOf(f), protocol: 'udp', origDst: f, origDstPort: now.port, replySrc: f });
      // A nodePort's frontends are the node's addresses, known only when the input names them.
      if (now.nodePort !== undefined)
        for (const a of nodeAddresses)
          this.add({ family: familyOf(a), protocol: 'udp', origDst: a, origDstPort: now.nodePort, replySrc: a });
    }
  }

  private add(f: ConntrackFilter): void {
    this.out.set(`${f.family} ${f.origDst ?? '*'} ${f.origDstPort} ${f.replySrc}`, f);
  }

  private endpointGone(old: ServicePort, address: string): void {
    const family = familyOf(address);
    for (const origDst of frontends(old))
      if (familyOf(origDst) === family) this.add({ family, protocol: 'udp', origDst, origDstPort: old.port, replySrc: address });
    if (old.nodePort !== undefined) this.add({ family, protocol: 'udp', origDstPort: old.nodePort, replySrc: address });
  }
}

/**
 * Remembers the UDP ports last in the kernel and, after each apply, has the cleaner delete the
 * entries the change left stale. The changed ports come from the compile (ServiceCompiler.lastChange),
 * so a change reads those alone; without it (or when a compile was missed) the input is compared
 * whole, by id. Deletions run one change at a time, in the order applied.
 */
export class ServiceConntrack {
  /** The UDP ports the kernel has, by id (another protocol's leave nothing stale); undefined before the first apply. */
  private kernel: Map<string, ServicePort> | undefined;
  /** Ports changed by compiles that did not reach the kernel, by id, as the last of them had each: carried to the next apply. */
  private readonly carried = new Map<string, ServicePort | undefined>();
  /** A compile that did not reach the kernel compiled every port: the next apply compares whole. */
  private carriedWhole = false;
  /** The number of the last compile told of, to notice one missed. */
  private compile: number | undefined;
  private queue: Promise<number> = Promise.resolve(0);

  constructor(readonly cleaner: ConntrackCleaner = NO_CONNTRACK_CLEANER) {}

  /**
   * `input` is now in the kernel; `change` is what its compile changed, when the caller has it.
   * Resolves once its stale entries are deleted (with how many).
   */
  applied(input: ServiceInput, change?: ServiceCompileChange): Promise<number> {
    const ports = this.changedPorts(change);
    const filters = ports ? this.step(ports, input) : this.whole(input);
    if (filters.length === 0) return Promise.resolve(0);
    this.queue = this.queue.then(
      () => this.cleaner.clear(filters),
      () => this.cleaner.clear(filters),
    );
    return this.queue.catch(() => 0);
  }

  /** A compile whose table did not reach the kernel: what it changed is read again at the next apply. */
  notApplied(change?: ServiceCompileChange): void {
    if (!this.follows(change) || !change?.ports) this.carriedWhole = true;
    else for (const [id, c] of change.ports) this.carried.set(id, c.after);
  }

  /** Whether `change` is the compile after the last one told of (and notes it). */
  private follows(change: ServiceCompileChange | undefined): boolean {
    const last = this.compile;
    this.compile = change?.compile;
    return change !== undefined && last !== undefined && change.compile === last + 1;
  }

  /** The ports to read, by id, as `input` has them (undefined: gone); undefined when every port must be compared. */
  private changedPorts(change: ServiceCompileChange | undefined): Map<string, ServicePort | undefined> | undefined {
    const follows = this.follows(change);
    if (!this.kernel || !follows || !change?.ports || this.carriedWhole) return undefined;
    // What compiles that did not reach the kernel changed, then what this one did, the later winning.
    const ports = new Map(this.carried);
    this.carried.clear();
    for (const [id, c] of change.ports) ports.set(id, c.after);
    return ports;
  }

  private step(ports: Map<string, ServicePort | undefined>, input: ServiceInput): ConntrackFilter[] {
    const kernel = this.kernel!;
    const out = new Filters();
    for (const [id, now] of ports) {
      out.port(kernel.get(id), now, input.nodeAddresses);
      if (now?.protocol === 'udp') kernel.set(id, now);
      else kernel.delete(id);
    }
    return out.list();
  }

  private whole(input: ServiceInput): ConntrackFilter[] {
    const before = this.kernel && { services: [...this.kernel.values()], nodeAddresses: [], clusterCidrs: [] };
    this.kernel = new Map(input.services.filter((p) => p.protocol === 'udp').map((p) => [p.id, p]));
    this.carried.clear();
    this.carriedWhole = false;
    return staleConntrackFilters(before, input);
  }
}
