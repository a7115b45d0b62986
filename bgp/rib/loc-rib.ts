// The Loc-RIB: per family, every prefix's paths in one list (best path first, then its ECMP
// set, then the rest: every peer's Adj-RIB-In for the prefix), the decision process rerun on
// each change, the change journal the Adj-RIB-Outs read, the wake-up of the idle ones, and the
// best-path changes for the caller.
import type { AddressFamily } from '../codec/index.js';
import type { AdjRibOut, FamilyOut } from './adj-rib-out.js';
import {
  type AttrInterner,
  type AttrSet,
  COMMUNITY_LLGR_STALE,
  COMMUNITY_NO_LLGR,
  LLGR_STALE,
  type NextHop,
  NextHopInterner,
} from './attr-set.js';
import { selectBest, type DecisionOptions } from './decision.js';
import { Journal } from './journal.js';
import type { RibPeer } from './peer.js';
import { formatKey, type PrefixKey } from './prefix.js';
import { RouteView } from './json.js';
import { PrefixSlots } from './slots.js';
import { freeLocalPathId, isStale, localPathId, metaWithId, multipathCount, NumberedTable, Path, setStale } from './table.js';
import type { BestPathChange, RibRoute } from './types.js';

/** Whether two paths (or none) get the same export decisions: same attributes, next hop and peer. */
function sameRoute(a: Path | undefined, b: Path | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.attrs === b.attrs && a.nextHop === b.nextHop && a.peer === b.peer;
}

export class FamilyRib {
  readonly outs: AdjRibOut[] = [];
  readonly slots = new PrefixSlots();
  readonly journal = new Journal(this.slots);
  readonly table = new NumberedTable(this.slots);
  /** The last change that woke no one, and the idle list it was decided against (see LocRib.wake). */
  quietOld: Path | undefined;
  quietBest: Path | undefined;
  quietIdle = -1;
  constructor(readonly family: AddressFamily) {}
}

export class LocRib {
  readonly fams: Record<AddressFamily, FamilyRib> = {
    'ipv4-unicast': new FamilyRib('ipv4-unicast'),
    'ipv6-unicast': new FamilyRib('ipv6-unicast'),
  };
  readonly nextHops = new NextHopInterner();
  /** Paths held, originated ones included. */
  pathCount = 0;
  /** Received routes with GRACEFUL_SHUTDOWN get LOCAL_PREF 0 (RibOptions.gracefulShutdown). */
  gracefulShutdown = true;
  private changes: BestPathChange[] = [];
  /** Numbers wake() calls, so that an update group's verdict is reused within one. */
  private wakeCall = 0;

  constructor(
    readonly attrs: AttrInterner,
    readonly decision: DecisionOptions,
    /** Whether best-path changes are wanted as objects (RibOptions.collectChanges). */
    private readonly collect: () => boolean,
  ) {}

  /** The best-path changes since the last call (the same empty array when there are none). */
  take(): BestPathChange[] {
    const c = this.changes;
    if (c.length === 0) return c;
    this.changes = [];
    return c;
  }

  /** Adds or replaces the path (peer, pathId) of a prefix and reruns the decision. */
  upsert(fr: FamilyRib, key: PrefixKey, peer: RibPeer, pathId: number, nh: NextHop, set: AttrSet): void {
    const table = fr.table;
    const head = table.get(key);
    if (head === undefined) {
      const p = new Path(peer, pathId, nh, set, null, metaWithId(1));
      this.attrs.acquire(set);
      this.nextHops.acquire(nh);
      peer.stats.routes[fr.family]++;
      this.pathCount++;
      selectBest(p, this.decision);
      table.set(key, p);
      this.changed(fr, key, undefined, null, p);
      return;
    }
    let prev: Path | null = null;
    let cur: Path | null = head;
    while (cur !== null && (cur.peer !== peer || cur.pathId !== pathId)) {
      prev = cur;
      cur = cur.next;
    }
    if (cur !== null && cur.attrs === set && cur.nextHop === nh) {
      // The same route again: a refresh after graceful restart or route refresh.
      if (isStale(cur)) setStale(cur, false);
      return;
    }
    const oldMp = this.multipathOf(head);
    let first = head;
    if (cur !== null) {
      const p = new Path(peer, pathId, nh, set, cur.next, metaWithId(localPathId(cur)));
      if (prev === null) first = p;
      else prev.next = p;
      this.releasePath(cur);
    } else {
      const p = new Path(peer, pathId, nh, set, null, metaWithId(freeLocalPathId(head)));
      prev!.next = p;
      peer.stats.routes[fr.family]++;
      this.pathCount++;
    }
    this.attrs.acquire(set);
    this.nextHops.acquire(nh);
    const best = selectBest(first, this.decision);
    if (best !== head) table.set(key, best);
    this.changed(fr, key, head, oldMp, best);
  }

