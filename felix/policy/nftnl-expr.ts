// nf_tables expressions as netlink attributes: each is its name and a writer of its data,
// the register it loads or reads, and its operands in the byte order nft gives them. A lookup
// in an anonymous set names it by its id in the batch (`ids`, given when the rule is written).

import {
  NF_NAT_RANGE_PROTO_SPECIFIED,
  NFT_DYNSET_OP_UPDATE,
  NFT_LOOKUP_F_INV,
  NFT_NAT_DNAT,
  NFT_NG_RANDOM,
  NFT_RANGE_NEQ,
  NFT_REG_1,
  NFT_REG_VERDICT,
  NFT_REJECT_ICMPX_PORT_UNREACH,
  NFT_REJECT_ICMPX_UNREACH,
  NFTA_BITWISE_DREG,
  NFTA_BITWISE_LEN,
  NFTA_BITWISE_MASK,
  NFTA_BITWISE_SREG,
  NFTA_BITWISE_XOR,
  NFTA_CMP_DATA,
  NFTA_CMP_OP,
  NFTA_CMP_SREG,
  NFTA_CT_DREG,
  NFTA_CT_KEY,
  NFTA_CT_SREG,
  NFTA_DATA_VALUE,
  NFTA_DATA_VERDICT,
  NFTA_DYNSET_OP,
  NFTA_DYNSET_SET_NAME,
  NFTA_DYNSET_SREG_KEY,
  NFTA_FIB_DREG,
  NFTA_FIB_FLAGS,
  NFTA_FIB_RESULT,
  NFTA_IMMEDIATE_DATA,
  NFTA_IMMEDIATE_DREG,
  NFTA_LOG_GROUP,
  NFTA_LOG_PREFIX,
  NFTA_LOOKUP_DREG,
  NFTA_LOOKUP_FLAGS,
  NFTA_LOOKUP_SET,
  NFTA_LOOKUP_SET_ID,
  NFTA_LOOKUP_SREG,
  NFTA_MASQ_FLAGS,
  NFTA_META_DREG,
  NFTA_META_KEY,
  NFTA_META_SREG,
  NFTA_NAT_FAMILY,
  NFTA_NAT_FLAGS,
  NFTA_NAT_REG_ADDR_MIN,
  NFTA_NAT_REG_PROTO_MIN,
  NFTA_NAT_TYPE,
  NFTA_NG_DREG,
  NFTA_NG_MODULUS,
  NFTA_NG_TYPE,
  NFTA_PAYLOAD_BASE,
  NFTA_PAYLOAD_DREG,
  NFTA_PAYLOAD_LEN,
  NFTA_PAYLOAD_OFFSET,
  NFTA_RANGE_FROM_DATA,
  NFTA_RANGE_OP,
  NFTA_RANGE_SREG,
  NFTA_RANGE_TO_DATA,
  NFTA_REJECT_ICMP_CODE,
  NFTA_REJECT_TYPE,
  NFTA_VERDICT_CHAIN,
  NFTA_VERDICT_CODE,
  NFTA_LIMIT_BURST,
  NFTA_LIMIT_FLAGS,
  NFTA_LIMIT_RATE,
  NFTA_LIMIT_TYPE,
  NFTA_LIMIT_UNIT,
  NFT_LIMIT_PKTS,
} from '../netlink/nf-constants.js';
import { attrI32BE, attrU32BE, attrU64BE } from '../netlink/nf-message.js';
import type { MessageWriter } from '../netlink/writer.js';

/** One expression: its name and a writer of its attributes (`ids`: the rule's anonymous sets' ids in the batch). */
export type Expr = readonly [name: string, attrs: (w: MessageWriter, ids: readonly number[]) => void];

export const meta = (key: number, reg: number = NFT_REG_1): Expr => [
  'meta',
  (w) => {
    attrU32BE(w, NFTA_META_KEY, key);
    attrU32BE(w, NFTA_META_DREG, reg);
  },
];

export const metaSet = (key: number): Expr => [
  'meta',
  (w) => {
    attrU32BE(w, NFTA_META_KEY, key);
    attrU32BE(w, NFTA_META_SREG, NFT_REG_1);
  },
];

