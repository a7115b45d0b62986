// The userdata nft writes on a set, which the kernel keeps for nft to read back and print the
// set as it was written: libnftnl's TLVs (type and length bytes, then the value; numbers in
// host order) for the key's and data's byte order, whether intervals merge, and the `typeof`
// of the header fields a set is keyed by. Written as nft 1.0.6 writes them, byte for byte.

import {
  NFTNL_UDATA_SET_DATA_INTERVAL,
  NFTNL_UDATA_SET_DATA_TYPEOF,
  NFTNL_UDATA_SET_DATABYTEORDER,
  NFTNL_UDATA_SET_KEY_TYPEOF,
  NFTNL_UDATA_SET_KEYBYTEORDER,
  NFTNL_UDATA_SET_MERGE_ELEMENTS,
} from '../netlink/nf-constants.js';
import type { KeyType } from './nftnl-types.js';

// nft's byte orders (enum byteorder) and expression kinds (enum expr_types), as its userdata holds them.
export const BYTEORDER_INVALID = 0;
export const BYTEORDER_HOST = 1;
export const BYTEORDER_BIG = 2;
const EXPR_VERDICT = 1;
const EXPR_PAYLOAD = 7;
const EXPR_CONCAT = 13;
// Inside a typeof: the expression kind, then its description.
const TYPEOF_EXPR = 0;
const TYPEOF_DATA = 1;
// A payload's description: nft's protocol id and the field's index in it.
const PAYLOAD_DESC = 0;
const PAYLOAD_FIELD = 1;

/** One TLV: type and length bytes, then the value. */
export function tlv(type: number, value: Uint8Array): Buffer {
  if (value.length > 255) throw new Error(`set userdata ${type}: ${value.length} bytes`);
  return Buffer.concat([Uint8Array.of(type, value.length), value]);
}

/** A u32 in host (little-endian) order, as libnftnl puts numbers in userdata. */
export function tlvU32(type: number, v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0, 0);
  return tlv(type, b);
}

/** The typeof of a header field: nft's protocol description id and the field's index in it. */
export function payloadTypeof(desc: number, field: number): Buffer {
  return Buffer.concat([
    tlvU32(TYPEOF_EXPR, EXPR_PAYLOAD),
    tlv(TYPEOF_DATA, Buffer.concat([tlvU32(PAYLOAD_DESC, desc), tlvU32(PAYLOAD_FIELD, field)])),
  ]);
}

/** The typeof of a concatenation of header fields. */
export function concatTypeof(parts: readonly Buffer[]): Buffer {
  return Buffer.concat([tlvU32(TYPEOF_EXPR, EXPR_CONCAT), tlv(TYPEOF_DATA, Buffer.concat(parts.map((p, i) => tlv(i, p))))]);
}

/** A set's userdata keyed by a header field (or a concatenation of them), as nft writes it. */
export function matchSetUserdata(byteOrder: number, interval: boolean, keyTypeof: Buffer): Buffer {
  return Buffer.concat([
    tlvU32(NFTNL_UDATA_SET_KEYBYTEORDER, byteOrder),
    ...(interval ? [tlvU32(NFTNL_UDATA_SET_MERGE_ELEMENTS, 1)] : []),
    tlv(NFTNL_UDATA_SET_KEY_TYPEOF, keyTypeof),
  ]);
}

/** A numgen-keyed map's userdata: a verdict map records its data's typeof, a value map does not. */
export function numgenMapUserdata(verdict: boolean): Buffer {
  return Buffer.concat([
    tlvU32(NFTNL_UDATA_SET_KEYBYTEORDER, BYTEORDER_HOST),
    tlvU32(NFTNL_UDATA_SET_DATABYTEORDER, BYTEORDER_INVALID),
    ...(verdict
      ? [tlv(NFTNL_UDATA_SET_DATA_TYPEOF, Buffer.concat([tlvU32(TYPEOF_EXPR, EXPR_VERDICT), tlv(TYPEOF_DATA, Buffer.alloc(0))]))]
      : []),
    tlvU32(NFTNL_UDATA_SET_DATA_INTERVAL, 0),
  ]);
}

/**
 * A named set's or verdict map's userdata: the key's byte order (none for a concatenation, which
 * records instead that its typeof is a concatenation), and a map's data byte order and interval flag.
 */
export function namedSetUserdata(key: KeyType, map: boolean): Buffer {
  const concat = key.components.length > 1;
  const order = concat ? BYTEORDER_INVALID : key.components[0].bigEndian ? BYTEORDER_BIG : BYTEORDER_HOST;
  return Buffer.concat([
    tlvU32(NFTNL_UDATA_SET_KEYBYTEORDER, order),
    ...(map ? [tlvU32(NFTNL_UDATA_SET_DATABYTEORDER, BYTEORDER_INVALID)] : []),
    ...(concat ? [tlv(NFTNL_UDATA_SET_KEY_TYPEOF, concatTypeof([]))] : []),
    ...(map ? [tlvU32(NFTNL_UDATA_SET_DATA_INTERVAL, 0)] : []),
  ]);
}
