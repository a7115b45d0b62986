// Compact prefix keys. A route table of a million prefixes pays for every byte of its keys,
// so a prefix is not kept as its text form:
//  - IPv4: a number, address * 64 + length (exact in a double). The table splits it again
//    into one Map per length keyed by the address as a signed 32-bit integer, which V8
//    stores inline (a Smi): no heap object per key at all.
//  - IPv6: the NLRI wire form itself (length octet + significant octets) as a latin1
//    string: at most 17 one-byte characters, and written to the wire by a plain copy.
// Host bits past the length are cleared, so 10.0.0.1/24 and 10.0.0.0/24 are one prefix.
import { formatIpv4Number, ipv4NumberAt } from '../../ip/index.js';
import { formatIpv6, parsePrefix } from '../codec/index.js';
import type { AddressFamily } from '../codec/index.js';

export type V4Key = number;
export type V6Key = string;
export type PrefixKey = V4Key | V6Key;

const bad = (prefix: string, family: string): TypeError =>
  new TypeError(`prefix: "${prefix}" is not an ${family} prefix (expected address/length)`);

/** "a.b.c.d/len" → key; throws a TypeError naming the prefix when it is not one. */
export function v4Key(prefix: string): V4Key {
  const n = prefix.length;
  const slash = prefix.indexOf('/');
  const addr = slash < 0 ? -1 : ipv4NumberAt(prefix, 0, slash);
  if (addr < 0 || slash >= n - 1 || n - slash > 4) throw bad(prefix, 'IPv4');
  let len = 0;
  for (let i = slash + 1; i < n; i++) {
    const c = prefix.charCodeAt(i) - 48;
    if (c < 0 || c > 9) throw bad(prefix, 'IPv4');
    len = len * 10 + c;
  }
  if (len > 32) throw bad(prefix, 'IPv4');
  return maskV4(addr, len) * 64 + len;
}

/**
 * Keys of the prefixes in an IPv4 NLRI field already checked by the codec, written from
 * out[0]; returns how many. The same keys v4Key gives for the text the codec made of them.
 */
export function v4KeysFromWire(b: Buffer, addPath: boolean, out: V4Key[]): number {
  let pos = 0;
  let count = 0;
  const end = b.length;
  while (pos < end) {
    if (addPath) pos += 4;
    const len = b[pos++];
    const n = (len + 7) >> 3;
    // One path for every length, in int32 arithmetic: a branch per octet left the fourth octet's
    // load without type feedback until the first prefix longer than /24, and a sum overflowed
    // Smis at the first address past 2^31; either deoptimized this function and the callers it
    // was inlined into. A shift by 32 (n = 0) is none, and addr is 0 then.
    let addr = 0;
    for (let i = 0; i < n; i++) addr = (addr << 8) | b[pos + i];
    pos += n;
    out[count++] = maskV4(addr << (32 - 8 * n), len) * 64 + len;
  }
  return count;
}

/** The netmask of each prefix length, as an int32 (so /0 is 0 and /32 all ones, without a branch). */
const MASK_V4 = Int32Array.from({ length: 33 }, (_, len) => (len === 0 ? 0 : -1 << (32 - len)));

function maskV4(addr: number, len: number): number {
  return (addr & MASK_V4[len]) >>> 0;
}

/**
 * A V4Key's prefix length. Not `key % 64`: a key from 32.0.0.0 up is no Smi, and V8 takes the
 * remainder of doubles with x87's fprem, ~20 ns, where this division and floor (exact: keys
 * are integers under 2^38) take ~1.
 */
export function v4KeyLength(key: V4Key): number {
  return (key - Math.floor(key / 64) * 64) | 0;
}

/** A V4Key's address, as an unsigned 32-bit number. */
export function v4KeyAddress(key: V4Key): number {
  return Math.floor(key / 64);
}

function formatV4Key(key: V4Key): string {
  return formatIpv4Number(v4KeyAddress(key)) + '/' + v4KeyLength(key);
}

/** Octets of the prefix in an NLRI field: the length octet and the significant octets. */
export function v4WireLength(key: V4Key): number {
  return 1 + ((v4KeyLength(key) + 7) >> 3);
}

export function writeV4Key(key: V4Key, b: Buffer, pos: number): number {
  const len = v4KeyLength(key);
  const a = v4KeyAddress(key);
  b[pos++] = len;
  if (len > 0) b[pos++] = a >>> 24;
  if (len > 8) b[pos++] = (a >>> 16) & 255;
  if (len > 16) b[pos++] = (a >>> 8) & 255;
  if (len > 24) b[pos++] = a & 255;
  return pos;
}

