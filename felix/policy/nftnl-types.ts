// The nft data types a set or map key of ours is made of, between the text the model holds and
// the bytes the kernel keeps: each type's id (nft's, which the kernel stores for nft to read
// back), its length, and its encoding. A concatenation's components each take a whole number
// of 32-bit registers, and its type id holds one 6-bit id per component, the first highest.

import { addressValue, formatIpv4, formatIpv6, parseIpv4Into, parseIpv6Into } from '../../ip/index.js';

/** Thrown for a type, element or statement this writer cannot encode; `op` is the transaction's operation it was in. */
export class NftEncodeError extends Error {
  constructor(
    message: string,
    readonly op?: number,
  ) {
    super(message);
    this.name = 'NftEncodeError';
  }
}

interface DataType {
  readonly name: string;
  readonly id: number;
  /** Bytes of one value, before padding to a register in a concatenation. */
  readonly len: number;
  /** Network byte order (nft records the key's byte order in the set for its own printing). */
  readonly bigEndian: boolean;
  encode(text: string, out: Buffer, pos: number): boolean;
  decode(buf: Buffer, pos: number): string;
}

const PROTOCOLS: Readonly<Record<string, number>> = {
  icmp: 1,
  igmp: 2,
  tcp: 6,
  udp: 17,
  gre: 47,
  esp: 50,
  ah: 51,
  'ipv6-icmp': 58,
  icmpv6: 58,
  sctp: 132,
  udplite: 136,
};
const PROTOCOL_NAMES: Readonly<Record<number, string>> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 58: 'ipv6-icmp', 132: 'sctp' };

function wholeNumber(text: string, max: number): number {
  if (!/^\d{1,10}$/.test(text)) return -1;
  const n = Number(text);
  return n <= max ? n : -1;
}

const TYPES: readonly DataType[] = [
  {
    name: 'ipv4_addr',
    id: 7,
    len: 4,
    bigEndian: true,
    encode: (t, out, pos) => parseIpv4Into(t, out, pos),
    decode: (b, pos) => formatIpv4(b, pos),
  },
  {
    name: 'ipv6_addr',
    id: 8,
    len: 16,
    bigEndian: true,
    encode: (t, out, pos) => parseIpv6Into(t, out, pos),
    decode: (b, pos) => formatIpv6(b, pos),
  },
  {
    name: 'inet_proto',
    id: 12,
    len: 1,
    bigEndian: true,
    encode: (t, out, pos) => {
      const n = PROTOCOLS[t.toLowerCase()] ?? wholeNumber(t, 255);
      if (n < 0) return false;
      out[pos] = n;
      return true;
    },
    decode: (b, pos) => PROTOCOL_NAMES[b[pos]] ?? String(b[pos]),
  },
  {
    name: 'inet_service',
    id: 13,
    len: 2,
    bigEndian: true,
    encode: (t, out, pos) => {
      const n = wholeNumber(t, 65535);
      if (n < 0) return false;
      out.writeUInt16BE(n, pos);
      return true;
    },
    decode: (b, pos) => String(b.readUInt16BE(pos)),
  },
  {
    name: 'ifname',
    id: 41,
    len: 16,
    bigEndian: false,
    encode: (t, out, pos) => {
      const name = /^"(.*)"$/.exec(t)?.[1] ?? t;
      const bytes = Buffer.from(name, 'utf8');
      if (!bytes.length || bytes.length > 15 || bytes.includes(0)) return false;
      out.fill(0, pos, pos + 16);
      bytes.copy(out, pos);
      return true;
    },
    decode: (b, pos) => {
      let end = pos;
      while (end < pos + 16 && b[end] !== 0) end++;
      return `"${b.toString('utf8', pos, end)}"`;
    },
  },
  {
    name: 'mark',
    id: 19,
    len: 4,
    bigEndian: false,
    encode: (t, out, pos) => {
      const n = /^0x[0-9a-f]{1,8}$/i.test(t) ? Number(t) : wholeNumber(t, 0xffffffff);
      if (n < 0) return false;
      out.writeUInt32LE(n, pos);
      return true;
    },
    decode: (b, pos) => `0x${b.readUInt32LE(pos).toString(16).padStart(8, '0')}`,
  },
  ...(
    [
      ['icmp_type', 14],
      ['icmp_code', 32],
      ['icmpv6_type', 29],
      ['icmpv6_code', 33],
    ] as const
  ).map(
    ([name, id]): DataType => ({
      name,
      id,
      len: 1,
      bigEndian: true,
      encode: (t, out, pos) => {
        const n = wholeNumber(t, 255);
        if (n < 0) return false;
        out[pos] = n;
        return true;
      },
      decode: (b, pos) => String(b[pos]),
    }),
  ),
  {
    // A number in host byte order, as numgen leaves it in a register (a map key's component, declared with typeof: map-typeof.ts).
    name: 'integer',
    id: 4,
    len: 4,
    bigEndian: false,
    encode: (t, out, pos) => {
      const n = wholeNumber(t, 0xffffffff);
      if (n < 0) return false;
      out.writeUInt32LE(n, pos);
      return true;
    },
    decode: (b, pos) => String(b.readUInt32LE(pos)),
  },
];

