// The decision process, RFC 4271 §9.1.2. Like the RFC (and unlike a pairwise comparator)
// it narrows the set of candidates step by step, so that MED, which only compares routes
// from the same neighbour AS and is therefore not transitive, gives the same answer
// whatever order the routes arrived in.
//
// Steps, each applied only to the routes that tied on every earlier step:
//   0. not LLGR_STALE over LLGR_STALE (RFC 9494: a route kept past its peer's graceful
//      restart is the least preferred, whatever its other attributes)
//   1. highest LOCAL_PREF (absent: the configured default, 100 unless set); the LOCAL_PREF 0 a
//      drain puts on what we originate (RFC 8326, GRACEFUL_SHUTDOWN) is for our peers, and
//      counts as the default here: our own prefix coming back from a peer never beats it
//   2. locally originated over learned
//   3. shortest AS_PATH (an AS_SET counts 1, confederation segments 0)
//   4. lowest ORIGIN (IGP < EGP < INCOMPLETE)
//   5. lowest MED among routes from the same neighbour AS (or among all: always-compare-med);
//      a missing MED is 0
//   6. eBGP-learned over iBGP-learned
//      (interior cost to the next hop: skipped; the RIB does not resolve next hops through an IGP)
//   -- the routes still tied here are the ECMP candidates
//   7. lowest BGP identifier: ORIGINATOR_ID when present, else the peer's (RFC 4456 §9)
//   8. shortest CLUSTER_LIST
//   9. lowest peer address
//  10. lowest ADD-PATH identifier received (two paths from one peer)
import { COMMUNITY_GRACEFUL_SHUTDOWN, COMMUNITY_LLGR_STALE } from './attr-set.js';
import type { Path } from './table.js';
import { multipathCount, setMultipathCount } from './table.js';

export interface DecisionOptions {
  defaultLocalPref: number;
  alwaysCompareMed: boolean;
  maxPaths: number;
  multipathRelax: boolean;
}

const all: Path[] = [];
const cand: Path[] = [];
const mp: Path[] = [];

function routerId(p: Path): number {
  const o = p.attrs.originatorId;
  return o >= 0 ? o : p.peer.routerIdNumber;
}

/** Orders the tie-breaks after step 6: negative when a is preferred. */
export function compareTieBreak(a: Path, b: Path): number {
  const ra = routerId(a);
  const rb = routerId(b);
  if (ra !== rb) return ra - rb;
  const ca = a.attrs.clusterListLength;
  const cb = b.attrs.clusterListLength;
  if (ca !== cb) return ca - cb;
  const aa = a.peer.addressRank;
  const ab = b.peer.addressRank;
  if (aa !== ab) return aa < ab ? -1 : 1;
  return a.pathId - b.pathId;
}

/**
 * Steps 0-4 at once: they are total preorders, so one pass keeps the candidates that tie on
 * all four at their best (a lexicographic maximum). One comparison, not a closure per step:
 * this runs for every prefix that has more than one path.
 */
function keepBestSteps1to4(n: number, defaultLocalPref: number): number {
  let k = 0;
  let best = cand[0];
  for (let i = 0; i < n; i++) {
    const p = cand[i];
    const c = i === 0 ? 0 : compareSteps1to4(p, best, defaultLocalPref);
    if (c < 0) {
      best = p;
      k = 0;
    }
    if (c <= 0) cand[k++] = p;
  }
  return k;
}

/** Negative when a wins on steps 0-4, 0 on a tie. */
function compareSteps1to4(a: Path, b: Path, defaultLocalPref: number): number {
  const sa = a.attrs.wellKnown & COMMUNITY_LLGR_STALE;
  const sb = b.attrs.wellKnown & COMMUNITY_LLGR_STALE;
  if (sa !== sb) return sa - sb;
  let la = a.attrs.localPref >= 0 ? a.attrs.localPref : defaultLocalPref;
  let lb = b.attrs.localPref >= 0 ? b.attrs.localPref : defaultLocalPref;
  if (la !== lb) {
    // Seen only where they differ, so ties pay nothing. A draining speaker that let its own
    // prefix lose to the copy a peer sends back (through a ToR's as-override, where no AS loop
    // shows) would send it on round that loop while its peers still forward to it.
    if (drainedLocal(a)) la = defaultLocalPref;
    if (drainedLocal(b)) lb = defaultLocalPref;
    if (la !== lb) return lb - la;
  }
  const oa = a.peer.type === 'local' ? 1 : 0;
  const ob = b.peer.type === 'local' ? 1 : 0;
  if (oa !== ob) return ob - oa;
  if (a.attrs.asPathLength !== b.attrs.asPathLength) return a.attrs.asPathLength - b.attrs.asPathLength;
  return a.attrs.origin - b.attrs.origin;
}

