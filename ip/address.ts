// IPv4 and IPv6 addresses between text, bytes (what netlink and the BGP wire carry) and
// bigint (what address arithmetic needs). One rule each way, so that an address printed by
// any part of podroute compares equal, as a string, to the same address printed by another:
//  - read: a dotted quad without leading zeros (some parsers take "010" for octal, so it is
//    refused rather than guessed); IPv6 as RFC 4291 §2.2 writes it, a dotted quad only in
//    the last 32 bits; no zone ("%eth0"): an address here is 4 or 16 octets.
//  - print: a dotted quad; IPv6 as RFC 5952 §4 says (lower case, no leading zeros, the
//    longest run of two or more zero groups as "::", the first of equal runs), and an
//    IPv4-mapped address as ::ffff:192.0.2.1 (§5; iproute2 and Go print it so too). Other
//    addresses that embed IPv4 (64:ff9b::/96, ::ffff:0:0:0/96) print in hexadecimal.
// The readers and printers work on a byte array at an offset, so the BGP codec and felix
// call them once per prefix on their own buffers, without a copy.

import { AddressError } from './error.js';

export type IpFamily = 4 | 6;

export interface Address {
  readonly family: IpFamily;
  /** 4 or 16 octets, network byte order. */
  readonly bytes: Uint8Array;
}

/** 32 or 128. */
export function familyBits(family: IpFamily): number {
  return family === 4 ? 32 : 128;
}

// Hand-rolled, and the one dotted-quad reader: felix reads every workload address (100k of
// them at scale), the RIB every next hop and ORIGINATOR_ID it keys by number.
function readIpv4Number(text: string, start: number, end: number): number {
  let addr = 0;
  let part = 0;
  let value = 0;
  let digits = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits === 1 && value === 0) return -1; // a leading zero
      value = value * 10 + (c - 48);
      digits++;
      if (value > 255) return -1;
    } else if (c === 46 && digits > 0 && part < 3) {
      addr = (addr << 8) | value;
      part++;
      value = 0;
      digits = 0;
    } else {
      return -1;
    }
  }
  if (part !== 3 || digits === 0) return -1;
  return ((addr << 8) | value) >>> 0;
}

function readIpv4(text: string, start: number, end: number, out: Uint8Array, pos: number): boolean {
  const v = readIpv4Number(text, start, end);
  if (v < 0) return false;
  out[pos] = v >>> 24;
  out[pos + 1] = (v >>> 16) & 255;
  out[pos + 2] = (v >>> 8) & 255;
  out[pos + 3] = v & 255;
  return true;
}

function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

function readIpv6(text: string, start: number, end: number, out: Uint8Array, pos: number): boolean {
  let n = 0; // groups written so far
  let gap = -1; // the group "::" stands before
  let i = start;
  if (end - start >= 2 && text.charCodeAt(i) === 58) {
    if (text.charCodeAt(i + 1) !== 58) return false;
    gap = 0;
    i += 2;
  }
  while (i < end) {
    let value = 0;
    let j = i;
    for (; j < end; j++) {
      const h = hexDigit(text.charCodeAt(j));
      if (h < 0) break;
      if (j - i === 4) return false;
      value = value * 16 + h;
    }
    if (j < end && text.charCodeAt(j) === 46) {
      // A dotted quad: it must be the last 32 bits.
      if (n > 6 || !readIpv4(text, i, end, out, pos + 2 * n)) return false;
      n += 2;
      break;
    }
    if (j === i || n === 8) return false;
    out[pos + 2 * n] = value >> 8;
    out[pos + 2 * n + 1] = value & 255;
    n++;
    if (j === end) break;
    if (text.charCodeAt(j) !== 58) return false;
    if (j + 1 < end && text.charCodeAt(j + 1) === 58) {
      if (gap >= 0) return false;
      gap = n;
      i = j + 2;
    } else {
      i = j + 1;
      if (i === end) return false; // a trailing single ':'
    }
  }
  if (gap < 0) return n === 8;
  if (n > 7) return false;
  // Move the groups written after "::" to the end and zero what "::" stands for.
  const after = 2 * (n - gap);
  out.copyWithin(pos + 16 - after, pos + 2 * gap, pos + 2 * n);
  out.fill(0, pos + 2 * gap, pos + 16 - after);
  return true;
}

/** Reads a dotted quad into out[pos, pos + 4); false (out undefined) when the text is not one. */
export function parseIpv4Into(text: string, out: Uint8Array, pos = 0, end = text.length): boolean {
  return readIpv4(text, 0, end, out, pos);
}

/**
 * The dotted quad in text[start, end) as an unsigned 32-bit number, -1 when it is not one.
 * Allocates nothing: the form for hot paths (the RIB keys IPv4 prefixes and IDs by number).
 */
export function ipv4NumberAt(text: string, start = 0, end = text.length): number {
  return readIpv4Number(text, start, end);
}

