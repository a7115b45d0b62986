// Import and export policy: a small typed model a user writes as data, or a plain function.
// A policy answers reject, accept, or accept with set-actions. The RIB applies the actions
// and interns the result, remembering the last (input set, actions) so that the prefixes of
// one UPDATE that get the same answer share one result.
import type { AddressFamily, PathAttributes } from '../codec/index.js';
import { parsePrefix } from '../codec/index.js';
import { GRACEFUL_SHUTDOWN, LLGR_STALE, NO_ADVERTISE, NO_EXPORT, NO_EXPORT_SUBCONFED, NO_LLGR } from './attr-set.js';
import type { PeerType } from './types.js';

/** What a policy sees of a route. */
export interface PolicyRoute {
  family: AddressFamily;
  prefix: string;
  nextHop: string;
  attributes: Readonly<PathAttributes>;
  /** The peer the route was learned from (undefined: locally originated). */
  neighbor: { address: string; asn: number; type: PeerType } | undefined;
}

/** Set-actions; every field optional. */
export interface PolicyActions {
  localPref?: number;
  /** A number sets MED; null removes it. */
  med?: number | null;
  /** A next hop address; 'self' is the local address of the session (export only). */
  nextHop?: string;
  communitiesAdd?: Array<number | string>;
  communitiesRemove?: Array<number | string>;
  /** Prepend these AS numbers (e.g. [65001, 65001]). */
  prepend?: number[];
}

/** false: reject; true: accept unchanged; an object: accept with these actions. */
export type PolicyVerdict = boolean | PolicyActions;

/**
 * A policy as code. Return the same actions object for routes that get the same change:
 * the RIB recognises it and reuses the result instead of building a new set.
 */
export type PolicyFunction = (route: PolicyRoute) => PolicyVerdict;

export interface PrefixListEntry {
  prefix: string;
  /** Match prefixes at least this long (default: the entry's length, or ge alone up to the maximum). */
  ge?: number;
  le?: number;
}

export interface PolicyMatch {
  /** Any entry matches. */
  prefixList?: PrefixListEntry[];
  /** Any of these communities ("65000:100", "no-export", or a number) is present. */
  community?: Array<number | string>;
  asPathContains?: number;
  /** Tested against the AS path as text: "65001 65002 {65003,65004}". */
  asPathRegex?: string | RegExp;
  /** The peer the route came from: addresses or CIDR ranges. */
  neighbor?: string[];
  /** Next hop within any of these addresses or CIDR ranges. */
  nextHop?: string[];
}

export interface PolicyTerm {
  /** All given conditions must hold; none given: always. */
  match?: PolicyMatch;
  action: 'accept' | 'reject';
  set?: PolicyActions;
}

export interface PolicyDefinition {
  /** First matching term decides. */
  terms: PolicyTerm[];
  /** When no term matches. Default 'accept'. */
  default?: 'accept' | 'reject';
}

export type Policy = PolicyFunction | PolicyDefinition;

export interface CompiledPolicy {
  evaluate(route: PolicyRoute): PolicyVerdict;
  /** The answer can differ between prefixes sharing attributes, next hop and neighbour. */
  readonly perPrefix: boolean;
}

const WELL_KNOWN: Record<string, number> = {
  'no-export': NO_EXPORT,
  'no-advertise': NO_ADVERTISE,
  'no-export-subconfed': NO_EXPORT_SUBCONFED,
  // FRR's names.
  'graceful-shutdown': GRACEFUL_SHUTDOWN,
  'llgr-stale': LLGR_STALE,
  'no-llgr': NO_LLGR,
};

export function parseCommunity(c: number | string, field = 'community'): number {
  if (typeof c === 'number') {
    if (!Number.isInteger(c) || c < 0 || c > 0xffffffff) throw new TypeError(`${field}: ${c} is not a 32-bit community`);
    return c;
  }
  const wk = WELL_KNOWN[c.toLowerCase()];
  if (wk !== undefined) return wk;
  const m = /^(\d+):(\d+)$/.exec(c);
  if (!m || Number(m[1]) > 0xffff || Number(m[2]) > 0xffff)
    throw new TypeError(`${field}: "${c}" is not a community (expected "asn:value")`);
  return Number(m[1]) * 65536 + Number(m[2]);
}

