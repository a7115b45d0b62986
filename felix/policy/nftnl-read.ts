// The table read back by nf_tables netlink dumps and parsed here, in the keyed form the plan
// compares (the same InstalledTable `nft -j list` gave): sets and maps with canonical elements,
// chains, and each rule known by its comment with the named sets and chains it refers to and
// its first counter. Between two reads of the ruleset's generation, so a commit by anyone
// during the dumps is seen and the read made again.

import { NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST } from '../netlink/constants.js';
import {
  NF_ACCEPT,
  NF_DROP,
  NF_INET_FORWARD,
  NF_INET_LOCAL_IN,
  NF_INET_LOCAL_OUT,
  NF_INET_POST_ROUTING,
  NF_INET_PRE_ROUTING,
  NFT_CONTINUE,
  NFT_DATA_VERDICT,
  NFT_GOTO,
  NFT_JUMP,
  NFT_MSG_GETCHAIN,
  NFT_MSG_GETRULE,
  NFT_MSG_GETSET,
  NFT_MSG_GETSETELEM,
  NFT_MSG_GETTABLE,
  NFT_MSG_NEWCHAIN,
  NFT_MSG_NEWGEN,
  NFT_MSG_NEWRULE,
  NFT_MSG_NEWSET,
  NFT_MSG_NEWSETELEM,
  NFT_RETURN,
  NFT_SET_ANONYMOUS,
  NFT_SET_ELEM_INTERVAL_END,
  NFT_SET_EVAL,
  NFT_SET_INTERVAL,
  NFT_SET_MAP,
  NFT_SET_TIMEOUT,
  NFTA_CHAIN_HOOK,
  NFTA_CHAIN_NAME,
  NFTA_CHAIN_POLICY,
  NFTA_CHAIN_TABLE,
  NFTA_CHAIN_TYPE,
  NFTA_COUNTER_BYTES,
  NFTA_COUNTER_PACKETS,
  NFTA_DATA_VALUE,
  NFTA_DATA_VERDICT,
  NFTA_DYNSET_SET_NAME,
  NFTA_EXPR_DATA,
  NFTA_EXPR_NAME,
  NFTA_HOOK_HOOKNUM,
  NFTA_HOOK_PRIORITY,
  NFTA_IMMEDIATE_DATA,
  NFTA_LIST_ELEM,
  NFTA_LOOKUP_SET,
  NFTA_RULE_CHAIN,
  NFTA_RULE_EXPRESSIONS,
  NFTA_RULE_TABLE,
  NFTA_RULE_USERDATA,
  NFTA_SET_DATA_LEN,
  NFTA_SET_DATA_TYPE,
  NFTA_SET_ELEM_DATA,
  NFTA_SET_ELEM_FLAGS,
  NFTA_SET_ELEM_KEY,
  NFTA_SET_ELEM_LIST_ELEMENTS,
  NFTA_SET_ELEM_LIST_SET,
  NFTA_SET_ELEM_LIST_TABLE,
  NFTA_SET_FLAGS,
  NFTA_SET_KEY_LEN,
  NFTA_SET_KEY_TYPE,
  NFTA_SET_NAME,
  NFTA_SET_TABLE,
  NFTA_SET_TIMEOUT,
  NFTA_TABLE_NAME,
  NFTA_VERDICT_CHAIN,
  NFTA_VERDICT_CODE,
  NFTNL_UDATA_RULE_COMMENT,
  nftMsg,
} from '../netlink/nf-constants.js';
import { attrI32, attrs, attrText, attrU32, attrU64, findAttr, getGen, nfAttrsStart, nfBegin, readGen } from '../netlink/nf-message.js';
import { type NetlinkSocket, NetlinkError } from '../netlink/socket.js';
import { ENOENT } from '../errno.js';
import type {
  InstalledBase,
  InstalledChain,
  InstalledMap,
  InstalledRule,
  InstalledSet,
  InstalledTable,
  RuleCounterRow,
} from './dataplane.js';
import { canonicalElements, spanText } from './element-text.js';
import type { NftHook } from './nft-model.js';
import { decodeKey, keyType, keyTypeName, keyValue } from './nftnl-types.js';
import type { SetKind } from './nftnl-write.js';

const HOOK_NAMES: Readonly<Record<number, NftHook>> = {
  [NF_INET_PRE_ROUTING]: 'prerouting',
  [NF_INET_LOCAL_IN]: 'input',
  [NF_INET_FORWARD]: 'forward',
  [NF_INET_LOCAL_OUT]: 'output',
  [NF_INET_POST_ROUTING]: 'postrouting',
};

