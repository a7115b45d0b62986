// Set elements in one canonical text, so that the elements we want and the ones nft prints back
// compare as strings. nft rewrites what it is given: 10.0.0.1/32 comes back as 10.0.0.1, a
// network's host bits are cleared, a range that is a prefix comes back as the prefix, protocol
// numbers come back as names. An interval set cannot hold overlapping elements (nft refuses
// them without auto-merge), so overlapping ones are merged here first, as the kernel would
// have to hold them. Map keys and verdicts get the same treatment.

import { addressFromValue, addressValue, familyBits, formatAddress, type IpFamily, parseAddress } from '../../ip/index.js';

/** The type's components joined as nft prints them: `ipv4_addr . inet_service`. */
export function canonicalType(type: string): string {
  return type
    .split('.')
    .map((t) => t.trim())
    .join(' . ');
}

/** A span of addresses [first, last] of one family. */
export interface AddressSpan {
  readonly family: IpFamily;
  readonly first: bigint;
  readonly last: bigint;
}

function parseValue(text: string): { family: IpFamily; value: bigint } | undefined {
  try {
    const a = parseAddress(text.trim());
    return { family: a.family, value: addressValue(a.bytes) };
  } catch {
    return undefined;
  }
}

/** `a`, `a/len` or `a-b` as a span; undefined when it is none of those. */
export function addressSpan(text: string): AddressSpan | undefined {
  const slash = text.indexOf('/');
  if (slash >= 0) {
    const a = parseValue(text.slice(0, slash));
    const lenText = text.slice(slash + 1).trim();
    if (!a || !/^\d{1,3}$/.test(lenText)) return undefined;
    const bits = familyBits(a.family);
    const len = Number(lenText);
    if (len > bits) return undefined;
    const hostBits = BigInt(bits - len);
    const first = (a.value >> hostBits) << hostBits;
    return { family: a.family, first, last: first + (1n << hostBits) - 1n };
  }
  const dash = text.indexOf('-');
  if (dash >= 0) {
    const a = parseValue(text.slice(0, dash));
    const b = parseValue(text.slice(dash + 1));
    if (!a || !b || a.family !== b.family || a.value > b.value) return undefined;
    return { family: a.family, first: a.value, last: b.value };
  }
  const a = parseValue(text);
  return a && { family: a.family, first: a.value, last: a.value };
}

/** A span as nft prints it: a bare address, a prefix, or a range. */
export function spanText(s: AddressSpan): string {
  const first = formatAddress(addressFromValue(s.family, s.first));
  if (s.first === s.last) return first;
  const size = s.last - s.first + 1n;
  // A prefix: the size is a power of two and the first address is aligned to it.
  if ((size & (size - 1n)) === 0n && (s.first & (size - 1n)) === 0n) {
    const len = familyBits(s.family) - (size.toString(2).length - 1);
    return `${first}/${len}`;
  }
  return `${first}-${formatAddress(addressFromValue(s.family, s.last))}`;
}

// nft prints these protocol numbers by name (from /etc/protocols).
const PROTO_NAMES: Readonly<Record<string, string>> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 58: 'ipv6-icmp', 132: 'sctp', icmpv6: 'ipv6-icmp' };

function serviceText(text: string): string {
  const m = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(text);
  if (!m) return text;
  const first = Number(m[1]);
  const last = m[2] === undefined ? first : Number(m[2]);
  return first === last ? String(first) : `${first}-${last}`;
}

// A set that changes is mostly the addresses it held: each address text is made canonical once,
// not once per change. Cleared when it outgrows any cluster's addresses.
const addressTexts = new Map<string, string>();
const MAX_ADDRESS_TEXTS = 200_000;

/** Whether `text` is an IPv4 address as nft prints it: four decimal bytes, none with a leading zero. */
function printedIpv4(text: string): boolean {
  let dots = 0;
  let digits = 0;
  let value = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || ++dots > 3) return false;
      digits = value = 0;
    } else if (c < 48 || c > 57 || (digits === 1 && value === 0)) return false;
    else {
      value = value * 10 + c - 48;
      if (++digits > 3 || value > 255) return false;
    }
  }
  return dots === 3 && digits > 0;
}

function addressText(text: string): string {
  // Most addresses come as nft prints them (a compiler's, a read's): kept, neither parsed nor cached.
  if (printedIpv4(text)) return text;
  let canonical = addressTexts.get(text);
  if (canonical === undefined) {
    const s = addressSpan(text);
    canonical = s ? spanText(s) : text;
    if (addressTexts.size >= MAX_ADDRESS_TEXTS) addressTexts.clear();
    addressTexts.set(text, canonical);
  }
  return canonical;
}

