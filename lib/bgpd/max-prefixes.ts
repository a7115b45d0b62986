// A peer's `maxPrefixes` as the daemons' files and the control socket give it: per family (its
// name, or FRR's short one), a limit and what to do near and beyond it. Checked here so that a
// mistake names its path (`peers[0].maxPrefixes.ipv4.limit: ...`). The speaker-wide `maxRoutes`
// too.
import type { MaxPrefixes, MaxRoutes } from '../../bgp/index.js';
import { ConfigError, family, isObj, num, onlyKeys } from './fields.js';

const LIMIT_KEYS = new Set(['limit', 'warningThreshold', 'restartAfter', 'warningOnly']);

export function maxPrefixes(v: unknown, path: string): MaxPrefixes {
  if (!isObj(v)) throw new ConfigError(`${path}: a mapping of family to { limit, warningThreshold, restartAfter, warningOnly }`);
  const out: MaxPrefixes = {};
  for (const [f, l] of Object.entries(v)) {
    const at = `${path}.${f}`;
    const name = family(f, at);
    if (out[name]) throw new ConfigError(`${at}: ${name} is given twice`);
    if (!isObj(l)) throw new ConfigError(`${at}: a mapping { limit, warningThreshold, restartAfter, warningOnly }`);
    onlyKeys(l, LIMIT_KEYS, at);
    const limit = whole(l.limit, `${at}.limit`, 1, 0xffffffff);
    const warningThreshold = l.warningThreshold === undefined ? undefined : whole(l.warningThreshold, `${at}.warningThreshold`, 1, 100);
    const restartAfter = l.restartAfter === undefined ? undefined : whole(l.restartAfter, `${at}.restartAfter`, 0, 2_000_000);
    if (l.warningOnly !== undefined && typeof l.warningOnly !== 'boolean')
      throw new ConfigError(`${at}.warningOnly: ${JSON.stringify(l.warningOnly)} is not true or false`);
    if (l.warningOnly === true && restartAfter !== undefined)
      throw new ConfigError(`${at}.restartAfter: a warningOnly limit never stops the session`);
    out[name] = { limit, warningThreshold, restartAfter, warningOnly: l.warningOnly as boolean | undefined };
  }
  return out;
}

/** The top-level `maxRoutes`: every peer's paths together, `{ limit, restartAfter }`. */
export function maxRoutes(v: unknown, path: string): MaxRoutes {
  if (!isObj(v)) throw new ConfigError(`${path}: a mapping { limit, restartAfter }`);
  onlyKeys(v, new Set(['limit', 'restartAfter']), path);
  const limit = whole(v.limit, `${path}.limit`, 1, 0xffffffff);
  return v.restartAfter === undefined ? { limit } : { limit, restartAfter: whole(v.restartAfter, `${path}.restartAfter`, 0, 2_000_000) };
}

function whole(v: unknown, path: string, min: number, max: number): number {
  num(v, path, min, max);
  if (!Number.isInteger(v)) throw new ConfigError(`${path}: ${JSON.stringify(v)} is not a whole number`);
  return v as number;
}