/** A read and the set kinds the writer needs for element operations, with the generation it is true for. */
export interface NetlinkRead {
  readonly table: InstalledTable | undefined;
  readonly kinds: Map<string, SetKind>;
  readonly gen: number;
  /** For the next read (ReadOptions.memo). */
  readonly memo: ElementMemo;
}

interface SetHead {
  readonly name: string;
  readonly flags: number;
  readonly type: string | undefined;
  readonly keyId: number;
  readonly keyLen: number;
  readonly dataType: number | undefined;
  /** A data map's data type, when it is one this reader knows. */
  readonly data: string | undefined;
  readonly timeoutMs: number | undefined;
}

/** The ruleset's generation. */
export function generation(sock: NetlinkSocket): number {
  const w = sock.writer(64);
  getGen(w);
  let gen: number | undefined;
  sock.dump(w, (type, buf, start, end) => {
    if (type === nftMsg(NFT_MSG_NEWGEN)) gen = readGen(buf, start, end);
  });
  if (gen === undefined) throw new NetlinkError(ENOENT, 'the kernel gave no nf_tables generation');
  return gen;
}

function exists(sock: NetlinkSocket, family: number, table: string): boolean {
  const w = sock.writer(256);
  nfBegin(w, nftMsg(NFT_MSG_GETTABLE), NLM_F_REQUEST | NLM_F_ACK, family);
  w.attrString(NFTA_TABLE_NAME, table);
  w.end();
  try {
    sock.dump(w, () => undefined);
    return true;
  } catch (e) {
    if (e instanceof NetlinkError && e.errno === ENOENT) return false;
    throw e;
  }
}

/** Runs one dump of `msg` for the table (`attr` names it in the request, `more` adds attributes). */
function dumpOf(
  sock: NetlinkSocket,
  family: number,
  msg: number,
  attr: number,
  table: string,
  reply: number,
  visit: (buf: Buffer, from: number, to: number) => void,
  more?: (w: ReturnType<NetlinkSocket['writer']>) => void,
): void {
  const w = sock.writer(512);
  nfBegin(w, nftMsg(msg), NLM_F_REQUEST | NLM_F_DUMP, family);
  w.attrString(attr, table);
  more?.(w);
  w.end();
  const want = Buffer.from(`${table}\0`);
  sock.dump(w, (type, buf, start, end) => {
    if (type !== nftMsg(reply)) return;
    // Not every dump filters by table (chains come from every table of the family).
    const from = nfAttrsStart(start);
    if (ofTable(buf, from, end, attr, want)) visit(buf, from, end);
  });
}

/** Whether the message's `attr` names the table (`want`, NUL included). The kernel puts it first. */
function ofTable(buf: Buffer, from: number, to: number, attr: number, want: Buffer): boolean {
  let o = from;
  while (o + 4 <= to) {
    const len = buf.readUInt16LE(o);
    if (len < 4 || o + len > to) return false;
    if ((buf.readUInt16LE(o + 2) & 0x3fff) === attr)
      return len - 4 === want.length && buf.compare(want, 0, want.length, o + 4, o + len) === 0;
    o += (len + 3) & ~3;
  }
  return false;
}

function readSets(sock: NetlinkSocket, family: number, table: string): SetHead[] {
  const out: SetHead[] = [];
  dumpOf(sock, family, NFT_MSG_GETSET, NFTA_SET_TABLE, table, NFT_MSG_NEWSET, (buf, from, to) => {
    const a = attrs(buf, from, to);
    const keyId = attrU32(buf, a.get(NFTA_SET_KEY_TYPE)) ?? 0;
    const keyLen = attrU32(buf, a.get(NFTA_SET_KEY_LEN)) ?? 0;
    out.push({
      name: attrText(buf, a.get(NFTA_SET_NAME)) ?? '',
      flags: attrU32(buf, a.get(NFTA_SET_FLAGS)) ?? 0,
      type: keyTypeName(keyId, keyLen),
      keyId,
      keyLen,
      dataType: attrU32(buf, a.get(NFTA_SET_DATA_TYPE)),
      data: keyTypeName(attrU32(buf, a.get(NFTA_SET_DATA_TYPE)) ?? 0, attrU32(buf, a.get(NFTA_SET_DATA_LEN)) ?? 0),
      timeoutMs: attrU64(buf, a.get(NFTA_SET_TIMEOUT)),
    });
  });
  return out;
}

