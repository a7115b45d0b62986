// Update groups: peers of the same type, AS, export policy, next-hop treatment and send
// options get the same attributes for the same path, so the group computes the exported
// attributes (rules of the road, then export policy) and their encoding once, and every
// member reuses them. A route reflector with 200 clients does that work once, not 200 times.
import { parseIpv4Number } from '../../ip/index.js';
import { encodeMessage, writeIpv6Bytes } from './wire.js';
import { decodePathAttributes, type AddressFamily, type CodecOptions, type PathAttributes } from '../codec/index.js';
import {
  COMMUNITY_LLGR_STALE,
  COMMUNITY_NO_ADVERTISE,
  COMMUNITY_NO_EXPORT,
  COMMUNITY_NO_EXPORT_SUBCONFED,
  type AttrSet,
  type NextHop,
} from './attr-set.js';
import { ibgpExportBytes } from './ibgp-export.js';
import { toTwoOctetAs } from './as4.js';
import { passOnUnrecognised } from './pass-on.js';
import { applyActions, prependAs, type CompiledPolicy } from './policy.js';
import type { AdjRibOut } from './adj-rib-out.js';
import type { RibPeer } from './peer.js';
import type { Subgroup } from './subgroup.js';
import { formatKey, type PrefixKey } from './prefix.js';
import type { Path } from './table.js';
import type { IbgpReflectionHook, UpdateGroupInfo } from './types.js';

// One constant: an OR of the two in the test was an operation that had no type feedback until
// the first eBGP export, whose arrival deoptimized the code around it.
const NO_EXPORT_ANY = COMMUNITY_NO_EXPORT | COMMUNITY_NO_EXPORT_SUBCONFED;

/** Exported attributes, encoded once: what every UPDATE of this set carries. */
export class OutAttrSet {
  refs = 0;
  /** Its number in the group while some peer holds it (0 when none does): what an Adj-RIB-Out records as sent. */
  id = 0;
  /** The next set of the group whose bytes hash alike (the group's table chains them). */
  sameHash: OutAttrSet | undefined = undefined;
  constructor(
    /** A hash of family, attrBytes and mpNextHop: how the group finds an equal set, without a key that copies the bytes. */
    readonly hash: number,
    readonly family: AddressFamily,
    /** Encoded path attributes; IPv4 includes NEXT_HOP, IPv6 leaves MP_REACH_NLRI out. */
    readonly attrBytes: Buffer,
    /** IPv6: the MP_REACH next hop field (16 or 32 octets). */
    readonly mpNextHop: Buffer | undefined,
    /** The attributes as sent, kept only when attrBytes do not read back as them (2-octet AS numbers). */
    private readonly given: Readonly<PathAttributes> | undefined,
    readonly nextHop: string,
  ) {}

  /** The attributes as sent (for inspection and tests): read back from attrBytes, which a group holds per set anyway. */
  get attributes(): Readonly<PathAttributes> {
    return this.given ?? Object.freeze(decodePathAttributes(this.attrBytes));
  }

  /** Whether this set is what these would encode to. */
  sameAs(family: AddressFamily, attrBytes: Buffer, mpNextHop: Buffer | undefined): boolean {
    if (this.family !== family || !this.attrBytes.equals(attrBytes)) return false;
    if (mpNextHop === undefined || this.mpNextHop === undefined) return mpNextHop === this.mpNextHop;
    return this.mpNextHop.equals(mpNextHop);
  }
}

/** FNV-1a over the octets, continuing from `h`. */
function fnv(b: Buffer, h: number): number {
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 0x01000193);
  return h;
}

/**
 * One group's export decisions for one attribute set, kept on the set (a WeakMap per group
 * grew to 65k slots, 1 MB, for 4k live sets over the MRT replay: dead keys hold their slots
 * until a collection). The first (next hop, source peer) asked is answered inline: a
 * received set nearly always comes with one next hop from one peer, and two Maps per set and
 * group cost ~300 octets. The others go in two levels of Maps, made when a second one is
 * asked, not a list to scan: a reflector or a mesh member holds one next hop per client for
 * the same attribute set, thousands of them. Where the decision reads no next hop or source
 * (UpdateGroup.anyNextHop, anySource), they are not part of the key.
 */
