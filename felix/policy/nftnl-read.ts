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
import { forEachAttr } from '../netlink/writer.js';
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

/** One element of a dump: its key's bytes, flags and (in a verdict map) verdict, or (in a data map) where its value is. */
function forEachElement(
  buf: Buffer,
  from: number,
  to: number,
  visit: (keyAt: number, keyEnd: number, flags: number, verdict: string | undefined, valueAt: number, valueEnd: number) => void,
): void {
  const list = attrs(buf, from, to).get(NFTA_SET_ELEM_LIST_ELEMENTS);
  if (!list) return;
  forEachAttr(buf, list[0], list[1], (t, a, b) => {
    if (t !== NFTA_LIST_ELEM) return;
    let keyAt = -1;
    let keyEnd = -1;
    let flags = 0;
    let verdict: string | undefined;
    let valueAt = -1;
    let valueEnd = -1;
    forEachAttr(buf, a, b, (et, ea, eb) => {
      if (et === NFTA_SET_ELEM_KEY)
        forEachAttr(buf, ea, eb, (kt, ka, kb) => {
          if (kt === NFTA_DATA_VALUE) {
            keyAt = ka;
            keyEnd = kb;
          }
        });
      else if (et === NFTA_SET_ELEM_FLAGS) flags = eb - ea >= 4 ? buf.readUInt32BE(ea) : 0;
      else if (et === NFTA_SET_ELEM_DATA)
        forEachAttr(buf, ea, eb, (dt, da, db) => {
          if (dt === NFTA_DATA_VERDICT) verdict = verdictText(buf, da, db);
          else if (dt === NFTA_DATA_VALUE) {
            valueAt = da;
            valueEnd = db;
          }
        });
    });
    if (keyAt >= 0) visit(keyAt, keyEnd, flags, verdict, valueAt, valueEnd);
  });
}

function dumpElements(
  sock: NetlinkSocket,
  family: number,
  table: string,
  set: string,
  visit: (
    buf: Buffer,
    keyAt: number,
    keyEnd: number,
    flags: number,
    verdict: string | undefined,
    valueAt: number,
    valueEnd: number,
  ) => void,
): void {
  dumpOf(
    sock,
    family,
    NFT_MSG_GETSETELEM,
    NFTA_SET_ELEM_LIST_TABLE,
    table,
    NFT_MSG_NEWSETELEM,
    (buf, from, to) => forEachElement(buf, from, to, (a, b, f, v, va, vb) => visit(buf, a, b, f, v, va, vb)),
    (w) => w.attrString(NFTA_SET_ELEM_LIST_SET, set),
  );
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
  return canonicalElements(type, true, spans);
}

function readSet(sock: NetlinkSocket, family: number, table: string, h: SetHead): InstalledSet {
  const flags = setFlags(h.flags);
  const type = h.type ?? `type ${h.keyId}`;
  if (h.timeoutMs !== undefined && h.flags & NFT_SET_TIMEOUT)
    return { name: h.name, type, flags, elements: new Set(), timeout: Math.round(h.timeoutMs / 1000) };
  if (h.type === undefined) return { name: h.name, type, flags, elements: new Set() };
  const k = keyType(h.type);
  if (h.flags & NFT_SET_INTERVAL && k.components.length === 1 && (k.len === 4 || k.len === 16)) {
    const points: { value: bigint; end: boolean }[] = [];
    dumpElements(sock, family, table, h.name, (buf, a, b, f) => {
      if (b - a === k.len) points.push({ value: keyValue(buf, a, k.len), end: (f & NFT_SET_ELEM_INTERVAL_END) !== 0 });
    });
    return { name: h.name, type, flags, elements: new Set(intervals(h.type, points, k.len * 8)) };
  }
  const elements = new Set<string>();
  dumpElements(sock, family, table, h.name, (buf, a, b, f) => {
    if (b - a === k.len && !(f & NFT_SET_ELEM_INTERVAL_END)) elements.add(decodeKey(k, buf, a));
  });
  return { name: h.name, type, flags, elements };
}