function verdictText(buf: Buffer, from: number, to: number): string {
  const a = attrs(buf, from, to);
  const code = attrI32(buf, a.get(NFTA_VERDICT_CODE));
  const chain = attrText(buf, a.get(NFTA_VERDICT_CHAIN));
  switch (code) {
    case NF_ACCEPT:
      return 'accept';
    case NF_DROP:
      return 'drop';
    case NFT_RETURN:
      return 'return';
    case NFT_CONTINUE:
      return 'continue';
    case NFT_JUMP:
      return `jump ${chain}`;
    case NFT_GOTO:
      return `goto ${chain}`;
    default:
      return `verdict ${code}`;
  }
}

/**
 * The elements of a set as dumped: every NFTA_LIST_ELEM of its dump's messages, one after
 * another. While they are `last` byte for byte, nothing is copied, and `last` itself is returned.
 */
function dumpElementBytes(sock: NetlinkSocket, family: number, table: string, set: string, last?: Buffer): Buffer {
  const parts: Buffer[] = [];
  let same = 0; // bytes equal to `last` so far, while parts is empty
  dumpOf(
    sock,
    family,
    NFT_MSG_GETSETELEM,
    NFTA_SET_ELEM_LIST_TABLE,
    table,
    NFT_MSG_NEWSETELEM,
    (buf, from, to) => {
      const list = findAttr(buf, from, to, NFTA_SET_ELEM_LIST_ELEMENTS);
      if (!list) return;
      const n = list[1] - list[0];
      if (last && !parts.length && same + n <= last.length && buf.compare(last, same, same + n, list[0], list[1]) === 0) {
        same += n;
        return;
      }
      if (same) parts.push(last!.subarray(0, same));
      same = 0;
      // Copied: the receive buffer is reused. A nest's payload is a whole number of aligned attributes.
      parts.push(Buffer.from(buf.subarray(list[0], list[1])));
    },
    (w) => w.attrString(NFTA_SET_ELEM_LIST_SET, set),
  );
  if (!parts.length) return last && same === last.length ? last : (last?.subarray(0, same) ?? Buffer.alloc(0));
  return parts.length === 1 ? parts[0] : Buffer.concat(parts);
}

/**
 * Each element in `buf` (dumpElementBytes): its key's bytes, flags and (in a verdict map)
 * verdict, or (in a data map) where its value is. Attributes walked by hand: this runs once per
 * element of the table, and closures per element were most of a large read's garbage.
 */
function forEachElement(
  buf: Buffer,
  visit: (keyAt: number, keyEnd: number, flags: number, verdict: string | undefined, valueAt: number, valueEnd: number) => void,
): void {
  const end = buf.length;
  for (let o = 0; o + 4 <= end; ) {
    const len = buf.readUInt16LE(o);
    if (len < 4 || o + len > end) break;
    if ((buf.readUInt16LE(o + 2) & 0x3fff) === NFTA_LIST_ELEM) {
      let keyAt = -1;
      let keyEnd = -1;
      let flags = 0;
      let verdict: string | undefined;
      let valueAt = -1;
      let valueEnd = -1;
      const elemEnd = o + len;
      for (let e = o + 4; e + 4 <= elemEnd; ) {
        const elen = buf.readUInt16LE(e);
        if (elen < 4 || e + elen > elemEnd) break;
        const et = buf.readUInt16LE(e + 2) & 0x3fff;
        const ea = e + 4;
        const eb = e + elen;
        if (et === NFTA_SET_ELEM_KEY) {
          const v = findAttr(buf, ea, eb, NFTA_DATA_VALUE);
          if (v) [keyAt, keyEnd] = v;
        } else if (et === NFTA_SET_ELEM_FLAGS) flags = eb - ea >= 4 ? buf.readUInt32BE(ea) : 0;
        else if (et === NFTA_SET_ELEM_DATA) {
          const v = findAttr(buf, ea, eb, NFTA_DATA_VALUE);
          if (v) [valueAt, valueEnd] = v;
          else {
            const d = findAttr(buf, ea, eb, NFTA_DATA_VERDICT);
            if (d) verdict = verdictText(buf, d[0], d[1]);
          }
        }
        e += (elen + 3) & ~3;
      }
      if (keyAt >= 0) visit(keyAt, keyEnd, flags, verdict, valueAt, valueEnd);
    }
    o += (len + 3) & ~3;
  }
}

