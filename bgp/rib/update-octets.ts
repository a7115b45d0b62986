// An UPDATE applied from its octets alone, as a session hands it over from a 4-octet-AS peer
// when nobody has read its attributes or IPv4 fields: the prefixes keyed from their fields, the
// attribute set found by its octets (a new one reads the decision's numbers and the loop test
// there), MP_UNREACH_NLRI and MP_REACH_NLRI read from the attribute octets. No message or
// attribute object is made, unless an import policy needs the prefixes as text.
import type { ReceivedNlri, ReceivedUpdate, UpdateMessage } from '../codec/index.js';
import { AttrType as T, familyOf, unreadMpAttributes, updateMessageOf } from '../codec/index.js';
import { announceKeys, setOfOctets, treatAsWithdrawKeys, type WireKeys, withdrawKeys } from './adj-rib-in.js';
import { receivedMp, receivedNextHop } from './attr-set.js';
import type { LocRib } from './loc-rib.js';
import type { RibPeer } from './peer.js';
import { v4KeysFromWire } from './prefix.js';

/**
 * Applies an UPDATE whose attribute octets `raw` nobody has read, and whose IPv4 fields, when it
 * has any (`wire`), nobody has read either and carry no ADD-PATH identifiers.
 */
export function updateFromOctets(
  loc: LocRib,
  keys: WireKeys,
  peer: RibPeer,
  u: UpdateMessage | ReceivedUpdate,
  raw: Buffer,
  wire: ReceivedNlri | undefined,
): void {
  // Keyed from the octets, the codec's prefix objects never made: a million of them (a string
  // and an object each) were a tenth of a full table's ingest, GC included.
  if (wire !== undefined && wire.withdrawnCount > 0) {
    const count = v4KeysFromWire(wire.withdrawn, false, keys.v4);
    withdrawKeys(loc, peer, 'ipv4-unicast', keys.v4, count);
  }
  // The codec saw whether the attributes hold MP ones: an IPv4 UPDATE's are not searched.
  const mp = unreadMpAttributes(u);
  if (mp) mpUnreach(loc, keys, peer, raw);
  if (wire !== undefined && wire.nlriCount > 0) {
    const count = v4KeysFromWire(wire.nlri, false, keys.v4);
    const nextHop = receivedNextHop(raw);
    if (nextHop === undefined) {
      // The codec lets no announcement through without its NEXT_HOP: for the type's sake.
      treatAsWithdrawKeys(loc, peer, 'ipv4-unicast', keys.v4, count);
    } else {
      // An import policy reads each prefix as text: then the list is made.
      const nlri = peer.importPolicy === undefined ? undefined : updateMessageOf(u).nlri;
      announceKeys(loc, peer, 'ipv4-unicast', setOfOctets(loc, peer, raw), nextHop, undefined, keys.v4, count, nlri);
    }
  }
  if (mp) mpReach(loc, keys, peer, u, raw);
}

/** The MP_UNREACH_NLRI of attribute octets (the codec checked it; it decodes one with ADD-PATH whole). */
function mpUnreach(loc: LocRib, keys: WireKeys, peer: RibPeer, raw: Buffer): void {
  const mp = receivedMp(raw, T.MP_UNREACH_NLRI);
  if (mp === undefined) return;
  const f = familyOf(mp.afi, mp.safi);
  if (f === undefined || mp.prefixes.length === 0) return;
  const count = keys.read(mp.prefixes, false, f);
  withdrawKeys(loc, peer, f, keys.of(f), count);
}

/** The MP_REACH_NLRI of attribute octets, as mpUnreach. */
function mpReach(loc: LocRib, keys: WireKeys, peer: RibPeer, u: UpdateMessage | ReceivedUpdate, raw: Buffer): void {
  const mp = receivedMp(raw, T.MP_REACH_NLRI);
  if (mp === undefined) return;
  const f = familyOf(mp.afi, mp.safi);
  if (f === undefined || mp.prefixes.length === 0) return;
  const count = keys.read(mp.prefixes, false, f);
  if (mp.nextHop === undefined) {
    // receivedMp reads MP_REACH_NLRI's next hop always: for the type's sake.
    treatAsWithdrawKeys(loc, peer, f, keys.of(f), count);
    return;
  }
  // The codec lets MP_REACH_NLRI through only with ORIGIN and AS_PATH beside it. An import
  // policy reads each prefix as text: then the attributes are made, and with them the list.
  const nlri = peer.importPolicy === undefined ? undefined : updateMessageOf(u).attributes.mpReach?.nlri;
  announceKeys(loc, peer, f, setOfOctets(loc, peer, raw), mp.nextHop, mp.linkLocal, keys.of(f), count, nlri);
}
