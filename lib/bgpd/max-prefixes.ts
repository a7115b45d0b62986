// A peer's `maxPrefixes` as the daemons' files and the control socket give it: per family (its
// name, or FRR's short one), a limit and what to do near and beyond it. Checked here so that a
// mistake names its path (`peers[0].maxPrefixes.ipv4.limit: ...`). The speaker-wide `maxRoutes`
// too.
import type { MaxPrefixes, MaxRoutes } from '../../bgp/index.js';
import { ConfigError, family, isObj, Mistakes, num, onlyKeys } from './fields.js';

const LIMIT_KEYS = new Set(['limit', 'warningThreshold', 'restartAfter', 'warningOnly']);

export function maxPrefixes(v: unknown, path: string): MaxPrefixes {
  if (!isObj(v)) throw new ConfigError(`${path}: a mapping of family to { limit, warningThreshold, restartAfter, warningOnly }`);
  const out: MaxPrefixes = {};
  const m = new Mistakes();
  for (const [f, l] of Object.entries(v)) {
    const at = `${path}.${f}`;
    const name = m.take(() => family(f, at), undefined);
    if (name !== undefined && out[name]) m.note(`${at}: ${name} is given twice`);
    else if (!isObj(l)) m.note(`${at}: a mapping { limit, warningThreshold, restartAfter, warningOnly }`);
    else {
      m.check(() => onlyKeys(l, LIMIT_KEYS, at));
      const limit = m.take(() => whole(l.limit, `${at}.limit`, 1, 0xffffffff), 1);
      const warningThreshold =
        l.warningThreshold === undefined ? undefined : m.take(() => whole(l.warningThreshold, `${at}.warningThreshold`, 1, 100), undefined);
      const restartAfter =
        l.restartAfter === undefined ? undefined : m.take(() => whole(l.restartAfter, `${at}.restartAfter`, 0, 2_000_000), undefined);
      if (l.warningOnly !== undefined && typeof l.warningOnly !== 'boolean')
        m.note(`${at}.warningOnly: ${JSON.stringify(l.warningOnly)} is not true or false`);
      if (l.warningOnly === true && restartAfter !== undefined) m.note(`${at}.restartAfter: a warningOnly limit never stops the session`);
      if (name !== undefined) out[name] = { limit, warningThreshold, restartAfter, warningOnly: l.warningOnly as boolean | undefined };
    }
  }
  m.throwIfAny();
  return out;
}

/** The top-level `maxRoutes`: every peer's paths together, `{ limit, restartAfter }`. */
export function maxRoutes(v: unknown, path: string): MaxRoutes {
  if (!isObj(v)) throw new ConfigError(`${path}: a mapping { limit, restartAfter }`);
  const m = new Mistakes();
  m.check(() => onlyKeys(v, new Set(['limit', 'restartAfter']), path));
  const limit = m.take(() => whole(v.limit, `${path}.limit`, 1, 0xffffffff), 1);
  const restartAfter =
    v.restartAfter === undefined ? undefined : m.take(() => whole(v.restartAfter, `${path}.restartAfter`, 0, 2_000_000), 0);
  m.throwIfAny();
  return restartAfter === undefined ? { limit } : { limit, restartAfter };
}

function whole(v: unknown, path: string, min: number, max: number): number {
  num(v, path, min, max);
  if (!Number.isInteger(v)) throw new ConfigError(`${path}: ${JSON.stringify(v)} is not a whole number`);
  return v as number;
}