function readMap(sock: NetlinkSocket, family: number, table: string, h: SetHead): InstalledMap {
  const type = h.type ?? `type ${h.keyId}`;
  const data = h.dataType === NFT_DATA_VERDICT ? 'verdict' : (h.data ?? `type ${h.dataType}`);
  const elements = new Map<string, string>();
  if (h.type !== undefined && data === 'verdict') {
    const k = keyType(h.type);
    dumpElements(sock, family, table, h.name, (buf, a, b, _f, v) => {
      if (b - a === k.len && v !== undefined) elements.set(decodeKey(k, buf, a), v);
    });
  } else if (h.type !== undefined && h.data !== undefined) {
    const k = keyType(h.type);
    const d = keyType(h.data);
    dumpElements(sock, family, table, h.name, (buf, a, b, _f, _v, va, vb) => {
      if (b - a === k.len && vb - va === d.len) elements.set(decodeKey(k, buf, a), decodeKey(d, buf, va));
    });
  }
  return { name: h.name, type, data, flags: setFlags(h.flags & ~NFT_SET_EVAL), elements };
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

/** Every rule of the table in order; `anonymousChains` gives the chains an anonymous verdict map's elements jump to. */
function readRules(
  sock: NetlinkSocket,
  family: number,
  table: string,
  chainNames: Iterable<string>,
  anonymous: (set: string) => readonly string[] | undefined,
): RuleRow[] {
  const rows: RuleRow[] = [];
  // One dump per chain: a dump of the whole table restarts from its first rule for every reply
  // buffer it fills (quadratic in the rules: seconds of kernel time at 100,000); a chain's dump
  // finds the chain by hash and walks only its rules.
  for (const name of chainNames) readChainRules(sock, family, table, name, anonymous, rows);
  return rows;
}

function readChainRules(
  sock: NetlinkSocket,
  family: number,
  table: string,
  chainName: string,
  anonymous: (set: string) => readonly string[] | undefined,
  rows: RuleRow[],
): void {
  const more = (w: ReturnType<NetlinkSocket['writer']>) => w.attrString(NFTA_RULE_CHAIN, chainName);
  dumpOf(
    sock,
    family,
    NFT_MSG_GETRULE,
    NFTA_RULE_TABLE,
    table,
    NFT_MSG_NEWRULE,
    (buf, from, to) => {
      let chain = '';
      let comment = '';
      const sets: string[] = [];
      const chains: string[] = [];
      let counter: { packets: number; bytes: number } | undefined;
      forEachAttr(buf, from, to, (t, a, b) => {
        if (t === NFTA_RULE_CHAIN) chain = attrText(buf, [a, b]) ?? '';
        else if (t === NFTA_RULE_USERDATA) comment = ruleComment(buf, a, b);
        else if (t === NFTA_RULE_EXPRESSIONS)
          forEachAttr(buf, a, b, (lt, la, lb) => {
            if (lt !== NFTA_LIST_ELEM) return;
            const nameAt = findAttr(buf, la, lb, NFTA_EXPR_NAME);
            const data = findAttr(buf, la, lb, NFTA_EXPR_DATA);
            if (!nameAt || !data) return;
            // Only four expressions matter here: compare their names without making strings.
            const is = (name: Buffer) =>
              nameAt[1] - nameAt[0] === name.length && buf.compare(name, 0, name.length, nameAt[0], nameAt[1]) === 0;
            if (is(LOOKUP) || is(DYNSET)) {
              const set = attrText(buf, findAttr(buf, data[0], data[1], is(LOOKUP) ? NFTA_LOOKUP_SET : NFTA_DYNSET_SET_NAME));
              if (set === undefined) return;
              const jumps = anonymous(set);
              if (jumps) chains.push(...jumps);
              else if (!sets.includes(set)) sets.push(set);
            } else if (is(IMMEDIATE)) {
              const v = findAttr(buf, data[0], data[1], NFTA_IMMEDIATE_DATA);
              const vv = v && findAttr(buf, v[0], v[1], NFTA_DATA_VERDICT);
              const target = vv && attrText(buf, findAttr(buf, vv[0], vv[1], NFTA_VERDICT_CHAIN));
              if (target !== undefined) chains.push(target);
            } else if (is(COUNTER) && !counter) {
              counter = {
                packets: attrU64(buf, findAttr(buf, data[0], data[1], NFTA_COUNTER_PACKETS)) ?? 0,
                bytes: attrU64(buf, findAttr(buf, data[0], data[1], NFTA_COUNTER_BYTES)) ?? 0,
              };
            }
          });
      });
      rows.push({
        chain,
        rule: { comment, sets, chains: chains.length > 1 ? [...new Set(chains)] : chains, ...(counter ? { counter } : {}) },
      });
    },
    more,
  );
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

/** Reads the table once; the caller checks the generation around it. */
function readOnce(sock: NetlinkSocket, family: number, table: string): { table: InstalledTable | undefined; kinds: Map<string, SetKind> } {
  const kinds = new Map<string, SetKind>();
  if (!exists(sock, family, table)) return { table: undefined, kinds };
  const sets = new Map<string, InstalledSet>();
  const maps = new Map<string, InstalledMap>();
  const anonymousJumps = new Map<string, string[]>();
  for (const h of readSets(sock, family, table)) {
    if (h.flags & NFT_SET_ANONYMOUS) {
      // Only an inline verdict map matters to the plan: the chains its elements jump to are in use.
      // Its key may be of any type (numgen's integers): only the verdicts are read.
      if (h.flags & NFT_SET_MAP && h.dataType === NFT_DATA_VERDICT) {
        const jumps = new Set<string>();
        dumpElements(sock, family, table, h.name, (_buf, _a, _b, _f, v) => {
          const m = v === undefined ? null : /^(?:jump|goto) (.+)$/.exec(v);
          if (m) jumps.add(m[1]);
        });
        anonymousJumps.set(h.name, [...jumps]);
      } else anonymousJumps.set(h.name, []);
      continue;
    }
    if (h.flags & NFT_SET_MAP) {
      const m = readMap(sock, family, table, h);
      maps.set(h.name, m);
      if (h.type !== undefined)
        kinds.set(h.name, { type: h.type, interval: false, map: true, ...(h.data !== undefined ? { data: h.data } : {}) });
    } else {
      sets.set(h.name, readSet(sock, family, table, h));
      if (h.type !== undefined) kinds.set(h.name, { type: h.type, interval: (h.flags & NFT_SET_INTERVAL) !== 0, map: false });
    }
  }
  const chains = readChains(sock, family, table);
  for (const r of readRules(sock, family, table, chains.keys(), (s) => anonymousJumps.get(s))) chains.get(r.chain)?.rules.push(r.rule);
  return { table: { sets, maps, chains: chains as Map<string, InstalledChain> }, kinds };
}

const READ_ATTEMPTS = 5;

/** The table as the kernel holds it, read while no commit came between the first dump and the last. */
export function readTableNetlink(sock: NetlinkSocket, family: number, table: string): NetlinkRead {
  for (let attempt = 1; ; attempt++) {
    const before = generation(sock);
    const read = readOnce(sock, family, table);
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
