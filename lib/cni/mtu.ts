// A pod's MTU when its netconf names none: that of the tunnel its pool's traffic takes between
// nodes, sized as felix sizes the device (FelixConfiguration ipipMTU, vxlanMTU, vxlanMTUV6; the
// node's "node.<name>" over "default"), so a pod never sends more than its node's tunnel carries.
// As Calico's plugin takes the MTU felix wrote for it. A pod of an unencapsulated pool keeps the
// kernel's default, as before.
import { DEFAULT_TUNNEL_MTU } from '../../felix/index.js';
import type { FelixConfiguration, IPPool } from '../resources/index.js';

/** Whether any of these pools encapsulates: only then is FelixConfiguration worth reading. */
export function encapsulates(pools: readonly IPPool[]): boolean {
  return pools.some((p) => (p.spec.ipipMode ?? 'Never') !== 'Never' || (p.spec.vxlanMode ?? 'Never') !== 'Never');
}

/** The smallest tunnel MTU among the pools the pod's addresses came from; undefined when none encapsulates. */
export function podMtu(pools: readonly IPPool[], configs: readonly FelixConfiguration[], node: string): number | undefined {
  const spec = {
    ...configs.find((c) => c.metadata.name === 'default')?.spec,
    ...configs.find((c) => c.metadata.name === `node.${node}`)?.spec,
  };
  let mtu: number | undefined;
  for (const p of pools) {
    let m: number | undefined;
    if ((p.spec.ipipMode ?? 'Never') !== 'Never') m = spec.ipipMTU ?? DEFAULT_TUNNEL_MTU.ipip;
    else if ((p.spec.vxlanMode ?? 'Never') !== 'Never')
      m = p.spec.cidr.includes(':') ? (spec.vxlanMTUV6 ?? DEFAULT_TUNNEL_MTU.vxlanV6) : (spec.vxlanMTU ?? DEFAULT_TUNNEL_MTU.vxlanV4);
    if (m !== undefined && (mtu === undefined || m < mtu)) mtu = m;
  }
  return mtu;
}
