// CIDR prefixes ("10.0.0.0/26", "fd00::/122") and addresses with a prefix length
// ("10.0.1.5/24" on an interface), and the block arithmetic IPAM does on them: block i of a
// pool, address n of a block. Bytes are the stored form (netlink and the BGP wire want
// them); bigint is used only for arithmetic, where an IPv6 pool outgrows a double.

import { AddressError } from './error.js';
import { addressFromValue, addressValue, familyBits, formatAddress, parseAddress, parseIpv4Into, type Address } from './address.js';

export interface Cidr extends Address {
  /** The leading bits of `bytes` that name the network. */
  readonly prefixLength: number;
}

function withLength(text: string, slash: number, field: string, strict: boolean): Cidr {
  const { family, bytes } = parseAddress(text.slice(0, slash), field);
  const max = familyBits(family);
  let n = 0;
  const digits = text.length - slash - 1;
  for (let i = slash + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) {
      n = -1;
      break;
    }
    n = n * 10 + (c - 48);
  }
  if (n < 0 || digits < 1 || digits > 3 || n > max) throw new AddressError(field, text, `has a bad prefix length (0..${max})`);
  if (strict && !hostBitsZero(bytes, n)) throw new AddressError(field, text, 'has host bits set');
  return { family, bytes, prefixLength: n };
}

/**
 * Parses "address/length". With `strict` (a network: a pool, a block, a route) host bits
 * must be zero; without, they are kept (cidrNetwork clears them).
 */
export function parseCidr(text: string, field = 'cidr', strict = true): Cidr {
  if (typeof text !== 'string') throw new AddressError(field, text, 'is not a string');
  const slash = text.indexOf('/');
  if (slash < 0) throw new AddressError(field, text, 'is not a CIDR (address/prefix-length)');
  return withLength(text, slash, field, strict);
}

/**
 * Parses an address as an interface carries it: "10.0.1.5/24", host bits kept, or a bare
 * address, which is its own host prefix (/32, /128).
 */
export function parseInterfaceAddress(text: string, field = 'address'): Cidr {
  if (typeof text !== 'string') throw new AddressError(field, text, 'is not a string');
  const slash = text.indexOf('/');
  if (slash >= 0) return withLength(text, slash, field, false);
  const a = parseAddress(text, field);
  return { family: a.family, bytes: a.bytes, prefixLength: familyBits(a.family) };
}

/**
 * The address of "10.0.1.5/24" (an interface's address and subnet length) or of a bare
 * address, in canonical text, its length dropped. Throws AddressError naming `field` as
 * parseInterfaceAddress does, so every layer refuses a malformed one in the same words.
 */
export function cidrAddress(text: string, field = 'address'): string {
  return formatAddress(parseInterfaceAddress(text, field).bytes);
}

function hostBitsZero(bytes: Uint8Array, len: number): boolean {
  const full = len >> 3;
  if ((len & 7) !== 0 && (bytes[full] & (0xff >> (len & 7))) !== 0) return false;
  for (let i = (len + 7) >> 3; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}

export function formatCidr(c: Cidr): string {
  return `${formatAddress(c.bytes)}/${c.prefixLength}`;
}

/** The canonical text of a prefix: "10.0.0.0/26", "fd00::/122". Strict: host bits must be zero. */
export function canonicalCidr(text: string, field = 'cidr'): string {
  return formatCidr(parseCidr(text, field));
}

const scratch = new Uint8Array(4);

/** The host prefix ("10.1.2.3/32", "fd00::2/128") of an address given bare or as /32, /128. */
export function hostPrefix(text: string, field = 'address'): string {
  // A dotted quad that reads is already canonical (no leading zeros is part of the rule).
  if (typeof text === 'string' && parseIpv4Into(text, scratch, 0)) return `${text}/32`;
  const c = parseInterfaceAddress(text, field);
  const max = familyBits(c.family);
  if (c.prefixLength !== max) throw new AddressError(field, text, `must be a single address (/${max})`);
  return `${formatAddress(c.bytes)}/${max}`;
}

/** The network of c: its host bits cleared. */
export function cidrNetwork(c: Cidr): Cidr {
  if (hostBitsZero(c.bytes, c.prefixLength)) return c;
  const bytes = c.bytes.slice();
  const full = c.prefixLength >> 3;
  if ((c.prefixLength & 7) !== 0) bytes[full] &= (0xff << (8 - (c.prefixLength & 7))) & 0xff;
  bytes.fill(0, (c.prefixLength + 7) >> 3);
  return { family: c.family, bytes, prefixLength: c.prefixLength };
}

/** True when `inner` (a prefix, or an address) lies wholly inside `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr | Address): boolean {
  const innerLength = 'prefixLength' in inner ? inner.prefixLength : familyBits(inner.family);
  if (outer.family !== inner.family || innerLength < outer.prefixLength) return false;
  const full = outer.prefixLength >> 3;
  for (let i = 0; i < full; i++) if (outer.bytes[i] !== inner.bytes[i]) return false;
  const rest = outer.prefixLength & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (outer.bytes[full] & mask) === (inner.bytes[full] & mask);
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return cidrContains(a, b) || cidrContains(b, a);
}

/** How many addresses c holds. */
export function cidrSize(c: Cidr): bigint {
  return 1n << BigInt(familyBits(c.family) - c.prefixLength);
}

/** How many blocks of `prefixLength` c holds. */
export function subBlockCount(c: Cidr, prefixLength: number): bigint {
  if (prefixLength < c.prefixLength || prefixLength > familyBits(c.family)) {
    throw new RangeError(`a /${prefixLength} block does not fit in a /${c.prefixLength}`);
  }
  return 1n << BigInt(prefixLength - c.prefixLength);
}

/** Block `index` (from 0) of `prefixLength` inside c. */
export function subBlock(c: Cidr, prefixLength: number, index: bigint): Cidr {
  if (index < 0n || index >= subBlockCount(c, prefixLength)) {
    throw new RangeError(`block ${index} of /${prefixLength} is outside ${formatCidr(cidrNetwork(c))}`);
  }
  const step = 1n << BigInt(familyBits(c.family) - prefixLength);
  const { bytes } = addressFromValue(c.family, addressValue(cidrNetwork(c).bytes) + index * step);
  return { family: c.family, bytes, prefixLength };
}

/** The address `ordinal` places after c's network address: IPAM's "block base + ordinal". */
export function addressAt(c: Cidr, ordinal: bigint | number): Address {
  const n = BigInt(ordinal);
  if (n < 0n || n >= cidrSize(c)) throw new RangeError(`address ${n} is outside ${formatCidr(cidrNetwork(c))}`);
  return addressFromValue(c.family, addressValue(cidrNetwork(c).bytes) + n);
}
