// BGPPeer.spec.maxPrefixes: podroute's own field (Calico's BGPPeer has none), the same limits
// as bgpd's `peers[].maxPrefixes` written as a Calico resource writes them: families `ipv4`
// and `ipv6`, and the restart time as a duration.
import type { Checker, Obj } from './checker.js';

export interface BGPPeerMaxPrefix {
  /** The most paths of the family the peer may have accepted at once. */
  limit: number;
  /** Percent of the limit at which a warning is logged. Default 75. */
  warningThreshold?: number;
  /** How long the session stays down after the limit is exceeded, e.g. "5m"; absent: until the agent restarts or the BGPPeer changes. */
  restartAfter?: string;
  /** Beyond the limit only log a warning. */
  warningOnly?: boolean;
}

export type BGPPeerMaxPrefixes = Partial<Record<'ipv4' | 'ipv6', BGPPeerMaxPrefix>>;

const GO_DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;

export function checkBgpPeerMaxPrefixes(c: Checker, v: unknown, path: string): BGPPeerMaxPrefixes {
  const m = c.obj(v, path);
  c.only(m, ['ipv4', 'ipv6'], path);
  const out: BGPPeerMaxPrefixes = {};
  for (const family of ['ipv4', 'ipv6'] as const) {
    if (m[family] === undefined || m[family] === null) continue;
    const at = `${path}.${family}`;
    const l: Obj = c.obj(m[family], at);
    c.only(l, ['limit', 'warningThreshold', 'restartAfter', 'warningOnly'], at);
    const limit: BGPPeerMaxPrefix = { limit: c.num(l.limit, `${at}.limit`, 1, 0xffffffff) };
    if (l.warningThreshold !== undefined) limit.warningThreshold = c.num(l.warningThreshold, `${at}.warningThreshold`, 1, 100);
    const restartAfter = c.str(l, 'restartAfter', at);
    if (restartAfter !== undefined) {
      if (!GO_DURATION.test(restartAfter)) c.fail(`${at}.restartAfter`, `${JSON.stringify(restartAfter)} is not a duration like 30s or 5m`);
      limit.restartAfter = restartAfter;
    }
    const warningOnly = c.bool(l, 'warningOnly', at);
    if (warningOnly !== undefined) limit.warningOnly = warningOnly;
    if (warningOnly && restartAfter !== undefined) c.fail(`${at}.restartAfter`, 'a warningOnly limit never stops the session');
    out[family] = limit;
  }
  return out;
}
