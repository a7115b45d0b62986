// Keeps what one speaker originates equal to what the node announces (`advertisements`):
// prefixes that appear are originated, prefixes that go are withdrawn, the rest untouched.
import type { BgpSpeaker } from '../../bgp/index.js';
import type { BGPConfiguration, IPAMBlock } from '../resources/types.js';
import { advertisements, allPrefixes, type Advertisements } from './advertise.js';

export const NOTHING_ADVERTISED: Advertisements = { blocks: [], borrowed: [], services: [] };

export class Advertiser {
  private originated = new Set<string>();
  private current: Advertisements = NOTHING_ADVERTISED;

  constructor(readonly speaker: BgpSpeaker) {}

  /** What the last reconcile announced (the affine blocks are also felix's blackholes). */
  get advertised(): Advertisements {
    return this.current;
  }

  reconcile(nodeName: string, blocks: readonly IPAMBlock[], config: BGPConfiguration | undefined): Advertisements {
    this.current = advertisements(nodeName, blocks, config);
    const want = new Set(allPrefixes(this.current));
    for (const p of this.originated) if (!want.has(p)) this.speaker.withdraw(p);
    for (const p of want) if (!this.originated.has(p)) this.speaker.originate(p);
    this.originated = want;
    return this.current;
  }
}
