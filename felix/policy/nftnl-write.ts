// A transaction's operations as nf_tables netlink messages inside one batch: tables, chains,
// sets, maps and their elements. An interval set's span is two elements, its first address and
// the address after its last flagged NFT_SET_ELEM_INTERVAL_END (none when the span reaches the
// family's last address), which is how nft hands intervals to the kernel. A rule is compiled
// from its nft text (nftnl-rule.ts), after the anonymous sets it carries.

import { NLM_F_CREATE, NLM_F_REQUEST } from '../netlink/constants.js';
import {
  NF_ACCEPT,
  NF_DROP,
  NF_INET_FORWARD,
  NF_INET_LOCAL_IN,
  NF_INET_LOCAL_OUT,
  NF_INET_POST_ROUTING,
  NF_INET_PRE_ROUTING,
  NFT_DATA_VERDICT,
  NFT_MSG_DELCHAIN,
  NFT_MSG_DELRULE,
  NFT_MSG_DELSET,
  NFT_MSG_DELSETELEM,
  NFT_MSG_NEWCHAIN,
  NFT_MSG_NEWSET,
  NFT_MSG_NEWSETELEM,
  NFT_MSG_NEWTABLE,
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
  NFTA_DATA_VALUE,
  NFTA_DATA_VERDICT,
  NFTA_HOOK_HOOKNUM,
  NFTA_HOOK_PRIORITY,
  NFTA_LIST_ELEM,
  NFTA_RULE_CHAIN,
  NFTA_RULE_TABLE,
  NFTA_SET_DATA_LEN,
  NFTA_SET_DATA_TYPE,
  NFTA_SET_ELEM_DATA,
  NFTA_SET_ELEM_FLAGS,
  NFTA_SET_ELEM_KEY,
  NFTA_SET_ELEM_LIST_ELEMENTS,
  NFTA_SET_ELEM_LIST_SET,
  NFTA_SET_ELEM_LIST_TABLE,
  NFTA_SET_ELEM_USERDATA,
  NFTA_SET_FLAGS,
  NFTA_SET_ID,
  NFTA_SET_KEY_LEN,
  NFTA_SET_KEY_TYPE,
  NFTA_SET_NAME,
  NFTA_SET_TABLE,
  NFTA_SET_TIMEOUT,
  NFTA_SET_USERDATA,
  NFTA_TABLE_NAME,
  NFTA_VERDICT_CHAIN,
  NFTA_VERDICT_CODE,
  nftMsg,
} from '../netlink/nf-constants.js';
import { attrI32BE, attrU32BE, attrU64BE, nfBegin } from '../netlink/nf-message.js';
import { MessageWriter } from '../netlink/writer.js';
import type { NftOp } from './dataplane.js';
import { addressSpan } from './element-text.js';
import type { NftHook, NftMapElement } from './nft-model.js';
import { mapTypeof } from './map-typeof.js';
import { OPEN_INTERVAL } from './nftnl-anonymous.js';
import { verdictCode, writeRule } from './nftnl-rule.js';
import { keepExpressions, knownExpressions } from './nftnl-rule-bytes.js';
import { ruleExpressionsOf, templatedExpressions } from './nftnl-rule-template.js';
import { encodeKeyScratch, type KeyType, keyType, NftEncodeError } from './nftnl-types.js';
import { namedSetUserdata } from './nftnl-userdata.js';

/** What an element operation needs to know of its set: the key's type, and whether it holds intervals. */
export interface SetKind {
  readonly type: string;
  readonly interval: boolean;
  readonly map: boolean;
  /** A data map's data type; absent: its data are verdicts. */
  readonly data?: string;
}

const HOOKS: Readonly<Record<NftHook, number>> = {
  prerouting: NF_INET_PRE_ROUTING,
  input: NF_INET_LOCAL_IN,
  forward: NF_INET_FORWARD,
  output: NF_INET_LOCAL_OUT,
  postrouting: NF_INET_POST_ROUTING,
};

// An element list is one nested attribute, whose length is 16 bits: a long list takes several messages.
const ELEMENTS_PER_MESSAGE_BYTES = 48 * 1024;

/**
 * Bytes enough for the batch of `ops`, or nearly: a writer made this big does not copy itself as
 * it grows (a load of the whole table is tens of megabytes), and pages it leaves unwritten cost
 * nothing. An estimate short of the batch only means the writer grows, as it would anyway.
 */
export function batchBytes(ops: readonly NftOp[]): number {
  let n = 1024;
  for (const op of ops) {
    n += 256;
    switch (op.kind) {
      case 'add rule':
        n += 16 * op.expr.length + op.comment.length;
        break;
      case 'add set':
      case 'add element':
      case 'delete element':
        for (const e of op.elements) n += 64 + 2 * e.length;
        break;
      case 'add map':
      case 'add map element':
        for (const e of op.elements) n += 64 + 2 * (e.key.length + e.verdict.length);
        break;
      case 'delete map element':
        for (const k of op.keys) n += 64 + 2 * k.length;
        break;
    }
  }
  return n;
}

