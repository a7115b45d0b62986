// What becomes of the optional attributes we do not recognise when a route is passed on
// (RFC 4271 §5, §9): a transitive one goes with its Partial bit set, so that every speaker
// after us knows someone on the path could not vouch for it; a non-transitive one stays here.
import { AttrFlag, type RawAttribute } from '../codec/index.js';

/** The unrecognised attributes a received route carries onwards, or undefined when none. */
export function passOnUnrecognised(unknown: readonly RawAttribute[]): RawAttribute[] | undefined {
  const out: RawAttribute[] = [];
  for (const u of unknown) {
    if ((u.flags & AttrFlag.TRANSITIVE) === 0) continue;
    out.push((u.flags & AttrFlag.PARTIAL) !== 0 ? u : { ...u, flags: u.flags | AttrFlag.PARTIAL });
  }
  return out.length > 0 ? out : undefined;
}
