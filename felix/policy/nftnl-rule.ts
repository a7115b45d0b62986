// A rule's nft text as nf_tables expressions, for every statement the policy and services
// compilers write: address, protocol, port and ICMP matches (a value, a range, or an anonymous
// set), named set and map lookups, concatenations, conntrack state and status, marks (and flow logs' `ct mark set`), the RPF
// and local-address fib checks, numgen (a value, or an anonymous map of verdicts or DNAT
// targets, or a component of a concatenation), DNAT (to an address and port, or to a named
// data map's value), masquerade, reject, limit, log, `update @set`, counters and verdicts.
// Each is encoded as nft 1.0.6 encodes it (checked against its netlink output in a kernel):
// the same expressions, registers and byte orders; the `meta nfproto` and `meta l4proto`
// dependencies an inet table needs, once per rule; and nft's merge of matches on adjacent
// header fields (`tcp sport 80 tcp dport 443` is one 4-byte load). Other text is
// NftEncodeError, which names the statement.

import { NLA_F_NESTED, NLM_F_CREATE, NLM_F_REQUEST } from '../netlink/constants.js';
import {
  IPS_DST_NAT,
  NF_ACCEPT,
  NF_DROP,
  NF_NAT_RANGE_PROTO_RANDOM_FULLY,
  NFPROTO_IPV4,
  NFPROTO_IPV6,
  NFT_CMP_EQ,
  NFT_CMP_GTE,
  NFT_CMP_LTE,
  NFT_CMP_NEQ,
  NFT_CONTINUE,
  NFT_CT_STATE,
  NFT_CT_MARK,
  NFT_CT_STATUS,
  NFT_FIB_RESULT_ADDRTYPE,
  NFT_FIB_RESULT_OIF,
  NFT_GOTO,
  NFT_JUMP,
  NFT_META_IIFNAME,
  NFT_META_L4PROTO,
  NFT_META_MARK,
  NFT_META_NFPROTO,
  NFT_META_OIFNAME,
  NFT_MSG_NEWRULE,
  NLM_F_APPEND,
  NFT_PAYLOAD_NETWORK_HEADER,
  NFT_PAYLOAD_TRANSPORT_HEADER,
  NFT_REG_1,
  NFT_REG_2,
  NFT_REG_VERDICT,
  NFT_REG32_00,
  NFT_RETURN,
  NFTA_EXPR_DATA,
  NFTA_EXPR_NAME,
  NFTA_FIB_F_DADDR,
  NFTA_FIB_F_IIF,
  NFTA_FIB_F_PRESENT,
  NFTA_FIB_F_SADDR,
  NFTA_LIST_ELEM,
  NFTA_RULE_CHAIN,
  NFTA_RULE_EXPRESSIONS,
  NFTA_RULE_TABLE,
  NFTA_RULE_USERDATA,
  NFTNL_UDATA_RULE_COMMENT,
  RTN_LOCAL,
  nftMsg,
} from '../netlink/nf-constants.js';
import { nfBegin } from '../netlink/nf-message.js';
import type { MessageWriter } from '../netlink/writer.js';
import { type AnonymousElement, type AnonymousSet, intervalElements, writeAnonymousSet } from './nftnl-anonymous.js';
import {
  bitwise,
  cmp,
  counter,
  ct,
  ctSet,
  dnat,
  dynsetUpdate,
  type Expr,
  fib,
  host32,
  immediate,
  limit,
  log,
  lookup,
  lookupAnonymous,
  masq,
  meta,
  metaSet,
  numgen,
  payload,
  rangeNeq,
  reject,
  verdictExpr,
  vmap,
} from './nftnl-expr.js';
import { encodeKey, keyType, NftEncodeError } from './nftnl-types.js';
import { BYTEORDER_BIG, BYTEORDER_INVALID, concatTypeof, matchSetUserdata, numgenMapUserdata, payloadTypeof } from './nftnl-userdata.js';

export type { Expr } from './nftnl-expr.js';

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

/** A rule's expressions and the anonymous sets they look up, which go before it in the batch. */
export interface RuleCode {
  readonly exprs: readonly Expr[];
  readonly sets: readonly AnonymousSet[];
}

/**
 * One statement. A match (nft's expression statement) may be merged with the matches next to
 * it; `eq` is a header field compared equal to a value, which nft merges with an adjacent one.
 */
interface Stmt {
  readonly match: boolean;
  readonly exprs: readonly Expr[];
  readonly eq?: { readonly base: number; readonly offset: number; readonly data: Buffer };
}