const BY_NAME = new Map(TYPES.map((t) => [t.name, t]));
const BY_ID = new Map(TYPES.map((t) => [t.id, t]));
const TYPE_BITS = 6;
const register = (len: number) => (len + 3) & ~3;

/** A key type as the kernel holds it. */
export interface KeyType {
  readonly components: readonly DataType[];
  /** nft's type id (a concatenation's ids packed). */
  readonly id: number;
  /** Bytes of a key: one value, or each component padded to whole registers. */
  readonly len: number;
  /** The components' offsets in a key. */
  readonly offsets: readonly number[];
}

const keyTypes = new Map<string, KeyType>();

/** The key type of `text` (`ipv4_addr . inet_proto . inet_service`); throws NftEncodeError for one this writer lacks. */
export function keyType(text: string): KeyType {
  let k = keyTypes.get(text);
  if (k) return k;
  const components = text.split('.').map((n) => {
    const t = BY_NAME.get(n.trim());
    if (!t) throw new NftEncodeError(`nft type ${JSON.stringify(n.trim())} has no netlink encoding here`);
    return t;
  });
  const offsets: number[] = [];
  let len = 0;
  let id = 0;
  for (const c of components) {
    offsets.push(len);
    len += components.length > 1 ? register(c.len) : c.len;
    id = (id << TYPE_BITS) | c.id;
  }
  k = { components, id: id >>> 0, len, offsets };
  keyTypes.set(text, k);
  return k;
}

/** The type's text back from the kernel's id and key length; undefined when a component is not one we know. */
export function keyTypeName(id: number, len: number): string | undefined {
  const names: string[] = [];
  let rest = id >>> 0;
  while (rest) {
    const t = BY_ID.get(rest & 0x3f);
    if (!t) return undefined;
    names.unshift(t.name);
    rest = Math.floor(rest / (1 << TYPE_BITS));
  }
  if (!names.length) return undefined;
  const k = keyType(names.join(' . '));
  return k.len === len ? names.join(' . ') : undefined;
}

/** The key bytes of one element's text (components joined by ` . `). */
export function encodeKey(k: KeyType, text: string): Buffer {
  return encodeKeyInto(k, text, Buffer.alloc(k.len));
}

const scratch = new WeakMap<KeyType, Buffer>();

/**
 * encodeKey into one buffer per key type, valid until the next call with that type: for a
 * writer that copies the key at once, so that a batch of 100,000 elements does not allocate
 * 100,000 small buffers.
 */
export function encodeKeyScratch(k: KeyType, text: string): Buffer {
  let out = scratch.get(k);
  if (out) out.fill(0);
  else scratch.set(k, (out = Buffer.alloc(k.len)));
  return encodeKeyInto(k, text, out);
}

function encodeKeyInto(k: KeyType, text: string, out: Buffer): Buffer {
  const parts = k.components.length === 1 ? [text] : text.split(' . ');
  if (parts.length !== k.components.length)
    throw new NftEncodeError(`element ${JSON.stringify(text)} does not have ${k.components.length} components`);
  for (let i = 0; i < parts.length; i++) {
    if (!k.components[i].encode(parts[i].trim(), out, k.offsets[i]))
      throw new NftEncodeError(`element ${JSON.stringify(text)}: ${JSON.stringify(parts[i].trim())} is not ${k.components[i].name}`);
  }
  return out;
}

/** The text of the key at buf[from, from + k.len). */
export function decodeKey(k: KeyType, buf: Buffer, from: number): string {
  let s = '';
  for (let i = 0; i < k.components.length; i++) {
    if (i) s += ' . ';
    s += k.components[i].decode(buf, from + k.offsets[i]);
  }
  return s;
}

/** An address key (4 or 16 bytes, network order) as a number. */
export function keyValue(buf: Buffer, from: number, len: number): bigint {
  return addressValue(buf.subarray(from, from + len));
}
