// IPPool: the pool's CIDR and block size (IPv4 blocks /20../32, IPv6 /116../128, Calico's
// defaults filled), one encapsulation at most, and the uses podroute serves (every pool hands
// out pod addresses, automatically).
import { IPPOOL_FIELDS, IPPOOL_REFUSED } from './calico-fields.js';
import type { Checker, Obj } from './checker.js';
import { DEFAULT_BLOCK_SIZE, type EncapMode } from './types.js';

const MODES: readonly EncapMode[] = ['Never', 'Always', 'CrossSubnet'];

export function checkIPPool(c: Checker, s: Obj): Obj {
  c.only(s, IPPOOL_FIELDS, 'spec', IPPOOL_REFUSED);
  const cidr = c.str(s, 'cidr', 'spec', true)!;
  const net = c.cidr(cidr, 'spec.cidr');
  const [min, max] = net.family === 4 ? [20, 32] : [116, 128];
  const blockSize = c.int(s, 'blockSize', 'spec', 0, 128) ?? DEFAULT_BLOCK_SIZE[net.family];
  if (blockSize < min || blockSize > max)
    c.fail('spec.blockSize', `${blockSize} is out of range: IPv${net.family} block sizes go from ${min} to ${max}`);
  if (blockSize < net.prefixLength) c.fail('spec.blockSize', `/${blockSize} blocks do not fit in the /${net.prefixLength} pool ${cidr}`);
  const out: Obj = {
    cidr,
    blockSize,
    ipipMode: c.oneOf(s, 'ipipMode', 'spec', MODES, 'Never'),
    vxlanMode: c.oneOf(s, 'vxlanMode', 'spec', MODES, 'Never'),
  };
  if (out.ipipMode !== 'Never' && out.vxlanMode !== 'Never') c.fail('spec.vxlanMode', 'IPIP and VXLAN cannot both be enabled on one pool');
  if (net.family === 6 && out.ipipMode !== 'Never') c.fail('spec.ipipMode', 'IPIP is IPv4 only');
  const nat = c.bool(s, 'natOutgoing', 'spec');
  if (nat !== undefined) out.natOutgoing = nat;
  const dis = c.bool(s, 'disabled', 'spec');
  if (dis !== undefined) out.disabled = dis;
  const sel = c.selector(s, 'nodeSelector', 'spec');
  if (sel !== undefined) out.nodeSelector = sel;
  checkAllowedUses(c, s);
  const assignment = c.oneOf(s, 'assignmentMode', 'spec', ['Automatic', 'Manual'] as const, 'Automatic');
  if (assignment === 'Manual')
    c.fail(
      'spec.assignmentMode',
      'Manual is not supported by podroute: pods cannot ask for a pool by annotation, so every pool is Automatic',
    );
  return out;
}

/** Workload and Tunnel are what every podroute pool serves; LoadBalancer IPs are not allocated here. */
function checkAllowedUses(c: Checker, s: Obj): void {
  const uses = c.list(s, 'allowedUses', 'spec', 'a list of Workload, Tunnel');
  uses?.forEach((u, i) => {
    if (u === 'LoadBalancer')
      c.fail(`spec.allowedUses[${i}]`, 'LoadBalancer is not supported by podroute: it allocates no service addresses');
    if (u !== 'Workload' && u !== 'Tunnel') c.fail(`spec.allowedUses[${i}]`, `must be Workload or Tunnel, not ${JSON.stringify(u)}`);
  });
  if (uses !== undefined && !uses.includes('Workload'))
    c.fail('spec.allowedUses', 'a pool without Workload is not supported by podroute: every pool hands out pod addresses');
}
