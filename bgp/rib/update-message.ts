// An UPDATE applied from its message: one built in code, one with ADD-PATH, one from a
// 2-octet-AS peer (whose attributes the codec decodes whole), one read before. Where the octets
// it came from still hold a field, the field's prefixes are keyed from them and the attribute
// set found by them, which costs less than parsing back the codec's text and objects.
import type { AddressFamily, Nlri, ReceivedNlri, ReceivedUpdate, UpdateMessage } from '../codec/index.js';
import { AttrType as T, familyOf, receivedAttributes, updateMessageOf } from '../codec/index.js';
import { announceKeys, announceList, setOfMessage, treatAsWithdrawKeys, type WireKeys, withdrawKeys, withdrawList } from './adj-rib-in.js';
import { receivedMp } from './attr-set.js';
import type { LocRib } from './loc-rib.js';
import type { RibPeer } from './peer.js';
import { type PrefixKey, v4KeysFromWire } from './prefix.js';

/** Applies an UPDATE from its message; `wire` is its IPv4 fields as received, when they still say what it holds. */
export function updateFromMessage(
  loc: LocRib,
  keys: WireKeys,
  peer: RibPeer,
  u: UpdateMessage | ReceivedUpdate,
  wire: ReceivedNlri | undefined,
): void {
  const msg = updateMessageOf(u);
  const a = msg.attributes;
  const octets = receivedAttributes(u);
  // IPv4 fields nobody has read are keyed from their octets and their lists never made.
  const unread = wire?.unread && !wire.addPath ? wire : undefined;
  if (unread !== undefined) {
    if (unread.withdrawnCount > 0) {
      const count = v4KeysFromWire(unread.withdrawn, false, keys.v4);
      withdrawKeys(loc, peer, 'ipv4-unicast', keys.v4, count);
    }
  } else if (msg.withdrawn.length > 0) {
    const withdrawn = msg.withdrawn;
    const withdrawnKeys = wire && keys.ifCount(wire.withdrawn, wire.addPath, withdrawn.length, 'ipv4-unicast');
    withdrawList(loc, peer, 'ipv4-unicast', withdrawn, withdrawnKeys);
  }
  const unreach = a.mpUnreach;
  if (unreach?.withdrawn && unreach.withdrawn.length > 0) {
    const f = familyOf(unreach.afi, unreach.safi);
    if (f !== undefined) withdrawList(loc, peer, f, unreach.withdrawn, mpKeys(keys, octets, T.MP_UNREACH_NLRI, f, unreach.withdrawn));
  }
  // The set is found by the octets while they are what the attributes were decoded from.
  const raw = peer.fourOctetAs ? octets : undefined;
  const mandatory = a.origin !== undefined && a.asPath !== undefined;
  if (unread !== undefined) {
    if (unread.nlriCount > 0) {
      const count = v4KeysFromWire(unread.nlri, false, keys.v4);
      if (a.nextHop === undefined || !mandatory) treatAsWithdrawKeys(loc, peer, 'ipv4-unicast', keys.v4, count);
      else {
        const nlri = peer.importPolicy === undefined ? undefined : msg.nlri;
        announceKeys(loc, peer, 'ipv4-unicast', setOfMessage(loc, peer, a, raw), a.nextHop, undefined, keys.v4, count, nlri);
      }
    }
  } else if (msg.nlri.length > 0) {
    const nlri = msg.nlri;
    if (a.nextHop === undefined || !mandatory) {
      // The codec reports this as treat-as-withdraw; a hand-built UPDATE gets the same.
      peer.stats.treatAsWithdraw += nlri.length;
      withdrawList(loc, peer, 'ipv4-unicast', nlri, undefined);
    } else {
      const nlriKeys = wire && keys.ifCount(wire.nlri, wire.addPath, nlri.length, 'ipv4-unicast');
      announceList(loc, peer, 'ipv4-unicast', setOfMessage(loc, peer, a, raw), a.nextHop, undefined, nlri, nlriKeys);
    }
  }
  const reach = a.mpReach;
  if (reach?.nlri && reach.nlri.length > 0) {
    const f = familyOf(reach.afi, reach.safi);
    if (f === undefined) return;
    if (reach.nextHop === undefined || !mandatory) {
      peer.stats.treatAsWithdraw += reach.nlri.length;
      withdrawList(loc, peer, f, reach.nlri, undefined);
    } else {
      const reachKeys = mpKeys(keys, octets, T.MP_REACH_NLRI, f, reach.nlri);
      announceList(loc, peer, f, setOfMessage(loc, peer, a, raw), reach.nextHop, reach.linkLocalNextHop, reach.nlri, reachKeys);
    }
  }
}

/**
 * The keys of a decoded MP_REACH_NLRI or MP_UNREACH_NLRI prefix list (ADD-PATH, or attributes
 * read before) from the attribute's octets: the codec made the list as text, and parsing it
 * back was about a tenth of an IPv6 UPDATE's decoding and update. Undefined without the
 * octets of a clean decode with 4-octet AS numbers, or when they do not hold as many prefixes.
 */
function mpKeys(
  keys: WireKeys,
  octets: Buffer | undefined,
  type: typeof T.MP_REACH_NLRI | typeof T.MP_UNREACH_NLRI,
  family: AddressFamily,
  list: readonly Nlri[],
): PrefixKey[] | undefined {
  const mp = octets === undefined ? undefined : receivedMp(octets, type);
  return mp === undefined ? undefined : keys.ifCount(mp.prefixes, list[0].pathId !== undefined, list.length, family);
}
