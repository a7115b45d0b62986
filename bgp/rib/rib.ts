// The RIB of a speaker: every peer's Adj-RIB-In, the Loc-RIB and its decision process, and
// the Adj-RIB-Out queues. The speaker drives it: addPeer when a session is established,
// update() for each UPDATE, peerDown() when it goes, pull() on each peer's AdjRibOut when
// its socket can take more. Each mutating call returns the best-path changes it caused.
import { checkedRouterId } from '../../ip/index.js';
import type { AddressFamily, Nlri, PathAttributes, ReceivedUpdate, UpdateMessage } from '../codec/index.js';
import {
  AttrType as T,
  attributesUnread,
  familyOf,
  receivedAttributes,
  receivedNlri,
  unreadMpAttributes,
  updateMessageOf,
  withoutIpv4Prefixes,
} from '../codec/index.js';
import { AdjRibOut, type FamilyOut, type FamilySources } from './adj-rib-out.js';
import { joinAtStart } from './subgroup.js';
import {
  AttrInterner,
  LoopRule,
  NextHop,
  NextHopInterner,
  receivedKey,
  receivedMp,
  receivedNextHop,
  shareableAttributes,
  shareableReceived,
  type AttrSet,
} from './attr-set.js';
import { selectBest, type DecisionOptions } from './decision.js';
import { RibPeer } from './peer.js';
import { Journal } from './journal.js';
import { applyActions, type PolicyActions, type PolicyVerdict } from './policy.js';
import { familyOfPrefix, formatKey, prefixKey, v4Key, v4KeysFromWire, v6Key, v6KeysFromWire, type PrefixKey } from './prefix.js';
import { PrefixSlots } from './slots.js';
import { freeLocalPathId, isStale, localPathId, metaWithId, multipathCount, Path, setStale, NumberedTable } from './table.js';
import type { BestPathChange, RibOptions, RibPeerConfig, RibRoute } from './types.js';
import { groupKey, UpdateGroup } from './update-group.js';

export const FAMILIES: readonly AddressFamily[] = ['ipv4-unicast', 'ipv6-unicast'];

/** Whether two paths (or none) get the same export decisions: same attributes, next hop and peer. */
function sameRoute(a: Path | undefined, b: Path | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.attrs === b.attrs && a.nextHop === b.nextHop && a.peer === b.peer;
}

class FamilyRib {
  readonly outs: AdjRibOut[] = [];
  readonly slots = new PrefixSlots();
  readonly journal = new Journal(this.slots);
  readonly table = new NumberedTable(this.slots);
  /** The last change that woke no one, and the idle list it was decided against (see Rib.wake). */
  quietOld: Path | undefined;
  quietBest: Path | undefined;
  quietIdle = -1;
  constructor(readonly family: AddressFamily) {}
}

export interface OriginateOptions {
  /** Default: IGP origin, empty AS_PATH. */
  attributes?: PathAttributes;
  /** Default 0.0.0.0 / :: : "ourselves", replaced by the session's local address on export. */
  nextHop?: string;
}

export class Rib {
  readonly localAs: number;
  readonly routerId: string;
  /** The source of locally originated routes. */
  readonly localPeer: RibPeer;
  private readonly decision: DecisionOptions;
  private readonly collect: () => boolean;
  private readonly attrs: AttrInterner;
  private readonly nextHops = new NextHopInterner();
  private readonly fams: Record<AddressFamily, FamilyRib> = {
    'ipv4-unicast': new FamilyRib('ipv4-unicast'),
    'ipv6-unicast': new FamilyRib('ipv6-unicast'),
  };
  private readonly peerSet = new Set<RibPeer>();
  private readonly groups = new Map<string, UpdateGroup>();
  private changes: BestPathChange[] = [];
  /** Numbers wake() calls, so that an update group's verdict is reused within one. */
  private wakeCall = 0;
  private pathCount = 0;

