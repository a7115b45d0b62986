// IPv4/IPv6 addresses and NLRI prefixes between wire bytes and strings. These run once per
// prefix on the hot path, so they work on bytes at an offset; the text rules (what reads,
// how it prints) are ip/'s, so a prefix the codec prints is the one felix and IPAM print.

import { formatIpv4, formatIpv6, parseIpv4Into, parseIpv6Into } from '../../ip/index.js';

export { formatIpv4, formatIpv6 };

/** Writes a dotted-quad address at pos; throws on anything that is not one. */
export function writeIpv4(s: string, b: Buffer, pos: number): void {
  if (!parseIpv4Into(s, b, pos)) throw new TypeError(`not an IPv4 address: "${s}"`);
}

/** Writes a 16-octet IPv6 address (with "::" and an optional dotted tail) at pos. */
export function writeIpv6(s: string, b: Buffer, pos: number): void {
  if (!parseIpv6Into(s, b, pos)) throw new TypeError(`not an IPv6 address: "${s}"`);
}

export function isIpv6(s: string): boolean {
  // A loop, not includes(): an IPv6 address has its first ':' within five characters, and
  // this runs for every MP_REACH next hop sent.
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === 58) return true;
  return false;
}

/** Parses "addr/len" into its family, full-length address bytes and prefix length. */
export function parsePrefix(prefix: string): { ipv6: boolean; bytes: Buffer; length: number } {
  const slash = prefix.indexOf('/');
  if (slash < 0) throw new TypeError(`not a prefix (no "/length"): "${prefix}"`);
  const ipv6 = isIpv6(prefix);
  const bytes = Buffer.alloc(ipv6 ? 16 : 4);
  if (ipv6) writeIpv6(prefix.slice(0, slash), bytes, 0);
  else writeIpv4(prefix.slice(0, slash), bytes, 0);
  const lenText = prefix.slice(slash + 1);
  const length = Number(lenText);
  if (!/^\d{1,3}$/.test(lenText) || length > (ipv6 ? 128 : 32)) {
    throw new TypeError(`bad prefix length in "${prefix}"`);
  }
  return { ipv6, bytes, length };
}

const scratch = Buffer.alloc(16);

/**
 * Writes one NLRI prefix (length octet + significant octets) and returns the new offset.
 * Runs once per prefix sent: it reads the text in place, without slicing it.
 */
export function writePrefix(prefix: string, ipv6: boolean, b: Buffer, pos: number): number {
  const slash = prefix.indexOf('/');
  if (slash < 0) throw new TypeError(`not a prefix (no "/length"): "${prefix}"`);
  const colon = prefix.indexOf(':');
  if ((colon >= 0 && colon < slash) !== ipv6) {
    throw new TypeError(`prefix "${prefix}" is not ${ipv6 ? 'IPv6' : 'IPv4'}`);
  }
  const length = parsePrefixLength(prefix, slash, ipv6 ? 128 : 32);
  const ok = ipv6 ? parseIpv6Into(prefix, scratch, 0, slash) : parseIpv4Into(prefix, scratch, 0, slash);
  if (!ok) throw new TypeError(`not an ${ipv6 ? 'IPv6' : 'IPv4'} address: "${prefix.slice(0, slash)}"`);
  const n = (length + 7) >> 3;
  b[pos] = length;
  for (let i = 0; i < n; i++) b[pos + 1 + i] = scratch[i];
  return pos + 1 + n;
}

function parsePrefixLength(prefix: string, slash: number, max: number): number {
  let v = 0;
  if (slash + 1 >= prefix.length || prefix.length - slash > 4) {
    throw new TypeError(`bad prefix length in "${prefix}"`);
  }
  for (let i = slash + 1; i < prefix.length; i++) {
    const c = prefix.charCodeAt(i) - 48;
    if (c < 0 || c > 9) throw new TypeError(`bad prefix length in "${prefix}"`);
    v = v * 10 + c;
  }
  if (v > max) throw new TypeError(`bad prefix length in "${prefix}"`);
  return v;
}
