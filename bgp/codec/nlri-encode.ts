// NLRI fields to the wire: each prefix's text read once, straight into the output buffer.
// Most prefixes a speaker sends are IPv4 dotted quads with a one- or two-digit length; those
// take a single pass over the text here. Anything else (IPv6, an unusual length such as "/032",
// text that is not a prefix at all) goes through writePrefix, which also words the errors.
import { parseIpv6Into } from '../../ip/index.js';
import { writePrefix } from './address.js';
import type { Nlri } from './types.js';
import type { Writer } from './writer.js';

/**
 * Writes "a.b.c.d/len" as an NLRI entry at b[pos] and returns the new offset, or -1 when the
 * text is not a plain IPv4 prefix (nothing is written then). Accepts exactly what
 * writePrefix accepts for IPv4, minus the rare forms left to it.
 */
export function writeIpv4PrefixFast(s: string, b: Buffer, pos: number): number {
  const n = s.length;
  let address = 0;
  let value = 0;
  let digits = 0;
  let dots = 0;
  let i = 0;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits === 1 && value === 0) return -1; // a leading zero: refused by writePrefix
      value = value * 10 + (c - 48);
      if (++digits > 3 || value > 255) return -1;
    } else if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      address = (address << 8) | value;
      dots++;
      value = 0;
      digits = 0;
    } else break;
  }
  if (dots !== 3 || digits === 0 || i >= n - 1 || s.charCodeAt(i) !== 47) return -1;
  address = (address << 8) | value;
  // The length: one or two digits, at most 32.
  let length = s.charCodeAt(i + 1) - 48;
  if (length < 0 || length > 9) return -1;
  if (i + 2 < n) {
    if (i + 3 < n) return -1;
    const d = s.charCodeAt(i + 2) - 48;
    if (d < 0 || d > 9 || length === 0) return -1;
    length = length * 10 + d;
    if (length > 32) return -1;
  }
  b[pos] = length;
  if (length > 0) b[pos + 1] = address >>> 24;
  if (length > 8) b[pos + 2] = address >>> 16;
  if (length > 16) b[pos + 3] = address >>> 8;
  if (length > 24) b[pos + 4] = address;
  return pos + 1 + ((length + 7) >> 3);
}

/**
 * Writes "addr/len" as an IPv6 NLRI entry at b[pos] and returns the new offset, or -1 when
 * the text is not a plain IPv6 prefix. The address is parsed in place after the length octet:
 * it writes all 16 octets, past the entry's end, which the caller has room for and writes over.
 */
export function writeIpv6PrefixFast(s: string, b: Buffer, pos: number): number {
  const n = s.length;
  // The length: one to three digits after the last '/', at most 128, no leading zero.
  let slash = n - 2;
  while (slash >= 0 && slash >= n - 4 && s.charCodeAt(slash) !== 47) slash--;
  if (slash < 1 || s.charCodeAt(slash) !== 47) return -1;
  let length = 0;
  for (let i = slash + 1; i < n; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9 || (length === 0 && i > slash + 1)) return -1;
    length = length * 10 + d;
  }
  if (length > 128 || !parseIpv6Into(s, b, pos + 1, slash)) return -1;
  b[pos] = length;
  return pos + 1 + ((length + 7) >> 3);
}

/** Writes a run of NLRI entries (path id first under ADD-PATH) at the writer's position. */
export function writeNlriInto(w: Writer, entries: readonly Nlri[], ipv6: boolean, addPath: boolean): void {
  // Room for the longest entry before each one: cheaper than measuring them all first.
  const most = (addPath ? 4 : 0) + (ipv6 ? 17 : 5);
  let b = w.buf;
  let pos = w.pos;
  for (let i = 0; i < entries.length; i++) {
    if (pos + most > b.length) {
      w.pos = pos;
      w.ensure(most);
      b = w.buf;
    }
    const e = entries[i];
    if (addPath) {
      const id = e.pathId ?? 0;
      // writeUInt32BE words the error for an identifier that is not an unsigned 32-bit value.
      if (id >>> 0 !== id) b.writeUInt32BE(id, pos);
      b[pos] = id >>> 24;
      b[pos + 1] = id >>> 16;
      b[pos + 2] = id >>> 8;
      b[pos + 3] = id;
      pos += 4;
    }
    const prefix = e.prefix;
    const next = ipv6 ? writeIpv6PrefixFast(prefix, b, pos) : writeIpv4PrefixFast(prefix, b, pos);
    pos = next >= 0 ? next : writePrefix(prefix, ipv6, b, pos);
  }
  w.pos = pos;
}