export class ExportCache {
  more: Map<NextHop | AddressFamily, Map<RibPeer | null, OutAttrSet | null>> | undefined = undefined;
  constructor(
    readonly group: UpdateGroup,
    /** The path's next hop, or its family where the group's decision reads no next hop (a set may carry both). */
    readonly nextHop: NextHop | AddressFamily,
    /** The path's source, or null for any peer where the decision only asks whether it is us. */
    readonly peer: RibPeer | null,
    readonly out: OutAttrSet | null,
    /** The next group's record for the same set. */
    public next: ExportCache | undefined,
  ) {}
}

export interface GroupSettings {
  localAs: number;
  defaultLocalPref: number;
  reflection: IbgpReflectionHook | undefined;
}

const policyIds = new WeakMap<object, number>();
let nextPolicyId = 1;

function policyId(p: object | undefined): number {
  if (p === undefined) return 0;
  let id = policyIds.get(p);
  if (id === undefined) {
    id = nextPolicyId++;
    policyIds.set(p, id);
  }
  return id;
}

/** The key under which peers share a group. */
export function groupKey(peer: RibPeer): string {
  const c = peer.config;
  const o = c.sendOptions ?? {};
  return [
    peer.type,
    peer.type === 'ebgp' ? peer.asn : '',
    c.localAs ?? '',
    c.routeReflectorClient ? 'rrc' : '',
    c.nextHopSelf ? 'nhs' : '',
    c.localAddress ?? '',
    c.localAddressV6 ?? '',
    c.linkLocalAddressV6 ?? '',
    peer.fourOctetAs ? '4' : '2',
    o.addPath?.['ipv4-unicast'] ? 'ap4' : '',
    o.addPath?.['ipv6-unicast'] ? 'ap6' : '',
    c.addPathSendMax ?? '',
    policyId(c.exportPolicy as object | undefined),
    c.longLivedGracefulRestart ? 'llgr' : '',
  ].join('|');
}

export class UpdateGroup {
  readonly info: UpdateGroupInfo;
  readonly members = new Set<RibPeer>();
  // The last set looked up: an UPDATE's prefixes share one set, so most lookups repeat the
  // previous one, and a cache lookup per prefix and peer showed in the profiles. It holds
  // at most one set past its life, until the next lookup.
  private lastAttrs: AttrSet | undefined;
  private lastEntry: ExportCache | undefined;
  // And the last decision: consecutive prefixes of an UPDATE share set, next hop and peer, so
  // most decisions (asked once per change by every idle group, then by every member) repeat it.
  private lastNextHop: NextHop | AddressFamily | undefined;
  private lastPeer: RibPeer | null | undefined;
  private lastOut: OutAttrSet | null = null;
  // The IPv4 next hop last written on bytes, as text and number: a group's routes have few.
  private lastNextHopText = '';
  private lastNextHopNumber = 0;
  /** The sets by hash, those of one hash chained through sameHash. */
  private readonly outSets = new Map<number, OutAttrSet>();
  private outCount = 0;
  // Numbers of the held sets; 0 stays unused, meaning "nothing sent".
  private readonly byId: Array<OutAttrSet | undefined> = [undefined];
  private readonly freeIds: number[] = [];
  private readonly exportPolicy: CompiledPolicy | undefined;
  /** Our AS towards this group's peers: the RIB's, or theirs alone (RibPeerConfig.localAs). */
  private readonly localAs: number;
  private readonly encodeOptions: CodecOptions;
  private readonly fourOctetAs: boolean;
  readonly localAddress: string | undefined;
  readonly localAddressV6: string | undefined;
  readonly linkLocalAddressV6: string | undefined;
  private readonly nextHopSelf: boolean;
  /**
   * The well-known communities that keep a path from this group (COMMUNITY_* bits): NO_ADVERTISE;
   * NO_EXPORT and NO_EXPORT_SUBCONFED towards eBGP; LLGR_STALE towards peers that did not
   * advertise long-lived graceful restart (RFC 9494: they would not know to prefer anything else).
   */
  private readonly stopBits: number;
  // What compute() reads of a path besides its attributes, so that the export cache is keyed by
  // no more than that. With no export policy, a group that puts itself as next hop never reads
  // the path's, and an eBGP group asks of the source only whether it is this speaker (iBGP
  // reflection and the iBGP export on bytes need the source itself). A Calico top-of-rack peer
  // is such a group: every node's blocks come with the node's own next hop, and one decision
  // now does for all of them instead of one per node.
  private readonly anyNextHop: boolean;
  private readonly anySource: boolean;
  /** Export decisions that found no next hop (no local address of the family for next-hop-self); one decision stands for every path the export cache answers from it. */
  noNextHop = 0;
  /** The RIB's wake() call this group last decided for, and its verdict (the RIB's scratch). */
  wakeCall = 0;
  wakeVerdict = false;
  /** Its members' subgroups: those in sync share one record of what was sent, and the UPDATEs. */
  readonly subgroups: Subgroup[] = [];
  /** A member caught up and alone: the next one caught up may found a subgroup with it. */
  waiting: AdjRibOut | undefined = undefined;

