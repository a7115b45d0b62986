// Addresses as felix needs them: parse to bytes for netlink, print in one canonical form
// (dotted quad, RFC 5952 for IPv6) so desired and dumped routes compare as strings.

export type IpFamily = 4 | 6;

export interface Cidr {
  readonly family: IpFamily;
  readonly bytes: Uint8Array;
  readonly prefixLength: number;
}

export class AddressError extends Error {
  constructor(readonly field: string, readonly value: unknown, why: string) {
    super(`${field}: ${JSON.stringify(value)} ${why}`);
    this.name = 'AddressError';
  }
}

function parseV4(text: string): Uint8Array | null {
  // Hand-rolled: desired state parses every workload address, 100k of them at scale.
  const out = new Uint8Array(4);
  let part = 0, value = 0, digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      value = value * 10 + (c - 48);
      if (++digits > 3 || value > 255) return null;
    } else if (c === 46 && digits > 0 && part < 3) {
      out[part++] = value;
      value = 0;
      digits = 0;
    } else return null;
  }
  if (part !== 3 || digits === 0) return null;
  out[3] = value;
  return out;
}

function parseV6(text: string): Uint8Array | null {
  if (!/^[0-9a-fA-F:.]+$/.test(text)) return null;
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const groups = (s: string): number[] | null => {
    if (s === '') return [];
    const out: number[] = [];
    const items = s.split(':');
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      if (i === items.length - 1 && it.includes('.')) {
        const v4 = parseV4(it);
        if (!v4) return null;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(it)) return null;
        out.push(parseInt(it, 16));
      }
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !tail) return null;
  const fill = 8 - head.length - tail.length;
  if (halves.length === 2 ? fill < 1 : fill !== 0) return null;
  const all = [...head, ...new Array<number>(halves.length === 2 ? fill : 0).fill(0), ...tail];
  const out = new Uint8Array(16);
  all.forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  });
  return out;
}

/** Parses an IPv4 or IPv6 address (no prefix). Throws AddressError naming `field`. */
export function parseAddress(text: string, field = 'address'): { family: IpFamily; bytes: Uint8Array } {
  if (typeof text !== 'string') throw new AddressError(field, text, 'is not a string');
  const v4 = parseV4(text);
  if (v4) return { family: 4, bytes: v4 };
  const v6 = text.includes(':') ? parseV6(text) : null;
  if (v6) return { family: 6, bytes: v6 };
  throw new AddressError(field, text, 'is not an IPv4 or IPv6 address');
}

export function formatAddress(bytes: Uint8Array): string {
  if (bytes.length === 4) return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  const g: number[] = [];
  for (let i = 0; i < 16; i += 2) g.push((bytes[i] << 8) | bytes[i + 1]);
  // RFC 5952: compress the longest run (>= 2) of zero groups, the first if tied.
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) { best = i; bestLen = j - i; }
    i = j;
  }
  const hex = (a: number[]) => a.map((x) => x.toString(16)).join(':');
  if (best < 0) return hex(g);
  return `${hex(g.slice(0, best))}::${hex(g.slice(best + bestLen))}`;
}

/**
 * Parses "addr/len" (or a bare address, as a host prefix). With `strict`, host bits must be
 * zero; otherwise they are kept (an interface address like 10.0.0.5/24).
 */
export function parseCidr(text: string, field = 'cidr', strict = true): Cidr {
  if (typeof text !== 'string') throw new AddressError(field, text, 'is not a string');
  const slash = text.indexOf('/');
  const { family, bytes } = parseAddress(slash < 0 ? text : text.slice(0, slash), field);
  const max = family === 4 ? 32 : 128;
  let prefixLength = max;
  if (slash >= 0) {
    let n = 0;
    const digits = text.length - slash - 1;
    for (let i = slash + 1; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 48 || c > 57) { n = -1; break; }
      n = n * 10 + (c - 48);
    }
    if (n < 0 || digits < 1 || digits > 3 || n > max) throw new AddressError(field, text, `has a bad prefix length (0..${max})`);
    prefixLength = n;
  }
  if (strict && !hostBitsZero(bytes, prefixLength)) throw new AddressError(field, text, 'has host bits set');
  return { family, bytes, prefixLength };
}

function hostBitsZero(bytes: Uint8Array, len: number): boolean {
  for (let bit = len; bit < bytes.length * 8; bit++) if (bytes[bit >> 3] & (0x80 >> (bit & 7))) return false;
  return true;
}

export function formatCidr(c: Cidr): string {
  return `${formatAddress(c.bytes)}/${c.prefixLength}`;
}

/** The canonical text of a prefix: "10.0.0.0/26", "fd00::/122". */
export function canonicalCidr(text: string, field = 'cidr'): string {
  return formatCidr(parseCidr(text, field));
}

/** True for dotted-quad text already in canonical form (no leading zeros): no parse needed. */
function isCanonicalV4(text: string): boolean {
  let parts = 0, value = 0, digits = 0, lead = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits === 0) lead = c === 48;
      else if (lead) return false;
      value = value * 10 + (c - 48);
      if (++digits > 3 || value > 255) return false;
    } else if (c === 46 && digits > 0 && parts < 3) {
      parts++;
      value = 0;
      digits = 0;
    } else return false;
  }
  return parts === 3 && digits > 0;
}

/** The host prefix (/32 or /128) of an address given with or without a prefix length. */
export function hostPrefix(text: string, field = 'address'): string {
  if (typeof text === 'string' && isCanonicalV4(text)) return `${text}/32`;
  const slash = text.indexOf('/');
  const addr = parseAddress(slash < 0 ? text : text.slice(0, slash), field);
  if (slash >= 0) {
    const len = Number(text.slice(slash + 1));
    if (len !== (addr.family === 4 ? 32 : 128)) throw new AddressError(field, text, 'must be a single address (/32 or /128)');
  }
  return `${formatAddress(addr.bytes)}/${addr.family === 4 ? 32 : 128}`;
}

/** True when `inner` (address or prefix) lies wholly inside `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  if (outer.family !== inner.family || inner.prefixLength < outer.prefixLength) return false;
  for (let bit = 0; bit < outer.prefixLength; bit++) {
    const m = 0x80 >> (bit & 7);
    if ((outer.bytes[bit >> 3] & m) !== (inner.bytes[bit >> 3] & m)) return false;
  }
  return true;
}
