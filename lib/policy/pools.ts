// The pools' NAT half: every IPPool with its natOutgoing flag. All pools are listed, disabled
// ones too (their pods still hold addresses), because "outside every pool" decides what is
// masqueraded, as Calico's all-ipam-pools set does.
import type { NatPool } from '../../felix/policy/input.js';
import { canonicalCidr } from '../../ip/index.js';
import type { IPPool } from '../resources/index.js';

export function natPools(pools: Iterable<IPPool>): NatPool[] {
  const out: NatPool[] = [];
  for (const p of pools) out.push({ cidr: canonicalCidr(p.spec.cidr, 'spec.cidr'), natOutgoing: p.spec.natOutgoing === true });
  return out.sort((a, b) => (a.cidr < b.cidr ? -1 : a.cidr > b.cidr ? 1 : 0));
}