  constructor(private readonly options: RibOptions) {
    if (!Number.isInteger(options.localAs) || options.localAs <= 0 || options.localAs > 0xffffffff) {
      throw new TypeError(`localAs: ${options.localAs} is not an AS number`);
    }
    this.localAs = options.localAs;
    this.routerId = checkedRouterId(options.routerId);
    this.attrs = new AttrInterner(new LoopRule(this.localAs, this.routerId, options.clusterId));
    const mp = options.multipath?.maxPaths ?? 1;
    if (!Number.isInteger(mp) || mp < 1 || mp > 63) throw new TypeError(`multipath.maxPaths: ${mp} is not between 1 and 63`);
    this.decision = {
      defaultLocalPref: options.defaultLocalPref ?? 100,
      alwaysCompareMed: options.alwaysCompareMed === true,
      maxPaths: mp,
      multipathRelax: options.multipath?.relax === true,
    };
    const collect = options.collectChanges;
    this.collect = typeof collect === 'function' ? collect : collect === false ? () => false : () => true;
    this.localPeer = new RibPeer({ address: '0.0.0.0', asn: options.localAs, routerId: options.routerId }, options.localAs, 'local');
  }

  // ---- peers -------------------------------------------------------------------------

  /** Registers a peer whose session just reached Established and starts its initial table. */
  addPeer(config: RibPeerConfig): RibPeer {
    const peer = new RibPeer(config, this.localAs);
    this.peerSet.add(peer);
    this.attachOut(peer);
    return peer;
  }

  /** The same peer back after a session loss (its stale routes are still its own). */
  peerUp(peer: RibPeer, config?: RibPeerConfig): void {
    this.checkPeer(peer);
    if (peer.up) this.detachOut(peer);
    if (config !== undefined) peer.reconfigure(config);
    this.attachOut(peer);
  }

  /**
   * The session went down. Routes of the families in keepStale stay, marked stale
   * (graceful restart helper, RFC 4724 §4.2); all others are removed.
   */
  peerDown(peer: RibPeer, options: { keepStale?: AddressFamily[] } = {}): BestPathChange[] {
    this.checkPeer(peer);
    this.detachOut(peer);
    const keep = options.keepStale ?? [];
    for (const f of FAMILIES) {
      if (keep.includes(f)) this.markStaleInternal(peer, f);
      else this.removeWhere(peer, f, false);
    }
    return this.take();
  }

  /** Forgets the peer and every route it sent. */
  removePeer(peer: RibPeer): BestPathChange[] {
    this.checkPeer(peer);
    this.detachOut(peer);
    for (const f of FAMILIES) this.removeWhere(peer, f, false);
    this.peerSet.delete(peer);
    return this.take();
  }

  peers(): RibPeer[] {
    return [...this.peerSet];
  }

  /** The peer's outbound queue while its session is up. */
  adjRibOut(peer: RibPeer): AdjRibOut | undefined {
    return peer.out;
  }

  /** Update groups and their members (for status and tests). */
  updateGroups(): UpdateGroup[] {
    return [...this.groups.values()];
  }

  // ---- inbound -----------------------------------------------------------------------

