// The policy dataplane a host gets: nf_tables over netlink from the felix addon when it is
// built, else every transaction through `nft -f`. Both keep the same table the same way.

import { loadNative } from '../netlink/native.js';
import type { NftDataplane } from './dataplane.js';
import { NftablesDataplane, type NftablesDataplaneOptions } from './nft-dataplane.js';
import { NetlinkNftDataplane } from './nftnl-dataplane.js';

export function createNftDataplane(opts: NftablesDataplaneOptions = {}): NftDataplane {
  return loadNative() ? new NetlinkNftDataplane(opts) : new NftablesDataplane(opts);
}