function componentText(type: string, raw: string): string {
  const text = raw.trim();
  switch (type) {
    case 'ipv4_addr':
    case 'ipv6_addr':
      return addressText(text);
    case 'inet_proto':
      return PROTO_NAMES[text.toLowerCase()] ?? text.toLowerCase();
    case 'inet_service':
      return serviceText(text);
    case 'ifname':
    case 'string':
      return `"${text.replace(/^"(.*)"$/, '$1')}"`;
    default:
      return text;
  }
}

/**
 * The canonical text of a set's elements: each component rewritten as nft prints it, each
 * element once, and in an interval set of addresses the overlapping elements merged (adjacent
 * ones stay apart, as nft keeps them). Text that does not read is kept as it is, for nft to
 * refuse with its own message.
 */
export function canonicalElements(type: string, interval: boolean, elements: Iterable<string>): string[] {
  return [...canonicalElementSet(type, interval, elements)];
}

/** canonicalElements as a set (a set's state holds them so: not made twice). */
export function canonicalElementSet(type: string, interval: boolean, elements: Iterable<string>): Set<string> {
  const types = canonicalType(type).split(' . ');
  const single = types.length === 1 ? types[0] : undefined;
  if (interval && (single === 'ipv4_addr' || single === 'ipv6_addr')) return new Set(mergedSpans(elements));
  const out = new Set<string>();
  for (const e of elements) out.add(canonicalOf(types, e));
  return out;
}

function mergedSpans(elements: Iterable<string>): string[] {
  const spans: AddressSpan[] = [];
  const unread: string[] = [];
  for (const e of elements) {
    const s = addressSpan(e.trim());
    if (s) spans.push(s);
    else unread.push(e.trim());
  }
  spans.sort((a, b) => a.family - b.family || (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  const out: string[] = [];
  let cur: AddressSpan | undefined;
  for (const s of spans) {
    if (cur && cur.family === s.family && s.first <= cur.last) {
      if (s.last > cur.last) cur = { family: cur.family, first: cur.first, last: s.last };
      continue;
    }
    if (cur) out.push(spanText(cur));
    cur = s;
  }
  if (cur) out.push(spanText(cur));
  return [...out, ...new Set(unread)];
}

/** An element of `nft -j` output as nft syntax (canonicalElements then makes it canonical). */
export function elementFromJson(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (o.prefix && typeof o.prefix === 'object') {
      const p = o.prefix as { addr?: unknown; len?: unknown };
      return `${elementFromJson(p.addr)}/${String(p.len)}`;
    }
    if (Array.isArray(o.range) && o.range.length === 2) return `${elementFromJson(o.range[0])}-${elementFromJson(o.range[1])}`;
    if (Array.isArray(o.concat)) return o.concat.map(elementFromJson).join(' . ');
    if (o.elem && typeof o.elem === 'object') return elementFromJson((o.elem as { val?: unknown }).val);
  }
  return JSON.stringify(value);
}

// A type's components, split once: a map of 100,000 elements asks for the same few types.
const typeComponents = new Map<string, readonly string[]>();

function componentsOf(type: string): readonly string[] {
  let types = typeComponents.get(type);
  if (types === undefined) {
    types = canonicalType(type).split(' . ');
    if (typeComponents.size >= 1024) typeComponents.clear();
    typeComponents.set(type, types);
  }
  return types;
}

/** A map's key in canonical text: each component as canonicalElements writes it. */
export function canonicalKey(type: string, key: string): string {
  return canonicalOf(componentsOf(type), key);
}

function canonicalOf(types: readonly string[], key: string): string {
  if (types.length === 1) return componentText(types[0]!, key);
  const parts = key.split(' . ');
  if (parts.length !== types.length) return key.trim();
  // A key already in canonical text (what a compiler writes) is returned as it came.
  let same = true;
  for (let i = 0; i < parts.length; i++) {
    const c = componentText(types[i]!, parts[i]!);
    if (c !== parts[i]) {
      same = false;
      parts[i] = c;
    }
  }
  return same ? key : parts.join(' . ');
}

/** A verdict with its words single-spaced (`jump  to-a` → `jump to-a`). */
export function canonicalVerdict(verdict: string): string {
  return verdict.trim().split(/\s+/).join(' ');
}

/** The chain a verdict jumps or goes to; undefined for accept, drop, return and continue. */
export function verdictChain(verdict: string): string | undefined {
  const m = /^(?:jump|goto)\s+(\S+)$/.exec(verdict.trim());
  return m?.[1];
}

/** A verdict of `nft -j` output (`{"jump": {"target": "to-a"}}`, `{"accept": null}`) as nft syntax. */
export function verdictFromJson(value: unknown): string {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 1) {
      const [kind, arg] = entries[0]!;
      if ((kind === 'jump' || kind === 'goto') && arg && typeof arg === 'object') {
        const target = (arg as { target?: unknown }).target;
        if (typeof target === 'string') return `${kind} ${target}`;
      }
      if (arg === null) return kind;
    }
  }
  return elementFromJson(value);
}
