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
  built?: AddressSet | NamedPortSet;
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export class SetTable {
  private readonly entries = new Map<string, Entry>();
  /** Workload key → ids of the member-tracking sets it is in. */
  private readonly setsOf = new Map<string, Set<string>>();
  private addressCache?: AddressSet[];
  private namedCache?: NamedPortSet[];

  constructor(private readonly matcher: SelectionMatcher) {}

  /** Takes one more reference to a set; a new set is filled from `workloads`. */
  ref(id: string, spec: SetSpec, workloads: Iterable<Workload>): void {
    const e = this.entries.get(id);
    if (e) {
      e.refs++;
      return;
    }
    this.entries.set(id, { spec, refs: 1, byWorkload: new Map() });
    this.changed(id);
    if (spec.kind !== 'nets') for (const w of workloads) this.place(id, w);
  }

  unref(id: string): void {
    const e = this.entries.get(id);
    if (!e) return;
    if (--e.refs > 0) return;
    for (const key of e.byWorkload.keys()) this.setsOf.get(key)?.delete(id);
    this.entries.delete(id);
    this.changed(id);
  }

  /** An endpoint was added or changed: it is placed in or out of every set that tracks members. */
  putWorkload(w: Workload): void {
    for (const [id, e] of this.entries) if (e.spec.kind !== 'nets') this.place(id, w);
  }

  deleteWorkload(key: string): void {
    for (const id of this.setsOf.get(key) ?? []) {
      this.entries.get(id)?.byWorkload.delete(key);
      this.changed(id);
    }
    this.setsOf.delete(key);
  }

  /** Felix's address sets, by id. Rebuilt only where members changed. */
  addressSets(): readonly AddressSet[] {
    if (!this.addressCache) {
      this.addressCache = [];
      for (const id of [...this.entries.keys()].sort(byText)) {
        const e = this.entries.get(id)!;
        if (e.spec.kind !== 'namedPorts') this.addressCache.push(this.build(id, e) as AddressSet);
      }
    }
    return this.addressCache;
  }

  namedPortSets(): readonly NamedPortSet[] {
    if (!this.namedCache) {
      this.namedCache = [];
      for (const id of [...this.entries.keys()].sort(byText)) {
        const e = this.entries.get(id)!;
        if (e.spec.kind === 'namedPorts') this.namedCache.push(this.build(id, e) as NamedPortSet);
      }
    }
    return this.namedCache;
  }

  private build(id: string, e: Entry): AddressSet | NamedPortSet {
    if (e.built) return e.built;
    const spec = e.spec;
    if (spec.kind === 'nets') {
      e.built = { id, members: [...new Set(spec.nets)].sort(byText) };
    } else if (spec.kind === 'selection') {
      const members = new Set<string>();
      for (const addresses of e.byWorkload.values()) for (const a of addresses as readonly string[]) members.add(a);
      // Endpoint addresses are bare addresses: felix keeps such a set without intervals.
      e.built = { id, members: [...members].sort(byText), hosts: true };
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
      e.byWorkload.delete(w.key);
      this.setsOf.get(w.key)?.delete(id);
    } else {
      if (before !== undefined && sameMembers(before, now)) return;
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