/** The batch messages of `ops`; returns the op index of each message, in order. Throws NftEncodeError. */
export function writeOps(
  w: MessageWriter,
  family: number,
  table: string,
  ops: readonly NftOp[],
  kindOf: (set: string) => SetKind | undefined,
): number[] {
  const opOf: number[] = [];
  // Sets this transaction declares: their elements follow in the same batch.
  const declared = new Map<string, SetKind>();
  let setId = 1;
  const written = new Map<string, { readonly start: number; readonly end: number }>();
  // The elements of a set or map this batch creates go after every other message, and the
  // element operations on it that follow go after them, in order. The kernel checks a map's
  // elements when a rule in a new chain starts using it (nf_tables_bind_set walks the whole map
  // once per such chain): elements written first are walked once per chain, so a whole load
  // of 10,000 services' chains walked its endpoint maps over and over; elements written after
  // the rules are checked once, as each is added. The table committed is the same.
  const deferred: { readonly op: number; readonly write: () => void }[] = [];
  const deferring = new Set<string>();
  // Loops, not closures per call: one element change is a transaction of a few operations, and
  // what a batch allocates beside its bytes is most of what it costs the young generation.
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as NftOp;
    const name = elementsOf(op);
    if (name !== undefined && deferring.has(name)) {
      deferred.push({ op: i, write: () => writeOp(op, i) });
      continue;
    }
    // A set deleted after this batch created it: its elements go before the deletion.
    if ((op.kind === 'delete set' || op.kind === 'delete map') && deferring.has(op.kind === 'delete set' ? op.set : op.map)) {
      for (const d of deferred) runOp(w, opOf, d.op, d.write);
      deferred.length = 0;
      deferring.clear();
    }
    runOp(w, opOf, i, writeAt);
  }
  for (const d of deferred) runOp(w, opOf, d.op, d.write);
  return opOf;

  function writeAt(i: number): void {
    writeOp(ops[i] as NftOp, i);
  }

  function writeOp(op: NftOp, i: number): void {
    switch (op.kind) {
      case 'add table':
        nfBegin(w, nftMsg(NFT_MSG_NEWTABLE), NLM_F_REQUEST | NLM_F_CREATE, family);
        w.attrString(NFTA_TABLE_NAME, table);
        w.end();
        break;
      case 'add set':
      case 'add map': {
        const name = op.kind === 'add set' ? op.set : op.map;
        const data = op.kind === 'add map' ? op.data : undefined;
        const k: SetKind = {
          type: op.type,
          interval: op.kind === 'add set' && op.interval,
          map: op.kind === 'add map',
          ...(data !== undefined ? { data } : {}),
        };
        const key = keyType(op.type);
        let flags = (k.interval ? NFT_SET_INTERVAL : 0) | (k.map ? NFT_SET_MAP : 0);
        const timeout = op.kind === 'add set' ? op.timeout : undefined;
        if (timeout !== undefined) flags |= NFT_SET_TIMEOUT | NFT_SET_EVAL;
        nfBegin(w, nftMsg(NFT_MSG_NEWSET), NLM_F_REQUEST | NLM_F_CREATE, family);
        w.attrString(NFTA_SET_TABLE, table);
        w.attrString(NFTA_SET_NAME, name);
        attrU32BE(w, NFTA_SET_FLAGS, flags);
        attrU32BE(w, NFTA_SET_KEY_TYPE, key.id);
        attrU32BE(w, NFTA_SET_KEY_LEN, key.len);
        if (k.map && data !== undefined) {
          const d = keyType(data);
          attrU32BE(w, NFTA_SET_DATA_TYPE, d.id);
          attrU32BE(w, NFTA_SET_DATA_LEN, d.len);
        } else if (k.map) {
          attrU32BE(w, NFTA_SET_DATA_TYPE, NFT_DATA_VERDICT);
          attrU32BE(w, NFTA_SET_DATA_LEN, 0);
        }
        attrU32BE(w, NFTA_SET_ID, setId++);
        if (timeout !== undefined) attrU64BE(w, NFTA_SET_TIMEOUT, timeout * 1000);
        const typed = op.kind === 'add map' ? mapTypeof(op.typeof) : undefined;
        if (op.kind === 'add map' && op.typeof !== undefined && !typed)
          throw new NftEncodeError(`map ${name}: typeof ${JSON.stringify(op.typeof)} has no netlink encoding here`);
        w.attrBytes(NFTA_SET_USERDATA, typed?.udata ?? namedSetUserdata(key, k.map));
        w.end();
        declared.set(name, k);
        if (!op.elements.length) break;
        deferring.add(name);
        deferred.push({
          op: i,
          write:
            op.kind === 'add set'
              ? () => writeElements(w, family, table, name, k, op.elements, true, true)
              : () => writeMapElements(w, family, table, name, k, op.elements),
        });
        break;
      }
      case 'delete set':
      case 'delete map':
        nfBegin(w, nftMsg(NFT_MSG_DELSET), NLM_F_REQUEST, family);
        w.attrString(NFTA_SET_TABLE, table);
        w.attrString(NFTA_SET_NAME, op.kind === 'delete set' ? op.set : op.map);
        w.end();
        break;
      case 'add element':
      case 'delete element':
        writeElements(w, family, table, op.set, kindIn(declared, kindOf, op.set), op.elements, op.kind === 'add element');
        break;
      case 'add map element':
        writeMapElements(w, family, table, op.map, kindIn(declared, kindOf, op.map), op.elements);
        break;
      case 'delete map element':
        writeElements(w, family, table, op.map, { ...kindIn(declared, kindOf, op.map), interval: false }, op.keys, false);
        break;
      case 'add chain':
        nfBegin(w, nftMsg(NFT_MSG_NEWCHAIN), NLM_F_REQUEST | NLM_F_CREATE, family);
        w.attrString(NFTA_CHAIN_TABLE, table);
        w.attrString(NFTA_CHAIN_NAME, op.chain);
        if (op.base) {
          w.nestBegin(NFTA_CHAIN_HOOK);
          attrU32BE(w, NFTA_HOOK_HOOKNUM, HOOKS[op.base.hook]);
          attrI32BE(w, NFTA_HOOK_PRIORITY, op.base.priority);
          w.nestEnd();
          attrU32BE(w, NFTA_CHAIN_POLICY, op.base.policy === 'drop' ? NF_DROP : NF_ACCEPT);
          w.attrString(NFTA_CHAIN_TYPE, op.base.type);
        }
        w.end();
        break;
      case 'flush chain':
        nfBegin(w, nftMsg(NFT_MSG_DELRULE), NLM_F_REQUEST, family);
        w.attrString(NFTA_RULE_TABLE, table);
        w.attrString(NFTA_RULE_CHAIN, op.chain);
        w.end();
        break;
      case 'delete chain':
        nfBegin(w, nftMsg(NFT_MSG_DELCHAIN), NLM_F_REQUEST, family);
        w.attrString(NFTA_CHAIN_TABLE, table);
        w.attrString(NFTA_CHAIN_NAME, op.chain);
        w.end();
        break;
      case 'add rule': {
        const inBatch = written.has(op.expr);
        const encoded = inBatch
          ? undefined
          : (knownExpressions(family, op.expr) ?? templatedExpressions(family, op.expr, (e) => expressionsAlone(family, e)));
        writeRule(w, family, table, op.chain, op.expr, op.comment, () => setId++, written, encoded);
        // Compiled from its text just now (no anonymous sets, no template): kept for the transactions after.
        const at = inBatch || encoded ? undefined : written.get(op.expr);
        if (at) keepExpressions(family, op.expr, w.buf.subarray(at.start, at.end));
        break;
      }
    }
  }
}