/** A set or map's elements as last read: its head, its elements' bytes, and what they were read as. */
interface Remembered {
  readonly head: string;
  readonly bytes: Buffer;
  readonly value: InstalledSet | InstalledMap | readonly string[];
}

/**
 * The last read's sets and maps by name. A read given it parses again only those whose dump
 * differs byte for byte: a read that finds the table as it was allocates next to nothing for its
 * elements, which are most of a services table.
 */
export type ElementMemo = ReadonlyMap<string, Remembered>;

function headKey(h: SetHead): string {
  return `${h.flags}/${h.keyId}/${h.keyLen}/${h.dataType}/${h.data}/${h.timeoutMs}`;
}

/** The value read from `bytes` for this head, the last read's when they are the same. */
function remembered<T extends Remembered['value']>(
  sock: NetlinkSocket,
  family: number,
  table: string,
  memo: ElementMemo | undefined,
  next: Map<string, Remembered>,
  h: SetHead,
  parse: (bytes: Buffer) => T,
): T {
  const head = headKey(h);
  const last = memo?.get(h.name);
  const known = last && last.head === head ? last : undefined;
  const bytes = dumpElementBytes(sock, family, table, h.name, known?.bytes);
  const value = known && bytes === known.bytes ? (known.value as T) : parse(bytes);
  next.set(h.name, { head, bytes, value });
  return value;
}

function setFlags(flags: number): string[] {
  const out: string[] = [];
  if (flags & NFT_SET_INTERVAL) out.push('interval');
  if (flags & NFT_SET_TIMEOUT) out.push('timeout');
  return out.sort();
}

/** The elements of an interval set: each start paired with the end after it (none: up to the last address). */
function intervals(type: string, points: { value: bigint; end: boolean }[], bits: number): string[] {
  points.sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : a.end === b.end ? 0 : a.end ? -1 : 1));
  const family = bits === 32 ? 4 : 6;
  const spans: string[] = [];
  let open: bigint | undefined;
  for (const p of points) {
    if (!p.end) {
      if (open !== undefined) spans.push(spanText({ family, first: open, last: p.value - 1n }));
      open = p.value;
    } else if (open !== undefined) {
      spans.push(spanText({ family, first: open, last: p.value - 1n }));
      open = undefined;
    }
  }
  if (open !== undefined) spans.push(spanText({ family, first: open, last: (1n << BigInt(bits)) - 1n }));
  // Made from sorted points, the spans are sorted and do not overlap: as canonical as an
  // address set's elements get (canonicalElements would parse and print them again).
  return type === 'ipv4_addr' || type === 'ipv6_addr' ? spans : canonicalElements(type, true, spans);
}

function readSet(
  sock: NetlinkSocket,
  family: number,
  table: string,
  h: SetHead,
  memo: ElementMemo | undefined,
  next: Map<string, Remembered>,
): InstalledSet {
  const flags = setFlags(h.flags);
  const type = h.type ?? `type ${h.keyId}`;
  if (h.timeoutMs !== undefined && h.flags & NFT_SET_TIMEOUT)
    return { name: h.name, type, flags, elements: new Set(), timeout: Math.round(h.timeoutMs / 1000) };
  const keyText = h.type;
  if (keyText === undefined) return { name: h.name, type, flags, elements: new Set() };
  const k = keyType(keyText);
  return remembered(sock, family, table, memo, next, h, (buf) => {
    if (h.flags & NFT_SET_INTERVAL && k.components.length === 1 && (k.len === 4 || k.len === 16)) {
      const points: { value: bigint; end: boolean }[] = [];
      forEachElement(buf, (a, b, f) => {
        if (b - a === k.len) points.push({ value: keyValue(buf, a, k.len), end: (f & NFT_SET_ELEM_INTERVAL_END) !== 0 });
      });
      return { name: h.name, type, flags, elements: new Set(intervals(keyText, points, k.len * 8)) };
    }
    const elements = new Set<string>();
    forEachElement(buf, (a, b, f) => {
      if (b - a === k.len && !(f & NFT_SET_ELEM_INTERVAL_END)) elements.add(decodeKey(k, buf, a));
    });
    return { name: h.name, type, flags, elements };
  });
}

