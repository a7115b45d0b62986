// The RIB of a speaker: every peer's Adj-RIB-In, the Loc-RIB and its decision process, and
// the Adj-RIB-Out queues. The speaker drives it: addPeer when a session is established,
// update() for each UPDATE, peerDown() when it goes, pull() on each peer's AdjRibOut when
// its socket can take more. Each mutating call returns the best-path changes it caused.
// The tables and the decision process are the LocRib's (loc-rib.ts); an UPDATE reaches them
// from its octets (update-octets.ts) or from its message (update-message.ts).
import { checkedRouterId } from '../../ip/index.js';
import type { AddressFamily, Nlri, PathAttributes, ReceivedUpdate, UpdateMessage } from '../codec/index.js';
import { attributesUnread, familyOf, receivedAttributes, receivedNlri, withoutIpv4Prefixes } from '../codec/index.js';
import { AdjRibOut, type FamilySources } from './adj-rib-out.js';
import { WireKeys, withdrawList } from './adj-rib-in.js';
import { joinAtStart } from './subgroup.js';
import { AttrInterner, LoopRule, shareableAttributes } from './attr-set.js';
import type { DecisionOptions } from './decision.js';
import { LocRib } from './loc-rib.js';
import { attributesFromJSON, type PathAttributesJson } from './json.js';
import { RibPeer } from './peer.js';
import { familyOfPrefix, formatKey, prefixKey } from './prefix.js';
import { multipathCount, type Path } from './table.js';
import type { BestPathChange, RibOptions, RibPeerConfig, RibRoute } from './types.js';
import { groupKey, UpdateGroup } from './update-group.js';
import { updateFromMessage } from './update-message.js';
import { updateFromOctets } from './update-octets.js';
import { sentRecord, withdrawalsAfter } from './policy-change.js';

export const FAMILIES: readonly AddressFamily[] = ['ipv4-unicast', 'ipv6-unicast'];

export interface OriginateOptions {
  /**
   * Default: IGP origin, empty AS_PATH. Communities as numbers or text ("65000:7", "no-export";
   * "rt:65000:1"; "65000:1:2"), as attributesFromJSON reads them.
   */
  attributes?: PathAttributes | PathAttributesJson;
  /** Default 0.0.0.0 / :: : "ourselves", replaced by the session's local address on export. */
  nextHop?: string;
}

