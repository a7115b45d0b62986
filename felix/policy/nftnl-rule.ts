// A rule's nft text as nf_tables expressions, for the statements the compilers write most:
// address, protocol, port and set matches, conntrack state, marks, the RPF and local-address
// fib checks, interface verdict maps, a service's DNAT, counters and verdicts, and flow logs'
// `limit rate … log prefix … group …`.
// Each is encoded as nft 1.0.6 encodes it (checked against `nft --debug=netlink`: the same
// expressions, registers and byte orders, and the `meta nfproto` dependency an inet table needs
// before an address match, once per rule). A statement outside this list is NftEncodeError:
// the transaction then goes to nft whole.

import { NLM_F_CREATE, NLM_F_REQUEST } from '../netlink/constants.js';
import {
  IPS_DST_NAT,
  NF_NAT_RANGE_PROTO_RANDOM_FULLY,
  NFT_CT_STATUS,
  NFT_REG32_00,
  NFT_REJECT_ICMPX_PORT_UNREACH,
  NFT_REJECT_ICMPX_UNREACH,
  NFTA_FIB_F_DADDR,
  NFTA_MASQ_FLAGS,
  NFTA_LIMIT_BURST,
  NFTA_LIMIT_FLAGS,
  NFTA_LIMIT_RATE,
  NFTA_LIMIT_TYPE,
  NFTA_LIMIT_UNIT,
  NFTA_LOG_GROUP,
  NFTA_LOG_PREFIX,
  NFT_LIMIT_PKTS,
  NFTA_REJECT_ICMP_CODE,
  NFTA_REJECT_TYPE,
  NF_ACCEPT,
  NFT_CT_STATE,
  NFT_FIB_RESULT_ADDRTYPE,
  NFT_FIB_RESULT_OIF,
  NFT_META_IIFNAME,
  NFT_META_MARK,
  NFT_META_OIFNAME,
  NFT_PAYLOAD_TRANSPORT_HEADER,
  NFTA_BITWISE_DREG,
  NFTA_BITWISE_LEN,
  NFTA_BITWISE_MASK,
  NFTA_BITWISE_SREG,
  NFTA_BITWISE_XOR,
  NFTA_CT_DREG,
  NFTA_CT_KEY,
  NFTA_FIB_DREG,
  NFTA_FIB_F_IIF,
  NFTA_FIB_F_PRESENT,
  NFTA_FIB_F_SADDR,
  NFTA_FIB_FLAGS,
  NFTA_FIB_RESULT,
  NFTA_LOOKUP_DREG,
  NFTA_META_SREG,
  RTN_LOCAL,
  NF_DROP,
  NF_NAT_RANGE_PROTO_SPECIFIED,
  NFT_CONTINUE,
  NFT_GOTO,
  NFT_JUMP,
  NFT_RETURN,
  NLM_F_APPEND,
  NFPROTO_IPV4,
  NFPROTO_IPV6,
  NFT_CMP_EQ,
  NFT_CMP_NEQ,
  NFT_LOOKUP_F_INV,
  NFT_META_L4PROTO,
  NFT_META_NFPROTO,
  NFT_MSG_NEWRULE,
  NFT_NAT_DNAT,
  NFT_NG_RANDOM,
  NFT_PAYLOAD_NETWORK_HEADER,
  NFT_REG_1,
  NFT_REG_2,
  NFT_REG_VERDICT,
  NFTA_CMP_DATA,
  NFTA_CMP_OP,
  NFTA_CMP_SREG,
  NFTA_DATA_VALUE,
  NFTA_DATA_VERDICT,
  NFTA_EXPR_DATA,
  NFTA_EXPR_NAME,
  NFTA_IMMEDIATE_DATA,
  NFTA_IMMEDIATE_DREG,
  NFTA_LIST_ELEM,
  NFTA_LOOKUP_FLAGS,
  NFTA_LOOKUP_SET,
  NFTA_LOOKUP_SREG,
  NFTA_META_DREG,
  NFTA_META_KEY,
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
  NFTA_RULE_CHAIN,
  NFTA_RULE_EXPRESSIONS,
  NFTA_RULE_TABLE,
  NFTA_RULE_USERDATA,
  NFTA_VERDICT_CHAIN,
  NFTA_VERDICT_CODE,
  NFTNL_UDATA_RULE_COMMENT,
  nftMsg,
} from '../netlink/nf-constants.js';
import { attrI32BE, attrU32BE, attrU64BE, nfBegin } from '../netlink/nf-message.js';
import type { MessageWriter } from '../netlink/writer.js';
import { encodeKey, keyType, NftEncodeError } from './nftnl-types.js';

