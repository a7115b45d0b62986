// IPAMConfiguration: the one cluster-wide object (named "default") of IPAM's switches and the
// most blocks a host may claim.
import { IPAM_CONFIGURATION_FIELDS, IPAM_CONFIGURATION_REFUSED } from './calico-fields.js';
import type { Checker, Obj } from './checker.js';

export function checkIPAMConfiguration(c: Checker, s: Obj, name: string): Obj {
  if (name !== 'default') c.fail('metadata.name', 'the IPAMConfiguration must be named "default"');
  c.only(s, IPAM_CONFIGURATION_FIELDS, 'spec', IPAM_CONFIGURATION_REFUSED);
  const out: Obj = {};
  for (const k of ['strictAffinity', 'autoAllocateBlocks', 'releaseEmptyAffineBlocks']) {
    const v = c.bool(s, k, 'spec');
    if (v !== undefined) out[k] = v;
  }
  const m = c.int(s, 'maxBlocksPerHost', 'spec', 0, 1 << 30);
  if (m !== undefined) out.maxBlocksPerHost = m;
  return out;
}