/** A dotted quad as an unsigned 32-bit number. Throws AddressError naming `field`. */
export function parseIpv4Number(text: string, field = 'address'): number {
  if (typeof text !== 'string') throw new AddressError(field, text, 'is not a string');
  const v = readIpv4Number(text, 0, text.length);
  if (v < 0) throw new AddressError(field, text, 'is not an IPv4 address');
  return v;
}

/** The dotted quad of an unsigned 32-bit number; a RangeError when it is not one. */
export function formatIpv4Number(n: number): string {
  if (n >>> 0 !== n) throw new RangeError(`${n} is not an IPv4 address value`);
  return (n >>> 24) + '.' + ((n >>> 16) & 255) + '.' + ((n >>> 8) & 255) + '.' + (n & 255);
}

/**
 * Reads an IPv6 address into out[pos, pos + 16); false (out undefined) when the text is not one.
 * `end` reads only a leading part of the text (the address of "addr/len", without slicing it).
 */
export function parseIpv6Into(text: string, out: Uint8Array, pos = 0, end = text.length): boolean {
  return readIpv6(text, 0, end, out, pos);
}

/** Parses an IPv4 or IPv6 address (no prefix length). Throws AddressError naming `field`. */
export function parseAddress(text: string, field = 'address'): Address {
  if (typeof text !== 'string') throw new AddressError(field, text, 'is not a string');
  if (text.includes(':')) {
    const bytes = new Uint8Array(16);
    if (readIpv6(text, 0, text.length, bytes, 0)) return { family: 6, bytes };
  } else {
    const bytes = new Uint8Array(4);
    if (readIpv4(text, 0, text.length, bytes, 0)) return { family: 4, bytes };
  }
  throw new AddressError(field, text, 'is not an IPv4 or IPv6 address');
}

export function formatIpv4(b: Uint8Array, pos = 0): string {
  return b[pos] + '.' + b[pos + 1] + '.' + b[pos + 2] + '.' + b[pos + 3];
}

// Every 16-bit group's hex text, built on first use: a table lookup is ten times faster
// than toString(16), and processes that never print IPv6 do not pay for it.
let HEX: string[] | undefined;

/** RFC 5952 text of the 16 octets at b[pos]. */
export function formatIpv6(b: Uint8Array, pos = 0): string {
  const hex = (HEX ??= Array.from({ length: 65536 }, (_, i) => i.toString(16)));
  const g = new Array<number>(8);
  let bestStart = -1;
  let bestLen = 1;
  let runStart = -1;
  for (let i = 0; i < 8; i++) {
    const v = (b[pos + 2 * i] << 8) | b[pos + 2 * i + 1];
    g[i] = v;
    if (v === 0) {
      if (runStart < 0) runStart = i;
      if (i - runStart + 1 > bestLen) {
        bestLen = i - runStart + 1;
        bestStart = runStart;
      }
    } else {
      runStart = -1;
    }
  }
  if (bestStart === 0 && bestLen === 5 && g[5] === 0xffff) {
    return '::ffff:' + formatIpv4(b, pos + 12);
  }
  let s = '';
  for (let i = 0; i < 8; i++) {
    if (i === bestStart) {
      s += i === 0 ? '::' : ':';
      i += bestLen - 1;
      continue;
    }
    s += hex[g[i]];
    if (i < 7) s += ':';
  }
  return s;
}

/** The text of an address, or of its 4 or 16 octets. */
export function formatAddress(address: Address | Uint8Array): string {
  const bytes = address instanceof Uint8Array ? address : address.bytes;
  if (bytes.length === 4) return formatIpv4(bytes, 0);
  if (bytes.length === 16) return formatIpv6(bytes, 0);
  throw new RangeError(`an address is 4 or 16 octets, not ${bytes.length}`);
}

/** The address as an unsigned integer, for arithmetic. */
export function addressValue(bytes: Uint8Array): bigint {
  let v = 0n;
  for (let i = 0; i < bytes.length; i += 4) {
    v = (v << 32n) | BigInt(((bytes[i] << 24) | (bytes[i + 1] << 16) | (bytes[i + 2] << 8) | bytes[i + 3]) >>> 0);
  }
  return v;
}

/** The address of an unsigned integer; a RangeError when it does not fit the family. */
export function addressFromValue(family: IpFamily, value: bigint): Address {
  if (value < 0n || value >> BigInt(familyBits(family)) !== 0n) {
    throw new RangeError(`${value} is not an IPv${family} address value`);
  }
  const bytes = new Uint8Array(family === 4 ? 4 : 16);
  let v = value;
  for (let i = bytes.length - 4; i >= 0; i -= 4) {
    const w = Number(v & 0xffffffffn);
    bytes[i] = w >>> 24;
    bytes[i + 1] = (w >>> 16) & 255;
    bytes[i + 2] = (w >>> 8) & 255;
    bytes[i + 3] = w & 255;
    v >>= 32n;
  }
  return { family, bytes };
}