const value = (w: MessageWriter, type: number, data: Uint8Array) => {
  w.nestBegin(type);
  w.attrBytes(NFTA_DATA_VALUE, data);
  w.nestEnd();
};

export const cmp = (op: number, data: Uint8Array): Expr => [
  'cmp',
  (w) => {
    attrU32BE(w, NFTA_CMP_SREG, NFT_REG_1);
    attrU32BE(w, NFTA_CMP_OP, op);
    value(w, NFTA_CMP_DATA, data);
  },
];

/** `range neq`: the register outside [from, to]. */
export const rangeNeq = (from: Uint8Array, to: Uint8Array): Expr => [
  'range',
  (w) => {
    attrU32BE(w, NFTA_RANGE_SREG, NFT_REG_1);
    attrU32BE(w, NFTA_RANGE_OP, NFT_RANGE_NEQ);
    value(w, NFTA_RANGE_FROM_DATA, from);
    value(w, NFTA_RANGE_TO_DATA, to);
  },
];

export const payload = (base: number, offset: number, len: number, reg: number = NFT_REG_1): Expr => [
  'payload',
  (w) => {
    attrU32BE(w, NFTA_PAYLOAD_DREG, reg);
    attrU32BE(w, NFTA_PAYLOAD_BASE, base);
    attrU32BE(w, NFTA_PAYLOAD_OFFSET, offset);
    attrU32BE(w, NFTA_PAYLOAD_LEN, len);
  },
];