const v6Bytes = Buffer.alloc(16);
const v6Scratch = Buffer.alloc(17);

/** "2001:db8::/32" → key. */
export function v6Key(prefix: string): V6Key {
  let parsed: ReturnType<typeof parsePrefix>;
  try {
    parsed = parsePrefix(prefix);
  } catch {
    throw bad(prefix, 'IPv6');
  }
  if (!parsed.ipv6) throw bad(prefix, 'IPv6');
  return v6KeyFromBytes(parsed.bytes, parsed.length);
}

function v6KeyFromBytes(bytes: Uint8Array, len: number): V6Key {
  const n = (len + 7) >> 3;
  let s = String.fromCharCode(len);
  for (let i = 0; i < n; i++) {
    let o = bytes[i];
    if (i === n - 1 && (len & 7) !== 0) o &= (0xff << (8 - (len & 7))) & 0xff;
    s += String.fromCharCode(o);
  }
  return s;
}

/**
 * Keys of the prefixes in an IPv6 NLRI field already checked by the codec, written from
 * out[0]; returns how many. The same keys v6Key gives for the text the codec made of them:
 * the wire form, with the bits past the length cleared.
 */
export function v6KeysFromWire(b: Buffer, addPath: boolean, out: V6Key[]): number {
  let pos = 0;
  let count = 0;
  const end = b.length;
  while (pos < end) {
    if (addPath) pos += 4;
    const len = b[pos];
    const n = (len + 7) >> 3;
    const last = n === 0 ? len : b[pos + n];
    const kept = (len & 7) === 0 ? last : last & (0xff << (8 - (len & 7)));
    out[count++] = wireString(b, pos, 1 + n, kept);
    pos += 1 + n;
  }
  return count;
}

const char = String.fromCharCode;

/**
 * The `n` octets from b[pos] as one flat latin1 string, the last of them replaced by `last`.
 * String.fromCharCode with its arguments spelled out makes the string without leaving
 * JavaScript: Buffer#toString('latin1') cost ~115–150 ns a prefix in its call into C++, this
 * ~35 for a /48 or a /64. For a /128 the call was the cheaper (~70 ns against ~120), so past
 * nine octets it is the call.
 */
function wireString(b: Buffer, pos: number, n: number, last: number): string {
  const p = pos;
  switch (n) {
    case 1:
      return char(last);
    case 2:
      return char(b[p], last);
    case 3:
      return char(b[p], b[p + 1], last);
    case 4:
      return char(b[p], b[p + 1], b[p + 2], last);
    case 5:
      return char(b[p], b[p + 1], b[p + 2], b[p + 3], last);
    case 6:
      return char(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], last);
    case 7:
      return char(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], last);
    case 8:
      return char(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6], last);
    case 9:
      return char(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6], b[p + 7], last);
  }
  if (b[p + n - 1] === last) return b.toString('latin1', p, p + n);
  // Cleared in a copy, and made one flat string (a concatenation would keep two parts).
  b.copy(v6Scratch, 0, p, p + n - 1);
  v6Scratch[n - 1] = last;
  return v6Scratch.toString('latin1', 0, n);
}

function formatV6Key(key: V6Key): string {
  v6Bytes.fill(0);
  for (let i = 1; i < key.length; i++) v6Bytes[i - 1] = key.charCodeAt(i);
  return formatIpv6(v6Bytes, 0) + '/' + key.charCodeAt(0);
}

/** The key's wire form (it is one: length octet, then the octets) at b[pos]; returns the end. */
export function writeV6Key(key: V6Key, b: Buffer, pos: number): number {
  // A loop, not b.write(key, pos, 'latin1'): its call into C++ cost more than the few octets.
  const n = key.length;
  for (let i = 0; i < n; i++) b[pos + i] = key.charCodeAt(i);
  return pos + n;
}

export function prefixKey(family: AddressFamily, prefix: string): PrefixKey {
  return family === 'ipv4-unicast' ? v4Key(prefix) : v6Key(prefix);
}

export function formatKey(family: AddressFamily, key: PrefixKey): string {
  return family === 'ipv4-unicast' ? formatV4Key(key as V4Key) : formatV6Key(key as V6Key);
}

export function familyOfPrefix(prefix: string): AddressFamily {
  return prefix.includes(':') ? 'ipv6-unicast' : 'ipv4-unicast';
}