  /**
   * Applies one UPDATE from a peer: withdrawals first, then announcements. One as received is
   * read from its octets where it can be: its message is made only for what they cannot give.
   */
  update(peer: RibPeer, u: UpdateMessage | ReceivedUpdate): BestPathChange[] {
    const wire = receivedNlri(u);
    // Keyed from the octets, the codec's prefix objects never made: a million of them (a string
    // and an object each) were a tenth of a full table's ingest, GC included.
    const fromOctets = wire?.unread && !wire.addPath;
    // A 4-octet-AS peer's attributes nobody has read: the set is found, or read, by its octets,
    // MP_REACH_NLRI and MP_UNREACH_NLRI are read from them too, and no attribute object is made.
    const raw = peer.fourOctetAs && attributesUnread(u) ? receivedAttributes(u) : undefined;
    const noIpv4 = wire === undefined && withoutIpv4Prefixes(u);
    const a = raw !== undefined && (fromOctets || noIpv4) ? undefined : updateMessageOf(u).attributes;
    if (fromOctets) {
      if (wire.withdrawnCount > 0) {
        const keys = this.wireKeysOf(wire.withdrawn, false, wire.withdrawnCount)!;
        this.withdrawInternal(peer, 'ipv4-unicast', undefined, wire.withdrawnCount, keys);
      }
    } else {
      const withdrawn = updateMessageOf(u).withdrawn;
      if (withdrawn.length > 0) {
        const keys = wire && this.wireKeysOf(wire.withdrawn, wire.addPath, withdrawn.length);
        this.withdrawInternal(peer, 'ipv4-unicast', withdrawn, withdrawn.length, keys);
      }
    }
    // The codec saw whether unread attributes hold MP ones: an IPv4 UPDATE is not searched.
    const mpOctets = a === undefined && unreadMpAttributes(u);
    if (mpOctets) this.mpFromOctets(peer, u, raw!, T.MP_UNREACH_NLRI);
    const unreach = a?.mpUnreach;
    if (unreach?.withdrawn && unreach.withdrawn.length > 0) {
      const f = familyOf(unreach.afi, unreach.safi);
      if (f !== undefined) {
        const keys = this.mpKeysOf(u, T.MP_UNREACH_NLRI, f, unreach.withdrawn);
        this.withdrawInternal(peer, f, unreach.withdrawn, unreach.withdrawn.length, keys);
      }
    }
    if (fromOctets) {
      // A clean decode has the mandatory attributes of an announcement (or it threw).
      if (wire.nlriCount > 0) {
        const keys = this.wireKeysOf(wire.nlri, false, wire.nlriCount)!;
        // An import policy reads each prefix as text: then the list is made.
        const nlri = peer.importPolicy === undefined ? undefined : updateMessageOf(u).nlri;
        const nextHop = a === undefined ? receivedNextHop(raw!)! : a.nextHop!;
        // raw when read above: each read of the octets is a new Buffer view.
        this.announce(peer, 'ipv4-unicast', nlri, wire.nlriCount, a, raw ?? receivedAttributes(u), nextHop, undefined, keys);
      }
    } else {
      const nlri = updateMessageOf(u).nlri;
      if (nlri.length > 0) {
        const attrs = a!; // not from the octets: read above
        if (attrs.nextHop === undefined || attrs.origin === undefined || attrs.asPath === undefined) {
          // The codec reports this as treat-as-withdraw; a hand-built UPDATE gets the same.
          peer.stats.treatAsWithdraw += nlri.length;
          this.withdrawInternal(peer, 'ipv4-unicast', nlri, nlri.length);
        } else {
          const keys = wire && this.wireKeysOf(wire.nlri, wire.addPath, nlri.length);
          this.announce(peer, 'ipv4-unicast', nlri, nlri.length, attrs, receivedAttributes(u), attrs.nextHop, undefined, keys);
        }
      }
    }
    if (mpOctets) this.mpFromOctets(peer, u, raw!, T.MP_REACH_NLRI);
    const mp = a?.mpReach;
    if (a !== undefined && mp?.nlri && mp.nlri.length > 0) {
      const f = familyOf(mp.afi, mp.safi);
      if (f !== undefined) {
        if (mp.nextHop === undefined || a.origin === undefined || a.asPath === undefined) {
          peer.stats.treatAsWithdraw += mp.nlri.length;
          this.withdrawInternal(peer, f, mp.nlri, mp.nlri.length);
        } else {
          const keys = this.mpKeysOf(u, T.MP_REACH_NLRI, f, mp.nlri);
          this.announce(peer, f, mp.nlri, mp.nlri.length, a, receivedAttributes(u), mp.nextHop, mp.linkLocalNextHop, keys);
        }
      }
    }
    return this.take();
  }

  /** Withdraws a list of prefixes of a peer. */
  withdraw(peer: RibPeer, family: AddressFamily, nlri: readonly Nlri[]): BestPathChange[] {
    this.withdrawInternal(peer, family, nlri, nlri.length);
    return this.take();
  }

