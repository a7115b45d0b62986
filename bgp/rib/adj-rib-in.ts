// What an UPDATE does to a peer's Adj-RIB-In, whichever path read it (update-octets.ts,
// update-message.ts): prefixes withdrawn or announced, given as keys read from the octets (no
// ADD-PATH: every path id 0) or as the codec's list; an announcement's attribute set found by
// its octets or interned from the decoded object, a looped one dropped, import policy applied.
import type { AddressFamily, Nlri, PathAttributes } from '../codec/index.js';
import { type AttrSet, COMMUNITY_GRACEFUL_SHUTDOWN, NextHop, receivedKey, shareableReceived } from './attr-set.js';
import type { FamilyRib, LocRib } from './loc-rib.js';
import type { RibPeer } from './peer.js';
import { applyActions, type CompiledPolicy, type PolicyActions, type PolicyVerdict } from './policy.js';
import { prefixKey, v4KeysFromWire, v6KeysFromWire, type PrefixKey } from './prefix.js';

/** Prefix keys read from a field's octets, into one scratch array per family that the next read reuses. */
export class WireKeys {
  readonly v4: number[] = [];
  readonly v6: string[] = [];

  /** Reads a prefix field's keys into the family's array; returns how many. */
  read(field: Buffer, addPath: boolean, family: AddressFamily): number {
    return family === 'ipv4-unicast' ? v4KeysFromWire(field, addPath, this.v4) : v6KeysFromWire(field, addPath, this.v6);
  }

  of(family: AddressFamily): PrefixKey[] {
    return family === 'ipv4-unicast' ? this.v4 : this.v6;
  }

  /** The keys of a field that should hold `expected` prefixes; undefined when it does not (the message was changed). */
  ifCount(field: Buffer, addPath: boolean, expected: number, family: AddressFamily): PrefixKey[] | undefined {
    return this.read(field, addPath, family) === expected ? this.of(family) : undefined;
  }
}

/** The set of a 4-octet-AS peer's attributes as received, found by their octets: a known one costs no decoding. */
export function setOfOctets(loc: LocRib, peer: RibPeer, raw: Buffer): AttrSet {
  const key = receivedKey(raw, peer.type === 'ebgp');
  return loc.attrs.get(key) ?? loc.attrs.internReceived(key);
}

/** The set of decoded attributes: by their octets when given (see setOfOctets), else from the object. */
export function setOfMessage(loc: LocRib, peer: RibPeer, a: Readonly<PathAttributes>, raw: Buffer | undefined): AttrSet {
  if (raw !== undefined) return setOfOctets(loc, peer, raw);
  // A 2-octet peer's AS4_PATH is merged in, and what we keep is no longer what came.
  return loc.attrs.intern(shareableReceived(a, peer.fourOctetAs, peer.type === 'ebgp'));
}

/** Withdraws `count` prefixes keyed from the octets. */
export function withdrawKeys(loc: LocRib, peer: RibPeer, family: AddressFamily, keys: readonly PrefixKey[], count: number): void {
  peer.stats.withdrawn += count;
  removeKeys(loc, loc.fams[family], peer, keys, count);
}

/** RFC 7606 treat-as-withdraw of prefixes keyed from the octets. */
export function treatAsWithdrawKeys(loc: LocRib, peer: RibPeer, family: AddressFamily, keys: readonly PrefixKey[], count: number): void {
  peer.stats.treatAsWithdraw += count;
  withdrawKeys(loc, peer, family, keys, count);
}

/** Withdraws a list of prefixes; `keys` are theirs when read from the octets already. */
export function withdrawList(
  loc: LocRib,
  peer: RibPeer,
  family: AddressFamily,
  nlri: readonly Nlri[],
  keys: readonly PrefixKey[] | undefined,
): void {
  peer.stats.withdrawn += nlri.length;
  removeList(loc, loc.fams[family], peer, nlri, keys);
}

function removeKeys(loc: LocRib, fr: FamilyRib, peer: RibPeer, keys: readonly PrefixKey[], count: number): void {
  for (let i = 0; i < count; i++) loc.remove(fr, keys[i], peer, 0);
}

function removeList(loc: LocRib, fr: FamilyRib, peer: RibPeer, nlri: readonly Nlri[], keys: readonly PrefixKey[] | undefined): void {
  if (keys !== undefined) for (let i = 0; i < nlri.length; i++) loc.remove(fr, keys[i], peer, nlri[i].pathId ?? 0);
  else for (let i = 0; i < nlri.length; i++) loc.remove(fr, prefixKey(fr.family, nlri[i].prefix), peer, nlri[i].pathId ?? 0);
}

/**
 * Announces `count` prefixes keyed from the octets with one set and next hop. `nlri` is their
 * list, which the caller makes only for an import policy (it reads each prefix as text).
 */
