// Communities in their text forms, written and read back to the same value: standard ones as
// "asn:value" (RFC 1997, well-known ones too, as bgpdump prints them; "no-export" and its kin
// are read), large ones as "global:local1:local2" (RFC 8092), extended ones (RFC 4360) as
// "rt:…" / "soo:…" for route targets and sites of origin, any other as its eight octets in hex.
import { parseCommunity } from './policy.js';

export { parseCommunity };

export function formatCommunity(c: number): string {
  return `${c >>> 16}:${c & 0xffff}`;
}

export function formatLargeCommunity([global, local1, local2]: readonly [number, number, number]): string {
  return `${global}:${local1}:${local2}`;
}

const U32 = /^\d{1,10}$/;

/** "global:local1:local2", each a 32-bit number; an array of three is taken as it is. */
export function parseLargeCommunity(c: string | readonly number[], field = 'large community'): [number, number, number] {
  const parts = typeof c === 'string' ? c.split(':').map((x) => (U32.test(x) ? Number(x) : Number.NaN)) : [...c];
  if (parts.length !== 3 || parts.some((x) => !Number.isInteger(x) || x < 0 || x > 0xffffffff))
    throw new TypeError(`${field}: ${JSON.stringify(c)} is not a large community (expected "global:local1:local2", each 0..4294967295)`);
  return parts as [number, number, number];
}

// RFC 4360 §3 and RFC 5668: the transitive types with an administrator and an assigned number,
// and the two subtypes that have names (§4, §5).
const TWO_OCTET_AS = 0x00;
const IPV4_ADDRESS = 0x01;
const FOUR_OCTET_AS = 0x02;
const SUBTYPE_NAMES: Readonly<Record<number, string>> = { 2: 'rt', 3: 'soo' };
const SUBTYPES: Readonly<Record<string, number>> = { rt: 0x02, soo: 0x03 };

/**
 * "rt:65000:100", "soo:192.0.2.1:7", "rt:4200000000:1"; a 4-octet AS below 65536 is written
 * "rt:65000L:100" (Junos's way), so that the text tells the two encodings apart. Any other
 * extended community: "0x" and its eight octets in hex.
 */
export function formatExtendedCommunity(c: Uint8Array): string {
  const b = Buffer.from(c.buffer, c.byteOffset, c.byteLength);
  const name = b.length === 8 ? SUBTYPE_NAMES[b[1]] : undefined;
  if (name !== undefined) {
    if (b[0] === TWO_OCTET_AS) return `${name}:${b.readUInt16BE(2)}:${b.readUInt32BE(4)}`;
    if (b[0] === IPV4_ADDRESS) return `${name}:${b[2]}.${b[3]}.${b[4]}.${b[5]}:${b.readUInt16BE(6)}`;
    if (b[0] === FOUR_OCTET_AS) {
      const asn = b.readUInt32BE(2);
      return `${name}:${asn}${asn <= 0xffff ? 'L' : ''}:${b.readUInt16BE(6)}`;
    }
  }
  return `0x${b.toString('hex')}`;
}

/** The eight octets of an extended community written as formatExtendedCommunity writes it. */
export function parseExtendedCommunity(c: string, field = 'extended community'): Buffer {
  const bad = (why: string) =>
    new TypeError(
      `${field}: ${JSON.stringify(c)} is not an extended community (${why}; e.g. "rt:65000:100", "soo:192.0.2.1:7", "0x0002fde800000064")`,
    );
  if (typeof c !== 'string') throw bad('not a string');
  if (/^0x[0-9a-fA-F]{16}$/.test(c)) return Buffer.from(c.slice(2), 'hex');
  const m = /^([a-z]+):([^:]+):(\d{1,10})$/i.exec(c);
  const subtype = m ? SUBTYPES[m[1]!.toLowerCase()] : undefined;
  if (!m || subtype === undefined) throw bad('expected rt: or soo:, an administrator and a number, or 0x and 16 hex digits');
  const admin = m[2]!;
  const value = Number(m[3]);
  const b = Buffer.alloc(8);
  b[1] = subtype;
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(admin);
  if (v4) {
    const octets = v4.slice(1).map(Number);
    if (octets.some((o) => o > 255)) throw bad(`${admin} is not an IPv4 address`);
    if (value > 0xffff) throw bad('the number after an IPv4 address is 0..65535');
    b[0] = IPV4_ADDRESS;
    b.set(octets, 2);
    b.writeUInt16BE(value, 6);
    return b;
  }
  const as = /^(\d{1,10})(L?)$/.exec(admin);
  const asn = as ? Number(as[1]) : Number.NaN;
  if (!as || asn > 0xffffffff) throw bad(`${admin} is neither an AS number nor an IPv4 address`);
  if (asn > 0xffff || as[2] === 'L') {
    if (value > 0xffff) throw bad('the number after a 4-octet AS is 0..65535');
    b[0] = FOUR_OCTET_AS;
    b.writeUInt32BE(asn, 2);
    b.writeUInt16BE(value, 6);
    return b;
  }
  if (value > 0xffffffff) throw bad('the number after a 2-octet AS is 0..4294967295');
  b[0] = TWO_OCTET_AS;
  b.writeUInt16BE(asn, 2);
  b.writeUInt32BE(value, 4);
  return b;
}
