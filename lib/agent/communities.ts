// BGPConfiguration.prefixAdvertisements: the communities a node attaches to what it announces.
// As Calico's BIRD filter does, an entry applies to every announced prefix inside its CIDR
// (the block itself or a longer one), and a name stands for the value spec.communities gives it.
import { cidrContains, parseCidr } from '../../ip/index.js';
import type { BGPConfiguration } from '../resources/index.js';

export interface PrefixCommunities {
  /** Standard communities (RFC 1997), as 32-bit values. */
  communities?: number[];
  /** Large communities (RFC 8092), [global, local1, local2]. */
  largeCommunities?: [number, number, number][];
}

/** The communities `prefix` is announced with, or undefined when no prefixAdvertisement covers it. */
export function communitiesFor(prefix: string, config: BGPConfiguration | undefined): PrefixCommunities | undefined {
  const ads = config?.spec.prefixAdvertisements;
  if (!ads || ads.length === 0) return undefined;
  const names = new Map((config.spec.communities ?? []).map((c) => [c.name, c.value]));
  const net = parseCidr(prefix, 'prefix', false);
  const standard = new Set<number>();
  const large = new Map<string, [number, number, number]>();
  for (const ad of ads) {
    const cover = parseCidr(ad.cidr, 'prefixAdvertisements.cidr', false);
    if (cover.family !== net.family || !cidrContains(cover, net)) continue;
    for (const c of ad.communities) {
      const parts = (names.get(c) ?? c).split(':').map(Number);
      if (parts.length === 2) standard.add(parts[0]! * 65536 + parts[1]!);
      else if (parts.length === 3) large.set(parts.join(':'), [parts[0]!, parts[1]!, parts[2]!]);
    }
  }
  if (standard.size === 0 && large.size === 0) return undefined;
  const out: PrefixCommunities = {};
  if (standard.size > 0) out.communities = [...standard].sort((a, b) => a - b);
  if (large.size > 0) out.largeCommunities = [...large.values()];
  return out;
}