  constructor(
    readonly key: string,
    first: RibPeer,
    private readonly settings: GroupSettings,
  ) {
    this.info = {
      type: first.type === 'ebgp' ? 'ebgp' : 'ibgp',
      peerAs: first.asn,
      routeReflectorClient: first.config.routeReflectorClient === true,
      longLivedGracefulRestart: first.config.longLivedGracefulRestart === true,
    };
    const c = first.config;
    this.exportPolicy = first.exportPolicy;
    this.localAs = c.localAs ?? settings.localAs;
    this.fourOctetAs = first.fourOctetAs;
    this.encodeOptions = { fourOctetAs: this.fourOctetAs, extendedMessage: true };
    this.localAddress = c.localAddress;
    this.localAddressV6 = c.localAddressV6;
    this.linkLocalAddressV6 = c.linkLocalAddressV6;
    this.nextHopSelf = c.nextHopSelf === true;
    this.stopBits =
      COMMUNITY_NO_ADVERTISE | (this.info.type === 'ebgp' ? NO_EXPORT_ANY : 0) | (c.longLivedGracefulRestart ? 0 : COMMUNITY_LLGR_STALE);
    this.anyNextHop = this.exportPolicy === undefined && (this.info.type === 'ebgp' || this.nextHopSelf);
    this.anySource = this.exportPolicy === undefined && this.info.type === 'ebgp';
  }

  get size(): number {
    return this.outCount;
  }

  /** Whether an export decision costs a policy run per prefix (no cache by attribute set). */
  get exportPerPrefix(): boolean {
    return this.exportPolicy?.perPrefix === true;
  }

  /** The attributes this group sends for a path, or null when the path is not sent. */
  exportPath(family: AddressFamily, key: PrefixKey, path: Path): OutAttrSet | null {
    const policy = this.exportPolicy;
    if (policy?.perPrefix) return this.compute(family, key, path);
    // Communities that stop a path here need no cache entry: on a replay of real traffic every
    // set is new, and ten eBGP groups each made two Maps per NO_EXPORT set to remember a null.
    if (path.attrs.wellKnown & this.stopBits) return null;
    // Our own routes keep the next hop they were originated with (compute), so it keys them.
    const nextHop = this.anyNextHop && (this.nextHopSelf || path.peer.type !== 'local') ? family : path.nextHop;
    const peer = this.anySource && path.peer.type !== 'local' ? null : path.peer;
    let entry: ExportCache | undefined;
    if (path.attrs === this.lastAttrs) {
      if (nextHop === this.lastNextHop && peer === this.lastPeer) return this.lastOut;
      entry = this.lastEntry;
    } else {
      entry = this.entryOf(path.attrs);
    }
    let out: OutAttrSet | null | undefined;
    if (entry === undefined) {
      out = this.compute(family, key, path);
      entry = new ExportCache(this, nextHop, peer, out, path.attrs.exports);
      path.attrs.exports = entry;
    } else if (entry.nextHop === nextHop && entry.peer === peer) {
      out = entry.out;
    } else {
      entry.more ??= new Map();
      let bySource = entry.more.get(nextHop);
      if (bySource === undefined) {
        bySource = new Map();
        entry.more.set(nextHop, bySource);
      }
      out = bySource.get(peer);
      if (out === undefined) {
        out = this.compute(family, key, path);
        bySource.set(peer, out);
      }
    }
    this.lastAttrs = path.attrs;
    this.lastEntry = entry;
    this.lastNextHop = nextHop;
    this.lastPeer = peer;
    this.lastOut = out;
    return out;
  }

