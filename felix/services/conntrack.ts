// UDP has no connection to close: a conntrack entry that DNATed a client to an endpoint outlives
// the endpoint (30 s, 120 s once it saw replies), and a client that keeps its source port (a DNS
// resolver, a statsd sender) goes on sending to it. After a services change is in the kernel,
// felix deletes those entries, as kube-proxy does:
// - an endpoint address gone from a UDP port: the entries to each of the port's frontends
//   (and to its nodePort on any address) whose reply comes from that address;
// - a UDP port going from no endpoint to some: the entries to its frontends that no DNAT
//   touched (their reply source is the frontend itself), made while it had none.
// TCP and SCTP are left alone: their endpoints' kernels reset or time out what they no longer know.
import type { ServiceInput, ServicePort } from './input.js';

/** One `conntrack -D` filter: UDP entries of this family matching every field given. */
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

/** For dataplanes without a kernel (the memory dataplane) and nodes without the tool. */
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
 * The same as staleConntrackFilters while the ports keep their places (an endpoint changed),
 * with `was` updated to `next`'s ports: ports are values, so one pass over the two lists by
 * object finds the changed ones, and only those are read. Undefined, `was` as it was, when a
 * port moved, came or went: then compare by id.
 */
function samePlaceFilters(was: ServicePort[], next: ServiceInput): ConntrackFilter[] | undefined {
  const now = next.services;
  if (was.length !== now.length) return undefined;
  const changed: number[] = [];
  for (let i = 0; i < now.length; i++) {
    const p = now[i]!;
    if (p === was[i]) continue;
    if (!p || p.id !== was[i]!.id) return undefined;
    changed.push(i);
  }
  const out = new Filters();
  for (const i of changed) {
    out.port(was[i], now[i], next.nodeAddresses);
    was[i] = now[i]!;
  }
  return out.list();
}

/**
 * Remembers the services last in the kernel and, after each apply, has the cleaner delete the
 * entries the change left stale. Deletions run one change at a time, in the order applied.
 */
export class ServiceConntrack {
  /** The ports last in the kernel: a list of its own, as the caller may change theirs in place. */
  private last: ServicePort[] | undefined;
  private queue: Promise<number> = Promise.resolve(0);

  constructor(readonly cleaner: ConntrackCleaner = NO_CONNTRACK_CLEANER) {}

  /** `input` is now in the kernel; resolves once its stale entries are deleted (with how many). */
  applied(input: ServiceInput): Promise<number> {
    let filters = this.last && samePlaceFilters(this.last, input);
    if (!filters) {
      filters = staleConntrackFilters(this.last && { services: this.last, nodeAddresses: [], clusterCidrs: [] }, input);
      this.last = [...input.services];
    }
    if (filters.length === 0) return Promise.resolve(0);
    this.queue = this.queue.then(
      () => this.cleaner.clear(filters),
      () => this.cleaner.clear(filters),
    );
    return this.queue.catch(() => 0);
  }
}
