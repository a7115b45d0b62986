// The anonymous sets and maps a rule carries inline (`tcp dport { 80, 1000-2000 }`,
// `numgen random mod 3 vmap { 0 : goto a, … }`): each is written in the rule's batch just
// before it, as nft writes it (flags anonymous and constant, the name `__set%d` the kernel
// numbers, its elements, and the userdata nft reads back to print it), and the rule's
// expression finds it by the id it has in the batch. The kernel frees it with its rule.

import { NLM_F_CREATE, NLM_F_REQUEST } from '../netlink/constants.js';
import {
  NFT_DATA_VERDICT,
  NFT_MSG_NEWSET,
  NFT_MSG_NEWSETELEM,
  NFT_SET_ANONYMOUS,
  NFT_SET_CONSTANT,
  NFT_SET_ELEM_INTERVAL_END,
  NFT_SET_INTERVAL,
  NFT_SET_MAP,
  NFTA_DATA_VALUE,
  NFTA_DATA_VERDICT,
  NFTA_LIST_ELEM,
  NFTA_SET_DATA_LEN,
  NFTA_SET_DATA_TYPE,
  NFTA_SET_DESC,
  NFTA_SET_DESC_SIZE,
  NFTA_SET_ELEM_DATA,
  NFTA_SET_ELEM_FLAGS,
  NFTA_SET_ELEM_KEY,
  NFTA_SET_ELEM_USERDATA,
  NFTA_SET_ELEM_LIST_ELEMENTS,
  NFTA_SET_ELEM_LIST_SET,
  NFTA_SET_ELEM_LIST_SET_ID,
  NFTA_SET_ELEM_LIST_TABLE,
  NFTA_SET_FLAGS,
  NFTA_SET_ID,
  NFTA_SET_KEY_LEN,
  NFTA_SET_KEY_TYPE,
  NFTA_SET_NAME,
  NFTA_SET_TABLE,
  NFTA_SET_USERDATA,
  NFTA_VERDICT_CHAIN,
  NFTA_VERDICT_CODE,
  NFTNL_SET_ELEM_F_INTERVAL_OPEN,
  NFTNL_UDATA_SET_ELEM_FLAGS,
  nftMsg,
} from '../netlink/nf-constants.js';
import { attrI32BE, attrU32BE, nfBegin } from '../netlink/nf-message.js';
import type { MessageWriter } from '../netlink/writer.js';
import type { KeyType } from './nftnl-types.js';
import { tlvU32 } from './nftnl-userdata.js';

/** One element: its key, whether it closes an interval, and a map's data (bytes or a verdict). */
export interface AnonymousElement {
  readonly key: Buffer;
  readonly end?: boolean;
  /** A start with no end after it: the interval runs to the last value. */
  readonly open?: boolean;
  readonly data?: Buffer;
  readonly verdict?: { readonly code: number; readonly chain?: string };
}

export interface AnonymousSet {
  readonly key: KeyType;
  readonly interval: boolean;
  /** A map's data: a verdict, or values of `type` (`ipv4_addr . inet_service`). */
  readonly data?: 'verdict' | KeyType;
  readonly elements: readonly AnonymousElement[];
  /** libnftnl's userdata TLVs, as nft writes them for this set. */
  readonly userdata: Buffer;
}

/** The userdata of an open interval's start, as libnftnl writes it. */
export const OPEN_INTERVAL = tlvU32(NFTNL_UDATA_SET_ELEM_FLAGS, NFTNL_SET_ELEM_F_INTERVAL_OPEN);