function readMap(
  sock: NetlinkSocket,
  family: number,
  table: string,
  h: SetHead,
  memo: ElementMemo | undefined,
  next: Map<string, Remembered>,
): InstalledMap {
  const type = h.type ?? `type ${h.keyId}`;
  const data = h.dataType === NFT_DATA_VERDICT ? 'verdict' : (h.data ?? `type ${h.dataType}`);
  const flags = setFlags(h.flags & ~NFT_SET_EVAL);
  const keyText = h.type;
  const dataText = h.data;
  if (keyText === undefined || (data !== 'verdict' && dataText === undefined))
    return { name: h.name, type, data, flags, elements: new Map() };
  const k = keyType(keyText);
  const d = dataText === undefined ? undefined : keyType(dataText);
  return remembered(sock, family, table, memo, next, h, (buf) => {
    const elements = new Map<string, string>();
    if (data === 'verdict')
      forEachElement(buf, (a, b, _f, v) => {
        if (b - a === k.len && v !== undefined) elements.set(decodeKey(k, buf, a), v);
      });
    else if (d)
      forEachElement(buf, (a, b, _f, _v, va, vb) => {
        if (b - a === k.len && vb - va === d.len) elements.set(decodeKey(k, buf, a), decodeKey(d, buf, va));
      });
    return { name: h.name, type, data, flags, elements };
  });
}

function readChains(
  sock: NetlinkSocket,
  family: number,
  table: string,
): Map<string, { name: string; base?: InstalledBase; rules: InstalledRule[] }> {
  const chains = new Map<string, { name: string; base?: InstalledBase; rules: InstalledRule[] }>();
  dumpOf(sock, family, NFT_MSG_GETCHAIN, NFTA_CHAIN_TABLE, table, NFT_MSG_NEWCHAIN, (buf, from, to) => {
    const a = attrs(buf, from, to);
    const name = attrText(buf, a.get(NFTA_CHAIN_NAME)) ?? '';
    const hook = a.get(NFTA_CHAIN_HOOK);
    let base: InstalledBase | undefined;
    if (hook) {
      const h = attrs(buf, hook[0], hook[1]);
      const num = attrU32(buf, h.get(NFTA_HOOK_HOOKNUM)) ?? -1;
      base = {
        type: attrText(buf, a.get(NFTA_CHAIN_TYPE)) ?? '',
        hook: HOOK_NAMES[num] ?? `hook ${num}`,
        priority: attrI32(buf, h.get(NFTA_HOOK_PRIORITY)) ?? 0,
        policy: attrU32(buf, a.get(NFTA_CHAIN_POLICY)) === NF_DROP ? 'drop' : 'accept',
      };
    }
    chains.set(name, { name, ...(base ? { base } : {}), rules: [] });
  });
  return chains;
}

// Expression names as the kernel sends them (NUL included).
const LOOKUP = Buffer.from('lookup\0');
const DYNSET = Buffer.from('dynset\0');
const IMMEDIATE = Buffer.from('immediate\0');
const COUNTER = Buffer.from('counter\0');

interface RuleRow {
  readonly chain: string;
  readonly rule: InstalledRule;
}

/** The comment in a rule's userdata (libnftnl's TLVs: type, length, value). */
function ruleComment(buf: Buffer, from: number, to: number): string {
  let o = from;
  while (o + 2 <= to) {
    const type = buf[o];
    const len = buf[o + 1];
    if (type === NFTNL_UDATA_RULE_COMMENT) {
      let end = Math.min(o + 2 + len, to);
      while (end > o + 2 && buf[end - 1] === 0) end--;
      return buf.toString('utf8', o + 2, end);
    }
    o += 2 + len;
  }
  return '';
}

/**
 * Tables of at most this many rules are read by one dump of the whole table, larger ones by a
 * dump per chain. The kernel fills a dump's reply 32 KiB at a time (whatever the socket's
 * receive buffer) and resumes a whole-table rule dump by walking the table's rules from the
 * first one up to where the last reply ended: its cost grows with the square of the rules
 * (measured on 6.18: 22,000 rules of ~530 bytes 60–300 ms, 66,000 rules 0.7–2.6 s). A chain's
 * dump finds the chain by name and walks only its rules, but is a round trip of its own
 * (11,010 chains 220–400 ms, 33,010 chains 0.6–0.9 s).
 */
export const WHOLE_TABLE_RULES = 32_768;

/**
 * Every rule of the table in order, by one dump (`chainNames` undefined) or one per chain;
 * `anonymous` gives the chains an anonymous verdict map's elements jump to.
 */
function readRules(
  sock: NetlinkSocket,
  family: number,
  table: string,
  chainNames: Iterable<string> | undefined,
  anonymous: (set: string) => readonly string[] | undefined,
): RuleRow[] {
  const rows: RuleRow[] = [];
  if (chainNames === undefined) readChainRules(sock, family, table, undefined, anonymous, rows);
  else for (const name of chainNames) readChainRules(sock, family, table, name, anonymous, rows);
  return rows;
}

