// A pod's MTU when its netconf names none: the smallest of the devices its traffic to other
// nodes may take, sized as felix sizes them (FelixConfiguration, the node's "node.<name>" over
// "default"): its pool's tunnel (ipipMTU, vxlanMTU, vxlanMTUV6) and, with WireGuard on for the
// pool's family, the WireGuard device (wireguardMTU, wireguardMTUV6; 0 or unset: the underlay's
// 1500 less WireGuard's 60 / 80 bytes), so a pod never sends more than its node's devices carry.
// As Calico's plugin takes the MTU felix worked out for it. A pod of an unencapsulated pool
// with WireGuard off keeps the kernel's default, as before.
import { DEFAULT_TUNNEL_MTU, WIREGUARD_DEFAULTS } from '../../felix/index.js';
import type { FelixConfiguration, FelixConfigurationSpec, IPPool } from '../resources/index.js';

/** The WireGuard device's MTU for the family when WireGuard is on for it; undefined when off. */
function wireguardMtu(spec: FelixConfigurationSpec, family: 4 | 6): number | undefined {
  if (family === 4) return spec.wireguardEnabled ? spec.wireguardMTU || WIREGUARD_DEFAULTS.mtu : undefined;
  return spec.wireguardEnabledV6 ? spec.wireguardMTUV6 || WIREGUARD_DEFAULTS.mtuV6 : undefined;
}

/** The smallest device MTU among the pools the pod's addresses came from; undefined when none encapsulates or encrypts. */
export function podMtu(pools: readonly IPPool[], configs: readonly FelixConfiguration[], node: string): number | undefined {
  const spec: FelixConfigurationSpec = {
    ...configs.find((c) => c.metadata.name === 'default')?.spec,
    ...configs.find((c) => c.metadata.name === `node.${node}`)?.spec,
  };
  let mtu: number | undefined;
  const take = (m: number | undefined) => {
    if (m !== undefined && (mtu === undefined || m < mtu)) mtu = m;
  };
  for (const p of pools) {
    const v6 = p.spec.cidr.includes(':');
    if ((p.spec.ipipMode ?? 'Never') !== 'Never') take(spec.ipipMTU ?? DEFAULT_TUNNEL_MTU.ipip);
    else if ((p.spec.vxlanMode ?? 'Never') !== 'Never')
      take(v6 ? (spec.vxlanMTUV6 ?? DEFAULT_TUNNEL_MTU.vxlanV6) : (spec.vxlanMTU ?? DEFAULT_TUNNEL_MTU.vxlanV4));
    take(wireguardMtu(spec, v6 ? 6 : 4));
  }
  return mtu;
}
