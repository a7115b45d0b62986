// The datastore's view of addresses: the network address as a bigint (IPAM adds ordinals to
// it) and undefined instead of an exception for text that does not parse. The rules (what
// reads, how it prints) are ip/'s; these are thin adapters over it.
import {
  AddressError, addressFromValue, addressValue, cidrContains as ipContains, cidrNetwork, cidrSize as ipSize, formatAddress,
  parseCidr as ipParseCidr, parseIpv4Into, parseIpv6Into, subBlock as ipSubBlock, subBlockCount as ipSubBlockCount,
  type IpFamily, type Cidr as IpCidr,
} from '../../ip/index.js';

export type { IpFamily };

export interface Cidr {
  readonly family: IpFamily;
  /** Network address (host bits are zero). */
  readonly base: bigint;
  readonly prefixLength: number;
}

/** Parses an address; returns undefined when the text is not one. */
export function parseIp(text: string): { family: IpFamily; value: bigint } | undefined {
  if (typeof text !== 'string') return undefined;
  const six = text.includes(':');
  const bytes = new Uint8Array(six ? 16 : 4);
  if (!(six ? parseIpv6Into(text, bytes, 0) : parseIpv4Into(text, bytes, 0))) return undefined;
  return { family: six ? 6 : 4, value: addressValue(bytes) };
}

/** Formats an address; IPv6 in RFC 5952 canonical form. */
export function formatIp(family: IpFamily, value: bigint): string {
  return formatAddress(addressFromValue(family, value).bytes);
}

/** Parses "addr/len". With strict, host bits must be zero (as Calico requires of pools). */
export function parseCidr(text: string, strict = true): Cidr | undefined {
  try {
    return fromIp(cidrNetwork(ipParseCidr(text, 'cidr', strict)));
  } catch (e) {
    if (e instanceof AddressError) return undefined;
    throw e;
  }
}

function fromIp(c: IpCidr): Cidr {
  return { family: c.family, base: addressValue(c.bytes), prefixLength: c.prefixLength };
}

function toIp(c: Cidr): IpCidr {
  return { family: c.family, bytes: addressFromValue(c.family, c.base).bytes, prefixLength: c.prefixLength };
}

export function formatCidr(c: Cidr): string {
  return `${formatIp(c.family, c.base)}/${c.prefixLength}`;
}

export function cidrSize(c: Cidr): bigint {
  return ipSize(toIp(c));
}

export function cidrContainsIp(c: Cidr, family: IpFamily, ip: bigint): boolean {
  return ipContains(toIp(c), addressFromValue(family, ip));
}

/** True when `inner` lies wholly inside `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  return ipContains(toIp(outer), toIp(inner));
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return cidrContains(a, b) || cidrContains(b, a);
}

/** The i-th sub-block of `prefixLength` inside `c`. */
export function subBlock(c: Cidr, prefixLength: number, index: bigint): Cidr {
  return fromIp(ipSubBlock(toIp(c), prefixLength, index));
}

export function subBlockCount(c: Cidr, prefixLength: number): bigint {
  return ipSubBlockCount(toIp(c), prefixLength);
}

/** Calico names datastore objects after CIDRs with every '.', ':' and '/' turned into '-'. */
export function cidrName(cidrText: string): string {
  return cidrText.replace(/[./:]/g, '-');
}
