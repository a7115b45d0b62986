// The common export, done on bytes: a route learned from an external peer, passed to an
// internal group with no export policy. What changes on the way is small (LOCAL_PREF added,
// NEXT_HOP written, unrecognised optional attributes passed on or kept back, RFC 4271 §5 and
// §9), so decoding the set into objects and encoding them back, a whole UPDATE per set, was
// most of the export's cost on real traffic. The output is the codec's canonical encoding of
// the same attributes, octet for octet, so both ways find the same exported set.
import { AttrFlag, AttrType as T, canonicalFlags, ruleByType } from '../codec/index.js';
import { notShared } from './attr-set.js';

let scratch = Buffer.alloc(4096);

/**
 * The attributes an internal peer is sent, from a set's key (its attribute bytes, see
 * receivedKey and attributesKey), in a scratch buffer valid until the next call; undefined
 * when the key is not in ascending type order or holds what this path does not handle
 * (NEXT_HOP, the MP or AS4 attributes, reflection attributes), for the caller to take the
 * general way. `nextHop` is the IPv4 NEXT_HOP as a number, or -1 to write none (IPv6: the
 * next hop goes in MP_REACH_NLRI, outside these bytes).
 */
export function ibgpExportBytes(key: string, nextHop: number, localPref: number): Buffer | undefined {
  const n = key.length;
  if (scratch.length < n + 32) scratch = Buffer.alloc(Math.max(n + 32, scratch.length * 2));
  const out = scratch;
  let o = 0;
  let last = 0;
  let p = 0;
  let nextHopDone = nextHop < 0;
  let localPrefDone = false;
  while (p < n) {
    if (p + 3 > n) return undefined;
    const flags = key.charCodeAt(p);
    const type = key.charCodeAt(p + 1);
    const extended = (flags & AttrFlag.EXTENDED_LENGTH) !== 0;
    const length = extended ? (key.charCodeAt(p + 2) << 8) | key.charCodeAt(p + 3) : key.charCodeAt(p + 2);
    const vs = p + (extended ? 4 : 3);
    p = vs + length;
    if (type <= last || p > n) return undefined;
    last = type;
    // What an external peer's set never holds (receivedKey drops it) but LOCAL_PREF, which
    // is kept as it is.
    if (type !== T.LOCAL_PREF && notShared(type, true)) return undefined;
    if (!nextHopDone && type > T.NEXT_HOP) {
      o = writeU32(out, o, T.NEXT_HOP, nextHop);
      nextHopDone = true;
    }
    if (type === T.LOCAL_PREF) localPrefDone = true;
    else if (!localPrefDone && type > T.LOCAL_PREF) {
      o = writeU32(out, o, T.LOCAL_PREF, localPref);
      localPrefDone = true;
    }
    let outFlags: number;
    if (ruleByType[type] !== undefined) outFlags = canonicalFlags(type, length);
    else if ((flags & AttrFlag.TRANSITIVE) === 0)
      continue; // optional non-transitive: it stays here
    else outFlags = canonicalFlags(type, length, flags | AttrFlag.PARTIAL);
    if (length > 255) {
      out[o] = outFlags;
      out[o + 1] = type;
      out[o + 2] = length >> 8;
      out[o + 3] = length & 0xff;
      o += 4;
    } else {
      out[o] = outFlags;
      out[o + 1] = type;
      out[o + 2] = length;
      o += 3;
    }
    // A loop, not Buffer#write of a substring: values are a few dozen octets, where the call into
    // C++ and the substring cost more than the copy.
    for (let i = vs; i < p; i++) out[o++] = key.charCodeAt(i);
  }
  if (!nextHopDone) o = writeU32(out, o, T.NEXT_HOP, nextHop);
  if (!localPrefDone) o = writeU32(out, o, T.LOCAL_PREF, localPref);
  return out.subarray(0, o);
}

/** A well-known attribute of four octets (NEXT_HOP, LOCAL_PREF). */
function writeU32(out: Buffer, o: number, type: number, value: number): number {
  out[o] = AttrFlag.TRANSITIVE;
  out[o + 1] = type;
  out[o + 2] = 4;
  out.writeUInt32BE(value >>> 0, o + 3);
  return o + 7;
}
