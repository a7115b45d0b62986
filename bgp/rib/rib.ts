// The RIB of a speaker: every peer's Adj-RIB-In, the Loc-RIB and its decision process, and
// the Adj-RIB-Out queues. The speaker drives it: addPeer when a session is established,
// update() for each UPDATE, peerDown() when it goes, pull() on each peer's AdjRibOut when
// its socket can take more. Each mutating call returns the best-path changes it caused.
import type { AddressFamily, Nlri, PathAttributes, ReceivedNlri, ReceivedUpdate, UpdateMessage } from '../codec/index.js';
import {
  Afi,
  AttrType as T,
  Safi,
  attributesUnread,
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
  ipv4Number,
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
import { applyActions, type CompiledPolicy, type PolicyActions, type PolicyVerdict } from './policy.js';
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

function familyOfAfi(afi: number, safi: number): AddressFamily | undefined {
  if (safi !== Safi.UNICAST) return undefined;
  return afi === Afi.IPV4 ? 'ipv4-unicast' : afi === Afi.IPV6 ? 'ipv6-unicast' : undefined;
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
    this.routerId = options.routerId;
    try {
      ipv4Number(options.routerId);
    } catch {
      throw new TypeError(`routerId: "${options.routerId}" is not a dotted-quad BGP identifier`);
    }
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
   * Applies one UPDATE from a peer: withdrawals first, then announcements. One as received
   * whose attributes and IPv4 fields nobody has read is applied from its octets alone
   * (updateFromOctets); any other from its message (updateFromMessage).
   */
  update(peer: RibPeer, u: UpdateMessage | ReceivedUpdate): BestPathChange[] {
    const wire = receivedNlri(u);
    // A 4-octet-AS peer's attributes nobody has read: the set is found, or read, by their
    // octets, MP_REACH_NLRI and MP_UNREACH_NLRI are read from them too. The IPv4 fields are
    // keyed from theirs while their lists are unmade (ADD-PATH ones are left to the message).
    const raw = peer.fourOctetAs && attributesUnread(u) ? receivedAttributes(u) : undefined;
    if (raw !== undefined && (wire === undefined ? withoutIpv4Prefixes(u) : wire.unread && !wire.addPath)) {
      this.updateFromOctets(peer, u, raw, wire);
    } else {
      this.updateFromMessage(peer, u, wire);
    }
    return this.take();
  }

  /** Withdraws a list of prefixes of a peer. */
  withdraw(peer: RibPeer, family: AddressFamily, nlri: readonly Nlri[]): BestPathChange[] {
    this.withdrawList(peer, family, nlri, undefined);
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
      [msg.attributes.mpReach && familyOfAfi(msg.attributes.mpReach.afi, msg.attributes.mpReach.safi), msg.attributes.mpReach?.nlri],
      [
        msg.attributes.mpUnreach && familyOfAfi(msg.attributes.mpUnreach.afi, msg.attributes.mpUnreach.safi),
        msg.attributes.mpUnreach?.withdrawn,
      ],
    ];
    for (const [f, list] of lists) {
      if (f === undefined || !list || list.length === 0) continue;
      peer.stats.treatAsWithdraw += list.length;
      this.withdrawList(peer, f, list, undefined);
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

  // ---- an UPDATE read from its octets -------------------------------------------------

  /**
   * An UPDATE applied from its octets alone: the IPv4 fields keyed from theirs, the attribute
   * set found by its octets, MP_UNREACH_NLRI and MP_REACH_NLRI read from the attribute octets.
   * No message is made, unless an import policy needs the prefixes as text.
   */
  private updateFromOctets(peer: RibPeer, u: UpdateMessage | ReceivedUpdate, raw: Buffer, wire: ReceivedNlri | undefined): void {
    // Keyed from the octets, the codec's prefix objects never made: a million of them (a string
    // and an object each) were a tenth of a full table's ingest, GC included.
    if (wire !== undefined && wire.withdrawnCount > 0) {
      const count = v4KeysFromWire(wire.withdrawn, false, this.v4Keys);
      this.withdrawKeys(peer, 'ipv4-unicast', this.v4Keys, count);
    }
    // The codec saw whether the attributes hold MP ones: an IPv4 UPDATE's are not searched.
    const mp = unreadMpAttributes(u);
    if (mp) this.mpUnreachFromOctets(peer, raw);
    if (wire !== undefined && wire.nlriCount > 0) {
      const count = v4KeysFromWire(wire.nlri, false, this.v4Keys);
      const nextHop = receivedNextHop(raw);
      if (nextHop === undefined) {
        // The codec let no announcement through without its NEXT_HOP: for the type's sake.
        this.treatAsWithdrawKeys(peer, 'ipv4-unicast', this.v4Keys, count);
      } else {
        // An import policy reads each prefix as text: then the list is made.
        const nlri = peer.importPolicy === undefined ? undefined : updateMessageOf(u).nlri;
        this.announceKeys(peer, 'ipv4-unicast', this.setOfOctets(peer, raw), nextHop, undefined, this.v4Keys, count, nlri);
      }
    }
    if (mp) this.mpReachFromOctets(peer, u, raw);
  }

  /** The MP_UNREACH_NLRI of attribute octets (the codec checked it; it decodes one with ADD-PATH whole). */
  private mpUnreachFromOctets(peer: RibPeer, raw: Buffer): void {
    const mp = receivedMp(raw, T.MP_UNREACH_NLRI);
    if (mp === undefined) return;
    const f = familyOfAfi(mp.afi, mp.safi);
    if (f === undefined || mp.prefixes.length === 0) return;
    const count = this.readKeys(mp.prefixes, false, f);
    this.withdrawKeys(peer, f, this.scratchKeys(f), count);
  }

  /** The MP_REACH_NLRI of attribute octets, as mpUnreachFromOctets. */
  private mpReachFromOctets(peer: RibPeer, u: UpdateMessage | ReceivedUpdate, raw: Buffer): void {
    const mp = receivedMp(raw, T.MP_REACH_NLRI);
    if (mp === undefined) return;
    const f = familyOfAfi(mp.afi, mp.safi);
    if (f === undefined || mp.prefixes.length === 0) return;
    const count = this.readKeys(mp.prefixes, false, f);
    const keys = this.scratchKeys(f);
    if (mp.nextHop === undefined) {
      // receivedMp reads MP_REACH_NLRI's next hop always: for the type's sake.
      this.treatAsWithdrawKeys(peer, f, keys, count);
      return;
    }
    // The codec let MP_REACH_NLRI through only with ORIGIN and AS_PATH beside it. An import
    // policy reads each prefix as text: then the attributes are made, and with them the list.
    const nlri = peer.importPolicy === undefined ? undefined : updateMessageOf(u).attributes.mpReach?.nlri;
    this.announceKeys(peer, f, this.setOfOctets(peer, raw), mp.nextHop, mp.linkLocal, keys, count, nlri);
  }

  // ---- an UPDATE read from its message ------------------------------------------------

  /**
   * An UPDATE applied from its message: one built in code, one with ADD-PATH, one from a
   * 2-octet-AS peer (whose attributes the codec decodes whole), one read before. Where the
   * octets it came from still hold a field, its prefixes are keyed from them and its attribute
   * set found by them, which costs less than the text and the objects.
   */
  private updateFromMessage(peer: RibPeer, u: UpdateMessage | ReceivedUpdate, wire: ReceivedNlri | undefined): void {
    const msg = updateMessageOf(u);
    const a = msg.attributes;
    const octets = receivedAttributes(u);
    // IPv4 fields nobody has read are keyed from their octets and their lists never made.
    const unread = wire?.unread && !wire.addPath ? wire : undefined;
    if (unread !== undefined) {
      if (unread.withdrawnCount > 0) {
        const count = v4KeysFromWire(unread.withdrawn, false, this.v4Keys);
        this.withdrawKeys(peer, 'ipv4-unicast', this.v4Keys, count);
      }
    } else if (msg.withdrawn.length > 0) {
      const keys = wire && this.keysIf(wire.withdrawn, wire.addPath, msg.withdrawn.length, 'ipv4-unicast');
      this.withdrawList(peer, 'ipv4-unicast', msg.withdrawn, keys);
    }
    const unreach = a.mpUnreach;
    if (unreach?.withdrawn && unreach.withdrawn.length > 0) {
      const f = familyOfAfi(unreach.afi, unreach.safi);
      if (f !== undefined) this.withdrawList(peer, f, unreach.withdrawn, this.mpKeysOf(octets, T.MP_UNREACH_NLRI, f, unreach.withdrawn));
    }
    // The set is found by the octets while they are what the attributes were decoded from.
    const raw = peer.fourOctetAs ? octets : undefined;
    const mandatory = a.origin !== undefined && a.asPath !== undefined;
    if (unread !== undefined) {
      if (unread.nlriCount > 0) {
        const count = v4KeysFromWire(unread.nlri, false, this.v4Keys);
        if (a.nextHop === undefined || !mandatory) this.treatAsWithdrawKeys(peer, 'ipv4-unicast', this.v4Keys, count);
        else {
          const nlri = peer.importPolicy === undefined ? undefined : msg.nlri;
          this.announceKeys(peer, 'ipv4-unicast', this.setOfMessage(peer, a, raw), a.nextHop, undefined, this.v4Keys, count, nlri);
        }
      }
    } else if (msg.nlri.length > 0) {
      const nlri = msg.nlri;
      if (a.nextHop === undefined || !mandatory) {
        // The codec reports this as treat-as-withdraw; a hand-built UPDATE gets the same.
        peer.stats.treatAsWithdraw += nlri.length;
        this.withdrawList(peer, 'ipv4-unicast', nlri, undefined);
      } else {
        const keys = wire && this.keysIf(wire.nlri, wire.addPath, nlri.length, 'ipv4-unicast');
        this.announceList(peer, 'ipv4-unicast', this.setOfMessage(peer, a, raw), a.nextHop, undefined, nlri, keys);
      }
    }
    const reach = a.mpReach;
    if (reach?.nlri && reach.nlri.length > 0) {
      const f = familyOfAfi(reach.afi, reach.safi);
      if (f === undefined) return;
      if (reach.nextHop === undefined || !mandatory) {
        peer.stats.treatAsWithdraw += reach.nlri.length;
        this.withdrawList(peer, f, reach.nlri, undefined);
      } else {
        const keys = this.mpKeysOf(octets, T.MP_REACH_NLRI, f, reach.nlri);
        this.announceList(peer, f, this.setOfMessage(peer, a, raw), reach.nextHop, reach.linkLocalNextHop, reach.nlri, keys);
      }
    }
  }

  /**
   * The keys of a prefix field as received, in the family's scratch array (reused by the next
   * call); undefined when the field does not hold the count expected (the message was changed).
   */
  private keysIf(field: Buffer, addPath: boolean, expected: number, family: AddressFamily): PrefixKey[] | undefined {
    return this.readKeys(field, addPath, family) === expected ? this.scratchKeys(family) : undefined;
  }

  /**
   * The keys of a decoded MP_REACH_NLRI or MP_UNREACH_NLRI prefix list (ADD-PATH, or attributes
   * read before) from the attribute's octets: the codec made the list as text, and parsing it
   * back was about a tenth of an IPv6 UPDATE's decoding and update. Undefined without the
   * octets of a clean decode with 4-octet AS numbers, or when they do not hold as many prefixes.
   */
  private mpKeysOf(
    octets: Buffer | undefined,
    type: typeof T.MP_REACH_NLRI | typeof T.MP_UNREACH_NLRI,
    family: AddressFamily,
    list: readonly Nlri[],
  ): PrefixKey[] | undefined {
    const mp = octets === undefined ? undefined : receivedMp(octets, type);
    return mp === undefined ? undefined : this.keysIf(mp.prefixes, list[0].pathId !== undefined, list.length, family);
  }

  // ---- prefix keys read from the octets -----------------------------------------------

  /** Reads a prefix field's keys into the family's scratch array; returns how many. */
  private readKeys(field: Buffer, addPath: boolean, family: AddressFamily): number {
    return family === 'ipv4-unicast' ? v4KeysFromWire(field, addPath, this.v4Keys) : v6KeysFromWire(field, addPath, this.v6Keys);
  }

  private scratchKeys(family: AddressFamily): PrefixKey[] {
    return family === 'ipv4-unicast' ? this.v4Keys : this.v6Keys;
  }

  private readonly v4Keys: number[] = [];
  private readonly v6Keys: string[] = [];

  // ---- the Adj-RIB-In steps of both -------------------------------------------------

  /** The set of a 4-octet-AS peer's attributes as received, found by their octets: a known one costs no decoding. */
  private setOfOctets(peer: RibPeer, raw: Buffer): AttrSet {
    const key = receivedKey(raw, peer.type === 'ebgp');
    return this.attrs.get(key) ?? this.attrs.internReceived(key);
  }

  /** The set of decoded attributes: by their octets when given (see setOfOctets), else from the object. */
  private setOfMessage(peer: RibPeer, a: Readonly<PathAttributes>, raw: Buffer | undefined): AttrSet {
    if (raw !== undefined) return this.setOfOctets(peer, raw);
    // A 2-octet peer's AS4_PATH is merged in, and what we keep is no longer what came.
    return this.attrs.intern(shareableReceived(a, peer.fourOctetAs, peer.type === 'ebgp'));
  }

  /** Withdraws prefixes keyed from the octets (no ADD-PATH: path id 0). */
  private withdrawKeys(peer: RibPeer, family: AddressFamily, keys: readonly PrefixKey[], count: number): void {
    peer.stats.withdrawn += count;
    this.removeKeys(this.fams[family], peer, keys, count);
  }

  /** RFC 7606 treat-as-withdraw of prefixes keyed from the octets. */
  private treatAsWithdrawKeys(peer: RibPeer, family: AddressFamily, keys: readonly PrefixKey[], count: number): void {
    peer.stats.treatAsWithdraw += count;
    this.withdrawKeys(peer, family, keys, count);
  }

  /** Withdraws a list of prefixes; `keys` are theirs when read from the octets already. */
  private withdrawList(peer: RibPeer, family: AddressFamily, nlri: readonly Nlri[], keys: readonly PrefixKey[] | undefined): void {
    peer.stats.withdrawn += nlri.length;
    this.removeList(this.fams[family], peer, nlri, keys);
  }

  private removeKeys(fr: FamilyRib, peer: RibPeer, keys: readonly PrefixKey[], count: number): void {
    for (let i = 0; i < count; i++) this.remove(fr, keys[i], peer, 0);
  }

  private removeList(fr: FamilyRib, peer: RibPeer, nlri: readonly Nlri[], keys: readonly PrefixKey[] | undefined): void {
    if (keys !== undefined) for (let i = 0; i < nlri.length; i++) this.remove(fr, keys[i], peer, nlri[i].pathId ?? 0);
    else for (let i = 0; i < nlri.length; i++) this.remove(fr, this.keyOf(fr.family, nlri[i].prefix), peer, nlri[i].pathId ?? 0);
  }

  /**
   * Announces `count` prefixes keyed from the octets (no ADD-PATH: path id 0) with one set and
   * next hop. `nlri` is their list, which the caller makes only for an import policy.
   */
  private announceKeys(
    peer: RibPeer,
    family: AddressFamily,
    set: AttrSet,
    nextHop: string,
    linkLocal: string | undefined,
    keys: readonly PrefixKey[],
    count: number,
    nlri: readonly Nlri[] | undefined,
  ): void {
    const fr = this.fams[family];
    peer.stats.announced += count;
    if (set.looped) {
      peer.stats.loopRejected += count;
      // An announcement we drop still replaces what the peer sent before for these prefixes.
      this.removeKeys(fr, peer, keys, count);
      this.attrs.dropIfUnused(set);
      return;
    }
    const nh = this.nextHops.intern(nextHop, linkLocal);
    const policy = peer.importPolicy;
    if (policy === undefined) {
      for (let i = 0; i < count; i++) this.upsert(fr, keys[i], peer, 0, nh, set);
    } else {
      if (nlri === undefined) throw new TypeError('announce: an import policy needs the prefixes as a list');
      this.importEach(peer, fr, policy, set, nh, nextHop, nlri, keys);
    }
    this.attrs.dropIfUnused(set);
    this.nextHops.dropIfUnused(nh);
  }

  /** Announces a list of prefixes (path ids from the list) as announceKeys; `keys` are theirs when read from the octets already. */
  private announceList(
    peer: RibPeer,
    family: AddressFamily,
    set: AttrSet,
    nextHop: string,
    linkLocal: string | undefined,
    nlri: readonly Nlri[],
    keys: readonly PrefixKey[] | undefined,
  ): void {
    const fr = this.fams[family];
    peer.stats.announced += nlri.length;
    if (set.looped) {
      peer.stats.loopRejected += nlri.length;
      this.removeList(fr, peer, nlri, keys);
      this.attrs.dropIfUnused(set);
      return;
    }
    const nh = this.nextHops.intern(nextHop, linkLocal);
    const policy = peer.importPolicy;
    if (policy !== undefined) this.importEach(peer, fr, policy, set, nh, nextHop, nlri, keys);
    else if (keys !== undefined) for (let i = 0; i < nlri.length; i++) this.upsert(fr, keys[i], peer, nlri[i].pathId ?? 0, nh, set);
    else for (let i = 0; i < nlri.length; i++) this.upsert(fr, this.keyOf(family, nlri[i].prefix), peer, nlri[i].pathId ?? 0, nh, set);
    this.attrs.dropIfUnused(set);
    this.nextHops.dropIfUnused(nh);
  }

  /** Each prefix through the peer's import policy, which reads it as text; `keys` as announceList's. */
  private importEach(
    peer: RibPeer,
    fr: FamilyRib,
    policy: CompiledPolicy,
    set: AttrSet,
    nh: NextHop,
    nextHop: string,
    nlri: readonly Nlri[],
    keys: readonly PrefixKey[] | undefined,
  ): void {
    const family = fr.family;
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
