// How one part came from another, as the part's maker knows it: the sets of a PolicyInput, a
// set's members, a compiled table's sets. Parts are immutable and handed on whole; a maker that
// changed a few members of a set records which, so the next step redoes only those, not the
// whole set or the whole table. A part without a record, or whose record starts from something
// the step did not see, is taken whole, as before: the record is a shortcut, never the meaning.
import type { AddressSet, NamedPortSet, PolicyInput } from './input.js';
import type { NftSet, NftTable } from './nft-model.js';

/** `next` is `from` with these members added and these removed (each list without repeats). */
export interface MemberChange<T, M> {
  readonly from: T;
  readonly added: readonly M[];
  readonly removed: readonly M[];
}

/** A PolicyInput whose policies, endpoints and pools are `from`'s, and whose sets are `from`'s but for these (same ids, other members). */
export interface InputChange {
  readonly from: PolicyInput;
  readonly sets: readonly AddressSet[];
  readonly namedPortSets: readonly NamedPortSet[];
}

/** A table whose maps and chains are `from`'s (the same arrays), and whose sets are `from`'s but for these (same names, same kinds). */
export interface TableChange {
  readonly from: NftTable;
  readonly sets: readonly NftSet[];
}

type NamedPortMember = NamedPortSet['members'][number];

const addressSetChanges = new WeakMap<AddressSet, MemberChange<AddressSet, string>>();
const namedPortSetChanges = new WeakMap<NamedPortSet, MemberChange<NamedPortSet, NamedPortMember>>();
const nftSetChanges = new WeakMap<NftSet, MemberChange<NftSet, string>>();
const inputChanges = new WeakMap<PolicyInput, InputChange>();
const tableChanges = new WeakMap<NftTable, TableChange>();

export function recordAddressSetChange(next: AddressSet, change: MemberChange<AddressSet, string>): void {
  addressSetChanges.set(next, change);
}

export function addressSetChange(next: AddressSet): MemberChange<AddressSet, string> | undefined {
  return addressSetChanges.get(next);
}

export function recordNamedPortSetChange(next: NamedPortSet, change: MemberChange<NamedPortSet, NamedPortMember>): void {
  namedPortSetChanges.set(next, change);
}

export function namedPortSetChange(next: NamedPortSet): MemberChange<NamedPortSet, NamedPortMember> | undefined {
  return namedPortSetChanges.get(next);
}

/** Elements in the set's own text (as its `elements` hold them). */
export function recordNftSetChange(next: NftSet, change: MemberChange<NftSet, string>): void {
  nftSetChanges.set(next, change);
}

export function nftSetChange(next: NftSet): MemberChange<NftSet, string> | undefined {
  return nftSetChanges.get(next);
}

export function recordInputChange(next: PolicyInput, change: InputChange): void {
  inputChanges.set(next, change);
}

export function inputChange(next: PolicyInput): InputChange | undefined {
  return inputChanges.get(next);
}

export function recordTableChange(next: NftTable, change: TableChange): void {
  tableChanges.set(next, change);
}

export function tableChange(next: NftTable): TableChange | undefined {
  return tableChanges.get(next);
}