  /** Removes the path (peer, pathId) of a prefix, if there is one. */
  remove(fr: FamilyRib, key: PrefixKey, peer: RibPeer, pathId: number): void {
    const head = fr.table.get(key);
    if (head === undefined) return;
    let prev: Path | null = null;
    let cur: Path | null = head;
    while (cur !== null && (cur.peer !== peer || cur.pathId !== pathId)) {
      prev = cur;
      cur = cur.next;
    }
    if (cur === null) return;
    this.unlink(fr, key, head, prev, cur);
  }

  private unlink(fr: FamilyRib, key: PrefixKey, head: Path, prev: Path | null, cur: Path): void {
    const oldMp = this.multipathOf(head);
    let first: Path | null = head;
    if (prev === null) first = cur.next;
    else prev.next = cur.next;
    cur.peer.stats.routes[fr.family]--;
    this.pathCount--;
    this.releasePath(cur);
    if (first === null) {
      fr.table.delete(key);
      this.changed(fr, key, head, oldMp, undefined);
      return;
    }
    const best = selectBest(first, this.decision);
    if (best !== head) fr.table.set(key, best);
    this.changed(fr, key, head, oldMp, best);
  }

  private releasePath(p: Path): void {
    this.attrs.release(p.attrs);
    this.nextHops.release(p.nextHop);
  }

  /** The ECMP set other than the best path, or null when there is none (the common case: no allocation). */
  private multipathOf(head: Path): Path[] | null {
    const n = multipathCount(head);
    if (n <= 1) return null;
    const out: Path[] = [];
    let p: Path | null = head.next;
    for (let i = 1; i < n && p !== null; i++, p = p.next) out.push(p);
    return out;
  }

  private sameMultipath(oldMp: Path[] | null, best: Path): boolean {
    const n = multipathCount(best);
    if (oldMp === null) return n <= 1;
    if (oldMp.length !== n - 1) return false;
    let p = best.next;
    for (let i = 0; i < oldMp.length; i++, p = p!.next) if (oldMp[i] !== p) return false;
    return true;
  }

  /** Records a change of one prefix's paths and tells the Adj-RIB-Outs. */
  private changed(fr: FamilyRib, key: PrefixKey, oldHead: Path | undefined, oldMp: Path[] | null, best: Path | undefined): void {
    const bestChanged = oldHead !== best || (best !== undefined && !this.sameMultipath(oldMp, best));
    fr.journal.append(key, bestChanged);
    if (fr.journal.idle.length > 0) this.wake(fr, key, bestChanged ? oldHead : undefined, bestChanged ? best : undefined);
    // Only a path behind the best changed: only ADD-PATH peers see it.
    if (!bestChanged || !this.collect()) return;
    const family = fr.family;
    const prefix = formatKey(family, key);
    if (best === undefined) {
      this.changes.push({ kind: 'removed', family, prefix, best: undefined, multipath: [] });
      return;
    }
    const view = this.view(family, prefix, best);
    const multipath = [view];
    const n = multipathCount(best);
    let p = best.next;
    for (let i = 1; i < n && p !== null; i++, p = p.next) multipath.push(this.view(family, prefix, p));
    this.changes.push({ kind: oldHead === undefined ? 'added' : 'changed', family, prefix, best: view, multipath });
  }

  /**
   * Wakes the idle Adj-RIB-Outs a change may concern: ADD-PATH ones always, the others when
   * their update group exports the old best path (the peer may have it) or the new one. The
   * rest stay idle: in a mesh, most changes concern no one (iBGP learned, iBGP peer), and the
   * group decides that once for all its members. `oldHead` and `best` are undefined when the
   * best path did not change.
   */
  private wake(fr: FamilyRib, key: PrefixKey, oldHead: Path | undefined, best: Path | undefined): void {
    const journal = fr.journal;
    const idle = journal.idle as FamilyOut[];
    // A flood's prefixes come with the same attributes, next hop and peer, one after the
    // other: when the last change woke no one and the idle list is the same, neither does this.
    if (fr.quietIdle === journal.idleChanges && sameRoute(fr.quietOld, oldHead) && sameRoute(fr.quietBest, best)) return;
    // Each group decides once per change, however its members interleave in the idle list.
    const call = ++this.wakeCall;
    let quiet = true;
    let kept = 0;
    for (let i = 0; i < idle.length; i++) {
      const f = idle[i];
      let wake = f.addPath;
      if (!wake && (oldHead !== undefined || best !== undefined)) {
        const g = f.out.group;
        if (g.exportPerPrefix) quiet = false;
        if (g.wakeCall !== call) {
          g.wakeCall = call;
          g.wakeVerdict =
            (oldHead !== undefined && g.exportPath(fr.family, key, oldHead) !== null) ||
            (best !== undefined && g.exportPath(fr.family, key, best) !== null);
        }
        wake = g.wakeVerdict;
      }
      if (wake) {
        quiet = false;
        journal.wake(f);
        f.out.wake();
      } else {
        idle[kept] = f;
        f.place = kept++;
      }
    }
    idle.length = kept;
    fr.quietIdle = quiet ? journal.idleChanges : -1;
    fr.quietOld = quiet ? oldHead : undefined;
    fr.quietBest = quiet ? best : undefined;
  }

