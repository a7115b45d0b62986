// Rules that differ only in their IPv4 addresses (a service's cluster IP, one in each of ten
// thousand chains) encode to the same expressions but for each address's four bytes. The
// expressions of such a rule shape are encoded once, with stand-in addresses, and each rule of
// the shape is those bytes with its own addresses put in: a whole table's rules are not each
// compiled from their text. A shape is used only once two encodings with different stand-ins
// are found to differ in exactly the addresses' bytes; any other shape is compiled as it is.

import { NFTA_RULE_EXPRESSIONS } from '../netlink/nf-constants.js';
import { forEachAttr, type MessageWriter } from '../netlink/writer.js';

/** A standalone IPv4 address: not a prefix, range, port, IPv6 or part of a longer word. */
const ADDRESS = /(?<![\w.:/-])\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\w.:/-])/g;
const OCTET = /^(?:0|[1-9]\d{0,2})$/;
/** Addresses in one rule this handles (each needs a stand-in of its own). */
const MAX_ADDRESSES = 64;
/** Shapes remembered; past this the memory starts again (a table has a few dozen). */
const MAX_SHAPES = 4096;

interface Template {
  readonly bytes: Buffer;
  /** Where each address's four bytes are in `bytes`, in the order the addresses appear. */
  readonly at: readonly number[];
}

/** Shape → its template, or null for a shape that is compiled as it is. */
const templates = new Map<string, Template | null>();

/**
 * The encoded expressions (the NFTA_RULE_EXPRESSIONS nest's payload) of `expr`, from its shape's
 * template; undefined when it has no IPv4 address, or its shape is not one a template holds.
 * `encode` gives a rule's expressions compiled from its text (undefined if it has anonymous sets).
 */
export function templatedExpressions(family: number, expr: string, encode: (expr: string) => Buffer | undefined): Buffer | undefined {
  if (expr.includes('{')) return undefined;
  const addresses = expr.match(ADDRESS);
  if (!addresses || addresses.length > MAX_ADDRESSES) return undefined;
  const shape = `${family} ${expr.replace(ADDRESS, '\0')}`;
  let t = templates.get(shape);
  if (t === undefined) {
    if (templates.size >= MAX_SHAPES) templates.clear();
    t = makeTemplate(expr, addresses.length, encode);
    templates.set(shape, t);
  }
  if (!t) return undefined;
  const out = Buffer.from(t.bytes);
  for (let i = 0; i < addresses.length; i++) {
    const parts = addresses[i]!.split('.');
    const at = t.at[i]!;
    for (let j = 0; j < 4; j++) {
      const p = parts[j]!;
      const n = Number(p);
      // An address nft would not read as one: compiled from its text, which says why.
      if (!OCTET.test(p) || n > 255) return undefined;
      out[at + j] = n;
    }
  }
  return out;
}

/** Stand-in address i of a set (TEST-NET-2 or TEST-NET-3, which no table of ours names). */
const standIn = (net: readonly number[], i: number): number[] => [...net, i + 1];
const NET_A = [198, 51, 100];
const NET_B = [203, 0, 113];

function makeTemplate(expr: string, count: number, encode: (expr: string) => Buffer | undefined): Template | null {
  const withAddresses = (net: readonly number[]) => {
    let i = 0;
    return encode(expr.replace(ADDRESS, () => standIn(net, i++).join('.')));
  };
  let a: Buffer | undefined;
  let b: Buffer | undefined;
  try {
    a = withAddresses(NET_A);
    b = withAddresses(NET_B);
  } catch {
    return null; // the rule's own compile says what is wrong with it
  }
  if (!a || !b || a.length !== b.length) return null;
  const at: number[] = [];
  const patched = Buffer.from(a);
  for (let i = 0; i < count; i++) {
    const bytes = Buffer.from(standIn(NET_A, i));
    const p = a.indexOf(bytes);
    if (p < 0 || a.indexOf(bytes, p + 1) >= 0) return null;
    at.push(p);
    patched.set(standIn(NET_B, i), p);
  }
  // Nothing but the addresses' bytes may depend on the addresses.
  return patched.equals(b) ? { bytes: a, at } : null;
}

/** The NFTA_RULE_EXPRESSIONS payload of the one NEWRULE message in `w`; undefined if `w` holds more (anonymous sets). */
export function ruleExpressionsOf(w: MessageWriter): Buffer | undefined {
  if (w.count !== 1) return undefined;
  let out: Buffer | undefined;
  // The netlink header (16 bytes) and nfgenmsg (4), then the rule's attributes.
  forEachAttr(w.buf, w.starts[0]! + 20, w.len, (type, from, to) => {
    if (type === NFTA_RULE_EXPRESSIONS) out = Buffer.from(w.buf.subarray(from, to));
  });
  return out;
}
