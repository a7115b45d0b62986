// IP and CIDR arithmetic on bigint. Our own small code rather than ip-num: IPAM needs
// "address = block base + ordinal" and "block i of a pool" for both families, and one
// bigint path for IPv4 and IPv6 is shorter and faster than converting through ip-num's
// per-family classes on every allocation.
import { isIPv4, isIPv6 } from 'node:net';

export type IpFamily = 4 | 6;

export interface Cidr {
  readonly family: IpFamily;
  /** Network address (host bits are zero). */
  readonly base: bigint;
  readonly prefixLength: number;
}

const BITS: Record<IpFamily, number> = { 4: 32, 6: 128 };

export function familyBits(family: IpFamily): number {
  return BITS[family];
}

/** Parses an address; returns undefined when the text is not one. */
export function parseIp(text: string): { family: IpFamily; value: bigint } | undefined {
  if (isIPv4(text)) {
    let v = 0n;
    for (const part of text.split('.')) v = (v << 8n) | BigInt(Number(part));
    return { family: 4, value: v };
  }
  if (isIPv6(text)) return { family: 6, value: parseIpv6(text) };
  return undefined;
}

function parseIpv6(text: string): bigint {
  let s = text;
  // An embedded dotted quad (::ffff:1.2.3.4) becomes two hextets.
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = parseIp(tail)!.value;
    s = `${s.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const zeros = rest === undefined ? 0 : 8 - left.length - right.length;
  const groups = [...left, ...Array<string>(zeros).fill('0'), ...right];
  let v = 0n;
  for (const g of groups) v = (v << 16n) | BigInt(parseInt(g, 16));
  return v;
}

/** Formats an address; IPv6 in RFC 5952 canonical form. */
export function formatIp(family: IpFamily, value: bigint): string {
  if (family === 4) {
    return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.');
  }
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  // The longest run of two or more zero groups collapses to "::" (first one on a tie).
  let bestStart = -1, bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) { bestStart = i; bestLen = j - i; }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** Parses "addr/len". With strict, host bits must be zero (as Calico requires of pools). */
export function parseCidr(text: string, strict = true): Cidr | undefined {
  if (typeof text !== 'string') return undefined;
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const ip = parseIp(text.slice(0, slash));
  const lenText = text.slice(slash + 1);
  if (!ip || !/^\d{1,3}$/.test(lenText)) return undefined;
  const prefixLength = Number(lenText);
  if (prefixLength > BITS[ip.family]) return undefined;
  const base = ip.value & netmask(ip.family, prefixLength);
  if (strict && base !== ip.value) return undefined;
  return { family: ip.family, base, prefixLength };
}

export function netmask(family: IpFamily, prefixLength: number): bigint {
  const bits = BigInt(BITS[family]);
  const all = (1n << bits) - 1n;
  return all ^ ((1n << (bits - BigInt(prefixLength))) - 1n);
}

export function formatCidr(c: Cidr): string {
  return `${formatIp(c.family, c.base)}/${c.prefixLength}`;
}

export function cidrSize(c: Cidr): bigint {
  return 1n << BigInt(BITS[c.family] - c.prefixLength);
}

export function cidrContainsIp(c: Cidr, family: IpFamily, ip: bigint): boolean {
  return c.family === family && (ip & netmask(family, c.prefixLength)) === c.base;
}

/** True when `inner` lies wholly inside `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  return outer.family === inner.family && outer.prefixLength <= inner.prefixLength &&
    (inner.base & netmask(outer.family, outer.prefixLength)) === outer.base;
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return cidrContains(a, b) || cidrContains(b, a);
}

/** The i-th sub-block of `prefixLength` inside `c`. */
export function subBlock(c: Cidr, prefixLength: number, index: bigint): Cidr {
  const step = 1n << BigInt(BITS[c.family] - prefixLength);
  return { family: c.family, base: c.base + index * step, prefixLength };
}

export function subBlockCount(c: Cidr, prefixLength: number): bigint {
  return 1n << BigInt(prefixLength - c.prefixLength);
}

/** Calico names datastore objects after CIDRs with every '.', ':' and '/' turned into '-'. */
export function cidrName(cidrText: string): string {
  return cidrText.replace(/[./:]/g, '-');
}