/** NEWSET and NEWSETELEM for `set`, known in the batch by `id`. */
export function writeAnonymousSet(w: MessageWriter, family: number, table: string, set: AnonymousSet, id: number): void {
  const name = set.data ? '__map%d' : '__set%d';
  nfBegin(w, nftMsg(NFT_MSG_NEWSET), NLM_F_REQUEST | NLM_F_CREATE, family);
  w.attrString(NFTA_SET_TABLE, table);
  w.attrString(NFTA_SET_NAME, name);
  attrU32BE(w, NFTA_SET_FLAGS, NFT_SET_ANONYMOUS | NFT_SET_CONSTANT | (set.interval ? NFT_SET_INTERVAL : 0) | (set.data ? NFT_SET_MAP : 0));
  attrU32BE(w, NFTA_SET_KEY_TYPE, set.key.id);
  attrU32BE(w, NFTA_SET_KEY_LEN, set.key.len);
  if (set.data === 'verdict') {
    attrU32BE(w, NFTA_SET_DATA_TYPE, NFT_DATA_VERDICT);
    attrU32BE(w, NFTA_SET_DATA_LEN, 0);
  } else if (set.data) {
    attrU32BE(w, NFTA_SET_DATA_TYPE, set.data.id);
    attrU32BE(w, NFTA_SET_DATA_LEN, set.data.len);
  }
  attrU32BE(w, NFTA_SET_ID, id);
  w.nestBegin(NFTA_SET_DESC);
  // nft counts an open interval's end, which it does not send.
  attrU32BE(
    w,
    NFTA_SET_DESC_SIZE,
    set.elements.reduce((n, e) => n + (e.open ? 2 : 1), 0),
  );
  w.nestEnd();
  w.attrBytes(NFTA_SET_USERDATA, set.userdata);
  w.end();

  nfBegin(w, nftMsg(NFT_MSG_NEWSETELEM), NLM_F_REQUEST | NLM_F_CREATE, family);
  w.attrString(NFTA_SET_ELEM_LIST_TABLE, table);
  w.attrString(NFTA_SET_ELEM_LIST_SET, name);
  attrU32BE(w, NFTA_SET_ELEM_LIST_SET_ID, id);
  w.nestBegin(NFTA_SET_ELEM_LIST_ELEMENTS);
  for (const e of set.elements) {
    w.nestBegin(NFTA_LIST_ELEM);
    if (e.end) attrU32BE(w, NFTA_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
    w.nestBegin(NFTA_SET_ELEM_KEY);
    w.attrBytes(NFTA_DATA_VALUE, e.key);
    w.nestEnd();
    if (e.open) w.attrBytes(NFTA_SET_ELEM_USERDATA, OPEN_INTERVAL);
    if (e.verdict) {
      w.nestBegin(NFTA_SET_ELEM_DATA);
      w.nestBegin(NFTA_DATA_VERDICT);
      attrI32BE(w, NFTA_VERDICT_CODE, e.verdict.code);
      if (e.verdict.chain !== undefined) w.attrString(NFTA_VERDICT_CHAIN, e.verdict.chain);
      w.nestEnd();
      w.nestEnd();
    } else if (e.data) {
      w.nestBegin(NFTA_SET_ELEM_DATA);
      w.attrBytes(NFTA_DATA_VALUE, e.data);
      w.nestEnd();
    }
    w.nestEnd();
  }
  w.nestEnd();
  w.end();
}

/**
 * The elements of an interval set of `len`-byte numbers from inclusive [first, last] spans, as
 * nft hands them over: in ascending order, each span a start and (unless it reaches the largest
 * value) the value after it flagged as an end, and an end at zero when no span starts there.
 */
export function intervalElements(spans: readonly (readonly [number, number])[], len: number): AnonymousElement[] {
  const max = 2 ** (8 * len) - 1;
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  const key = (v: number) => {
    const b = Buffer.alloc(len);
    b.writeUIntBE(v, 0, len);
    return b;
  };
  const out: AnonymousElement[] = [];
  if (sorted.length && sorted[0][0] !== 0) out.push({ key: key(0), end: true });
  for (const [first, last] of sorted) {
    if (last < max) out.push({ key: key(first) }, { key: key(last + 1), end: true });
    else out.push({ key: key(first), open: true });
  }
  return out;
}