function drainedLocal(p: Path): boolean {
  return p.peer.type === 'local' && (p.attrs.wellKnown & COMMUNITY_GRACEFUL_SHUTDOWN) !== 0;
}

/** Step 6: eBGP over iBGP, when both are still there. */
function keepEbgp(n: number): number {
  let any = false;
  for (let i = 0; i < n; i++) if (cand[i].peer.type === 'ebgp') any = true;
  if (!any) return n;
  let k = 0;
  for (let i = 0; i < n; i++) if (cand[i].peer.type === 'ebgp') cand[k++] = cand[i];
  return k;
}

function med(p: Path): number {
  return Math.max(p.attrs.med, 0);
}

function neighbourAs(p: Path): number {
  // A route with no AS in its path came from within our AS.
  return p.attrs.neighborAs;
}

function keepLowestMed(n: number, always: boolean): number {
  let k = 0;
  for (let i = 0; i < n; i++) {
    const p = cand[i];
    let beaten = false;
    for (let j = 0; j < n && !beaten; j++) {
      const q = cand[j];
      if (q !== p && (always || neighbourAs(q) === neighbourAs(p)) && med(q) < med(p)) beaten = true;
    }
    if (!beaten) mp[k++] = p;
  }
  for (let i = 0; i < k; i++) cand[i] = mp[i];
  return k;
}

/**
 * Two paths, one best: most prefixes with more than one path have two, and between two the
 * steps are one comparison each (MED's non-transitivity needs a third path to show).
 */
function selectOfTwo(a: Path, b: Path, o: DecisionOptions): Path {
  let c = compareSteps1to4(a, b, o.defaultLocalPref);
  if (c === 0 && (o.alwaysCompareMed || neighbourAs(a) === neighbourAs(b))) c = med(a) - med(b);
  if (c === 0 && a.peer.type !== b.peer.type) {
    if (a.peer.type === 'ebgp') c = -1;
    else if (b.peer.type === 'ebgp') c = 1;
  }
  if (c === 0) c = compareTieBreak(a, b);
  const best = c <= 0 ? a : b;
  const other = best === a ? b : a;
  best.next = other;
  other.next = null;
  setMultipathCount(best, 1);
  return best;
}

/**
 * Runs the decision process over the paths of one prefix, reorders the list (best, then
 * the rest of the ECMP set, then the others in their previous order), records the ECMP
 * count on the new first path and returns it.
 */
export function selectBest(head: Path, o: DecisionOptions): Path {
  if (head.next === null) {
    if (multipathCount(head) !== 1) setMultipathCount(head, 1);
    return head;
  }
  if (head.next.next === null && o.maxPaths <= 1) return selectOfTwo(head, head.next, o);
  let total = 0;
  for (let p: Path | null = head; p !== null; p = p.next) all[total++] = p;
  for (let i = 0; i < total; i++) cand[i] = all[i];
  let n = keepBestSteps1to4(total, o.defaultLocalPref);
  if (n > 1) n = keepLowestMed(n, o.alwaysCompareMed);
  if (n > 1) n = keepEbgp(n);
  // Steps 7-10 are total orders. One best: a scan finds it. Multipath: the tied are sorted,
  // so the ECMP set is taken in preference order.
  if (n > 1 && o.maxPaths <= 1) {
    let b = 0;
    for (let i = 1; i < n; i++) if (compareTieBreak(cand[i], cand[b]) < 0) b = i;
    const t = cand[0];
    cand[0] = cand[b];
    cand[b] = t;
  } else if (n > 1) {
    const tied = cand.slice(0, n).sort(compareTieBreak);
    for (let i = 0; i < n; i++) cand[i] = tied[i];
  }
  const best = cand[0];
  let m = 1;
  mp[0] = best;
  if (o.maxPaths > 1 && best.peer.type !== 'local') {
    for (let i = 1; i < n && m < o.maxPaths; i++) {
      const c = cand[i];
      if (best.peer.type === 'ebgp' && !o.multipathRelax && c.attrs.neighborAs !== best.attrs.neighborAs) continue;
      let dup = false;
      for (let j = 0; j < m; j++) if (mp[j].nextHop === c.nextHop) dup = true;
      if (!dup) mp[m++] = c;
    }
  }
  // Relink: the ECMP set first, then everything else in its previous order.
  let tail = mp[0];
  for (let i = 1; i < m; i++) {
    tail.next = mp[i];
    tail = mp[i];
  }
  for (let i = 0; i < total; i++) {
    const p = all[i];
    let inSet = false;
    for (let j = 0; j < m; j++) if (mp[j] === p) inSet = true;
    if (!inSet) {
      tail.next = p;
      tail = p;
    }
  }
  tail.next = null;
  setMultipathCount(best, m);
  for (let i = 0; i < total; i++) all[i] = undefined as unknown as Path;
  return best;
}