/** Writes one operation's messages, each recorded in `opOf` as operation `i`'s. */
function runOp(w: MessageWriter, opOf: number[], i: number, write: (i: number) => void): void {
  const mark = w.count;
  try {
    write(i);
  } catch (e) {
    throw e instanceof NftEncodeError && e.op === undefined ? new NftEncodeError(e.message, i) : e;
  }
  for (let m = mark; m < w.count; m++) opOf.push(i);
}

function kindIn(declared: ReadonlyMap<string, SetKind>, kindOf: (set: string) => SetKind | undefined, name: string): SetKind {
  const k = declared.get(name) ?? kindOf(name);
  if (!k) throw new NftEncodeError(`set ${name} is not known to the netlink writer`);
  return k;
}

/** The set or map whose elements `op` adds or deletes, if it is an element operation. */
function elementsOf(op: NftOp): string | undefined {
  switch (op.kind) {
    case 'add element':
    case 'delete element':
      return op.set;
    case 'add map element':
    case 'delete map element':
      return op.map;
    default:
      return undefined;
  }
}

/** A rule's expressions as writeRule encodes them, on their own (undefined for a rule with anonymous sets). */
function expressionsAlone(family: number, expr: string): Buffer | undefined {
  const w = new MessageWriter(1, 4096);
  writeRule(w, family, 'template', 'template', expr, '', () => 1);
  return ruleExpressionsOf(w);
}