export class Rib {
  readonly localAs: number;
  readonly routerId: string;
  /** The source of locally originated routes. */
  readonly localPeer: RibPeer;
  private readonly decision: DecisionOptions;
  private readonly attrs: AttrInterner;
  /** Every peer's Adj-RIB-In and the Loc-RIB: the tables and the decision process. */
  private readonly loc: LocRib;
  /** Scratch for prefix keys read from the octets of the UPDATE being applied. */
  private readonly wireKeys = new WireKeys();
  private readonly peerSet = new Set<RibPeer>();
  private readonly groups = new Map<string, UpdateGroup>();

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
    const wanted = typeof collect === 'function' ? collect : collect === false ? () => false : () => true;
    this.loc = new LocRib(this.attrs, this.decision, wanted);
    this.loc.gracefulShutdown = options.gracefulShutdown !== false;
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
      if (keep.includes(f)) this.loc.markStale(peer, f);
      else this.loc.removeWhere(peer, f, false);
    }
    return this.loc.take();
  }

  /**
   * Gives a peer new import and export policies (a key left out keeps its policy; undefined
   * removes it). An import policy applies to what the peer sends from now on: the caller asks
   * the peer to send its routes again (route refresh). An export policy applies at once: the
   * peer, when its session is up, is sent its table under the new policy, and what it had that
   * the policy now refuses is withdrawn. Returns whether the peer has a new Adj-RIB-Out, which
   * the session must pull from instead of the old one.
   */
  setPolicies(peer: RibPeer, policies: Pick<RibPeerConfig, 'importPolicy' | 'exportPolicy'>): boolean {
    this.checkPeer(peer);
    const regroup = peer.out !== undefined && 'exportPolicy' in policies && policies.exportPolicy !== peer.config.exportPolicy;
    const before = regroup ? sentRecord(peer.out!) : undefined;
    // Compiled first: a policy that does not compile changes nothing.
    peer.reconfigure({ ...peer.config, ...policies });
    if (!regroup) return false;
    const onReady = peer.out!.onReady;
    this.detachOut(peer);
    this.attachOut(peer);
    const out = peer.out!;
    out.onReady = onReady;
    out.owe(withdrawalsAfter(out, before!));
    out.kick();
    return true;
  }

  /** Forgets the peer and every route it sent. */
  removePeer(peer: RibPeer): BestPathChange[] {
    this.checkPeer(peer);
    this.detachOut(peer);
    for (const f of FAMILIES) this.loc.removeWhere(peer, f, false);
    this.peerSet.delete(peer);
    return this.loc.take();
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
      updateFromOctets(this.loc, this.wireKeys, peer, u, raw, wire);
    } else {
      updateFromMessage(this.loc, this.wireKeys, peer, u, wire);
    }
    return this.loc.take();
  }

  /** Withdraws a list of prefixes of a peer. */
  withdraw(peer: RibPeer, family: AddressFamily, nlri: readonly Nlri[]): BestPathChange[] {
    withdrawList(this.loc, peer, family, nlri, undefined);
    return this.loc.take();
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
      withdrawList(this.loc, peer, f, list, undefined);
    }
    return this.loc.take();
  }

  /** Marks every route of the peer in the family stale (graceful restart, or BoRR of an enhanced refresh). */
  markStale(peer: RibPeer, family: AddressFamily): void {
    this.checkPeer(peer);
    this.loc.markStale(peer, family);
  }

  /**
   * The peer's graceful restart time ran out (or was 0) and it does long-lived graceful restart
   * (RFC 9494): its stale routes of the family with NO_LLGR go, the others stay, marked LLGR_STALE
   * and least preferred, until its End-of-RIB or the long-lived stale time sweeps them.
   */
  markLongLivedStale(peer: RibPeer, family: AddressFamily): BestPathChange[] {
    this.checkPeer(peer);
    this.loc.markLongLivedStale(peer, family);
    return this.loc.take();
  }

  /** Removes the peer's routes of the family still stale (End-of-RIB, EoRR, or the restart timer fired). */
  sweepStale(peer: RibPeer, family: AddressFamily): BestPathChange[] {
    this.checkPeer(peer);
    this.loc.removeWhere(peer, family, true);
    return this.loc.take();
  }

  // ---- local routes ------------------------------------------------------------------

  /** Originates a prefix (replacing an earlier origination of it). */
  originate(prefix: string, options: OriginateOptions = {}): BestPathChange[] {
    const family = familyOfPrefix(prefix);
    const key = prefixKey(family, prefix);
    const given = options.attributes === undefined ? {} : { ...options.attributes, ...attributesFromJSON(options.attributes) };
    const base: PathAttributes = { origin: 'igp', asPath: [], ...shareableAttributes(given as PathAttributes) };
    const set = this.attrs.intern(base);
    const nh = this.loc.nextHops.intern(options.nextHop ?? (family === 'ipv4-unicast' ? '0.0.0.0' : '::'));
    this.loc.upsert(this.loc.fams[family], key, this.localPeer, 0, nh, set);
    this.attrs.dropIfUnused(set);
    this.loc.nextHops.dropIfUnused(nh);
    return this.loc.take();
  }

  withdrawOriginated(prefix: string): BestPathChange[] {
    const family = familyOfPrefix(prefix);
    this.loc.remove(this.loc.fams[family], prefixKey(family, prefix), this.localPeer, 0);
    return this.loc.take();
  }

  // ---- queries -----------------------------------------------------------------------

  /** The best path and the other paths of one prefix. */
  lookup(prefix: string): { best: RibRoute; multipath: RibRoute[]; paths: RibRoute[] } | undefined {
    const family = familyOfPrefix(prefix);
    const key = prefixKey(family, prefix);
    const head = this.loc.fams[family].table.get(key);
    if (head === undefined) return undefined;
    const text = formatKey(family, key);
    const paths: RibRoute[] = [];
    for (let p: Path | null = head; p !== null; p = p.next) paths.push(this.loc.view(family, text, p));
    return { best: paths[0], multipath: paths.slice(0, multipathCount(head)), paths };
  }

  /** Best paths of a family, in table order. */
  *routes(family: AddressFamily): IterableIterator<RibRoute> {
    for (const key of this.loc.fams[family].table.keys()) {
      const head = this.loc.fams[family].table.get(key);
      if (head !== undefined) yield this.loc.view(family, formatKey(family, key), head);
    }
  }

  /** A peer's Adj-RIB-In (after import policy) for a family. */
  adjRibIn(peer: RibPeer, family: AddressFamily): RibRoute[] {
    const out: RibRoute[] = [];
    this.loc.fams[family].table.forEach((head, key) => {
      for (let p: Path | null = head; p !== null; p = p.next) {
        if (p.peer === peer) out.push(this.loc.view(family, formatKey(family, key), p));
      }
    });
    return out;
  }

  /** Paths learned from peers, every family (originated ones not counted): what the Adj-RIB-Ins hold. */
  get receivedPaths(): number {
    return this.loc.pathCount - this.localPeer.stats.routes['ipv4-unicast'] - this.localPeer.stats.routes['ipv6-unicast'];
  }

  /** Counts for status pages and benchmarks. */
  stats(): { prefixes: Record<AddressFamily, number>; attributeSets: number; nextHops: number; updateGroups: number } {
    return {
      prefixes: { 'ipv4-unicast': this.loc.fams['ipv4-unicast'].table.size, 'ipv6-unicast': this.loc.fams['ipv6-unicast'].table.size },
      attributeSets: this.attrs.size,
      nextHops: this.loc.nextHops.size,
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
    for (const f of FAMILIES) sources[f] = this.loc.fams[f];
    const out = new AdjRibOut(peer, group, sources);
    peer.out = out;
    peer.up = true;
    joinAtStart(out);
    for (const f of out.families) this.loc.fams[f].outs.push(out);
  }

  private detachOut(peer: RibPeer): void {
    const out = peer.out;
    peer.up = false;
    if (out === undefined) return;
    peer.out = undefined;
    out.close();
    for (const f of FAMILIES) {
      const outs = this.loc.fams[f].outs;
      const i = outs.indexOf(out);
      if (i >= 0) outs.splice(i, 1);
    }
    const group = out.group;
    group.members.delete(peer);
    if (group.members.size === 0) this.groups.delete(group.key);
  }
}
