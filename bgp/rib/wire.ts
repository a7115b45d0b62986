// The few wire helpers the RIB needs beyond the codec's public face.
import { parsePrefix } from '../codec/index.js';

export { encodeMessage, endOfRib, maxMessageLength } from '../codec/index.js';

export const HEADER_LENGTH = 19;
export const UPDATE = 2;

/** Writes a 16-octet IPv6 address; a TypeError names the field when it is not one. */
export function writeIpv6Bytes(address: string, b: Buffer, pos: number, field: string): void {
  let p: ReturnType<typeof parsePrefix>;
  try {
    p = parsePrefix(address + '/128');
  } catch {
    throw new TypeError(`${field}: "${address}" is not an IPv6 address`);
  }
  if (!p.ipv6) throw new TypeError(`${field}: "${address}" is not an IPv6 address`);
  p.bytes.copy(b, pos);
}

/** The 19-octet header of an UPDATE of this total length. */
export function writeUpdateHeader(b: Buffer, length: number): void {
  // The marker by a loop: Buffer#fill's checks cost ~100 ns, more than the rest of a small UPDATE's header.
  for (let i = 0; i < 16; i++) b[i] = 0xff;
  b.writeUInt16BE(length, 16);
  b[18] = UPDATE;
}