/** A verdict's code and chain (`jump to-a` → NFT_JUMP, "to-a"). */
export function verdictCode(verdict: string): { code: number; chain?: string } {
  const [word, chain, extra] = verdict.trim().split(/\s+/);
  if (extra === undefined) {
    if (chain === undefined) {
      const code = { accept: NF_ACCEPT, drop: NF_DROP, return: NFT_RETURN, continue: NFT_CONTINUE }[word ?? ''];
      if (code !== undefined) return { code };
    } else if (word === 'jump') return { code: NFT_JUMP, chain };
    else if (word === 'goto') return { code: NFT_GOTO, chain };
  }
  throw new NftEncodeError(`verdict ${JSON.stringify(verdict)} has no netlink encoding here`);
}

/** One expression: its name and a writer of its attributes. */
type Expr = readonly [name: string, attrs: (w: MessageWriter) => void];

const meta = (key: number, reg: number = NFT_REG_1): Expr => [
  'meta',
  (w) => {
    attrU32BE(w, NFTA_META_KEY, key);
    attrU32BE(w, NFTA_META_DREG, reg);
  },
];

const value = (w: MessageWriter, type: number, data: Uint8Array) => {
  w.nestBegin(type);
  w.attrBytes(NFTA_DATA_VALUE, data);
  w.nestEnd();
};

const cmp = (op: number, data: Uint8Array): Expr => [
  'cmp',
  (w) => {
    attrU32BE(w, NFTA_CMP_SREG, NFT_REG_1);
    attrU32BE(w, NFTA_CMP_OP, op);
    value(w, NFTA_CMP_DATA, data);
  },
];