  /**
   * RFC 7606 treat-as-withdraw: every prefix of a malformed UPDATE (the partial message the
   * codec attaches to its BgpError) is withdrawn, announced or not.
   */
  treatAsWithdraw(peer: RibPeer, msg: UpdateMessage): BestPathChange[] {
    const lists: Array<[AddressFamily | undefined, readonly Nlri[] | undefined]> = [
      ['ipv4-unicast', msg.withdrawn],
      ['ipv4-unicast', msg.nlri],
      [msg.attributes.mpReach && familyOf(msg.attributes.mpReach.afi, msg.attributes.mpReach.safi), msg.attributes.mpReach?.nlri],
      [
        msg.attributes.mpUnreach && familyOf(msg.attributes.mpUnreach.afi, msg.attributes.mpUnreach.safi),
        msg.attributes.mpUnreach?.withdrawn,
      ],
    ];
    for (const [f, list] of lists) {
      if (f === undefined || !list || list.length === 0) continue;
      peer.stats.treatAsWithdraw += list.length;
      this.withdrawInternal(peer, f, list, list.length);
    }
    return this.take();
  }

  /** Marks every route of the peer in the family stale (graceful restart, or BoRR of an enhanced refresh). */
  markStale(peer: RibPeer, family: AddressFamily): void {
    this.checkPeer(peer);
    this.markStaleInternal(peer, family);
  }

  /** Removes the peer's routes of the family still stale (End-of-RIB, EoRR, or the restart timer fired). */
  sweepStale(peer: RibPeer, family: AddressFamily): BestPathChange[] {
    this.checkPeer(peer);
    this.removeWhere(peer, family, true);
    return this.take();
  }

  // ---- local routes ------------------------------------------------------------------

  /** Originates a prefix (replacing an earlier origination of it). */
  originate(prefix: string, options: OriginateOptions = {}): BestPathChange[] {
    const family = familyOfPrefix(prefix);
    const key = prefixKey(family, prefix);
    const base: PathAttributes = { origin: 'igp', asPath: [], ...shareableAttributes(options.attributes ?? {}) };
    const set = this.attrs.intern(base);
    const nh = this.nextHops.intern(options.nextHop ?? (family === 'ipv4-unicast' ? '0.0.0.0' : '::'));
    this.upsert(this.fams[family], key, this.localPeer, 0, nh, set);
    this.attrs.dropIfUnused(set);
    this.nextHops.dropIfUnused(nh);
    return this.take();
  }

  withdrawOriginated(prefix: string): BestPathChange[] {
    const family = familyOfPrefix(prefix);
    this.remove(this.fams[family], prefixKey(family, prefix), this.localPeer, 0);
    return this.take();
  }

  // ---- queries -----------------------------------------------------------------------

  /** The best path and the other paths of one prefix. */
  lookup(prefix: string): { best: RibRoute; multipath: RibRoute[]; paths: RibRoute[] } | undefined {
    const family = familyOfPrefix(prefix);
    const key = prefixKey(family, prefix);
    const head = this.fams[family].table.get(key);
    if (head === undefined) return undefined;
    const text = formatKey(family, key);
    const paths: RibRoute[] = [];
    for (let p: Path | null = head; p !== null; p = p.next) paths.push(this.view(family, text, p));
    return { best: paths[0], multipath: paths.slice(0, multipathCount(head)), paths };
  }

  /** Best paths of a family, in table order. */
  *routes(family: AddressFamily): IterableIterator<RibRoute> {
    for (const key of this.fams[family].table.keys()) {
      const head = this.fams[family].table.get(key);
      if (head !== undefined) yield this.view(family, formatKey(family, key), head);
    }
  }

  /** A peer's Adj-RIB-In (after import policy) for a family. */
  adjRibIn(peer: RibPeer, family: AddressFamily): RibRoute[] {
    const out: RibRoute[] = [];
    this.fams[family].table.forEach((head, key) => {
      for (let p: Path | null = head; p !== null; p = p.next) {
        if (p.peer === peer) out.push(this.view(family, formatKey(family, key), p));
      }
    });
    return out;
  }