/**
 * The register a concatenation's component at byte `offset` of the key is loaded into, as nft
 * picks it: a 16-byte register where the offset allows, else a 32-bit one.
 */
const concatRegister = (offset: number): number => (offset % 16 === 0 ? NFT_REG_1 + offset / 16 : NFT_REG32_00 + offset / 4);
const registerBytes = (len: number): number => (len + 3) & ~3;

const CT_STATES: Readonly<Record<string, number>> = { invalid: 1, established: 2, related: 4, new: 8, untracked: 64 };
/** Transport headers with ports: their protocol, and nft's id of their description (for a set's typeof). */
const PORTED: Readonly<Record<string, { readonly proto: number; readonly desc: number }>> = {
  tcp: { proto: 6, desc: 8 },
  udp: { proto: 17, desc: 6 },
  sctp: { proto: 132, desc: 10 },
  // The raw transport header: no protocol, so no dependency.
  th: { proto: -1, desc: 11 },
};
const ICMP = {
  icmp: { nfproto: NFPROTO_IPV4, proto: 1, desc: 4, type: 'icmp_type', code: 'icmp_code' },
  icmpv6: { nfproto: NFPROTO_IPV6, proto: 58, desc: 14, type: 'icmpv6_type', code: 'icmpv6_code' },
} as const;
// A field's index in nft's description of its header: sport/type first, dport/code second.
const FIELD_FIRST = 1;
const FIELD_SECOND = 2;

const FAMILIES = {
  ip: { nfproto: NFPROTO_IPV4, type: 'ipv4_addr', saddr: 12, daddr: 16, protocol: 9, len: 4 },
  ip6: { nfproto: NFPROTO_IPV6, type: 'ipv6_addr', saddr: 8, daddr: 24, protocol: 6, len: 16 },
} as const;

const unsupported = (expr: string, at: string): never => {
  throw new NftEncodeError(`rule ${JSON.stringify(expr)}: ${JSON.stringify(at)} has no netlink encoding here`);
};

function wholeNumber(text: string | undefined, expr: string, max = 999_999_999): number {
  if (text === undefined || !/^\d{1,10}$/.test(text) || Number(text) > max) return unsupported(expr, text ?? '(end)');
  return Number(text);
}

function mark32(text: string | undefined, expr: string): number {
  if (text === undefined || !/^0x[0-9a-f]{1,8}$/i.test(text)) return unsupported(expr, text ?? '(end)');
  return Number(text);
}

/** The rule's words: a quoted string and a `{ … }` group are one each. */
function words(expr: string): string[] {
  return expr.match(/"[^"]*"|\{[^{}]*\}|[^\s{}"]+/g) ?? [];
}

/** A `{ a, b }` group's elements, each with its spaces made single. */
function groupElements(group: string, expr: string): string[] {
  const inner = group.slice(1, -1).trim();
  if (!inner) return unsupported(expr, group);
  return inner.split(',').map((e) => e.trim().replace(/\s+/g, ' '));
}

/** One component of a concatenation: what it loads, what it needs, and its type. */
interface Component {
  readonly len: number;
  readonly type: string;
  readonly family?: number;
  readonly l4proto?: number;
  /** nft's typeof of it, for an anonymous set keyed by it. */
  readonly typeof?: Buffer;
  load(reg: number): Expr;
}

