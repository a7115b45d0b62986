// The calculation graph's sets with their members, kept current one endpoint at a time. A set
// lives while some policy names it (reference counted); its members are remembered per
// endpoint, so an endpoint that comes, goes or is relabelled touches only the sets it enters
// or leaves, and only those are rebuilt for felix.
import type { AddressSet, NamedPortSet } from '../../felix/policy/input.js';
import type { SelectionMatcher } from './selection.js';
import type { SetSpec } from './set-spec.js';
import type { Workload } from './workload.js';

type NamedPortMember = NamedPortSet['members'][number];

interface Entry {
  readonly spec: SetSpec;
  refs: number;
  /** What each endpoint in the set contributes: addresses, or (address, protocol, port). */
  readonly byWorkload: Map<string, readonly string[] | readonly NamedPortMember[]>;
  /** A selection's addresses, kept in order as endpoints come and go. */
  readonly addresses?: AddressCounts;
  built?: AddressSet | NamedPortSet;
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Where `a` is or would go in the sorted list. */
function lowerBound(list: readonly string[], a: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! < a) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The addresses of a selection's endpoints, each counted once per endpoint that has it, in
 * order: an endpoint that comes or goes inserts or removes its own, so a set of thousands is
 * not gathered and sorted again for one pod. Sorted on first use after a bulk fill.
 */
class AddressCounts {
  private readonly counts = new Map<string, number>();
  private order?: string[];

  add(addresses: readonly string[]): void {
    for (const a of addresses) {
      const n = this.counts.get(a) ?? 0;
      this.counts.set(a, n + 1);
      if (n === 0 && this.order) this.order.splice(lowerBound(this.order, a), 0, a);
    }
  }

  remove(addresses: readonly string[]): void {
    for (const a of addresses) {
      const n = this.counts.get(a);
      if (n === undefined) continue;
      if (n > 1) {
        this.counts.set(a, n - 1);
        continue;
      }
      this.counts.delete(a);
      if (this.order) this.order.splice(lowerBound(this.order, a), 1);
    }
  }

  /** A copy, sorted: what is handed out is never changed afterwards. */
  sorted(): string[] {
    this.order ??= [...this.counts.keys()].sort(byText);
    return this.order.slice();
  }
}

export class SetTable {
  private readonly entries = new Map<string, Entry>();
  /** Workload key → ids of the member-tracking sets it is in. */
  private readonly setsOf = new Map<string, Set<string>>();
  private addressCache?: AddressSet[];
  private namedCache?: NamedPortSet[];
  /** The ids in order, kept while no set comes or goes (members change far more often). */
  private sortedIds?: string[];

  constructor(private readonly matcher: SelectionMatcher) {}

  /** Takes one more reference to a set; a new set is filled from `workloads`. */
  ref(id: string, spec: SetSpec, workloads: Iterable<Workload>): void {
    const e = this.entries.get(id);
    if (e) {
      e.refs++;
      return;
    }
    this.entries.set(id, {
      spec,
      refs: 1,
      byWorkload: new Map(),
      ...(spec.kind === 'selection' ? { addresses: new AddressCounts() } : {}),
    });
    this.sortedIds = undefined;
    this.changed(id);
    if (spec.kind !== 'nets') for (const w of workloads) this.place(id, w);
  }

  unref(id: string): void {
    const e = this.entries.get(id);
    if (!e) return;
    if (--e.refs > 0) return;
    for (const key of e.byWorkload.keys()) this.setsOf.get(key)?.delete(id);
    this.entries.delete(id);
    this.sortedIds = undefined;
    this.changed(id);
  }

  /** An endpoint was added or changed: it is placed in or out of every set that tracks members. */
  putWorkload(w: Workload): void {
    for (const [id, e] of this.entries) if (e.spec.kind !== 'nets') this.place(id, w);
  }

  deleteWorkload(key: string): void {
    for (const id of this.setsOf.get(key) ?? []) {
      const e = this.entries.get(id);
      const before = e?.byWorkload.get(key);
      if (before !== undefined) e!.addresses?.remove(before as readonly string[]);
      e?.byWorkload.delete(key);
      this.changed(id);
    }
    this.setsOf.delete(key);
  }