  /** Paths learned from peers, every family (originated ones not counted): what the Adj-RIB-Ins hold. */
  get receivedPaths(): number {
    return this.pathCount - this.localPeer.stats.routes['ipv4-unicast'] - this.localPeer.stats.routes['ipv6-unicast'];
  }

  /** Counts for status pages and benchmarks. */
  stats(): { prefixes: Record<AddressFamily, number>; attributeSets: number; nextHops: number; updateGroups: number } {
    return {
      prefixes: { 'ipv4-unicast': this.fams['ipv4-unicast'].table.size, 'ipv6-unicast': this.fams['ipv6-unicast'].table.size },
      attributeSets: this.attrs.size,
      nextHops: this.nextHops.size,
      updateGroups: this.groups.size,
    };
  }

  // ---- internals ---------------------------------------------------------------------

  private checkPeer(peer: RibPeer): void {
    if (!this.peerSet.has(peer)) throw new TypeError(`peer ${peer.address} is not registered with this RIB (addPeer first)`);
  }

  private attachOut(peer: RibPeer): void {
    const key = groupKey(peer);
    let group = this.groups.get(key);
    if (group === undefined) {
      group = new UpdateGroup(key, peer, {
        localAs: this.localAs,
        defaultLocalPref: this.decision.defaultLocalPref,
        reflection: this.options.reflection,
      });
      this.groups.set(key, group);
    }
    group.members.add(peer);
    const sources: Partial<Record<AddressFamily, FamilySources>> = {};
    for (const f of FAMILIES) sources[f] = this.fams[f];
    const out = new AdjRibOut(peer, group, sources);
    peer.out = out;
    peer.up = true;
    joinAtStart(out);
    for (const f of out.families) this.fams[f].outs.push(out);
  }

  private detachOut(peer: RibPeer): void {
    const out = peer.out;
    peer.up = false;
    if (out === undefined) return;
    peer.out = undefined;
    out.close();
    for (const f of FAMILIES) {
      const outs = this.fams[f].outs;
      const i = outs.indexOf(out);
      if (i >= 0) outs.splice(i, 1);
    }
    const group = out.group;
    group.members.delete(peer);
    if (group.members.size === 0) this.groups.delete(group.key);
  }

  private take(): BestPathChange[] {
    const c = this.changes;
    if (c.length === 0) return c;
    this.changes = [];
    return c;
  }

  private keyOf(family: AddressFamily, prefix: string): PrefixKey {
    return family === 'ipv4-unicast' ? v4Key(prefix) : v6Key(prefix);
  }

  /**
   * The keys of a prefix field as received, in the family's scratch array (reused by the next
   * call); undefined when the field does not hold the count expected (the message was changed).
   */
  private wireKeysOf(field: Buffer, addPath: boolean, expected: number, family: AddressFamily = 'ipv4-unicast'): PrefixKey[] | undefined {
    return this.readKeys(field, addPath, family) === expected ? this.scratchKeys(family) : undefined;
  }

  /** Reads a prefix field's keys into the family's scratch array; returns how many. */
  private readKeys(field: Buffer, addPath: boolean, family: AddressFamily): number {
    return family === 'ipv4-unicast' ? v4KeysFromWire(field, addPath, this.wireKeys) : v6KeysFromWire(field, addPath, this.wireKeysV6);
  }

  private scratchKeys(family: AddressFamily): PrefixKey[] {
    return family === 'ipv4-unicast' ? this.wireKeys : this.wireKeysV6;
  }

  private readonly wireKeys: number[] = [];
  private readonly wireKeysV6: string[] = [];

