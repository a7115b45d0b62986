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
  const out = new Map<string, ConntrackFilter>();
  const add = (f: ConntrackFilter) => out.set(`${f.family} ${f.origDst ?? '*'} ${f.origDstPort} ${f.replySrc}`, f);
  const endpointGone = (old: ServicePort, address: string) => {
    const family = familyOf(address);
    for (const origDst of frontends(old))
      if (familyOf(origDst) === family) add({ family, protocol: 'udp', origDst, origDstPort: old.port, replySrc: address });
    if (old.nodePort !== undefined) add({ family, protocol: 'udp', origDstPort: old.nodePort, replySrc: address });
  };
  const before = new Map((previous?.services ?? []).filter((p) => p.protocol === 'udp').map((p) => [p.id, p]));
  const seen = new Set<string>();
  for (const p of next.services) {
    if (p.protocol !== 'udp') continue;
    seen.add(p.id);
    const old = before.get(p.id);
    const now = new Set(p.endpoints.map((e) => e.address));
    if (old) for (const a of new Set(old.endpoints.map((e) => e.address))) if (!now.has(a)) endpointGone(old, a);
    if ((!old || old.endpoints.length === 0) && p.endpoints.length > 0) {
      for (const f of frontends(p)) add({ family: familyOf(f), protocol: 'udp', origDst: f, origDstPort: p.port, replySrc: f });
      // A nodePort's frontends are the node's addresses, known only when the input names them.
      if (p.nodePort !== undefined)
        for (const a of next.nodeAddresses) add({ family: familyOf(a), protocol: 'udp', origDst: a, origDstPort: p.nodePort, replySrc: a });
    }
  }
  // A port gone altogether took its endpoints with it.
  for (const [id, old] of before) if (!seen.has(id)) for (const a of new Set(old.endpoints.map((e) => e.address))) endpointGone(old, a);
  return [...out.values()];
}

/**
 * Remembers the services last in the kernel and, after each apply, has the cleaner delete the
 * entries the change left stale. Deletions run one change at a time, in the order applied.
 */
export class ServiceConntrack {
  private last: ServiceInput | undefined;
  private queue: Promise<number> = Promise.resolve(0);

  constructor(readonly cleaner: ConntrackCleaner = NO_CONNTRACK_CLEANER) {}

  /** `input` is now in the kernel; resolves once its stale entries are deleted (with how many). */
  applied(input: ServiceInput): Promise<number> {
    const filters = staleConntrackFilters(this.last, input);
    this.last = input;
    if (filters.length === 0) return Promise.resolve(0);
    this.queue = this.queue.then(
      () => this.cleaner.clear(filters),
      () => this.cleaner.clear(filters),
    );
    return this.queue.catch(() => 0);
  }
}