  /** Felix's address sets, by id. Rebuilt only where members changed. */
  addressSets(): readonly AddressSet[] {
    if (!this.addressCache) {
      this.addressCache = [];
      for (const id of this.ids()) {
        const e = this.entries.get(id)!;
        if (e.spec.kind !== 'namedPorts') this.addressCache.push(this.build(id, e) as AddressSet);
      }
    }
    return this.addressCache;
  }

  namedPortSets(): readonly NamedPortSet[] {
    if (!this.namedCache) {
      this.namedCache = [];
      for (const id of this.ids()) {
        const e = this.entries.get(id)!;
        if (e.spec.kind === 'namedPorts') this.namedCache.push(this.build(id, e) as NamedPortSet);
      }
    }
    return this.namedCache;
  }

  private ids(): readonly string[] {
    this.sortedIds ??= [...this.entries.keys()].sort(byText);
    return this.sortedIds;
  }

  private build(id: string, e: Entry): AddressSet | NamedPortSet {
    if (e.built) return e.built;
    const spec = e.spec;
    if (spec.kind === 'nets') {
      e.built = { id, members: [...new Set(spec.nets)].sort(byText) };
    } else if (spec.kind === 'selection') {
      // Endpoint addresses are bare addresses: felix keeps such a set without intervals.
      e.built = { id, members: e.addresses!.sorted(), hosts: true };
    } else {
      const members = new Map<string, NamedPortMember>();
      for (const list of e.byWorkload.values()) {
        for (const m of list as readonly NamedPortMember[]) members.set(`${m.address} ${m.protocol} ${m.port}`, m);
      }
      e.built = { id, members: [...members.keys()].sort(byText).map((k) => members.get(k)!) };
    }
    return e.built;
  }

  /** What `w` contributes to set `id`, or undefined when it is not in it. */
  private contribution(spec: SetSpec, w: Workload): readonly string[] | readonly NamedPortMember[] | undefined {
    if (spec.kind === 'selection') return this.matcher.matches(spec.selection, w) ? w.addresses : undefined;
    if (spec.kind !== 'namedPorts' || !spec.within.every((s) => this.matcher.matches(s, w))) return undefined;
    const out: NamedPortMember[] = [];
    for (const p of w.ports) {
      if (p.protocol !== spec.protocol || !spec.names.includes(p.name)) continue;
      for (const address of w.addresses) out.push({ address, protocol: p.protocol, port: p.port });
    }
    return out.length ? out : undefined;
  }

  private place(id: string, w: Workload): void {
    const e = this.entries.get(id)!;
    const now = this.contribution(e.spec, w);
    const before = e.byWorkload.get(w.key);
    if (now === undefined) {
      if (before === undefined) return;
      e.addresses?.remove(before as readonly string[]);
      e.byWorkload.delete(w.key);
      this.setsOf.get(w.key)?.delete(id);
    } else {
      if (before !== undefined && sameMembers(before, now)) return;
      if (e.addresses) {
        if (before !== undefined) e.addresses.remove(before as readonly string[]);
        e.addresses.add(now as readonly string[]);
      }
      e.byWorkload.set(w.key, now);
      let ids = this.setsOf.get(w.key);
      if (!ids) this.setsOf.set(w.key, (ids = new Set()));
      ids.add(id);
    }
    this.changed(id);
  }

  private changed(id: string): void {
    const e = this.entries.get(id);
    if (e) e.built = undefined;
    // A set that went away (kind unknown) leaves both lists.
    const kind = e?.spec.kind;
    if (kind === undefined || kind === 'namedPorts') this.namedCache = undefined;
    if (kind !== 'namedPorts') this.addressCache = undefined;
  }
}

function sameMembers(a: readonly string[] | readonly NamedPortMember[], b: readonly string[] | readonly NamedPortMember[]): boolean {
  return a.length === b.length && JSON.stringify(a) === JSON.stringify(b);
}