interface CompiledRange {
  ipv6: boolean;
  bytes: Buffer;
  length: number;
  ge: number;
  le: number;
}

function compileRange(p: string, field: string, ge?: number, le?: number): CompiledRange {
  let parsed: ReturnType<typeof parsePrefix>;
  try {
    parsed = parsePrefix(p.includes('/') ? p : p + (p.includes(':') ? '/128' : '/32'));
  } catch (e) {
    throw new TypeError(`${field}: ${(e as Error).message}`);
  }
  const max = parsed.ipv6 ? 128 : 32;
  const lo = ge ?? parsed.length;
  const hi = le ?? (ge !== undefined ? max : parsed.length);
  if (lo < parsed.length || hi > max || lo > hi) throw new TypeError(`${field}: ge ${lo} / le ${hi} do not fit ${p}`);
  return { ipv6: parsed.ipv6, bytes: parsed.bytes, length: parsed.length, ge: lo, le: hi };
}

function bitsEqual(a: Uint8Array, b: Uint8Array, bits: number): boolean {
  const whole = bits >> 3;
  for (let i = 0; i < whole; i++) if (a[i] !== b[i]) return false;
  const rest = bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (a[whole] & mask) === (b[whole] & mask);
}

function inRange(r: CompiledRange, ipv6: boolean, bytes: Uint8Array, length: number): boolean {
  return r.ipv6 === ipv6 && length >= r.ge && length <= r.le && bitsEqual(r.bytes, bytes, r.length);
}

function addressIn(ranges: CompiledRange[], address: string): boolean {
  let parsed: ReturnType<typeof parsePrefix>;
  try {
    parsed = parsePrefix(address.includes('/') ? address : address + (address.includes(':') ? '/128' : '/32'));
  } catch {
    return false;
  }
  for (const r of ranges) if (r.ipv6 === parsed.ipv6 && bitsEqual(r.bytes, parsed.bytes, r.length)) return true;
  return false;
}

export function asPathText(a: Readonly<PathAttributes>): string {
  if (!a.asPath) return '';
  return a.asPath
    .map((s) => (s.type === 'sequence' ? s.asns.join(' ') : s.type === 'set' ? `{${s.asns.join(',')}}` : `(${s.asns.join(' ')})`))
    .join(' ');
}

function compileTerm(t: PolicyTerm, i: number): (r: PolicyRoute) => boolean {
  const m = t.match ?? {};
  const field = `policy term ${i}`;
  if (t.action !== 'accept' && t.action !== 'reject') throw new TypeError(`${field}: action must be 'accept' or 'reject'`);
  const checks: Array<(r: PolicyRoute) => boolean> = [];
  if (m.prefixList) {
    const ranges = m.prefixList.map((e) => compileRange(e.prefix, `${field} prefixList`, e.ge, e.le));
    checks.push((r) => {
      const p = parsePrefix(r.prefix);
      return ranges.some((x) => inRange(x, p.ipv6, p.bytes, p.length));
    });
  }
  if (m.community) {
    const wanted = m.community.map((c) => parseCommunity(c, `${field} community`));
    checks.push((r) => wanted.some((c) => r.attributes.communities?.includes(c) === true));
  }
  if (m.asPathContains !== undefined) {
    const asn = m.asPathContains;
    checks.push((r) => (r.attributes.asPath ?? []).some((s) => s.asns.includes(asn)));
  }
  if (m.asPathRegex !== undefined) {
    const re = typeof m.asPathRegex === 'string' ? new RegExp(m.asPathRegex) : m.asPathRegex;
    checks.push((r) => re.test(asPathText(r.attributes)));
  }
  if (m.neighbor) {
    const ranges = m.neighbor.map((n) => compileRange(n, `${field} neighbor`));
    checks.push((r) => r.neighbor !== undefined && addressIn(ranges, r.neighbor.address));
  }
  if (m.nextHop) {
    const ranges = m.nextHop.map((n) => compileRange(n, `${field} nextHop`));
    checks.push((r) => addressIn(ranges, r.nextHop));
  }
  return (r) => checks.every((c) => c(r));
}

