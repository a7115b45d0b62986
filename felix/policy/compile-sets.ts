// The kernel sets of the input's sets, one per family, kept per input object: a set the
// calculation graph rebuilt with a few members changed (derivation.ts) is spliced from its
// last kernel sets, which then record the elements they gained and lost.
import type { IpFamily } from '../../ip/index.js';
import { PartMemo } from './compile-memo.js';
import { addressSetChange, namedPortSetChange, recordNftSetChange } from './derivation.js';
import { changedHostElements, hostElements, intervalElements, namedPortElements, readMember } from './elements.js';
import type { AddressSet, NamedPortSet } from './input.js';
import { addressSetName, namedPortSetName } from './names.js';
import type { NftSet } from './nft-model.js';
import { sortedTextsOf, withSortedTexts } from './sorted-texts.js';

export const FAMILIES = [4, 6] as const;

const addressSetParts = new PartMemo<AddressSet, readonly NftSet[]>();
const namedPortSetParts = new PartMemo<NamedPortSet, readonly NftSet[]>();

/**
 * An address set's kernel sets (IPv4, IPv6). A set of hosts is a plain hash set of bare
 * addresses; any other may hold networks and is an interval set: nft 1.0.6 reads back every
 * interval set of the table before it changes an element of any set, so only the sets that
 * need intervals have them. `index` gives the set's place in the input, for an error's field.
 */
export function kernelAddressSets(s: AddressSet, index: () => number): readonly NftSet[] {
  return addressSetParts.get(s, '') ?? compileAddressSet(s, index);
}

/** A named port set's kernel sets (IPv4, IPv6). */
export function kernelNamedPortSets(s: NamedPortSet, index: () => number): readonly NftSet[] {
  return namedPortSetParts.get(s, '') ?? compileNamedPortSet(s, index);
}

/** A set's kernel sets, one per family; from the ones its members changed from where the calculation graph says how. */
function compileAddressSet(s: AddressSet, index: () => number): readonly NftSet[] {
  // The set's place in the input names a refused member; it is looked up only then.
  const field = (j: number) => `sets[${index()}].members[${j}]`;
  const network = (m: string) => `${m} is a network, and set ${JSON.stringify(s.id)} holds single addresses only`;
  const nftSet = (family: IpFamily, elements: readonly string[]): NftSet => ({
    name: addressSetName(s.id, family),
    type: family === 4 ? 'ipv4_addr' : 'ipv6_addr',
    interval: s.hosts !== true,
    elements,
  });
  const change = s.hosts === true ? addressSetChange(s) : undefined;
  const before = change?.from.hosts === true ? addressSetParts.get(change.from, '') : undefined;
  if (change && before) {
    // The elements are told as the last ones and the change, not copied (sorted-texts.ts).
    const old = { 4: sortedTextsOf(before[0]!, 'elements'), 6: sortedTextsOf(before[1]!, 'elements') };
    const d = changedHostElements(old, sortedTextsOf(change.from, 'members').length, change.added, change.removed, field, network);
    if (d) {
      return addressSetParts.set(
        s,
        '',
        FAMILIES.map((family, k) => {
          const added = d.added[family];
          const removed = d.removed[family];
          if (!added.length && !removed.length) return before[k]!;
          const next = withSortedTexts(nftSet(family, []), 'elements', old[family].changed(added, removed));
          recordNftSetChange(next, { from: before[k]!, added, removed });
          return next;
        }),
      );
    }
  }
  let elements: (family: IpFamily) => string[];
  if (s.hosts === true) {
    const byFamily = hostElements(s.members, field, network);
    elements = (family) => byFamily[family];
  } else {
    const members = s.members.map((m, j) => readMember(m, field(j)));
    elements = (family) => intervalElements(members, family);
  }
  return addressSetParts.set(
    s,
    '',
    FAMILIES.map((family) => nftSet(family, elements(family))),
  );
}

/** A named port set's kernel sets; where it came from one compiled before, each says which elements changed. */
function compileNamedPortSet(s: NamedPortSet, index: () => number): readonly NftSet[] {
  const change = namedPortSetChange(s);
  const before = change && namedPortSetParts.get(change.from, '');
  return namedPortSetParts.set(
    s,
    '',
    FAMILIES.map((family, k) => {
      const elements = namedPortElements(s.members, family, `namedPortSets[${index()}].members`);
      const next: NftSet = {
        name: namedPortSetName(s.id, family),
        type: `${family === 4 ? 'ipv4_addr' : 'ipv6_addr'} . inet_proto . inet_service`,
        interval: false,
        elements,
      };
      const old = before?.[k];
      if (old) {
        const had = new Set(old.elements);
        const has = new Set(elements);
        const added = elements.filter((e) => !had.has(e));
        const removed = old.elements.filter((e) => !has.has(e));
        if (!added.length && !removed.length) return old;
        recordNftSetChange(next, { from: old, added, removed });
      }
      return next;
    }),
  );
}
