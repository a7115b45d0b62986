// Keeps what one speaker originates equal to what the node announces (`advertisements`):
// prefixes that appear are originated, prefixes that go are withdrawn, the rest untouched.
import type { BgpSpeaker } from '../../bgp/index.js';
import type { BGPConfiguration, IPAMBlock } from '../resources/index.js';
import { advertisements, allPrefixes, type Advertisements } from './advertise.js';
import { communitiesFor } from './communities.js';
import type { ServiceAdvertisementInput } from './service-advertise.js';

export const NOTHING_ADVERTISED: Advertisements = { blocks: [], borrowed: [], services: [], serviceAddresses: [] };

export class Advertiser {
  /** What each originated prefix carries (its communities), to re-originate when that changes. */
  private originated = new Map<string, string>();
  private current: Advertisements = NOTHING_ADVERTISED;

  constructor(readonly speaker: BgpSpeaker) {}

  /** What the last reconcile announced (the affine blocks are also felix's blackholes). */
  get advertised(): Advertisements {
    return this.current;
  }

  reconcile(
    nodeName: string,
    blocks: readonly IPAMBlock[],
    config: BGPConfiguration | undefined,
    services?: ServiceAdvertisementInput,
  ): Advertisements {
    this.current = advertisements(nodeName, blocks, config, services);
    const want = new Map<string, string>();
    for (const p of allPrefixes(this.current)) {
      const attributes = communitiesFor(p, config);
      const key = JSON.stringify(attributes ?? {});
      want.set(p, key);
      if (this.originated.get(p) !== key) this.speaker.originate(p, attributes ? { attributes } : undefined);
    }
    for (const p of this.originated.keys()) if (!want.has(p)) this.speaker.withdraw(p);
    this.originated = want;
    return this.current;
  }
}