  /**
   * This group's record on a set. Records of groups whose last member has left (a group is
   * never joined again then) are unlinked on the way: every group that looks a set up after
   * one it has no record of walks the whole list, so they last only on sets no group asks about.
   */
  private entryOf(set: AttrSet): ExportCache | undefined {
    let prev: ExportCache | undefined;
    for (let e = set.exports; e !== undefined; e = e.next) {
      if (e.group === this) return e;
      if (e.group.members.size > 0) prev = e;
      else if (prev === undefined) set.exports = e.next;
      else prev.next = e.next;
    }
    return undefined;
  }

  /** Rules of the road (RFC 4271 §5, RFC 1997), then the export policy. */
  private compute(family: AddressFamily, key: PrefixKey, path: Path): OutAttrSet | null {
    const set = path.attrs;
    const src = path.peer;
    const ebgp = this.info.type === 'ebgp';
    if (set.wellKnown & this.stopBits) return null;
    const reflection = this.settings.reflection;
    if (!ebgp && src.type === 'ibgp' && (reflection === undefined || !reflection.mayReflect(src, this.info))) return null;

    // The next hop first: the export on bytes below needs it, and not the attributes.
    const v6 = family === 'ipv6-unicast';
    let nh: string | undefined = path.nextHop.address;
    let ll: string | undefined;
    // A next hop we originated a route with is kept, to external peers too (as GoBGP's `rib add -n`).
    if ((ebgp && src.type !== 'local') || this.nextHopSelf || nh === '0.0.0.0' || nh === '::') {
      nh = v6 ? this.localAddressV6 : this.localAddress;
      if (v6) ll = this.linkLocalAddressV6;
    }
    if (!ebgp && src.type === 'ebgp' && this.exportPolicy === undefined && this.fourOctetAs) {
      // The common case (an external route to internal peers) edits the set's bytes, octet for
      // octet what the general way below gives (ibgp-export.ts).
      if (nh === undefined || nh === '0.0.0.0' || nh === '::') {
        this.noNextHop++;
        return null;
      }
      const bytes = ibgpExportBytes(set.key, v6 ? -1 : this.ipv4NextHop(nh), this.settings.defaultLocalPref);
      if (bytes !== undefined) return this.internBytes(family, bytes, nh, ll, undefined);
    }
    let a: PathAttributes = { ...set.attributes };
    if (a.unknown !== undefined && src.type !== 'local') {
      // Ours (originated with attributes of the caller's choosing) go as given; a peer's are passed on.
      const kept = passOnUnrecognised(a.unknown);
      if (kept) a.unknown = kept;
      else delete a.unknown;
    }
    if (ebgp) {
      a.asPath = prependAs(a.asPath, [this.localAs]);
      delete a.localPref;
      // A MED received from another AS is not passed on; one we set ourselves is.
      if (src.type !== 'local') delete a.med;
      delete a.originatorId;
      delete a.clusterList;
    } else {
      if (a.localPref === undefined) a.localPref = this.settings.defaultLocalPref;
      if (src.type === 'ibgp' && reflection?.reflect) reflection.reflect(a, src, this.info);
    }
    const policy = this.exportPolicy;
    if (policy !== undefined) {
      const verdict = policy.evaluate({
        family,
        prefix: formatKey(family, key),
        nextHop: nh ?? '',
        attributes: a,
        neighbor: src.type === 'local' ? undefined : { address: src.address, asn: src.asn, type: src.type },
      });
      if (verdict === false) return null;
      if (verdict !== true) {
        const r = applyActions(a, verdict);
        a = r.attributes;
        if (r.nextHop === 'self') {
          nh = v6 ? this.localAddressV6 : this.localAddress;
          if (v6) ll = this.linkLocalAddressV6;
        } else if (r.nextHop !== undefined) {
          nh = r.nextHop;
          ll = undefined;
        }
      }
    }
    if (nh === undefined || nh === '0.0.0.0' || nh === '::') {
      this.noNextHop++;
      return null;
    }
    return this.intern(family, a, nh, ll);
  }