  /**
   * The keys of a decoded MP_REACH_NLRI or MP_UNREACH_NLRI prefix list (ADD-PATH, or attributes
   * read before) from the attribute's octets: the codec made the list as text, and parsing it
   * back was about a tenth of an IPv6 UPDATE's decoding and update. Undefined for a message not
   * decoded clean with 4-octet AS numbers, or whose octets do not hold as many prefixes.
   */
  private mpKeysOf(
    msg: UpdateMessage | ReceivedUpdate,
    type: typeof T.MP_REACH_NLRI | typeof T.MP_UNREACH_NLRI,
    family: AddressFamily,
    list: readonly Nlri[],
  ): PrefixKey[] | undefined {
    const raw = receivedAttributes(msg);
    const mp = raw && receivedMp(raw, type);
    return mp && this.wireKeysOf(mp.prefixes, list[0].pathId !== undefined, list.length, family);
  }

  /**
   * An MP_UNREACH_NLRI or MP_REACH_NLRI applied from the octets of attributes nobody has read
   * (the codec checked them, and leaves those with ADD-PATH to its full decode). An import
   * policy reads the prefixes as text: for it the list is made.
   */
  private mpFromOctets(
    peer: RibPeer,
    msg: UpdateMessage | ReceivedUpdate,
    raw: Buffer,
    type: typeof T.MP_REACH_NLRI | typeof T.MP_UNREACH_NLRI,
  ): void {
    const mp = receivedMp(raw, type);
    if (mp === undefined) return;
    const f = familyOf(mp.afi, mp.safi);
    if (f === undefined || mp.prefixes.length === 0) return;
    const count = this.readKeys(mp.prefixes, false, f);
    const keys = this.scratchKeys(f);
    if (type === T.MP_UNREACH_NLRI) {
      this.withdrawInternal(peer, f, undefined, count, keys);
      return;
    }
    const nlri = peer.importPolicy === undefined ? undefined : updateMessageOf(msg).attributes.mpReach!.nlri;
    // A clean decode has ORIGIN and AS_PATH beside an MP_REACH_NLRI (or the codec decoded it all).
    this.announce(peer, f, nlri, count, undefined, raw, mp.nextHop!, mp.linkLocal, keys);
  }

  /**
   * Withdraws `count` prefixes: `keys` when given (read from the wire), else those of `nlri`.
   * Without `nlri` there are no path identifiers (no ADD-PATH).
   */
  private withdrawInternal(
    peer: RibPeer,
    family: AddressFamily,
    nlri: readonly Nlri[] | undefined,
    count: number,
    keys?: readonly PrefixKey[],
  ): void {
    const fr = this.fams[family];
    peer.stats.withdrawn += count;
    for (let i = 0; i < count; i++) this.remove(fr, this.keyAt(family, nlri, keys, i), peer, nlri?.[i].pathId ?? 0);
  }

  /** The key of the i-th prefix: from the keys read off the wire when there are some. */
  private keyAt(family: AddressFamily, nlri: readonly Nlri[] | undefined, keys: readonly PrefixKey[] | undefined, i: number): PrefixKey {
    return keys !== undefined ? keys[i] : this.keyOf(family, nlri![i].prefix);
  }

