// The CNI spec versions podroute speaks, and what differs between them: results of 0.3.x and
// 0.4.0 give each IP a "version" ("4" or "6"), 1.0.0 dropped it; CHECK exists from 0.4.0;
// STATUS and GC from 1.1.0.
import type { CniResult } from './config.js';

export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;

/** -1, 0 or 1 as `a` is older than, the same as, or newer than `b` (dotted numbers). */
export function compareVersions(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

export const atLeast = (version: string, min: string): boolean => compareVersions(version, min) >= 0;

/** The result in the shape of `version`: before 1.0.0 each IP names its family. */
export function resultFor(version: string, r: CniResult): CniResult {
  const ips = r.ips.map(({ version: _v, ...ip }) =>
    atLeast(version, '1.0.0') ? ip : { ...ip, version: ip.address.includes(':') ? ('6' as const) : ('4' as const) },
  );
  return { ...r, cniVersion: version, ips };
}
