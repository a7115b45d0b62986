// IPv4/IPv6 addresses and NLRI prefixes between wire bytes and strings. These run once per
// prefix on the hot path, so they work on bytes directly and build strings by concatenation.

const HEX = Array.from({ length: 65536 }, (_, i) => i.toString(16));

export function formatIpv4(b: Buffer, pos: number): string {
  return b[pos] + '.' + b[pos + 1] + '.' + b[pos + 2] + '.' + b[pos + 3];
}

/** RFC 5952 text form: lower case, longest run of two or more zero groups as "::". */
export function formatIpv6(b: Buffer, pos: number): string {
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
    s += HEX[g[i]];
    if (i < 7) s += ':';
  }
  return s;
}

/** Writes a dotted-quad address at pos; throws on anything that is not one. */
export function writeIpv4(s: string, b: Buffer, pos: number): void {
  let octet = 0;
  let digits = 0;
  let n = 0;
  for (let i = 0; i <= s.length; i++) {
    const c = i < s.length ? s.charCodeAt(i) : 46;
    if (c === 46) {
      if (digits === 0 || n > 3) throw new TypeError(`not an IPv4 address: "${s}"`);
      b[pos + n++] = octet;
      octet = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57 && digits < 3) {
      octet = octet * 10 + (c - 48);
      digits++;
      if (octet > 255) throw new TypeError(`not an IPv4 address: "${s}"`);
    } else {
      throw new TypeError(`not an IPv4 address: "${s}"`);
    }
  }
  if (n !== 4) throw new TypeError(`not an IPv4 address: "${s}"`);
}

/** Writes a 16-octet IPv6 address (with "::" and an optional dotted tail) at pos. */
export function writeIpv6(s: string, b: Buffer, pos: number): void {
  const bad = (): never => {
    throw new TypeError(`not an IPv6 address: "${s}"`);
  };
  const gap = s.indexOf('::');
  if (gap >= 0 && s.indexOf('::', gap + 1) >= 0) bad();
  const head = gap >= 0 ? s.slice(0, gap) : s;
  const tail = gap >= 0 ? s.slice(gap + 2) : '';
  const groups = (part: string): number[] => {
    if (part === '') return [];
    const out: number[] = [];
    const fields = part.split(':');
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i];
      if (i === fields.length - 1 && f.includes('.')) {
        const v4 = Buffer.alloc(4);
        writeIpv4(f, v4, 0);
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(f)) bad();
        out.push(parseInt(f, 16));
      }
    }
    return out;
  };
  const h = groups(head);
  const t = groups(tail);
  if (gap >= 0 ? h.length + t.length > 7 : h.length !== 8) bad();
  b.fill(0, pos, pos + 16);
  for (let i = 0; i < h.length; i++) b.writeUInt16BE(h[i], pos + 2 * i);
  for (let i = 0; i < t.length; i++) b.writeUInt16BE(t[i], pos + 16 - 2 * (t.length - i));
}

export function isIpv6(s: string): boolean {
  return s.includes(':');
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

/** Octets the prefix takes in an NLRI field: one for the length, then the significant octets. */
export function prefixWireLength(prefix: string): number {
  const slash = prefix.lastIndexOf('/');
  const length = Number(prefix.slice(slash + 1));
  return 1 + ((length + 7) >> 3);
}

/** Writes one NLRI prefix (length octet + significant octets) and returns the new offset. */
export function writePrefix(prefix: string, ipv6: boolean, b: Buffer, pos: number): number {
  const slash = prefix.indexOf('/');
  if (slash < 0) throw new TypeError(`not a prefix (no "/length"): "${prefix}"`);
  const addr = prefix.slice(0, slash);
  if (isIpv6(addr) !== ipv6) {
    throw new TypeError(`prefix "${prefix}" is not ${ipv6 ? 'IPv6' : 'IPv4'}`);
  }
  const length = parsePrefixLength(prefix, slash, ipv6 ? 128 : 32);
  if (ipv6) writeIpv6(addr, scratch, 0);
  else writeIpv4(addr, scratch, 0);
  const n = (length + 7) >> 3;
  b[pos] = length;
  scratch.copy(b, pos + 1, 0, n);
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