  /** Announces `count` prefixes, as withdrawInternal takes them. */
  private announce(
    peer: RibPeer,
    family: AddressFamily,
    nlri: readonly Nlri[] | undefined,
    count: number,
    /** Undefined when `raw` says it all (a 4-octet-AS peer's). */
    received: Readonly<PathAttributes> | undefined,
    /** The attributes' bytes as received, when the UPDATE came off the wire clean. */
    raw: Buffer | undefined,
    nextHop: string,
    linkLocal: string | undefined,
    /** The prefixes' keys, when read from the wire already. */
    keys?: readonly PrefixKey[],
  ): void {
    const fr = this.fams[family];
    peer.stats.announced += count;
    let set: AttrSet;
    if (raw !== undefined && peer.fourOctetAs) {
      // Keyed by the bytes themselves: a known set costs no decoding or encoding at all.
      const key = receivedKey(raw, peer.type === 'ebgp');
      set = this.attrs.get(key) ?? this.attrs.internReceived(key);
    } else {
      // A 2-octet peer's AS4_PATH is merged in, and what we keep is no longer what came.
      if (received === undefined) throw new TypeError('announce: the attributes, or their octets from a 4-octet-AS peer');
      set = this.attrs.intern(shareableReceived(received, peer.fourOctetAs, peer.type === 'ebgp'));
    }
    if (set.looped) {
      peer.stats.loopRejected += count;
      // An announcement we drop still replaces what the peer sent before for these prefixes.
      for (let i = 0; i < count; i++) this.remove(fr, this.keyAt(family, nlri, keys, i), peer, nlri?.[i].pathId ?? 0);
      this.attrs.dropIfUnused(set);
      return;
    }
    const nh = this.nextHops.intern(nextHop, linkLocal);
    const policy = peer.importPolicy;
    if (policy === undefined) {
      if (nlri === undefined) for (let i = 0; i < count; i++) this.upsert(fr, keys![i], peer, 0, nh, set);
      else for (let i = 0; i < count; i++) this.upsert(fr, this.keyAt(family, nlri, keys, i), peer, nlri[i].pathId ?? 0, nh, set);
    } else {
      // A policy reads each prefix as text: the caller gives the list.
      if (nlri === undefined) throw new TypeError('announce: an import policy needs the prefixes as a list');
      const neighbor = { address: peer.address, asn: peer.asn, type: peer.type };
      let verdict: PolicyVerdict | undefined;
      let lastActions: PolicyActions | undefined;
      let lastSet: AttrSet = set;
      let lastNh: NextHop = nh;
      const made: Array<AttrSet | NextHop> = [];
      for (let i = 0; i < nlri.length; i++) {
        const n = nlri[i];
        const key = keys !== undefined ? keys[i] : this.keyOf(family, n.prefix);
        if (verdict === undefined || policy.perPrefix) {
          verdict = policy.evaluate({ family, prefix: n.prefix, nextHop, attributes: set.attributes, neighbor });
        }
        if (verdict === false) {
          peer.stats.policyRejected++;
          this.remove(fr, key, peer, n.pathId ?? 0);
          continue;
        }
        if (verdict === true) {
          this.upsert(fr, key, peer, n.pathId ?? 0, nh, set);
          continue;
        }
        if (verdict !== lastActions) {
          lastActions = verdict;
          const r = applyActions(set.attributes, verdict);
          lastSet = this.attrs.intern(r.attributes);
          lastNh = r.nextHop !== undefined && r.nextHop !== 'self' ? this.nextHops.intern(r.nextHop) : nh;
          made.push(lastSet, lastNh);
        }
        this.upsert(fr, key, peer, n.pathId ?? 0, lastNh, lastSet);
      }
      for (const x of made) {
        if (x instanceof NextHop) this.nextHops.dropIfUnused(x);
        else this.attrs.dropIfUnused(x as AttrSet);
      }
    }
    this.attrs.dropIfUnused(set);
    this.nextHops.dropIfUnused(nh);
  }

  /** Adds or replaces the path (peer, pathId) of a prefix and reruns the decision. */
  private upsert(fr: FamilyRib, key: PrefixKey, peer: RibPeer, pathId: number, nh: NextHop, set: AttrSet): void {
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
  private remove(fr: FamilyRib, key: PrefixKey, peer: RibPeer, pathId: number): void {
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

  private view(family: AddressFamily, prefix: string, p: Path): RibRoute {
    const r: RibRoute = {
      family,
      prefix,
      pathId: p.pathId,
      nextHop: p.nextHop.address,
      attributes: p.attrs.attributes,
      peer: p.peer.type === 'local' ? undefined : p.peer,
      stale: isStale(p),
    };
    if (p.nextHop.linkLocal !== undefined) r.linkLocalNextHop = p.nextHop.linkLocal;
    return r;
  }

  private markStaleInternal(peer: RibPeer, family: AddressFamily): void {
    if (peer.stats.routes[family] === 0) return;
    this.fams[family].table.forEach((head) => {
      for (let p: Path | null = head; p !== null; p = p.next) if (p.peer === peer) setStale(p, true);
    });
  }

  /** Removes the peer's paths of a family (only the stale ones when staleOnly). */
  private removeWhere(peer: RibPeer, family: AddressFamily, staleOnly: boolean): void {
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