function readChainRules(
  sock: NetlinkSocket,
  family: number,
  table: string,
  chainName: string | undefined,
  anonymous: (set: string) => readonly string[] | undefined,
  rows: RuleRow[],
): void {
  const more = chainName === undefined ? undefined : (w: ReturnType<NetlinkSocket['writer']>) => w.attrString(NFTA_RULE_CHAIN, chainName);
  const names = new ChainNames();
  dumpOf(
    sock,
    family,
    NFT_MSG_GETRULE,
    NFTA_RULE_TABLE,
    table,
    NFT_MSG_NEWRULE,
    (buf, from, to) => rows.push(parseRule(buf, from, to, anonymous, names)),
    more,
  );
}

/** A chain's name as the string made for the rule before it when the bytes are the same (a dump gives a chain's rules together). */
class ChainNames {
  private bytes = Buffer.alloc(0);
  private text = '';

  of(buf: Buffer, from: number, to: number): string {
    let end = to;
    while (end > from && buf[end - 1] === 0) end--;
    if (end - from !== this.bytes.length || buf.compare(this.bytes, 0, this.bytes.length, from, end) !== 0) {
      this.bytes = Buffer.from(buf.subarray(from, end));
      this.text = this.bytes.toString('utf8');
    }
    return this.text;
  }
}

/** Whether the attribute value buf[from, to) is `name` (NUL included). */
function named(buf: Buffer, from: number, to: number, name: Buffer): boolean {
  return to - from === name.length && buf.compare(name, 0, name.length, from, to) === 0;
}

/**
 * One NEWRULE message's attributes: its chain, comment, the named sets and the chains it uses,
 * its first counter. Walked by hand, as the elements are: it runs once per rule of the table.
 */
function parseRule(
  buf: Buffer,
  from: number,
  to: number,
  anonymous: (set: string) => readonly string[] | undefined,
  names: ChainNames,
): RuleRow {
  let chain = '';
  let comment = '';
  const sets: string[] = [];
  let chains: string[] = [];
  let counter: { packets: number; bytes: number } | undefined;
  for (let o = from; o + 4 <= to; ) {
    const len = buf.readUInt16LE(o);
    if (len < 4 || o + len > to) break;
    const t = buf.readUInt16LE(o + 2) & 0x3fff;
    const a = o + 4;
    const b = o + len;
    o += (len + 3) & ~3;
    if (t === NFTA_RULE_CHAIN) chain = names.of(buf, a, b);
    else if (t === NFTA_RULE_USERDATA) comment = ruleComment(buf, a, b);
    else if (t !== NFTA_RULE_EXPRESSIONS) continue;
    for (let e = a; e + 4 <= b; ) {
      const elen = buf.readUInt16LE(e);
      if (elen < 4 || e + elen > b) break;
      const la = e + 4;
      const lb = e + elen;
      e += (elen + 3) & ~3;
      if ((buf.readUInt16LE(la - 2) & 0x3fff) !== NFTA_LIST_ELEM) continue;
      const nameAt = findAttr(buf, la, lb, NFTA_EXPR_NAME);
      const data = nameAt && findAttr(buf, la, lb, NFTA_EXPR_DATA);
      if (!nameAt || !data) continue;
      // Only four expressions matter here: their names are compared without making strings.
      const lookup = named(buf, nameAt[0], nameAt[1], LOOKUP);
      if (lookup || named(buf, nameAt[0], nameAt[1], DYNSET)) {
        const set = attrText(buf, findAttr(buf, data[0], data[1], lookup ? NFTA_LOOKUP_SET : NFTA_DYNSET_SET_NAME));
        if (set === undefined) continue;
        const jumps = anonymous(set);
        if (jumps) chains.push(...jumps);
        else if (!sets.includes(set)) sets.push(set);
      } else if (named(buf, nameAt[0], nameAt[1], IMMEDIATE)) {
        const v = findAttr(buf, data[0], data[1], NFTA_IMMEDIATE_DATA);
        const vv = v && findAttr(buf, v[0], v[1], NFTA_DATA_VERDICT);
        const target = vv && attrText(buf, findAttr(buf, vv[0], vv[1], NFTA_VERDICT_CHAIN));
        if (target !== undefined) chains.push(target);
      } else if (!counter && named(buf, nameAt[0], nameAt[1], COUNTER)) {
        counter = {
          packets: attrU64(buf, findAttr(buf, data[0], data[1], NFTA_COUNTER_PACKETS)) ?? 0,
          bytes: attrU64(buf, findAttr(buf, data[0], data[1], NFTA_COUNTER_BYTES)) ?? 0,
        };
      }
    }
  }
  if (chains.length > 1) chains = [...new Set(chains)];
  return { chain, rule: { comment, sets, chains, ...(counter ? { counter } : {}) } };
}

