// RFC 6793 between a 4-octet speaker (us) and a 2-octet peer. The RIB calls both itself
// for peers configured with fourOctetAs: false: mergeAs4Path on import, toTwoOctetAs on
// export (before the attributes are encoded with 2-octet AS numbers).
import { AS_TRANS } from '../codec/index.js';
import type { AsPathSegment, PathAttributes } from '../codec/index.js';

function countOf(path: readonly AsPathSegment[]): number {
  let n = 0;
  for (const s of path) {
    if (s.type === 'sequence') n += s.asns.length;
    else if (s.type === 'set') n += 1;
  }
  return n;
}

/** The attributes a 2-octet peer gets: AS_TRANS in place of big AS numbers, the truth in AS4_PATH/AS4_AGGREGATOR. */
export function toTwoOctetAs(a: Readonly<PathAttributes>): PathAttributes {
  const out: PathAttributes = { ...a };
  delete out.as4Path;
  delete out.as4Aggregator;
  const path = a.asPath ?? [];
  if (path.some((s) => s.asns.some((x) => x > 0xffff))) {
    out.asPath = path.map((s) => ({ type: s.type, asns: s.asns.map((x) => (x > 0xffff ? AS_TRANS : x)) }));
    // Confederation segments never go into AS4_PATH (RFC 6793 §3).
    out.as4Path = path.filter((s) => s.type === 'sequence' || s.type === 'set').map((s) => ({ type: s.type, asns: [...s.asns] }));
  }
  if (a.aggregator && a.aggregator.asn > 0xffff) {
    out.aggregator = { asn: AS_TRANS, address: a.aggregator.address };
    out.as4Aggregator = { asn: a.aggregator.asn, address: a.aggregator.address };
  }
  return out;
}

/** The real AS_PATH and AGGREGATOR of a route from a 2-octet peer (RFC 6793 §4.2.3). */
export function mergeAs4Path(a: Readonly<PathAttributes>): PathAttributes {
  const out: PathAttributes = { ...a };
  delete out.as4Path;
  delete out.as4Aggregator;
  if (a.aggregator && a.aggregator.asn !== AS_TRANS) {
    // The aggregating speaker was a 2-octet one: whatever AS4_PATH says predates it.
    return out;
  }
  if (a.aggregator && a.as4Aggregator) out.aggregator = { ...a.as4Aggregator };
  const path = a.asPath;
  const path4 = a.as4Path;
  if (!path || !path4) return out;
  const keep = countOf(path) - countOf(path4);
  if (keep < 0) return out; // AS4_PATH longer than AS_PATH: ignore it
  const merged: AsPathSegment[] = [];
  let left = keep;
  for (const s of path) {
    if (left === 0 && s.type !== 'confed-sequence' && s.type !== 'confed-set') break;
    if (s.type === 'sequence') {
      const take = Math.min(left, s.asns.length);
      if (take > 0) merged.push({ type: 'sequence', asns: s.asns.slice(0, take) });
      left -= take;
    } else if (s.type === 'set') {
      if (left > 0) {
        merged.push({ type: 'set', asns: [...s.asns] });
        left -= 1;
      }
    } else {
      merged.push({ type: s.type, asns: [...s.asns] });
    }
  }
  for (const s of path4) merged.push({ type: s.type, asns: [...s.asns] });
  // Two adjacent sequences (the cut fell inside one) are one segment.
  const joined: AsPathSegment[] = [];
  for (const s of merged) {
    const last = joined[joined.length - 1];
    if (last && last.type === 'sequence' && s.type === 'sequence' && last.asns.length + s.asns.length <= 255) {
      last.asns = [...last.asns, ...s.asns];
    } else joined.push(s);
  }
  out.asPath = joined;
  return out;
}