function elementMessage(w: MessageWriter, family: number, table: string, set: string, add: boolean): void {
  nfBegin(w, nftMsg(add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM), NLM_F_REQUEST | (add ? NLM_F_CREATE : 0), family);
  w.attrString(NFTA_SET_ELEM_LIST_TABLE, table);
  w.attrString(NFTA_SET_ELEM_LIST_SET, set);
  w.nestBegin(NFTA_SET_ELEM_LIST_ELEMENTS);
}

function elementKey(w: MessageWriter, key: Buffer, flags: number): void {
  w.nestBegin(NFTA_LIST_ELEM);
  if (flags) attrU32BE(w, NFTA_SET_ELEM_FLAGS, flags);
  w.nestBegin(NFTA_SET_ELEM_KEY);
  w.attrBytes(NFTA_DATA_VALUE, key);
  w.nestEnd();
}

/** Elements of a set (or keys of a map, to delete), in as many messages as their size needs. */
function writeElements(
  w: MessageWriter,
  family: number,
  table: string,
  set: string,
  kind: SetKind,
  elements: readonly string[],
  add: boolean,
  created = false,
): void {
  const key = keyType(kind.type);
  let start = -1;
  // A new interval set's elements start, as nft sends them, with an end at the first address
  // when no interval starts there (it closes the nothing below the first interval).
  if (created && kind.interval && elements.length && !elements.some((e) => intervalKeys(key, e)[0][0].every((b) => b === 0))) {
    start = openElements(w, family, table, set, add, start);
    elementKey(w, Buffer.alloc(key.len), NFT_SET_ELEM_INTERVAL_END);
    w.nestEnd();
  }
  for (const e of elements) {
    start = openElements(w, family, table, set, add, start);
    if (!kind.interval) {
      elementKey(w, encodeKeyScratch(key, e), 0);
      w.nestEnd();
      continue;
    }
    const keys = intervalKeys(key, e);
    for (const [k, end] of keys) {
      elementKey(w, k, end ? NFT_SET_ELEM_INTERVAL_END : 0);
      // An interval to the last address has no end: libnftnl marks its start open.
      if (add && keys.length === 1) w.attrBytes(NFTA_SET_ELEM_USERDATA, OPEN_INTERVAL);
      w.nestEnd();
    }
  }
  if (start >= 0) {
    w.nestEnd();
    w.end();
  }
}

/** The element message being written (its start), or a new one when there is none or it is full. */
function openElements(w: MessageWriter, family: number, table: string, set: string, add: boolean, start: number): number {
  if (start >= 0 && w.len - start < ELEMENTS_PER_MESSAGE_BYTES) return start;
  if (start >= 0) {
    w.nestEnd();
    w.end();
  }
  const at = w.len;
  elementMessage(w, family, table, set, add);
  return at;
}

function writeMapElements(
  w: MessageWriter,
  family: number,
  table: string,
  map: string,
  kind: SetKind,
  elements: readonly NftMapElement[],
): void {
  const key = keyType(kind.type);
  const data = kind.data === undefined ? undefined : keyType(kind.data);
  let start = -1;
  for (const e of elements) {
    if (start < 0 || w.len - start >= ELEMENTS_PER_MESSAGE_BYTES) {
      if (start >= 0) {
        w.nestEnd();
        w.end();
      }
      start = w.len;
      elementMessage(w, family, table, map, true);
    }
    elementKey(w, encodeKeyScratch(key, e.key), 0);
    w.nestBegin(NFTA_SET_ELEM_DATA);
    if (data) w.attrBytes(NFTA_DATA_VALUE, encodeKeyScratch(data, e.verdict));
    else {
      const v = verdictCode(e.verdict);
      w.nestBegin(NFTA_DATA_VERDICT);
      attrI32BE(w, NFTA_VERDICT_CODE, v.code);
      if (v.chain !== undefined) w.attrString(NFTA_VERDICT_CHAIN, v.chain);
      w.nestEnd();
    }
    w.nestEnd();
    w.nestEnd();
  }
  if (start >= 0) {
    w.nestEnd();
    w.end();
  }
}

/** An interval set's element (`a`, `a/len`, `a-b`) as its start key and, unless it reaches the last address, its end key. */
function intervalKeys(key: KeyType, text: string): [Buffer, boolean][] {
  const span = key.components.length === 1 ? addressSpan(text.trim()) : undefined;
  const bits = key.len * 8;
  if (!span || (span.family === 4 ? 32 : 128) !== bits)
    throw new NftEncodeError(`interval element ${JSON.stringify(text)} is not an address span of ${key.components[0]?.name}`);
  const out: [Buffer, boolean][] = [[valueKey(span.first, key.len), false]];
  if (span.last < (1n << BigInt(bits)) - 1n) out.push([valueKey(span.last + 1n, key.len), true]);
  return out;
}

function valueKey(v: bigint, len: number): Buffer {
  const b = Buffer.alloc(len);
  let rest = v;
  for (let i = len - 1; i >= 0; i--) {
    b[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return b;
}