/**
 * The chains an anonymous set's elements jump to: only an inline verdict map's matter to the
 * plan (they are in use). Its key may be of any type (numgen's integers): only the verdicts are read.
 */
function jumpsOf(
  sock: NetlinkSocket,
  family: number,
  table: string,
  h: SetHead,
  memo: ElementMemo | undefined,
  next: Map<string, Remembered>,
): readonly string[] {
  if (!(h.flags & NFT_SET_MAP) || h.dataType !== NFT_DATA_VERDICT) return [];
  return remembered(sock, family, table, memo, next, h, (buf) => {
    const found = new Set<string>();
    forEachElement(buf, (_a, _b, _f, v) => {
      const m = v === undefined ? null : /^(?:jump|goto) (.+)$/.exec(v);
      if (m) found.add(m[1]);
    });
    return [...found];
  });
}

/** The kinds of the table's named sets and maps, without their elements. */
export function readSetKinds(sock: NetlinkSocket, family: number, table: string): Map<string, SetKind> {
  const kinds = new Map<string, SetKind>();
  if (!exists(sock, family, table)) return kinds;
  for (const h of readSets(sock, family, table))
    if (!(h.flags & NFT_SET_ANONYMOUS) && h.type !== undefined)
      kinds.set(h.name, {
        type: h.type,
        interval: (h.flags & NFT_SET_INTERVAL) !== 0 && !(h.flags & NFT_SET_MAP),
        map: (h.flags & NFT_SET_MAP) !== 0,
        ...(h.flags & NFT_SET_MAP && h.dataType !== NFT_DATA_VERDICT && h.data !== undefined ? { data: h.data } : {}),
      });
  return kinds;
}

/** How to read: the last read's elements (ElementMemo), and whether the rules come in one dump. */
export interface ReadOptions {
  readonly memo?: ElementMemo;
  /** One rule dump for the whole table (see WHOLE_TABLE_RULES); default a dump per chain. */
  readonly wholeTableRules?: boolean;
}

type ReadResult = { table: InstalledTable | undefined; kinds: Map<string, SetKind>; memo: ElementMemo };

/** Reads the table once; the caller checks the generation around it. */
function readOnce(sock: NetlinkSocket, family: number, table: string, opts: ReadOptions): ReadResult {
  const kinds = new Map<string, SetKind>();
  const memo = new Map<string, Remembered>();
  if (!exists(sock, family, table)) return { table: undefined, kinds, memo };
  const sets = new Map<string, InstalledSet>();
  const maps = new Map<string, InstalledMap>();
  const anonymousJumps = new Map<string, readonly string[]>();
  for (const h of readSets(sock, family, table)) {
    if (h.flags & NFT_SET_ANONYMOUS) {
      // Only an inline verdict map matters to the plan: the chains its elements jump to are in use.
      // Its key may be of any type (numgen's integers): only the verdicts are read.
      anonymousJumps.set(h.name, jumpsOf(sock, family, table, h, opts.memo, memo));
      continue;
    }
    if (h.flags & NFT_SET_MAP) {
      const m = readMap(sock, family, table, h, opts.memo, memo);
      maps.set(h.name, m);
      if (h.type !== undefined)
        kinds.set(h.name, { type: h.type, interval: false, map: true, ...(h.data !== undefined ? { data: h.data } : {}) });
    } else {
      sets.set(h.name, readSet(sock, family, table, h, opts.memo, memo));
      if (h.type !== undefined) kinds.set(h.name, { type: h.type, interval: (h.flags & NFT_SET_INTERVAL) !== 0, map: false });
    }
  }
  const chains = readChains(sock, family, table);
  const names = opts.wholeTableRules ? undefined : chains.keys();
  for (const r of readRules(sock, family, table, names, (s) => anonymousJumps.get(s))) chains.get(r.chain)?.rules.push(r.rule);
  return { table: { sets, maps, chains: chains as Map<string, InstalledChain> }, kinds, memo };
}

const READ_ATTEMPTS = 5;