  view(family: AddressFamily, prefix: string, p: Path): RibRoute {
    const r = new RouteView(
      family,
      prefix,
      p.pathId,
      p.nextHop.address,
      p.attrs.attributes,
      p.peer.type === 'local' ? undefined : p.peer,
      isStale(p),
    );
    if (p.nextHop.linkLocal !== undefined) r.linkLocalNextHop = p.nextHop.linkLocal;
    return r;
  }

  markStale(peer: RibPeer, family: AddressFamily): void {
    if (peer.stats.routes[family] === 0) return;
    this.fams[family].table.forEach((head) => {
      for (let p: Path | null = head; p !== null; p = p.next) if (p.peer === peer) setStale(p, true);
    });
  }

  /**
   * RFC 9494: the peer's stale paths of a family enter the long-lived stale period. Those with
   * NO_LLGR go; the others carry LLGR_STALE from now on (the decision process then prefers any
   * other path to them, and only peers that do long-lived graceful restart are sent them), and
   * stay stale, for the End-of-RIB or the long-lived stale timer to sweep.
   */
  markLongLivedStale(peer: RibPeer, family: AddressFamily): void {
    if (peer.stats.routes[family] === 0) return;
    const fr = this.fams[family];
    const waiting = (p: Path) => p.peer === peer && isStale(p) && (p.attrs.wellKnown & COMMUNITY_LLGR_STALE) === 0;
    const keys: PrefixKey[] = [];
    fr.table.forEach((head, key) => {
      for (let p: Path | null = head; p !== null; p = p.next) {
        if (waiting(p)) {
          keys.push(key);
          break;
        }
      }
    });
    // A table's paths share few sets: each is marked once.
    const marked = new Map<AttrSet, AttrSet>();
    for (const key of keys) {
      for (;;) {
        const head = fr.table.get(key);
        if (head === undefined) break;
        let prev: Path | null = null;
        let cur: Path | null = head;
        while (cur !== null && !waiting(cur)) {
          prev = cur;
          cur = cur.next;
        }
        if (cur === null) break;
        if ((cur.attrs.wellKnown & COMMUNITY_NO_LLGR) !== 0) {
          this.unlink(fr, key, head, prev, cur);
          continue;
        }
        let set = marked.get(cur.attrs);
        if (set === undefined) {
          const a = cur.attrs.attributes;
          set = this.attrs.intern({ ...a, communities: [...(a.communities ?? []), LLGR_STALE].sort((x, y) => x - y) });
          marked.set(cur.attrs, set);
        }
        const pathId = cur.pathId;
        this.upsert(fr, key, peer, pathId, cur.nextHop, set);
        for (let p: Path | null = fr.table.get(key) ?? null; p !== null; p = p.next) {
          if (p.peer === peer && p.pathId === pathId) {
            setStale(p, true);
            break;
          }
        }
      }
    }
    for (const set of marked.values()) this.attrs.dropIfUnused(set);
  }

  /** Removes the peer's paths of a family (only the stale ones when staleOnly). */
  removeWhere(peer: RibPeer, family: AddressFamily, staleOnly: boolean): void {
    if (peer.stats.routes[family] === 0) return;
    const fr = this.fams[family];
    // Keys first: removing changes the table being walked.
    const keys: PrefixKey[] = [];
    fr.table.forEach((head, key) => {
      for (let p: Path | null = head; p !== null; p = p.next) {
        if (p.peer === peer && (!staleOnly || isStale(p))) {
          keys.push(key);
          break;
        }
      }
    });
    for (const key of keys) {
      for (;;) {
        const head = fr.table.get(key);
        if (head === undefined) break;
        let prev: Path | null = null;
        let cur: Path | null = head;
        while (cur !== null && !(cur.peer === peer && (!staleOnly || isStale(cur)))) {
          prev = cur;
          cur = cur.next;
        }
        if (cur === null) break;
        this.unlink(fr, key, head, prev, cur);
      }
    }
  }
}
