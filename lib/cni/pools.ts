// Which pools each address family draws from. Calico's netconf names them per family
// (`ipv4_pools`, `ipv6_pools`, each entry a pool's name or its CIDR); podroute's own `pools`
// names pools of either family, each serving its own. A family with no pool named is served
// by the pools whose nodeSelector picks the node, as when no list is given at all.
import { parseCidr, type IpFamily } from '../../ip/index.js';
import type { IPPool } from '../resources/index.js';
import type { IpamConf } from './config.js';

function familyOf(cidr: string): IpFamily | undefined {
  try {
    return parseCidr(cidr, 'cidr', false).family;
  } catch {
    return undefined;
  }
}

/** `entry` as a pool name: a CIDR is looked up among the pools; anything unknown is left for IPAM to refuse by name. */
function poolName(entry: string, pools: readonly IPPool[]): string {
  if (pools.some((p) => p.metadata.name === entry)) return entry;
  const c = entry.includes('/') ? familyOf(entry) : undefined;
  if (c === undefined) return entry;
  const want = parseCidr(entry, 'cidr', false);
  const same = pools.find((p) => {
    const have = parseCidr(p.spec.cidr, 'spec.cidr', false);
    return have.prefixLength === want.prefixLength && Buffer.compare(Buffer.from(have.bytes), Buffer.from(want.bytes)) === 0;
  });
  return same?.metadata.name ?? entry;
}

/** The pool names for `family`, or undefined when the node's pools of that family decide. */
export function poolsForFamily(ipam: IpamConf | undefined, family: IpFamily, pools: readonly IPPool[]): string[] | undefined {
  const own = family === 4 ? ipam?.ipv4Pools : ipam?.ipv6Pools;
  if (own && own.length > 0) return own.map((e) => poolName(e, pools));
  if (!ipam?.pools || ipam.pools.length === 0) return undefined;
  const names = ipam.pools.filter((name) => {
    const p = pools.find((x) => x.metadata.name === name);
    // A name no pool has goes to every family, so IPAM says which name is wrong.
    return !p || familyOf(p.spec.cidr) === family;
  });
  return names.length > 0 ? names : undefined;
}