export function announceKeys(
  loc: LocRib,
  peer: RibPeer,
  family: AddressFamily,
  set: AttrSet,
  nextHop: string,
  linkLocal: string | undefined,
  keys: readonly PrefixKey[],
  count: number,
  nlri: readonly Nlri[] | undefined,
): void {
  const fr = loc.fams[family];
  peer.stats.announced += count;
  if (set.looped || (peer.ownAs !== undefined && holdsAs(set, peer.ownAs))) {
    peer.stats.loopRejected += count;
    // An announcement we drop still replaces what the peer sent before for these prefixes.
    removeKeys(loc, fr, peer, keys, count);
    loc.attrs.dropIfUnused(set);
    return;
  }
  const received = set;
  if ((set.wellKnown & COMMUNITY_GRACEFUL_SHUTDOWN) !== 0 && loc.gracefulShutdown) set = lowered(loc, set);
  const nh = loc.nextHops.intern(nextHop, linkLocal);
  const policy = peer.importPolicy;
  if (policy === undefined) {
    for (let i = 0; i < count; i++) loc.upsert(fr, keys[i], peer, 0, nh, set);
  } else {
    if (nlri === undefined) throw new TypeError('announce: an import policy needs the prefixes as a list');
    importEach(loc, peer, fr, policy, set, nh, nextHop, nlri, keys);
  }
  loc.attrs.dropIfUnused(set);
  loc.attrs.dropIfUnused(received);
  loc.nextHops.dropIfUnused(nh);
}

/** Announces a list of prefixes (path ids from the list) as announceKeys; `keys` are theirs when read from the octets already. */
export function announceList(
  loc: LocRib,
  peer: RibPeer,
  family: AddressFamily,
  set: AttrSet,
  nextHop: string,
  linkLocal: string | undefined,
  nlri: readonly Nlri[],
  keys: readonly PrefixKey[] | undefined,
): void {
  const fr = loc.fams[family];
  peer.stats.announced += nlri.length;
  if (set.looped || (peer.ownAs !== undefined && holdsAs(set, peer.ownAs))) {
    peer.stats.loopRejected += nlri.length;
    removeList(loc, fr, peer, nlri, keys);
    loc.attrs.dropIfUnused(set);
    return;
  }
  const received = set;
  if ((set.wellKnown & COMMUNITY_GRACEFUL_SHUTDOWN) !== 0 && loc.gracefulShutdown) set = lowered(loc, set);
  const nh = loc.nextHops.intern(nextHop, linkLocal);
  const policy = peer.importPolicy;
  if (policy !== undefined) importEach(loc, peer, fr, policy, set, nh, nextHop, nlri, keys);
  else if (keys !== undefined) for (let i = 0; i < nlri.length; i++) loc.upsert(fr, keys[i], peer, nlri[i].pathId ?? 0, nh, set);
  else for (let i = 0; i < nlri.length; i++) loc.upsert(fr, prefixKey(family, nlri[i].prefix), peer, nlri[i].pathId ?? 0, nh, set);
  loc.attrs.dropIfUnused(set);
  loc.attrs.dropIfUnused(received);
  loc.nextHops.dropIfUnused(nh);
}

/**
 * RFC 8326 §4: a route received with GRACEFUL_SHUTDOWN gets LOCAL_PREF 0, so that any other path
 * wins while its origin drains, and the internal peers we pass it to see it so too. Before the
 * import policy, which may raise it again on purpose.
 */
function lowered(loc: LocRib, set: AttrSet): AttrSet {
  const a = set.attributes;
  return a.localPref === 0 ? set : loc.attrs.intern({ ...a, localPref: 0 });
}

/** Each prefix through the peer's import policy, which reads it as text; `keys` as announceList's. */
function importEach(
  loc: LocRib,
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
    const key = keys !== undefined ? keys[i] : prefixKey(family, n.prefix);
    if (verdict === undefined || policy.perPrefix) {
      verdict = policy.evaluate({ family, prefix: n.prefix, nextHop, attributes: set.attributes, neighbor });
    }
    if (verdict === false) {
      peer.stats.policyRejected++;
      loc.remove(fr, key, peer, n.pathId ?? 0);
      continue;
    }
    if (verdict === true) {
      loc.upsert(fr, key, peer, n.pathId ?? 0, nh, set);
      continue;
    }
    if (verdict !== lastActions) {
      lastActions = verdict;
      const r = applyActions(set.attributes, verdict);
      lastSet = loc.attrs.intern(r.attributes);
      lastNh = r.nextHop !== undefined && r.nextHop !== 'self' ? loc.nextHops.intern(r.nextHop) : nh;
      made.push(lastSet, lastNh);
    }
    loc.upsert(fr, key, peer, n.pathId ?? 0, lastNh, lastSet);
  }
  for (const x of made) {
    if (x instanceof NextHop) loc.nextHops.dropIfUnused(x);
    else loc.attrs.dropIfUnused(x as AttrSet);
  }
}

/** Whether the set's AS_PATH holds `asn`: the loop rule of a session with an AS of its own (RibPeer.ownAs). */
function holdsAs(set: AttrSet, asn: number): boolean {
  return set.attributes.asPath?.some((s) => s.asns.includes(asn)) === true;
}