function component(t: readonly string[], i: number): [Component, number] | undefined {
  const word = t[i];
  const next = t[i + 1];
  if ((word === 'ip' || word === 'ip6') && (next === 'saddr' || next === 'daddr')) {
    const f = FAMILIES[word];
    const offset = next === 'saddr' ? f.saddr : f.daddr;
    return [{ len: f.len, type: f.type, family: f.nfproto, load: (reg) => payload(NFT_PAYLOAD_NETWORK_HEADER, offset, f.len, reg) }, i + 2];
  }
  if (word === 'meta' && next === 'l4proto') return [{ len: 1, type: 'inet_proto', load: (reg) => meta(NFT_META_L4PROTO, reg) }, i + 2];
  if (word === 'th' && (next === 'sport' || next === 'dport')) {
    const offset = next === 'sport' ? 0 : 2;
    return [{ len: 2, type: 'inet_service', load: (reg) => payload(NFT_PAYLOAD_TRANSPORT_HEADER, offset, 2, reg) }, i + 2];
  }
  if (word === 'numgen' && next === 'random' && t[i + 2] === 'mod' && /^\d{1,9}$/.test(t[i + 3] ?? '') && Number(t[i + 3]) >= 1) {
    // numgen's number as a map key's component (a service's endpoint index).
    const modulus = Number(t[i + 3]);
    return [{ len: 4, type: 'integer', load: (reg) => numgen(modulus, reg) }, i + 4];
  }
  if ((word === 'icmp' || word === 'icmpv6') && (next === 'type' || next === 'code')) {
    const k = ICMP[word];
    const offset = next === 'type' ? 0 : 1;
    return [
      {
        len: 1,
        type: next === 'type' ? k.type : k.code,
        family: k.nfproto,
        l4proto: k.proto,
        typeof: payloadTypeof(k.desc, next === 'type' ? FIELD_FIRST : FIELD_SECOND),
        load: (reg) => payload(NFT_PAYLOAD_TRANSPORT_HEADER, offset, 1, reg),
      },
      i + 2,
    ];
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

/** A port operand (`80`, `1000-2000`): its inclusive span. */
function portSpan(text: string, expr: string): [number, number] {
  const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(text);
  if (!m) return unsupported(expr, text);
  const first = Number(m[1]);
  const last = m[2] === undefined ? first : Number(m[2]);
  if (last > 65535 || first > last) unsupported(expr, text);
  return [first, last];
}

const port = (n: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n, 0);
  return b;
};

/**
 * nft's merge of equality matches on adjacent header fields, within each run of matches: sorted
 * by header and offset, a field joins the one before it when both end up in one 32-bit load
 * (or one is already wider and the two fit in 16 bytes); the merged match takes the place of
 * the first field's.
 */
function mergeAdjacent(stmts: readonly Stmt[]): Stmt[] {
  const out: (Stmt | undefined)[] = [...stmts];
  let run: number[] = [];
  const flush = () => {
    if (run.length > 1) {
      const sorted = [...run].sort((a, b) => {
        const x = out[a]!.eq!;
        const y = out[b]!.eq!;
        return x.base - y.base || x.offset - y.offset;
      });
      let last = sorted[0];
      for (let k = 1; k < sorted.length; k++) {
        const at = sorted[k];
        const a = out[last]!.eq!;
        const b = out[at]!.eq!;
        const total = a.data.length + b.data.length;
        const mergeable =
          a.base === b.base &&
          a.offset + a.data.length === b.offset &&
          total <= 16 &&
          (total <= 4 || a.data.length > 4 || b.data.length > 4);
        if (!mergeable) {
          last = at;
          continue;
        }
        out[last] = { match: true, exprs: [], eq: { base: a.base, offset: a.offset, data: Buffer.concat([a.data, b.data]) } };
        out[at] = undefined;
      }
    }
    run = [];
  };
  out.forEach((s, i) => {
    if (!s?.match) flush();
    else if (s.eq) run.push(i);
  });
  flush();
  return out.filter((s): s is Stmt => s !== undefined);
}

/** The expressions of `expr`, a rule's statements in nft syntax, and its anonymous sets. */
export function ruleExpressions(expr: string): RuleCode {
  const t = words(expr);
  const stmts: Stmt[] = [];
  const sets: AnonymousSet[] = [];
  let nfproto = -1;
  let l4proto = -1;
  let i = 0;
  let ended = false;

  const match = (...exprs: Expr[]) => stmts.push({ match: true, exprs });
  const action = (...exprs: Expr[]) => stmts.push({ match: false, exprs });
  const eq = (base: number, offset: number, data: Buffer) => stmts.push({ match: true, exprs: [], eq: { base, offset, data } });
  const needFamily = (want: number, at: string) => {
    if (nfproto === want) return;
    if (nfproto >= 0) unsupported(expr, at);
    match(meta(NFT_META_NFPROTO), cmp(NFT_CMP_EQ, Uint8Array.of(want)));
    nfproto = want;
  };
  const needProtocol = (want: number, at: string) => {
    if (want < 0 || l4proto === want) return;
    if (l4proto >= 0) unsupported(expr, at);
    match(meta(NFT_META_L4PROTO), cmp(NFT_CMP_EQ, Uint8Array.of(want)));
    l4proto = want;
  };
  // A concatenated key's components, each checked and loaded into the register its offset gives.
  const loadConcatenation = (parts: readonly Component[], at: string): Expr[] => {
    for (const p of parts) if (p.family !== undefined) needFamily(p.family, at);
    for (const p of parts) if (p.l4proto !== undefined) needProtocol(p.l4proto, at);
    const loads: Expr[] = [];
    let offset = 0;
    for (const p of parts) {
      loads.push(p.load(concatRegister(offset)));
      offset += registerBytes(p.len);
    }
    return loads;
  };
  const anonymous = (set: AnonymousSet): number => sets.push(set) - 1;

  /** `<field> [!=] value|a-b|{ … }` on a 2-byte big-endian field (a port). */
  const portMatch = (offset: number, desc: number, field: number) => {
    const negated = t[i] === '!=';
    if (negated) i++;
    const operand = t[i] ?? unsupported(expr, '(end)');
    i++;
    if (operand.startsWith('{')) {
      const spans = groupElements(operand, expr).map((e) => portSpan(e, expr));
      const index = anonymous({
        key: keyType('inet_service'),
        interval: true,
        elements: intervalElements(joinSpans(spans), 2),
        userdata: matchSetUserdata(BYTEORDER_BIG, true, payloadTypeof(desc, field)),
      });
      match(payload(NFT_PAYLOAD_TRANSPORT_HEADER, offset, 2), lookupAnonymous(index, false, negated));
      return;
    }
    const [first, last] = portSpan(operand, expr);
    if (first === last) {
      if (negated) match(payload(NFT_PAYLOAD_TRANSPORT_HEADER, offset, 2), cmp(NFT_CMP_NEQ, port(first)));
      else eq(NFT_PAYLOAD_TRANSPORT_HEADER, offset, port(first));
    } else if (negated) match(payload(NFT_PAYLOAD_TRANSPORT_HEADER, offset, 2), rangeNeq(port(first), port(last)));
    else match(payload(NFT_PAYLOAD_TRANSPORT_HEADER, offset, 2), cmp(NFT_CMP_GTE, port(first)), cmp(NFT_CMP_LTE, port(last)));
  };

  while (i < t.length) {
    if (ended) unsupported(expr, t[i]);
    const word = t[i];
    const concat = concatenation(t, i);
    if (concat) {
      // `a . b . c @set`, `… vmap @map` or `… [!=] { x . y }`: each component loaded where the key puts it.
      const loads = loadConcatenation(concat.parts, word);
      let at = concat.end;
      const negated = t[at] === '!=';
      if (negated) at++;
      const target = t[at];
      if (!negated && target === 'vmap' && t[at + 1]?.startsWith('@')) {
        action(...loads, vmap(t[at + 1].slice(1)));
        i = at + 2;
        ended = true;
      } else if (target?.startsWith('@')) {
        match(...loads, lookup(target.slice(1), negated));
        i = at + 1;
      } else if (target?.startsWith('{')) {
        const typeofs = concat.parts.map((p) => p.typeof ?? unsupported(expr, target));
        const key = keyType(concat.parts.map((p) => p.type).join(' . '));
        const index = anonymous({
          key,
          interval: false,
          elements: groupElements(target, expr).map((e): AnonymousElement => ({ key: encodeKey(key, e) })),
          userdata: matchSetUserdata(BYTEORDER_INVALID, false, concatTypeof(typeofs)),
        });
        match(...loads, lookupAnonymous(index, false, negated));
        i = at + 1;
      } else unsupported(expr, target ?? '(end)');
    } else if ((word === 'ip' || word === 'ip6') && (t[i + 1] === 'saddr' || t[i + 1] === 'daddr')) {
      const f = FAMILIES[word];
      const negated = t[i + 2] === '!=';
      const operand = t[i + (negated ? 3 : 2)];
      if (operand === undefined) return unsupported(expr, `${word} ${t[i + 1]}`);
      needFamily(f.nfproto, word);
      const field = t[i + 1] === 'saddr' ? f.saddr : f.daddr;
      if (operand.startsWith('@')) match(payload(NFT_PAYLOAD_NETWORK_HEADER, field, f.len), lookup(operand.slice(1), negated));
      else {
        // A prefix on a byte boundary is its leading bytes, as nft loads it; another is not encoded here.
        const [address, lenText] = operand.split('/');
        const bits = lenText === undefined ? f.len * 8 : wholeNumber(lenText, expr);
        if (bits % 8 !== 0 || bits === 0 || bits > f.len * 8) unsupported(expr, operand);
        const bytes = encodeKey(keyType(f.type), address).subarray(0, bits / 8);
        // Only a whole address is a value nft may merge; a prefix is not.
        if (!negated && lenText === undefined) eq(NFT_PAYLOAD_NETWORK_HEADER, field, bytes);
        else match(payload(NFT_PAYLOAD_NETWORK_HEADER, field, bits / 8), cmp(negated ? NFT_CMP_NEQ : NFT_CMP_EQ, bytes));
      }
      i += negated ? 4 : 3;
    } else if ((word === 'ip' || word === 'ip6') && t[i + 1] === (word === 'ip' ? 'protocol' : 'nexthdr') && t[i + 2] !== undefined) {
      const f = FAMILIES[word];
      needFamily(f.nfproto, word);
      eq(NFT_PAYLOAD_NETWORK_HEADER, f.protocol, encodeKey(keyType('inet_proto'), t[i + 2]));
      i += 3;
    } else if (word === 'meta' && t[i + 1] === 'l4proto' && t[i + 2] !== undefined && t[i + 2] !== '!=') {
      const proto = encodeKey(keyType('inet_proto'), t[i + 2]);
      match(meta(NFT_META_L4PROTO), cmp(NFT_CMP_EQ, proto));
      // nft takes the protocol as known from here: a later `tcp dport` needs no dependency.
      if (l4proto < 0) l4proto = proto[0];
      i += 3;
    } else if (word === 'numgen' && t[i + 1] === 'random' && t[i + 2] === 'mod' && t[i + 4] === '==') {
      const modulus = wholeNumber(t[i + 3], expr);
      const pick = wholeNumber(t[i + 5], expr);
      if (modulus < 1 || pick >= modulus) unsupported(expr, word);
      // numgen leaves a number in host byte order in its register.
      match(numgen(modulus), cmp(NFT_CMP_EQ, host32(pick)));
      i += 6;
    } else if (word === 'numgen' && t[i + 1] === 'random' && t[i + 2] === 'mod' && t[i + 4] === 'vmap' && t[i + 5]?.startsWith('{')) {
      const modulus = wholeNumber(t[i + 3], expr);
      const key = keyType('integer');
      const elements = groupElements(t[i + 5], expr).map((e): AnonymousElement => {
        const m = /^(\d+) : (.+)$/.exec(e) ?? unsupported(expr, e);
        return { key: encodeKey(key, m[1]), verdict: verdictCode(m[2]) };
      });
      const index = anonymous({ key, interval: false, data: 'verdict', elements, userdata: numgenMapUserdata(true) });
      action(numgen(modulus), lookupAnonymous(index, true, false, NFT_REG_VERDICT));
      i += 6;
      ended = true;
    } else if (word === 'dnat' && (t[i + 1] === 'ip' || t[i + 1] === 'ip6') && t[i + 2] === 'to' && concatenation(t, i + 3)) {
      // `dnat ip to a . b … map @m`: the key looked up, and the address and port it maps to
      // DNATed (the map's data is `addr . inet_service`: the port in the register after the address).
      const f = FAMILIES[t[i + 1] as 'ip' | 'ip6'];
      const concat = concatenation(t, i + 3)!;
      const loads = loadConcatenation(concat.parts, word);
      if (t[concat.end] !== 'map' || !t[concat.end + 1]?.startsWith('@')) return unsupported(expr, t[concat.end] ?? '(end)');
      action(...loads, lookup(t[concat.end + 1].slice(1), false, NFT_REG_1), dnat(f.nfproto, concatRegister(registerBytes(f.len))));
      i = concat.end + 2;
      ended = true;
    } else if (word === 'dnat' && (t[i + 1] === 'ip' || t[i + 1] === 'ip6') && t[i + 2] === 'to' && t[i + 3] === 'numgen') {
      // `dnat ip to numgen random mod N map { 0 : a . p, … }`: the address and port from an anonymous map.
      const f = FAMILIES[t[i + 1] as 'ip' | 'ip6'];
      if (t[i + 4] !== 'random' || t[i + 5] !== 'mod' || t[i + 7] !== 'map' || !t[i + 8]?.startsWith('{')) unsupported(expr, word);
      const modulus = wholeNumber(t[i + 6], expr);
      const key = keyType('integer');
      const data = keyType(`${f.type} . inet_service`);
      const elements = groupElements(t[i + 8], expr).map((e): AnonymousElement => {
        const m = /^(\d+) : (.+)$/.exec(e) ?? unsupported(expr, e);
        return { key: encodeKey(key, m[1]), data: encodeKey(data, m[2]) };
      });
      const index = anonymous({ key, interval: false, data, elements, userdata: numgenMapUserdata(false) });
      action(numgen(modulus), lookupAnonymous(index, true, false, NFT_REG_1), dnat(f.nfproto, concatRegister(data.offsets[1])));
      i += 9;
      ended = true;
    } else if (word === 'dnat' && (t[i + 1] === 'ip' || t[i + 1] === 'ip6') && t[i + 2] === 'to' && t[i + 3] !== undefined) {
      const f = FAMILIES[t[i + 1] as 'ip' | 'ip6'];
      const m = (f.len === 4 ? /^([\d.]+):(\d{1,5})$/ : /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/).exec(t[i + 3]);
      if (!m) return unsupported(expr, t[i + 3]);
      const n = Number(m[2]);
      if (n > 65535) unsupported(expr, t[i + 3]);
      action(immediate(NFT_REG_1, encodeKey(keyType(f.type), m[1])), immediate(NFT_REG_2, port(n)), dnat(f.nfproto, NFT_REG_2));
      i += 4;
      ended = true;
    } else if (word === 'ct' && t[i + 1] === 'state' && t[i + 2] !== undefined) {
      let bits = 0;
      for (const s of t[i + 2].split(',')) bits |= CT_STATES[s] ?? unsupported(expr, s);
      match(ct(NFT_CT_STATE), bitwise(bits, 0), cmp(NFT_CMP_NEQ, host32(0)));
      i += 3;
    } else if (word === 'meta' && t[i + 1] === 'nfproto' && (t[i + 2] === 'ipv4' || t[i + 2] === 'ipv6')) {
      if (nfproto >= 0) unsupported(expr, word);
      nfproto = t[i + 2] === 'ipv4' ? NFPROTO_IPV4 : NFPROTO_IPV6;
      match(meta(NFT_META_NFPROTO), cmp(NFT_CMP_EQ, Uint8Array.of(nfproto)));
      i += 3;
    } else if (word === 'meta' && t[i + 1] === 'l4proto' && t[i + 2] === '!=' && t[i + 3] !== undefined) {
      match(meta(NFT_META_L4PROTO), cmp(NFT_CMP_NEQ, encodeKey(keyType('inet_proto'), t[i + 3])));
      i += 4;
    } else if (word === 'meta' && t[i + 1] === 'mark' && t[i + 2] === 'set' && t[i + 3] === 'meta' && t[i + 4] === 'mark') {
      const m = mark32(t[i + 6], expr);
      if (t[i + 5] === '&') action(meta(NFT_META_MARK), bitwise(m, 0), metaSet(NFT_META_MARK));
      else if (t[i + 5] === '|') action(meta(NFT_META_MARK), bitwise(~m, m), metaSet(NFT_META_MARK));
      else unsupported(expr, t[i + 5] ?? '(end)');
      i += 7;
    } else if (word === 'ct' && t.slice(i + 1, i + 5).join(' ') === 'mark set ct mark') {
      // Flow logs' `ct mark set ct mark & M | V` and `ct mark set ct mark | V`: (mark & M) ^ V.
      const and = t[i + 5] === '&';
      const mask = and ? mark32(t[i + 6], expr) : 0xffffffff;
      if (t[i + (and ? 7 : 5)] !== '|') unsupported(expr, t[i + (and ? 7 : 5)] ?? '(end)');
      const v = mark32(t[i + (and ? 8 : 6)], expr);
      action(ct(NFT_CT_MARK), bitwise(and ? mask : ~v, v), ctSet(NFT_CT_MARK));
      i += and ? 9 : 7;
    } else if (word === 'meta' && t[i + 1] === 'mark' && t[i + 2] === '&' && t[i + 4] === '==') {
      match(meta(NFT_META_MARK), bitwise(mark32(t[i + 3], expr), 0), cmp(NFT_CMP_EQ, host32(mark32(t[i + 5], expr))));
      i += 6;
    } else if (word in PORTED && (t[i + 1] === 'sport' || t[i + 1] === 'dport')) {
      const h = PORTED[word];
      // The protocol is a dependency nft writes once per rule (none for `th`).
      needProtocol(h.proto, word);
      const sport = t[i + 1] === 'sport';
      i += 2;
      portMatch(sport ? 0 : 2, h.desc, sport ? FIELD_FIRST : FIELD_SECOND);
    } else if ((word === 'icmp' || word === 'icmpv6') && (t[i + 1] === 'type' || t[i + 1] === 'code')) {
      const k = ICMP[word];
      needFamily(k.nfproto, word);
      needProtocol(k.proto, word);
      const offset = t[i + 1] === 'type' ? 0 : 1;
      const negated = t[i + 2] === '!=';
      const n = wholeNumber(t[i + (negated ? 3 : 2)], expr, 255);
      if (negated) match(payload(NFT_PAYLOAD_TRANSPORT_HEADER, offset, 1), cmp(NFT_CMP_NEQ, Uint8Array.of(n)));
      else eq(NFT_PAYLOAD_TRANSPORT_HEADER, offset, Buffer.of(n));
      i += negated ? 4 : 3;
    } else if ((word === 'iifname' || word === 'oifname') && t[i + 1] === 'vmap' && t[i + 2]?.startsWith('@')) {
      action(meta(word === 'iifname' ? NFT_META_IIFNAME : NFT_META_OIFNAME), vmap(t[i + 2].slice(1)));
      i += 3;
      ended = true;
    } else if ((word === 'iifname' || word === 'oifname') && t[i + 1]?.startsWith('"')) {
      match(meta(word === 'iifname' ? NFT_META_IIFNAME : NFT_META_OIFNAME), cmp(NFT_CMP_EQ, encodeKey(keyType('ifname'), t[i + 1])));
      i += 2;
    } else if (word === 'fib' && t.slice(i + 1, i + 6).join(' ') === 'saddr . iif oif missing') {
      match(fib(NFT_FIB_RESULT_OIF, NFTA_FIB_F_SADDR | NFTA_FIB_F_IIF | NFTA_FIB_F_PRESENT), cmp(NFT_CMP_EQ, host32(0)));
      i += 6;
    } else if (word === 'fib' && t.slice(i + 1, i + 4).join(' ') === 'saddr type local') {
      match(fib(NFT_FIB_RESULT_ADDRTYPE, NFTA_FIB_F_SADDR), cmp(NFT_CMP_EQ, host32(RTN_LOCAL)));
      i += 4;
    } else if (word === 'ct' && t[i + 1] === 'status' && t[i + 2] === 'dnat') {
      match(ct(NFT_CT_STATUS), bitwise(IPS_DST_NAT, 0), cmp(NFT_CMP_NEQ, host32(0)));
      i += 3;
    } else if (word === 'ct' && t.slice(i + 1, i + 6).join(' ') === 'status & dnat == 0') {
      match(ct(NFT_CT_STATUS), bitwise(IPS_DST_NAT, 0), cmp(NFT_CMP_EQ, host32(0)));
      i += 6;
    } else if (word === 'fib' && t.slice(i + 1, i + 4).join(' ') === 'daddr type local') {
      match(fib(NFT_FIB_RESULT_ADDRTYPE, NFTA_FIB_F_DADDR), cmp(NFT_CMP_EQ, host32(RTN_LOCAL)));
      i += 4;
    } else if (word === 'update' && t[i + 1]?.startsWith('@') && t[i + 2]?.startsWith('{')) {
      // `update @set { ip saddr }`: the key loaded, then added to the set (or its timeout renewed).
      const key = groupElements(t[i + 2], expr);
      const m = key.length === 1 ? /^(ip6?) (saddr|daddr)$/.exec(key[0]) : null;
      if (!m) return unsupported(expr, t[i + 2]);
      const f = FAMILIES[m[1] as 'ip' | 'ip6'];
      needFamily(f.nfproto, word);
      action(payload(NFT_PAYLOAD_NETWORK_HEADER, m[2] === 'saddr' ? f.saddr : f.daddr, f.len), dynsetUpdate(t[i + 1].slice(1)));
      i += 3;
    } else if (word === 'limit' && t[i + 1] === 'rate' && t[i + 3] === 'burst' && t[i + 5] === 'packets') {
      const m = /^(\d{1,9})\/second$/.exec(t[i + 2] ?? '') ?? unsupported(expr, t[i + 2] ?? '(end)');
      action(limit(Number(m[1]), wholeNumber(t[i + 4], expr)));
      i += 6;
    } else if (word === 'log') {
      let prefix: string | undefined;
      let group: number | undefined;
      i++;
      for (;;) {
        if (t[i] === 'prefix' && t[i + 1]?.startsWith('"') && prefix === undefined) {
          prefix = t[i + 1].slice(1, -1);
          if (Buffer.byteLength(prefix) > 127) unsupported(expr, t[i + 1]);
          i += 2;
        } else if (t[i] === 'group' && group === undefined) {
          group = wholeNumber(t[i + 1], expr, 65535);
          i += 2;
        } else break;
      }
      action(log(prefix, group));
    } else if (word === 'masquerade') {
      const random = t[i + 1] === 'fully-random';
      action(masq(random ? NF_NAT_RANGE_PROTO_RANDOM_FULLY : 0));
      i += random ? 2 : 1;
      ended = true;
    } else if (word === 'reject' && t[i + 1] === undefined) {
      action(reject);
      i += 1;
      ended = true;
    } else if (word === 'counter') {
      action(counter);
      i += 1;
    } else if (word === 'accept' || word === 'drop' || word === 'return' || word === 'continue') {
      action(verdictExpr(verdictCode(word)));
      i += 1;
      ended = true;
    } else if ((word === 'jump' || word === 'goto') && t[i + 1] !== undefined) {
      action(verdictExpr(verdictCode(`${word} ${t[i + 1]}`)));
      i += 2;
      ended = true;
    } else unsupported(expr, word);
  }
  const exprs: Expr[] = [];
  for (const s of mergeAdjacent(stmts)) {
    if (s.eq) exprs.push(payload(s.eq.base, s.eq.offset, s.eq.data.length), cmp(NFT_CMP_EQ, s.eq.data));
    else exprs.push(...s.exprs);
  }
  return { exprs, sets };
}

/** Sorted spans with the overlapping and touching ones joined, as nft's automerge leaves them. */
function joinSpans(spans: readonly [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [first, last] of [...spans].sort((a, b) => a[0] - b[0])) {
    const prev = out[out.length - 1];
    if (prev && first <= prev[1] + 1) prev[1] = Math.max(prev[1], last);
    else out.push([first, last]);
  }
  return out;
}

/**
 * NFT_MSG_NEWRULE appending `expr` to `chain`, its comment in the userdata as nft writes it,
 * after its anonymous sets (each given an id by `nextSetId`). Throws NftEncodeError.
 * `written`, kept across the rules of one batch, remembers where each statement text without
 * anonymous sets was encoded in `w`: a table repeats a few such rules thousands of times (the
 * same masquerade, the same endpoint pick in another chain), and their expressions are the
 * same bytes, copied rather than compiled again. `encoded`: the rule's expressions already
 * encoded (nftnl-rule-template.ts), written as they are.
 */
export function writeRule(
  w: MessageWriter,
  family: number,
  table: string,
  chain: string,
  expr: string,
  comment: string,
  nextSetId: () => number,
  written?: Map<string, { readonly start: number; readonly end: number }>,
  encoded?: Uint8Array,
): void {
  const seen = written?.get(expr);
  const code = seen || encoded ? undefined : ruleExpressions(expr);
  const commentBytes = Buffer.byteLength(comment, 'utf8') + 1;
  if (commentBytes > 255) throw new NftEncodeError(`rule comment ${JSON.stringify(comment)} is too long`);
  const ids = code
    ? code.sets.map((set) => {
        const id = nextSetId();
        writeAnonymousSet(w, family, table, set, id);
        return id;
      })
    : [];
  nfBegin(w, nftMsg(NFT_MSG_NEWRULE), NLM_F_REQUEST | NLM_F_CREATE | NLM_F_APPEND, family);
  w.attrString(NFTA_RULE_TABLE, table);
  w.attrString(NFTA_RULE_CHAIN, chain);
  if (seen) {
    // The nest's header and its expressions, as they were written the first time.
    w.attrBytes(NFTA_RULE_EXPRESSIONS | NLA_F_NESTED, w.buf.subarray(seen.start, seen.end));
  } else if (encoded) {
    w.attrBytes(NFTA_RULE_EXPRESSIONS | NLA_F_NESTED, encoded);
  } else if (code) {
    w.nestBegin(NFTA_RULE_EXPRESSIONS);
    const start = w.len;
    for (const [name, attrs] of code.exprs) {
      w.nestBegin(NFTA_LIST_ELEM);
      w.attrString(NFTA_EXPR_NAME, name);
      w.nestBegin(NFTA_EXPR_DATA);
      attrs(w, ids);
      w.nestEnd();
      w.nestEnd();
    }
    w.nestEnd();
    if (written && !code.sets.length) written.set(expr, { start, end: w.len });
  }
  if (comment) {
    // NFTNL_UDATA_RULE_COMMENT's type and length, then the comment and its NUL.
    const at = w.len + 4;
    w.attrString(NFTA_RULE_USERDATA, `\0\0${comment}`);
    w.buf[at] = NFTNL_UDATA_RULE_COMMENT;
    w.buf[at + 1] = commentBytes;
  }
  w.end();
}
