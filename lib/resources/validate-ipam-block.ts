// IPAMBlock: written by IPAM's own operations, read back from every backend in one shape.
import { type Checker, isObj, type Obj } from './checker.js';
import type { IPAMBlockSpec } from './types.js';

export function checkIPAMBlock(c: Checker, s: Obj): IPAMBlockSpec {
  const cidr = c.str(s, 'cidr', 'spec', true)!;
  c.cidr(cidr, 'spec.cidr');
  return normalizeBlockSpec(s);
}

/**
 * Lua's cjson writes an empty array as {}; IPAM blocks written inside Redis come back
 * through here so both backends hand out the same shape.
 */
export function normalizeBlockSpec(s: Obj): IPAMBlockSpec {
  const arr = <T>(v: unknown): T[] => (Array.isArray(v) ? (v as T[]) : []);
  const out: IPAMBlockSpec = {
    cidr: s.cidr as string,
    affinity: typeof s.affinity === 'string' && s.affinity !== '' ? s.affinity : null,
    allocations: arr<number | null>(s.allocations),
    unallocated: arr<number>(s.unallocated),
    attributes: arr<{ handle_id: string | null; secondary: unknown }>(s.attributes).map((a) => ({
      handle_id: a.handle_id ?? null,
      secondary: isObj(a.secondary) ? (a.secondary as Record<string, string>) : {},
    })),
  };
  if (s.strictAffinity === true) out.strictAffinity = true;
  return out;
}