  /** An IPv4 next hop as a number; a group's routes have few, so the last one is remembered. */
  private ipv4NextHop(nh: string): number {
    if (nh !== this.lastNextHopText) {
      this.lastNextHopText = nh;
      this.lastNextHopNumber = parseIpv4Number(nh, 'nextHop');
    }
    return this.lastNextHopNumber;
  }

  private intern(family: AddressFamily, a: PathAttributes, nh: string, ll: string | undefined): OutAttrSet {
    const v6 = family === 'ipv6-unicast';
    if (!v6) a.nextHop = nh;
    else delete a.nextHop;
    const wire = this.fourOctetAs ? a : toTwoOctetAs(a);
    const msg = encodeMessage({ type: 'update', withdrawn: [], attributes: wire, nlri: [] }, this.encodeOptions);
    return this.internBytes(family, msg.subarray(23), nh, ll, this.fourOctetAs ? undefined : Object.freeze(a));
  }

  /** The group's set of these encoded attributes, made when there is none (the bytes are copied then). */
  private internBytes(
    family: AddressFamily,
    attrBytes: Buffer,
    nh: string,
    ll: string | undefined,
    given: Readonly<PathAttributes> | undefined,
  ): OutAttrSet {
    const v6 = family === 'ipv6-unicast';
    let mpNextHop: Buffer | undefined;
    if (v6) {
      mpNextHop = Buffer.alloc(ll === undefined ? 16 : 32);
      writeIpv6Bytes(nh, mpNextHop, 0, 'next hop');
      if (ll !== undefined) writeIpv6Bytes(ll, mpNextHop, 16, 'link-local next hop');
    }
    let hash = fnv(attrBytes, v6 ? 0x811c9dc6 : 0x811c9dc5);
    if (mpNextHop !== undefined) hash = fnv(mpNextHop, hash);
    // 30 bits: a small integer to V8, where a full 32-bit hash is a boxed number as a Map key and a field.
    hash &= 0x3fffffff;
    const first = this.outSets.get(hash);
    for (let s = first; s !== undefined; s = s.sameHash) if (s.sameAs(family, attrBytes, mpNextHop)) return s;
    const out = new OutAttrSet(hash, family, Buffer.from(attrBytes), mpNextHop, given, nh);
    this.link(out);
    return out;
  }

  /** Puts a set in the table (at the head of its hash's chain). */
  private link(out: OutAttrSet): void {
    out.sameHash = this.outSets.get(out.hash);
    this.outSets.set(out.hash, out);
    this.outCount++;
  }

  /** Takes a set out of the table; false when it was not in it. */
  private unlink(out: OutAttrSet): boolean {
    let s = this.outSets.get(out.hash);
    if (s === out) {
      if (out.sameHash === undefined) this.outSets.delete(out.hash);
      else this.outSets.set(out.hash, out.sameHash);
    } else {
      while (s !== undefined && s.sameHash !== out) s = s.sameHash;
      if (s === undefined) return false;
      s.sameHash = out.sameHash;
    }
    out.sameHash = undefined;
    this.outCount--;
    return true;
  }

  /** Whether a set is in the table. */
  private linked(out: OutAttrSet): boolean {
    for (let s = this.outSets.get(out.hash); s !== undefined; s = s.sameHash) if (s === out) return true;
    return false;
  }

  acquire(out: OutAttrSet): void {
    if (out.refs++ !== 0) return;
    if (!this.linked(out)) this.link(out);
    const id = this.freeIds.pop() ?? this.byId.length;
    this.byId[id] = out;
    out.id = id;
  }

  release(out: OutAttrSet): void {
    if (--out.refs !== 0) return;
    this.unlink(out);
    this.byId[out.id] = undefined;
    this.freeIds.push(out.id);
    out.id = 0;
  }

  /** The held set of a number acquire() gave it. */
  held(id: number): OutAttrSet {
    return this.byId[id]!;
  }

  /** How many exported sets some peer holds (for status and tests). */
  get heldSets(): number {
    return this.byId.length - 1 - this.freeIds.length;
  }
}
