// The calculation graph's sets with their members, kept current one endpoint at a time. A set
// lives while some policy names it (reference counted); its members are remembered per
// endpoint, so an endpoint that comes, goes or is relabelled touches only the sets it enters
// or leaves, and only those are rebuilt for felix; each rebuilt set records the members it
// gained and lost (felix/policy/derivation.ts), so felix's steps after it work on those alone.
import type { AddressSet, NamedPortSet } from '../../felix/policy/input.js';
import { recordAddressSetChange, recordNamedPortSetChange } from '../../felix/policy/derivation.js';
import { lowerBound, SortedTexts, sortedTextsOf, withSortedTexts } from '../../felix/policy/sorted-texts.js';
import type { SelectionMatcher } from './selection.js';
import type { SetSpec } from './set-spec.js';
import type { Workload } from './workload.js';

type NamedPortMember = NamedPortSet['members'][number];

interface Entry {
  readonly spec: SetSpec;
  refs: number;
  /** What each endpoint in the set contributes: addresses, or (address, protocol, port). */
  readonly byWorkload: Map<string, readonly string[] | readonly NamedPortMember[]>;
  /** The members' keys, kept in order as endpoints come and go (not for nets, which are fixed). */
  readonly keys?: SortedCounts;
  /** A named port set's members by key. */
  readonly ports?: Map<string, NamedPortMember>;
  built?: AddressSet | NamedPortSet;
  /** The set last handed out, while its members changed since: what the next build says it came from. */
  prev?: AddressSet | NamedPortSet;
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The keys of a set's members (a selection's addresses, a named port set's `address protocol
 * port`), each counted once per endpoint that has it, and the keys that appeared or went since
 * the last build, so that the built set can say what changed. The sorted list is made on first
 * use after a bulk fill and kept (an endpoint that comes or goes inserts or removes its own keys)
 * while builds read it whole; a set built as the last one and the change (`sortedFrom`) drops
 * it, so that a pod joining a set of thousands moves no array of thousands.
 */
class SortedCounts {
  private readonly counts = new Map<string, number>();
  private order?: string[];
  /** Whether a build handed the keys out: from then on, what changed is kept. */
  private handedOut = false;
  /** Since the last build (once there was one): key → true (appeared) or false (went). */
  private change = new Map<string, boolean>();

  add(keys: readonly string[]): void {
    for (const a of keys) {
      const n = this.counts.get(a) ?? 0;
      this.counts.set(a, n + 1);
      if (n !== 0) continue;
      this.order?.splice(lowerBound(this.order, a), 0, a);
      // Before the first build nothing was handed out, so there is no change to tell.
      if (!this.handedOut) continue;
      if (this.change.get(a) === false) this.change.delete(a);
      else this.change.set(a, true);
    }
  }

  remove(keys: readonly string[]): void {
    for (const a of keys) {
      const n = this.counts.get(a);
      if (n === undefined) continue;
      if (n > 1) {
        this.counts.set(a, n - 1);
        continue;
      }
      this.counts.delete(a);
      this.order?.splice(lowerBound(this.order, a), 1);
      if (!this.handedOut) continue;
      if (this.change.get(a) === true) this.change.delete(a);
      else this.change.set(a, false);
    }
  }

  /** A copy, sorted (what is handed out is never changed afterwards), and the keys that appeared and went since the last one. */
  sorted(): { keys: string[]; added: string[]; removed: string[] } {
    this.order ??= [...this.counts.keys()].sort(byText);
    const { added, removed } = this.takeChange();
    return { keys: this.order.slice(), added, removed };
  }

  /**
   * The same, without the copy: the keys as SortedTexts told from `from` (what the last build
   * handed out held), or a copy when there is none to tell them from.
   */
  sortedFrom(from: SortedTexts | undefined): { keys: SortedTexts; added: string[]; removed: string[] } {
    if (!from || !this.handedOut) {
      const { keys, added, removed } = this.sorted();
      return { keys: SortedTexts.of(keys), added, removed };
    }
    const { added, removed } = this.takeChange();
    this.order = undefined;
    return { keys: from.changed(added, removed), added, removed };
  }

  private takeChange(): { added: string[]; removed: string[] } {
    const added: string[] = [];
    const removed: string[] = [];
    for (const [k, appeared] of this.change) (appeared ? added : removed).push(k);
    if (this.change.size) this.change = new Map();
    this.handedOut = true;
    return { added, removed };
  }
}

const portKey = (m: NamedPortMember): string => `${m.address} ${m.protocol} ${m.port}`;

/**
 * The one namespace a set's members can be in, when its selection names one (a namespaced
 * policy's own pods): an endpoint elsewhere need not be matched against it. Undefined: any.
 */
function scopeOf(spec: SetSpec): string | undefined {
  const selections = spec.kind === 'selection' ? [spec.selection] : spec.kind === 'namedPorts' ? spec.within : [];
  for (const s of selections) if (s.namespaces.kind === 'name') return s.namespaces.name;
  return undefined;
}

/** The endpoints of a namespace (undefined: of every namespace). */
export type WorkloadsIn = (namespace: string | undefined) => Iterable<Workload>;

/** A list handed out, and how it came from the one before: these sets rebuilt or new, these ids gone. */
interface ListChange<T> {
  readonly from: readonly T[];
  readonly changed: readonly T[];
  /** Whether a set of `changed` is new. */
  readonly came: boolean;
  readonly removed: readonly string[];
}

/** Ids of one list's sets that came and went since it was last handed out. */
interface Turnover {
  readonly came: Set<string>;
  readonly went: Set<string>;
}

export class SetTable {
  private readonly entries = new Map<string, Entry>();
  /** Workload key → ids of the member-tracking sets it is in. */
  private readonly setsOf = new Map<string, Set<string>>();
  /** Member-tracking sets by the one namespace their members can be in, and those of any namespace. */
  private readonly scoped = new Map<string, Set<string>>();
  private readonly unscoped = new Set<string>();
  /** The lists last handed out, and whether a set of theirs changed since. */
  private addressCache?: AddressSet[];
  private namedCache?: NamedPortSet[];
  private addressStale = true;
  private namedStale = true;
  /** The ids in order, kept while no set comes or goes (members change far more often). */
  private sortedIds?: string[];
  /** Each id's place in its list, while the ids stay as they were when the list was made. */
  private addressPlaces?: Map<string, number>;
  private namedPlaces?: Map<string, number>;
  /** Sets whose members changed since their list was last made. */
  private readonly dirty = new Set<string>();
  /** How the lists last handed out came from the ones before; undefined after a set came or went. */
  private addressChange?: ListChange<AddressSet>;
  private namedChange?: ListChange<NamedPortSet>;
  private readonly addressTurnover: Turnover = { came: new Set(), went: new Set() };
  private readonly namedTurnover: Turnover = { came: new Set(), went: new Set() };

  constructor(private readonly matcher: SelectionMatcher) {}

  /** Takes one more reference to a set; a new set is filled from `workloads` (those of its namespace, where it has one). */
  ref(id: string, spec: SetSpec, workloads: WorkloadsIn): void {
    const e = this.entries.get(id);
    if (e) {
      e.refs++;
      return;
    }
    this.entries.set(id, {
      spec,
      refs: 1,
      byWorkload: new Map(),
      ...(spec.kind !== 'nets' ? { keys: new SortedCounts() } : {}),
      ...(spec.kind === 'namedPorts' ? { ports: new Map<string, NamedPortMember>() } : {}),
    });
    this.idsChanged();
    const t = this.turnover(spec);
    if (!t.went.delete(id)) t.came.add(id);
    this.changed(id);
    if (spec.kind === 'nets') return;
    const scope = scopeOf(spec);
    if (scope === undefined) this.unscoped.add(id);
    else {
      let ids = this.scoped.get(scope);
      if (!ids) this.scoped.set(scope, (ids = new Set()));
      ids.add(id);
    }
    for (const w of workloads(scope)) this.place(id, w);
  }

  unref(id: string): void {
    const e = this.entries.get(id);
    if (!e) return;
    if (--e.refs > 0) return;
    for (const key of e.byWorkload.keys()) this.setsOf.get(key)?.delete(id);
    this.entries.delete(id);
    const scope = scopeOf(e.spec);
    if (scope === undefined) this.unscoped.delete(id);
    else {
      const ids = this.scoped.get(scope);
      ids?.delete(id);
      if (ids?.size === 0) this.scoped.delete(scope);
    }
    this.idsChanged();
    const t = this.turnover(e.spec);
    if (!t.came.delete(id)) t.went.add(id);
    this.changed(id);
  }

  private turnover(spec: SetSpec): Turnover {
    return spec.kind === 'namedPorts' ? this.namedTurnover : this.addressTurnover;
  }

  /**
   * An endpoint was added or changed: it is placed in or out of every set that tracks members
   * and could hold it (those of its namespace or of any), and out of those it was in.
   */
  putWorkload(w: Workload): void {
    const was = this.setsOf.get(w.key);
    for (const id of this.unscoped) this.place(id, w);
    const mine = this.scoped.get(w.namespace);
    if (mine) for (const id of mine) this.place(id, w);
    if (was) for (const id of [...was]) if (!this.unscoped.has(id) && !mine?.has(id)) this.place(id, w);
  }

  deleteWorkload(key: string): void {
    for (const id of this.setsOf.get(key) ?? []) {
      const e = this.entries.get(id);
      const before = e?.byWorkload.get(key);
      if (before !== undefined) this.take(e!, before);
      e?.byWorkload.delete(key);
      this.changed(id);
    }
    this.setsOf.delete(key);
  }

  /** Felix's address sets, by id. Rebuilt only where members changed. */
  addressSets(): readonly AddressSet[] {
    if (this.addressStale || !this.addressCache) {
      const mine = (e: Entry) => e.spec.kind !== 'namedPorts';
      const places = this.addressPlaces ?? (this.addressPlaces = new Map());
      const { list, change } = this.list(this.addressCache, places, mine, this.addressTurnover);
      this.addressCache = list as AddressSet[];
      this.addressChange = change as ListChange<AddressSet> | undefined;
      this.addressStale = false;
      this.settle(mine);
    }
    return this.addressCache;
  }

  namedPortSets(): readonly NamedPortSet[] {
    if (this.namedStale || !this.namedCache) {
      const mine = (e: Entry) => e.spec.kind === 'namedPorts';
      const places = this.namedPlaces ?? (this.namedPlaces = new Map());
      const { list, change } = this.list(this.namedCache, places, mine, this.namedTurnover);
      this.namedCache = list as NamedPortSet[];
      this.namedChange = change as ListChange<NamedPortSet> | undefined;
      this.namedStale = false;
      this.settle(mine);
    }
    return this.namedCache;
  }

  /**
   * How the address and named port set lists last handed out came from `sets` and
   * `namedPortSets` (lists handed out before): the sets rebuilt, with the same ids. Undefined
   * when a set came or went between them.
   */
  changeFrom(
    sets: readonly AddressSet[],
    namedPortSets: readonly NamedPortSet[],
  ): { sets: readonly AddressSet[]; namedPortSets: readonly NamedPortSet[] } | undefined {
    const e = this.editFrom(sets, namedPortSets);
    if (!e || e.came || e.removedSets.length || e.removedNamedPortSets.length) return undefined;
    return { sets: e.sets, namedPortSets: e.namedPortSets };
  }

  /**
   * The same, where sets may also have come (among `sets` and `namedPortSets`, then `came`)
   * and gone (their ids). Undefined when the lists were not made from these.
   */
  editFrom(
    sets: readonly AddressSet[],
    namedPortSets: readonly NamedPortSet[],
  ):
    | {
        sets: readonly AddressSet[];
        namedPortSets: readonly NamedPortSet[];
        came: boolean;
        removedSets: readonly string[];
        removedNamedPortSets: readonly string[];
      }
    | undefined {
    const none = { changed: [], came: false, removed: [] };
    const a = this.addressSets() === sets ? none : this.addressChange?.from === sets ? this.addressChange : undefined;
    const n = this.namedPortSets() === namedPortSets ? none : this.namedChange?.from === namedPortSets ? this.namedChange : undefined;
    if (!a || !n) return undefined;
    return {
      sets: a.changed as readonly AddressSet[],
      namedPortSets: n.changed as readonly NamedPortSet[],
      came: a.came || n.came,
      removedSets: a.removed,
      removedNamedPortSets: n.removed,
    };
  }

  private ids(): readonly string[] {
    this.sortedIds ??= [...this.entries.keys()].sort(byText);
    return this.sortedIds;
  }

  private idsChanged(): void {
    this.sortedIds = undefined;
    this.addressPlaces = this.namedPlaces = undefined;
  }

  /**
   * One of the two lists: while the ids stay, the last one with its changed sets rebuilt in
   * place (a pod add touches a few of hundreds), else every set in id order.
   */
  private list(
    last: readonly (AddressSet | NamedPortSet)[] | undefined,
    places: Map<string, number>,
    mine: (e: Entry) => boolean,
    turnover: Turnover,
  ): { list: (AddressSet | NamedPortSet)[]; change?: ListChange<AddressSet | NamedPortSet> } {
    if (places.size && last && !turnover.came.size && !turnover.went.size) {
      const list = last.slice();
      const changed: (AddressSet | NamedPortSet)[] = [];
      for (const id of this.dirty) {
        const e = this.entries.get(id);
        const at = places.get(id);
        if (!e || at === undefined || !mine(e)) continue;
        list[at] = this.build(id, e);
        changed.push(list[at]!);
      }
      return { list, change: { from: last, changed, came: false, removed: [] } };
    }
    // Sets came or went: the list is made again in id order (each set built only if it changed).
    const list: (AddressSet | NamedPortSet)[] = [];
    const changed: (AddressSet | NamedPortSet)[] = [];
    places.clear();
    for (const id of this.ids()) {
      const e = this.entries.get(id)!;
      if (!mine(e)) continue;
      places.set(id, list.length);
      const built = this.build(id, e);
      list.push(built);
      if (this.dirty.has(id)) changed.push(built);
    }
    const change = last && { from: last, changed, came: turnover.came.size > 0, removed: [...turnover.went] };
    turnover.came.clear();
    turnover.went.clear();
    return change ? { list, change } : { list };
  }

  private settle(mine: (e: Entry) => boolean): void {
    for (const id of this.dirty) {
      const e = this.entries.get(id);
      if (!e || mine(e)) this.dirty.delete(id);
    }
  }

  private build(id: string, e: Entry): AddressSet | NamedPortSet {
    if (e.built) return e.built;
    const spec = e.spec;
    const prev = e.prev;
    e.prev = undefined;
    if (spec.kind === 'nets') {
      e.built = { id, members: [...new Set(spec.nets)].sort(byText) };
    } else if (spec.kind === 'selection') {
      // Endpoint addresses are bare addresses: felix keeps such a set without intervals.
      // The members are told as the last set's and the change, not copied (sorted-texts.ts).
      const { keys, added, removed } = e.keys!.sortedFrom(prev && sortedTextsOf(prev as AddressSet, 'members'));
      const built = withSortedTexts<AddressSet>({ id, members: [], hosts: true }, 'members', keys);
      if (prev) recordAddressSetChange(built, { from: prev as AddressSet, added, removed });
      e.built = built;
    } else {
      const { keys, added, removed } = e.keys!.sorted();
      const ports = e.ports!;
      const built: NamedPortSet = { id, members: keys.map((k) => ports.get(k)!) };
      // A member that went stayed in `ports` until now, to be named here.
      const removedMembers = removed.map((k) => ports.get(k)!);
      for (const k of removed) ports.delete(k);
      if (prev)
        recordNamedPortSetChange(built, { from: prev as NamedPortSet, added: added.map((k) => ports.get(k)!), removed: removedMembers });
      e.built = built;
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

  private keysOf(e: Entry, members: readonly string[] | readonly NamedPortMember[]): readonly string[] {
    return e.ports ? (members as readonly NamedPortMember[]).map(portKey) : (members as readonly string[]);
  }

  private take(e: Entry, members: readonly string[] | readonly NamedPortMember[]): void {
    e.keys?.remove(this.keysOf(e, members));
  }

  private give(e: Entry, members: readonly string[] | readonly NamedPortMember[]): void {
    if (e.ports) for (const m of members as readonly NamedPortMember[]) if (!e.ports.has(portKey(m))) e.ports.set(portKey(m), m);
    e.keys?.add(this.keysOf(e, members));
  }

  private place(id: string, w: Workload): void {
    const e = this.entries.get(id)!;
    const now = this.contribution(e.spec, w);
    const before = e.byWorkload.get(w.key);
    if (now === undefined) {
      if (before === undefined) return;
      this.take(e, before);
      e.byWorkload.delete(w.key);
      this.setsOf.get(w.key)?.delete(id);
    } else {
      if (before !== undefined && sameMembers(before, now)) return;
      if (before !== undefined) this.take(e, before);
      this.give(e, now);
      e.byWorkload.set(w.key, now);
      let ids = this.setsOf.get(w.key);
      if (!ids) this.setsOf.set(w.key, (ids = new Set()));
      ids.add(id);
    }
    this.changed(id);
  }

  private changed(id: string): void {
    const e = this.entries.get(id);
    if (e?.built) {
      e.prev ??= e.built;
      e.built = undefined;
    }
    this.dirty.add(id);
    // A set that went away (kind unknown) leaves both lists.
    const kind = e?.spec.kind;
    if (kind === undefined || kind === 'namedPorts') this.namedStale = true;
    if (kind !== 'namedPorts') this.addressStale = true;
  }
}

function sameMembers(a: readonly string[] | readonly NamedPortMember[], b: readonly string[] | readonly NamedPortMember[]): boolean {
  return a.length === b.length && JSON.stringify(a) === JSON.stringify(b);
}