const networkField = (offset: number, len: number, reg: number = NFT_REG_1): Expr => [
  'payload',
  (w) => {
    attrU32BE(w, NFTA_PAYLOAD_DREG, reg);
    attrU32BE(w, NFTA_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
    attrU32BE(w, NFTA_PAYLOAD_OFFSET, offset);
    attrU32BE(w, NFTA_PAYLOAD_LEN, len);
  },
];

const lookup = (set: string, inverted: boolean): Expr => [
  'lookup',
  (w) => {
    w.attrString(NFTA_LOOKUP_SET, set);
    attrU32BE(w, NFTA_LOOKUP_SREG, NFT_REG_1);
    if (inverted) attrU32BE(w, NFTA_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
  },
];

/** A map lookup whose value lands in NFT_REG_1 (`… map @m`). */
const dataLookup = (map: string): Expr => [
  'lookup',
  (w) => {
    w.attrString(NFTA_LOOKUP_SET, map);
    attrU32BE(w, NFTA_LOOKUP_SREG, NFT_REG_1);
    attrU32BE(w, NFTA_LOOKUP_DREG, NFT_REG_1);
  },
];

const immediate = (reg: number, data: Uint8Array): Expr => [
  'immediate',
  (w) => {
    attrU32BE(w, NFTA_IMMEDIATE_DREG, reg);
    value(w, NFTA_IMMEDIATE_DATA, data);
  },
];

const verdict = (text: string): Expr => {
  const v = verdictCode(text);
  return [
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
};

// nft sends a counter without values: the kernel starts it at zero.
const counter: Expr = ['counter', () => undefined];

const load = (key: number): Expr => meta(key);

const metaSet = (key: number): Expr => [
  'meta',
  (w) => {
    attrU32BE(w, NFTA_META_KEY, key);
    attrU32BE(w, NFTA_META_SREG, NFT_REG_1);
  },
];

/** A 32-bit register in host byte order, as nft writes marks, conntrack states and route types. */
const host32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0, 0);
  return b;
};

const bitwise = (mask: number, xor: number): Expr => [
  'bitwise',
  (w) => {
    attrU32BE(w, NFTA_BITWISE_SREG, NFT_REG_1);
    attrU32BE(w, NFTA_BITWISE_DREG, NFT_REG_1);
    attrU32BE(w, NFTA_BITWISE_LEN, 4);
    value(w, NFTA_BITWISE_MASK, host32(mask));
    value(w, NFTA_BITWISE_XOR, host32(xor));
  },
];

const ct = (key: number): Expr => [
  'ct',
  (w) => {
    attrU32BE(w, NFTA_CT_KEY, key);
    attrU32BE(w, NFTA_CT_DREG, NFT_REG_1);
  },
];

const limit = (perSecond: number, burst: number): Expr => [
  'limit',
  (w) => {
    attrU64BE(w, NFTA_LIMIT_RATE, perSecond);
    attrU64BE(w, NFTA_LIMIT_UNIT, 1);
    attrU32BE(w, NFTA_LIMIT_BURST, burst);
    attrU32BE(w, NFTA_LIMIT_TYPE, NFT_LIMIT_PKTS);
    attrU32BE(w, NFTA_LIMIT_FLAGS, 0);
  },
];

const log = (prefix: string, group: number): Expr => [
  'log',
  (w) => {
    w.attrString(NFTA_LOG_PREFIX, prefix);
    w.attrU16BE(NFTA_LOG_GROUP, group);
  },
];

const masq = (flags: number): Expr => ['masq', (w) => (flags ? attrU32BE(w, NFTA_MASQ_FLAGS, flags) : undefined)];

const reject: Expr = [
  'reject',
  (w) => {
    attrU32BE(w, NFTA_REJECT_TYPE, NFT_REJECT_ICMPX_UNREACH);
    w.attrU8(NFTA_REJECT_ICMP_CODE, NFT_REJECT_ICMPX_PORT_UNREACH);
  },
];

/**
 * The register a concatenation's component at byte `offset` of the key is loaded into, as nft
 * picks it: a 16-byte register where the offset allows, else a 32-bit one.
 */
const concatRegister = (offset: number): number => (offset % 16 === 0 ? NFT_REG_1 + offset / 16 : NFT_REG32_00 + offset / 4);

const fib = (result: number, flags: number): Expr => [
  'fib',
  (w) => {
    attrU32BE(w, NFTA_FIB_FLAGS, flags);
    attrU32BE(w, NFTA_FIB_RESULT, result);
    attrU32BE(w, NFTA_FIB_DREG, NFT_REG_1);
  },
];

const transportField = (offset: number, reg: number = NFT_REG_1): Expr => [
  'payload',
  (w) => {
    attrU32BE(w, NFTA_PAYLOAD_DREG, reg);
    attrU32BE(w, NFTA_PAYLOAD_BASE, NFT_PAYLOAD_TRANSPORT_HEADER);
    attrU32BE(w, NFTA_PAYLOAD_OFFSET, offset);
    attrU32BE(w, NFTA_PAYLOAD_LEN, 2);
  },
];

const vmap = (map: string): Expr => [
  'lookup',
  (w) => {
    w.attrString(NFTA_LOOKUP_SET, map);
    attrU32BE(w, NFTA_LOOKUP_SREG, NFT_REG_1);
    attrU32BE(w, NFTA_LOOKUP_DREG, NFT_REG_VERDICT);
  },
];

const CT_STATES: Readonly<Record<string, number>> = { invalid: 1, established: 2, related: 4, new: 8, untracked: 64 };
const PORTED: Readonly<Record<string, number>> = { tcp: 6, udp: 17, sctp: 132 };

function mark32(text: string | undefined, expr: string): number {
  if (text === undefined || !/^0x[0-9a-f]{1,8}$/i.test(text)) return unsupported(expr, text ?? '(end)');
  return Number(text);
}

const numgen = (modulus: number, reg: number = NFT_REG_1): Expr => [
  'numgen',
  (w) => {
    attrU32BE(w, NFTA_NG_DREG, reg);
    attrU32BE(w, NFTA_NG_MODULUS, modulus);
    attrU32BE(w, NFTA_NG_TYPE, NFT_NG_RANDOM);
  },
];

/** DNAT to the address in NFT_REG_1 and the port in `portReg`. */
const dnat = (family: number, portReg: number = NFT_REG_2): Expr => [
  'nat',
  (w) => {
    attrU32BE(w, NFTA_NAT_TYPE, NFT_NAT_DNAT);
    attrU32BE(w, NFTA_NAT_FAMILY, family);
    attrU32BE(w, NFTA_NAT_REG_ADDR_MIN, NFT_REG_1);
    attrU32BE(w, NFTA_NAT_REG_PROTO_MIN, portReg);
    attrU32BE(w, NFTA_NAT_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
  },
];

const FAMILIES = {
  ip: { nfproto: NFPROTO_IPV4, type: 'ipv4_addr', saddr: 12, daddr: 16, len: 4 },
  ip6: { nfproto: NFPROTO_IPV6, type: 'ipv6_addr', saddr: 8, daddr: 24, len: 16 },
} as const;

const unsupported = (expr: string, at: string): never => {
  throw new NftEncodeError(`rule ${JSON.stringify(expr)}: ${JSON.stringify(at)} has no netlink encoding here`);
};

function wholeNumber(text: string | undefined, expr: string): number {
  if (text === undefined || !/^\d{1,9}$/.test(text)) return unsupported(expr, text ?? '(end)');
  return Number(text);
}

/** One component of a concatenation: what it loads, and the family it needs. */
interface Component {
  readonly len: number;
  readonly family?: number;
  load(reg: number): Expr;
}

function component(t: readonly string[], i: number): [Component, number] | undefined {
  const word = t[i];
  if ((word === 'ip' || word === 'ip6') && (t[i + 1] === 'saddr' || t[i + 1] === 'daddr')) {
    const f = FAMILIES[word];
    const offset = t[i + 1] === 'saddr' ? f.saddr : f.daddr;
    return [{ len: f.len, family: f.nfproto, load: (reg) => networkField(offset, f.len, reg) }, i + 2];
  }
  if (word === 'meta' && t[i + 1] === 'l4proto') return [{ len: 1, load: (reg) => meta(NFT_META_L4PROTO, reg) }, i + 2];
  if (word === 'th' && (t[i + 1] === 'sport' || t[i + 1] === 'dport')) {
    const offset = t[i + 1] === 'sport' ? 0 : 2;
    return [{ len: 2, load: (reg) => transportField(offset, reg) }, i + 2];
  }
  if (word === 'numgen' && t[i + 1] === 'random' && t[i + 2] === 'mod' && /^\d{1,9}$/.test(t[i + 3] ?? '') && Number(t[i + 3]) >= 1) {
    const modulus = Number(t[i + 3]);
    return [{ len: 4, load: (reg) => numgen(modulus, reg) }, i + 4];
  }
  return undefined;
}

/** `a . b …` at t[i]: its components and the index after them; undefined when t[i] starts none. */
function concatenation(t: readonly string[], i: number): { parts: Component[]; end: number } | undefined {
  const first = component(t, i);
  if (!first || t[first[1]] !== '.') return undefined;
  const parts = [first[0]];
  let at = first[1];
  while (t[at] === '.') {
    const next = component(t, at + 1);
    if (!next) return undefined;
    parts.push(next[0]);
    at = next[1];
  }
  return { parts, end: at };
}

/** The expressions of `expr`, a rule's statements in nft syntax. */
export function ruleExpressions(expr: string): Expr[] {
  const t = expr.trim().split(/\s+/);
  const out: Expr[] = [];
  let nfproto = -1;
  let l4proto = -1;
  let i = 0;
  let ended = false;
  while (i < t.length) {
    if (ended) unsupported(expr, t[i]);
    const word = t[i];
    const concat = concatenation(t, i);
    if (concat) {
      // `a . b . c @set` or `… vmap @map`: each component loaded where the key puts it.
      const need = concat.parts.find((p) => p.family)?.family;
      if (need !== undefined && nfproto !== need) {
        if (nfproto >= 0) unsupported(expr, word);
        out.push(meta(NFT_META_NFPROTO), cmp(NFT_CMP_EQ, Uint8Array.of(need)));
        nfproto = need;
      }
      let offset = 0;
      for (const p of concat.parts) {
        out.push(p.load(concatRegister(offset)));
        offset += (p.len + 3) & ~3;
      }
      const target = t[concat.end];
      if (target === 'vmap' && t[concat.end + 1]?.startsWith('@')) {
        out.push(vmap(t[concat.end + 1].slice(1)));
        i = concat.end + 2;
        ended = true;
      } else if (target?.startsWith('@')) {
        out.push(lookup(target.slice(1), false));
        i = concat.end + 1;
      } else unsupported(expr, target ?? '(end)');
    } else if ((word === 'ip' || word === 'ip6') && (t[i + 1] === 'saddr' || t[i + 1] === 'daddr')) {
      const f = FAMILIES[word];
      const negated = t[i + 2] === '!=';
      const operand = t[i + (negated ? 3 : 2)];
      if (operand === undefined) return unsupported(expr, `${word} ${t[i + 1]}`);
      if (nfproto !== f.nfproto) {
        if (nfproto >= 0) unsupported(expr, word);
        out.push(meta(NFT_META_NFPROTO), cmp(NFT_CMP_EQ, Uint8Array.of(f.nfproto)));
        nfproto = f.nfproto;
      }
      const field = t[i + 1] === 'saddr' ? f.saddr : f.daddr;
      if (operand.startsWith('@')) out.push(networkField(field, f.len), lookup(operand.slice(1), negated));
      else {
        // A prefix on a byte boundary is its leading bytes, as nft loads it; another is not encoded here.
        const [address, lenText] = operand.split('/');
        const bits = lenText === undefined ? f.len * 8 : wholeNumber(lenText, expr);
        if (bits % 8 !== 0 || bits === 0 || bits > f.len * 8) unsupported(expr, operand);
        const bytes = encodeKey(keyType(f.type), address).subarray(0, bits / 8);
        out.push(networkField(field, bits / 8), cmp(negated ? NFT_CMP_NEQ : NFT_CMP_EQ, bytes));
      }
      i += negated ? 4 : 3;
    } else if (word === 'meta' && t[i + 1] === 'l4proto' && t[i + 2] !== undefined && t[i + 2] !== '!=' && t[i + 3] !== '.') {
      out.push(meta(NFT_META_L4PROTO), cmp(NFT_CMP_EQ, encodeKey(keyType('inet_proto'), t[i + 2])));
      i += 3;
    } else if (word === 'numgen' && t[i + 1] === 'random' && t[i + 2] === 'mod' && t[i + 4] === '==') {
      const modulus = wholeNumber(t[i + 3], expr);
      const pick = wholeNumber(t[i + 5], expr);
      if (modulus < 1 || pick >= modulus) unsupported(expr, word);
      const data = Buffer.alloc(4);
      // numgen leaves a number in host byte order in its register.
      data.writeUInt32LE(pick, 0);
      out.push(numgen(modulus), cmp(NFT_CMP_EQ, data));
      i += 6;
    } else if (word === 'dnat' && (t[i + 1] === 'ip' || t[i + 1] === 'ip6') && t[i + 2] === 'to' && concatenation(t, i + 3)) {
      // `dnat ip to a . b … map @m`: the key looked up, the address and port it maps to DNATed,
      // the port in the register after the address (the map's data is `addr . inet_service`).
      const f = FAMILIES[t[i + 1] as 'ip' | 'ip6'];
      const concat = concatenation(t, i + 3)!;
      const need = concat.parts.find((p) => p.family)?.family;
      if (need !== undefined && nfproto !== need) {
        if (nfproto >= 0) unsupported(expr, word);
        out.push(meta(NFT_META_NFPROTO), cmp(NFT_CMP_EQ, Uint8Array.of(need)));
        nfproto = need;
      }
      let offset = 0;
      for (const p of concat.parts) {
        out.push(p.load(concatRegister(offset)));
        offset += (p.len + 3) & ~3;
      }
      if (t[concat.end] !== 'map' || !t[concat.end + 1]?.startsWith('@')) return unsupported(expr, t[concat.end] ?? '(end)');
      out.push(dataLookup(t[concat.end + 1].slice(1)), dnat(f.nfproto, concatRegister(f.len)));
      i = concat.end + 2;
      ended = true;
    } else if (word === 'dnat' && (t[i + 1] === 'ip' || t[i + 1] === 'ip6') && t[i + 2] === 'to' && t[i + 3] !== undefined) {
      const f = FAMILIES[t[i + 1] as 'ip' | 'ip6'];
      const m = (f.len === 4 ? /^([\d.]+):(\d{1,5})$/ : /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/).exec(t[i + 3]);
      if (!m) return unsupported(expr, t[i + 3]);
      const port = Buffer.alloc(2);
      const n = Number(m[2]);
      if (n > 65535) unsupported(expr, t[i + 3]);
      port.writeUInt16BE(n, 0);
      out.push(immediate(NFT_REG_1, encodeKey(keyType(f.type), m[1])), immediate(NFT_REG_2, port), dnat(f.nfproto));
      i += 4;
      ended = true;
    } else if (word === 'ct' && t[i + 1] === 'state' && t[i + 2] !== undefined) {
      let bits = 0;
      for (const s of t[i + 2].split(',')) bits |= CT_STATES[s] ?? unsupported(expr, s);
      out.push(ct(NFT_CT_STATE), bitwise(bits, 0), cmp(NFT_CMP_NEQ, host32(0)));
      i += 3;
    } else if (word === 'meta' && t[i + 1] === 'nfproto' && (t[i + 2] === 'ipv4' || t[i + 2] === 'ipv6')) {
      if (nfproto >= 0) unsupported(expr, word);
      nfproto = t[i + 2] === 'ipv4' ? NFPROTO_IPV4 : NFPROTO_IPV6;
      out.push(meta(NFT_META_NFPROTO), cmp(NFT_CMP_EQ, Uint8Array.of(nfproto)));
      i += 3;
    } else if (word === 'meta' && t[i + 1] === 'l4proto' && t[i + 2] === '!=' && t[i + 3] !== undefined) {
      out.push(meta(NFT_META_L4PROTO), cmp(NFT_CMP_NEQ, encodeKey(keyType('inet_proto'), t[i + 3])));
      i += 4;
    } else if (word === 'meta' && t[i + 1] === 'mark' && t[i + 2] === 'set' && t[i + 3] === 'meta' && t[i + 4] === 'mark') {
      const m = mark32(t[i + 6], expr);
      if (t[i + 5] === '&') out.push(load(NFT_META_MARK), bitwise(m, 0), metaSet(NFT_META_MARK));
      else if (t[i + 5] === '|') out.push(load(NFT_META_MARK), bitwise(~m, m), metaSet(NFT_META_MARK));
      else unsupported(expr, t[i + 5] ?? '(end)');
      i += 7;
    } else if (word === 'meta' && t[i + 1] === 'mark' && t[i + 2] === '&' && t[i + 4] === '==') {
      out.push(load(NFT_META_MARK), bitwise(mark32(t[i + 3], expr), 0), cmp(NFT_CMP_EQ, host32(mark32(t[i + 5], expr))));
      i += 6;
    } else if (word in PORTED && (t[i + 1] === 'sport' || t[i + 1] === 'dport')) {
      const negated = t[i + 2] === '!=';
      const port = t[i + (negated ? 3 : 2)];
      const n = wholeNumber(port, expr);
      if (n > 65535) unsupported(expr, port ?? '');
      const data = Buffer.alloc(2);
      data.writeUInt16BE(n, 0);
      // The protocol is a dependency nft writes once per rule.
      if (l4proto !== PORTED[word]) {
        if (l4proto >= 0) unsupported(expr, word);
        out.push(meta(NFT_META_L4PROTO), cmp(NFT_CMP_EQ, Uint8Array.of(PORTED[word])));
        l4proto = PORTED[word];
      }
      out.push(transportField(t[i + 1] === 'sport' ? 0 : 2), cmp(negated ? NFT_CMP_NEQ : NFT_CMP_EQ, data));
      i += negated ? 4 : 3;
    } else if ((word === 'iifname' || word === 'oifname') && t[i + 1] === 'vmap' && t[i + 2]?.startsWith('@')) {
      out.push(load(word === 'iifname' ? NFT_META_IIFNAME : NFT_META_OIFNAME), vmap(t[i + 2].slice(1)));
      i += 3;
      ended = true;
    } else if ((word === 'iifname' || word === 'oifname') && t[i + 1]?.startsWith('"')) {
      out.push(load(word === 'iifname' ? NFT_META_IIFNAME : NFT_META_OIFNAME), cmp(NFT_CMP_EQ, encodeKey(keyType('ifname'), t[i + 1])));
      i += 2;
    } else if (word === 'fib' && t.slice(i + 1, i + 6).join(' ') === 'saddr . iif oif missing') {
      out.push(fib(NFT_FIB_RESULT_OIF, NFTA_FIB_F_SADDR | NFTA_FIB_F_IIF | NFTA_FIB_F_PRESENT), cmp(NFT_CMP_EQ, host32(0)));
      i += 6;
    } else if (word === 'fib' && t.slice(i + 1, i + 4).join(' ') === 'saddr type local') {
      out.push(fib(NFT_FIB_RESULT_ADDRTYPE, NFTA_FIB_F_SADDR), cmp(NFT_CMP_EQ, host32(RTN_LOCAL)));
      i += 4;
    } else if (word === 'ct' && t[i + 1] === 'status' && t[i + 2] === 'dnat') {
      out.push(ct(NFT_CT_STATUS), bitwise(IPS_DST_NAT, 0), cmp(NFT_CMP_NEQ, host32(0)));
      i += 3;
    } else if (word === 'fib' && t.slice(i + 1, i + 4).join(' ') === 'daddr type local') {
      out.push(fib(NFT_FIB_RESULT_ADDRTYPE, NFTA_FIB_F_DADDR), cmp(NFT_CMP_EQ, host32(RTN_LOCAL)));
      i += 4;
    } else if (word === 'masquerade') {
      const random = t[i + 1] === 'fully-random';
      out.push(masq(random ? NF_NAT_RANGE_PROTO_RANDOM_FULLY : 0));
      i += random ? 2 : 1;
      ended = true;
    } else if (word === 'reject' && t[i + 1] === undefined) {
      out.push(reject);
      i += 1;
      ended = true;
    } else if (word === 'limit' && t[i + 1] === 'rate' && t[i + 3] === 'burst' && t[i + 5] === 'packets') {
      const m = /^(\d{1,9})\/second$/.exec(t[i + 2] ?? '');
      if (!m) return unsupported(expr, t[i + 2] ?? '(end)');
      out.push(limit(Number(m[1]), wholeNumber(t[i + 4], expr)));
      i += 6;
    } else if (word === 'log' && t[i + 1] === 'prefix' && /^"[^"\s]*"$/.test(t[i + 2] ?? '') && t[i + 3] === 'group') {
      const group = wholeNumber(t[i + 4], expr);
      if (group > 65535) unsupported(expr, t[i + 4] ?? '');
      out.push(log(t[i + 2]!.slice(1, -1), group));
      i += 5;
    } else if (word === 'counter') {
      out.push(counter);
      i += 1;
    } else if (word === 'accept' || word === 'drop' || word === 'return' || word === 'continue') {
      out.push(verdict(word));
      i += 1;
      ended = true;
    } else if ((word === 'jump' || word === 'goto') && t[i + 1] !== undefined) {
      out.push(verdict(`${word} ${t[i + 1]}`));
      i += 2;
      ended = true;
    } else unsupported(expr, word);
  }
  return out;
}

/** NFT_MSG_NEWRULE appending `expr` to `chain`, its comment in the userdata as nft writes it. Throws NftEncodeError. */
export function writeRule(w: MessageWriter, family: number, table: string, chain: string, expr: string, comment: string): void {
  const exprs = ruleExpressions(expr);
  const text = Buffer.from(`${comment}\0`, 'utf8');
  if (text.length > 255) throw new NftEncodeError(`rule comment ${JSON.stringify(comment)} is too long`);
  nfBegin(w, nftMsg(NFT_MSG_NEWRULE), NLM_F_REQUEST | NLM_F_CREATE | NLM_F_APPEND, family);
  w.attrString(NFTA_RULE_TABLE, table);
  w.attrString(NFTA_RULE_CHAIN, chain);
  w.nestBegin(NFTA_RULE_EXPRESSIONS);
  for (const [name, attrs] of exprs) {
    w.nestBegin(NFTA_LIST_ELEM);
    w.attrString(NFTA_EXPR_NAME, name);
    w.nestBegin(NFTA_EXPR_DATA);
    attrs(w);
    w.nestEnd();
    w.nestEnd();
  }
  w.nestEnd();
  if (comment) w.attrBytes(NFTA_RULE_USERDATA, Buffer.concat([Uint8Array.of(NFTNL_UDATA_RULE_COMMENT, text.length), text]));
  w.end();
}