/** A lookup in a named set (inverted: `!=`), or a named map into `dreg`. */
export const lookup = (set: string, inverted: boolean, dreg?: number): Expr => [
  'lookup',
  (w) => {
    w.attrString(NFTA_LOOKUP_SET, set);
    attrU32BE(w, NFTA_LOOKUP_SREG, NFT_REG_1);
    if (dreg !== undefined) attrU32BE(w, NFTA_LOOKUP_DREG, dreg);
    if (inverted) attrU32BE(w, NFTA_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
  },
];

/** A lookup in the rule's anonymous set `index` (written just before the rule). */
export const lookupAnonymous = (index: number, map: boolean, inverted: boolean, dreg?: number): Expr => [
  'lookup',
  (w, ids) => {
    w.attrString(NFTA_LOOKUP_SET, map ? '__map%d' : '__set%d');
    attrU32BE(w, NFTA_LOOKUP_SREG, NFT_REG_1);
    attrU32BE(w, NFTA_LOOKUP_SET_ID, ids[index]);
    if (dreg !== undefined) attrU32BE(w, NFTA_LOOKUP_DREG, dreg);
    if (inverted) attrU32BE(w, NFTA_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
  },
];

export const vmap = (map: string): Expr => lookup(map, false, NFT_REG_VERDICT);

export const immediate = (reg: number, data: Uint8Array): Expr => [
  'immediate',
  (w) => {
    attrU32BE(w, NFTA_IMMEDIATE_DREG, reg);
    value(w, NFTA_IMMEDIATE_DATA, data);
  },
];

export const verdictExpr = (v: { code: number; chain?: string }): Expr => [
  'immediate',
  (w) => {
    attrU32BE(w, NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
    w.nestBegin(NFTA_IMMEDIATE_DATA);
    w.nestBegin(NFTA_DATA_VERDICT);
    attrI32BE(w, NFTA_VERDICT_CODE, v.code);
    if (v.chain !== undefined) w.attrString(NFTA_VERDICT_CHAIN, v.chain);
    w.nestEnd();
    w.nestEnd();
  },
];

// nft sends a counter without values: the kernel starts it at zero.
export const counter: Expr = ['counter', () => undefined];

/** A 32-bit register in host byte order, as nft writes marks, conntrack states and route types. */
export const host32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0, 0);
  return b;
};

export const bitwise = (mask: number, xor: number): Expr => [
  'bitwise',
  (w) => {
    attrU32BE(w, NFTA_BITWISE_SREG, NFT_REG_1);
    attrU32BE(w, NFTA_BITWISE_DREG, NFT_REG_1);
    attrU32BE(w, NFTA_BITWISE_LEN, 4);
    value(w, NFTA_BITWISE_MASK, host32(mask));
    value(w, NFTA_BITWISE_XOR, host32(xor));
  },
];

export const ct = (key: number): Expr => [
  'ct',
  (w) => {
    attrU32BE(w, NFTA_CT_KEY, key);
    attrU32BE(w, NFTA_CT_DREG, NFT_REG_1);
  },
];

/** `ct <key> set` from register 1 (the flow log's `ct mark set`). */
export const ctSet = (key: number): Expr => [
  'ct',
  (w) => {
    attrU32BE(w, NFTA_CT_KEY, key);
    attrU32BE(w, NFTA_CT_SREG, NFT_REG_1);
  },
];

export const masq = (flags: number): Expr => ['masq', (w) => (flags ? attrU32BE(w, NFTA_MASQ_FLAGS, flags) : undefined)];

export const reject: Expr = [
  'reject',
  (w) => {
    attrU32BE(w, NFTA_REJECT_TYPE, NFT_REJECT_ICMPX_UNREACH);
    w.attrU8(NFTA_REJECT_ICMP_CODE, NFT_REJECT_ICMPX_PORT_UNREACH);
  },
];

export const fib = (result: number, flags: number): Expr => [
  'fib',
  (w) => {
    attrU32BE(w, NFTA_FIB_FLAGS, flags);
    attrU32BE(w, NFTA_FIB_RESULT, result);
    attrU32BE(w, NFTA_FIB_DREG, NFT_REG_1);
  },
];

/** A random number below `modulus` in `reg` (register 1, or a concatenation's component's). */
export const numgen = (modulus: number, reg: number = NFT_REG_1): Expr => [
  'numgen',
  (w) => {
    attrU32BE(w, NFTA_NG_DREG, reg);
    attrU32BE(w, NFTA_NG_MODULUS, modulus);
    attrU32BE(w, NFTA_NG_TYPE, NFT_NG_RANDOM);
  },
];

/** DNAT to the address in register 1 and the port in `protoReg`. */
export const dnat = (family: number, protoReg: number): Expr => [
  'nat',
  (w) => {
    attrU32BE(w, NFTA_NAT_TYPE, NFT_NAT_DNAT);
    attrU32BE(w, NFTA_NAT_FAMILY, family);
    attrU32BE(w, NFTA_NAT_REG_ADDR_MIN, NFT_REG_1);
    attrU32BE(w, NFTA_NAT_REG_PROTO_MIN, protoReg);
    attrU32BE(w, NFTA_NAT_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
  },
];

/** `log [prefix "…"] [group N]`: the kernel's default level unless a group takes the packets. */
export const log = (prefix: string | undefined, group: number | undefined): Expr => [
  'log',
  (w) => {
    if (prefix !== undefined) w.attrString(NFTA_LOG_PREFIX, prefix);
    if (group !== undefined) {
      const b = Buffer.alloc(2);
      b.writeUInt16BE(group, 0);
      w.attrBytes(NFTA_LOG_GROUP, b);
    }
  },
];

/** `limit rate N/second burst B packets`: a token bucket of packets. */
export const limit = (perSecond: number, burst: number): Expr => [
  'limit',
  (w) => {
    attrU64BE(w, NFTA_LIMIT_RATE, perSecond);
    attrU64BE(w, NFTA_LIMIT_UNIT, 1);
    attrU32BE(w, NFTA_LIMIT_BURST, burst);
    attrU32BE(w, NFTA_LIMIT_TYPE, NFT_LIMIT_PKTS);
    attrU32BE(w, NFTA_LIMIT_FLAGS, 0);
  },
];

/** `update @set { key }`: the key in register 1 added to the named set, or its timeout renewed. */
export const dynsetUpdate = (set: string): Expr => [
  'dynset',
  (w) => {
    w.attrString(NFTA_DYNSET_SET_NAME, set);
    attrU32BE(w, NFTA_DYNSET_SREG_KEY, NFT_REG_1);
    attrU32BE(w, NFTA_DYNSET_OP, NFT_DYNSET_OP_UPDATE);
  },
];