/** The table as the kernel holds it, read while no commit came between the first dump and the last. */
export function readTableNetlink(sock: NetlinkSocket, family: number, table: string, opts: ReadOptions = {}): NetlinkRead {
  for (let attempt = 1; ; attempt++) {
    const before = generation(sock);
    const read = readOnce(sock, family, table, opts);
    const after = generation(sock);
    if (before === after) return { ...read, gen: after };
    if (attempt >= READ_ATTEMPTS) throw new Error(`nf_tables: the ruleset changed during each of ${READ_ATTEMPTS} reads of table ${table}`);
  }
}

/** Every rule's counter (rules without one are left out); empty when the table does not exist. */
export function readCountersNetlink(sock: NetlinkSocket, family: number, table: string): RuleCounterRow[] {
  if (!exists(sock, family, table)) return [];
  const out: RuleCounterRow[] = [];
  for (const r of readRules(sock, family, table, readChains(sock, family, table).keys(), (s) => (s.startsWith('__') ? [] : undefined)))
    if (r.rule.counter) out.push({ chain: r.chain, comment: r.rule.comment, ...r.rule.counter });
  return out;
}

/** A part of the table to read: named sets and maps with their elements, chains' rules, and perhaps every chain's head. */
export interface TableSlice {
  /** Sets and maps (one namespace). */
  readonly sets: readonly string[];
  readonly chains: readonly string[];
  /** Whether to read every chain's name and base too (the names of sets and maps are always read). */
  readonly heads: boolean;
}

/** What a slice's read found: what it names that the kernel holds, and the table's names. */
export interface SliceRead {
  readonly sets: ReadonlyMap<string, InstalledSet>;
  readonly maps: ReadonlyMap<string, InstalledMap>;
  /** Each chain of the slice's rules (none: the chain has none, or is not there). */
  readonly rules: ReadonlyMap<string, readonly InstalledRule[]>;
  /** Every named set's and map's name, true for a map. */
  readonly setNames: ReadonlyMap<string, boolean>;
  /** With `heads`: every chain, as a read gives it but without its rules. */
  readonly chains?: ReadonlyMap<string, InstalledChain>;
  /** The elements read, for the next read's memo. */
  readonly memo: ReadonlyMap<string, Remembered>;
}

/**
 * Reads one slice of the table; the caller checks the generation around it. The rules of the
 * slice's chains are read a dump per chain; an anonymous verdict map one of them uses is read
 * when first met, and that chain read again.
 */
export function readSliceNetlink(
  sock: NetlinkSocket,
  family: number,
  table: string,
  slice: TableSlice,
  memo: ElementMemo | undefined,
): SliceRead {
  const next = new Map<string, Remembered>();
  const heads = new Map<string, SetHead>();
  const setNames = new Map<string, boolean>();
  for (const h of readSets(sock, family, table)) {
    heads.set(h.name, h);
    if (!(h.flags & NFT_SET_ANONYMOUS)) setNames.set(h.name, (h.flags & NFT_SET_MAP) !== 0);
  }
  const sets = new Map<string, InstalledSet>();
  const maps = new Map<string, InstalledMap>();
  for (const name of slice.sets) {
    const h = heads.get(name);
    if (!h || h.flags & NFT_SET_ANONYMOUS) continue;
    if (h.flags & NFT_SET_MAP) maps.set(name, readMap(sock, family, table, h, memo, next));
    else sets.set(name, readSet(sock, family, table, h, memo, next));
  }
  const jumps = new Map<string, readonly string[]>();
  const rules = new Map<string, readonly InstalledRule[]>();
  for (const chain of slice.chains) {
    for (;;) {
      const missing = new Set<string>();
      const rows: RuleRow[] = [];
      readChainRules(
        sock,
        family,
        table,
        chain,
        (set) => {
          const h = heads.get(set);
          if (!h || !(h.flags & NFT_SET_ANONYMOUS)) return undefined;
          const known = jumps.get(set);
          if (!known) missing.add(set);
          return known ?? [];
        },
        rows,
      );
      if (!missing.size) {
        rules.set(
          chain,
          rows.map((r) => r.rule),
        );
        break;
      }
      for (const set of missing) jumps.set(set, jumpsOf(sock, family, table, heads.get(set)!, memo, next));
    }
  }
  const chains = slice.heads ? (readChains(sock, family, table) as Map<string, InstalledChain>) : undefined;
  return { sets, maps, rules, setNames, ...(chains ? { chains } : {}), memo: next };
}