function checkActions(s: PolicyActions | undefined, field: string): PolicyActions | true {
  if (s === undefined) return true;
  if (s.localPref !== undefined && (!Number.isInteger(s.localPref) || s.localPref < 0 || s.localPref > 0xffffffff)) {
    throw new TypeError(`${field} set.localPref: ${s.localPref} is not a 32-bit number`);
  }
  if (s.med !== undefined && s.med !== null && (!Number.isInteger(s.med) || s.med < 0 || s.med > 0xffffffff)) {
    throw new TypeError(`${field} set.med: ${s.med} is not a 32-bit number`);
  }
  for (const c of s.communitiesAdd ?? []) parseCommunity(c, `${field} set.communitiesAdd`);
  for (const c of s.communitiesRemove ?? []) parseCommunity(c, `${field} set.communitiesRemove`);
  for (const a of s.prepend ?? []) {
    if (!Number.isInteger(a) || a < 0 || a > 0xffffffff) throw new TypeError(`${field} set.prepend: ${a} is not an AS number`);
  }
  return Object.freeze({ ...s });
}

export function compilePolicy(p: Policy): CompiledPolicy {
  if (typeof p === 'function') return { evaluate: p, perPrefix: true };
  if (!p || !Array.isArray(p.terms)) throw new TypeError('policy: expected a function or { terms: [...] }');
  const terms = p.terms.map((t, i) => ({
    test: compileTerm(t, i),
    verdict: t.action === 'reject' ? false : checkActions(t.set, `policy term ${i}`),
  }));
  const fallback = (p.default ?? 'accept') === 'accept';
  const perPrefix = p.terms.some((t) => t.match?.prefixList !== undefined);
  return {
    perPrefix,
    evaluate(r: PolicyRoute): PolicyVerdict {
      for (const t of terms) if (t.test(r)) return t.verdict;
      return fallback;
    },
  };
}

/**
 * Applies set-actions to a copy of the attributes. Returns the new attributes and the next
 * hop ('self' passes through for the caller to resolve; undefined: unchanged).
 */
export function applyActions(a: Readonly<PathAttributes>, s: PolicyActions): { attributes: PathAttributes; nextHop: string | undefined } {
  const out: PathAttributes = { ...a };
  if (s.localPref !== undefined) out.localPref = s.localPref;
  if (s.med === null) delete out.med;
  else if (s.med !== undefined) out.med = s.med;
  if (s.communitiesAdd || s.communitiesRemove) {
    const set = new Set(out.communities ?? []);
    for (const c of s.communitiesRemove ?? []) set.delete(parseCommunity(c));
    for (const c of s.communitiesAdd ?? []) set.add(parseCommunity(c));
    if (set.size > 0) out.communities = [...set].sort((x, y) => x - y);
    else delete out.communities;
  }
  if (s.prepend && s.prepend.length > 0) out.asPath = prependAs(out.asPath, s.prepend);
  return { attributes: out, nextHop: s.nextHop };
}

/** Prepends ASes to the leading AS_SEQUENCE, or starts one (RFC 4271 §5.1.2). */
export function prependAs(path: PathAttributes['asPath'], asns: readonly number[]): NonNullable<PathAttributes['asPath']> {
  const segs = path ?? [];
  if (segs.length > 0 && segs[0].type === 'sequence' && segs[0].asns.length + asns.length <= 255) {
    return [{ type: 'sequence', asns: [...asns, ...segs[0].asns] }, ...segs.slice(1)];
  }
  return [{ type: 'sequence', asns: [...asns] }, ...segs];
}
