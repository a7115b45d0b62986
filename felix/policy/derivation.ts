// How one part came from another, as the part's maker knows it: the sets of a PolicyInput, a
// set's or a map's elements, the sets, maps and chains of a compiled table or part. Parts are
// immutable and handed on whole; a maker that changed a few of them records which, so the next
// step redoes only those, not the whole set or the whole table. A part without a record, or whose
// record starts from something the step did not see, is taken whole, as before: the record is a
// shortcut, never the meaning.
import type { AddressSet, NamedPortSet, Policy, PolicyEndpoint, PolicyInput } from './input.js';
import type { NftChain, NftMap, NftMapElement, NftSet, NftTable } from './nft-model.js';
import type { NftTablePart } from './table-parts.js';

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

/**
 * A table that is `from` but for these: sets and maps given whole, each either new or of the same
 * name and kind as `from`'s with other elements (it may carry its own MemberChange), chains given
 * whole, replacing the chain of that name or added, and sets, maps and chains removed by name.
 * Everything not named is `from`'s own object. A consumer that cannot take one of the fields (a
 * set whose kind changed, a name another part holds) takes the table whole.
 */
export interface TableChange extends TableDelta {
  readonly from: NftTable;
}

/** The same for a part of the table (table-parts.ts): `from` is the part this one was made from. */
export interface PartChange extends TableDelta {
  readonly from: NftTablePart;
}

/** What a TableChange or PartChange names. */
export interface TableDelta {
  readonly sets: readonly NftSet[];
  readonly maps?: readonly NftMap[];
  readonly chains?: readonly NftChain[];
  readonly removedSets?: readonly string[];
  readonly removedMaps?: readonly string[];
  readonly removedChains?: readonly string[];
}

type NamedPortMember = NamedPortSet['members'][number];

const addressSetChanges = new WeakMap<AddressSet, MemberChange<AddressSet, string>>();
const namedPortSetChanges = new WeakMap<NamedPortSet, MemberChange<NamedPortSet, NamedPortMember>>();
const nftSetChanges = new WeakMap<NftSet, MemberChange<NftSet, string>>();
const inputChanges = new WeakMap<PolicyInput, InputChange>();
const tableChanges = new WeakMap<NftTable, TableChange>();
const partChanges = new WeakMap<NftTablePart, PartChange>();
const nftMapChanges = new WeakMap<NftMap, MemberChange<NftMap, NftMapElement>>();

// The calculation graph's records are read by the compiler of the next input; the record of
// `from` is dropped with each new one, so that no version holds every version before it.

export function recordAddressSetChange(next: AddressSet, change: MemberChange<AddressSet, string>): void {
  addressSetChanges.delete(change.from);
  addressSetChanges.set(next, change);
}

export function addressSetChange(next: AddressSet): MemberChange<AddressSet, string> | undefined {
  return addressSetChanges.get(next);
}

export function recordNamedPortSetChange(next: NamedPortSet, change: MemberChange<NamedPortSet, NamedPortMember>): void {
  namedPortSetChanges.delete(change.from);
  namedPortSetChanges.set(next, change);
}

export function namedPortSetChange(next: NamedPortSet): MemberChange<NamedPortSet, NamedPortMember> | undefined {
  return namedPortSetChanges.get(next);
}

// A record of a compiled table, part, set or map is read by the programmer at once, when it is
// handed the object; the record of `from` is then of no more use, and is dropped, so that a
// line of versions, each holding the one before through its record, does not build up.

/** Elements in the set's own text (as its `elements` hold them). */
export function recordNftSetChange(next: NftSet, change: MemberChange<NftSet, string>): void {
  nftSetChanges.delete(change.from);
  nftSetChanges.set(next, change);
}

export function nftSetChange(next: NftSet): MemberChange<NftSet, string> | undefined {
  return nftSetChanges.get(next);
}

export function recordInputChange(next: PolicyInput, change: InputChange): void {
  forgetInput(change.from);
  inputChanges.set(next, change);
}

export function inputChange(next: PolicyInput): InputChange | undefined {
  return inputChanges.get(next);
}

export function recordTableChange(next: NftTable, change: TableChange): void {
  tableChanges.delete(change.from);
  tableChanges.set(next, change);
}

export function tableChange(next: NftTable): TableChange | undefined {
  return tableChanges.get(next);
}

export function recordPartChange(next: NftTablePart, change: PartChange): void {
  partChanges.delete(change.from);
  partChanges.set(next, change);
}

export function partChange(next: NftTablePart): PartChange | undefined {
  return partChanges.get(next);
}

/**
 * A map's elements as `from`'s with these taken out (by key: each with the verdict or value it
 * had) and these put in (keys it then lacks); a key whose verdict changed is in both. Elements in
 * the map's own text, as its `elements` hold them.
 */
export function recordNftMapChange(next: NftMap, change: MemberChange<NftMap, NftMapElement>): void {
  nftMapChanges.delete(change.from);
  nftMapChanges.set(next, change);
}

export function nftMapChange(next: NftMap): MemberChange<NftMap, NftMapElement> | undefined {
  return nftMapChanges.get(next);
}

// ---- Endpoints and policies: an input in which this node's endpoints or the policies changed ----

/**
 * A PolicyInput that is `from` but for these: sets put (rebuilt with other members under the
 * same id, each may carry its MemberChange, or new) and set ids removed; endpoints put (new, or
 * replacing the endpoint of their interface) and interfaces removed; policies put (new, or
 * replacing the policy of their id) and policy ids removed. Its pools are `from`'s. An
 * InputChange is the case of sets alone.
 */
export interface InputEdit {
  readonly from: PolicyInput;
  readonly sets: readonly AddressSet[];
  readonly namedPortSets: readonly NamedPortSet[];
  readonly removedSets: readonly string[];
  readonly removedNamedPortSets: readonly string[];
  readonly endpoints: readonly PolicyEndpoint[];
  readonly removedEndpoints: readonly string[];
  readonly policies: readonly Policy[];
  readonly removedPolicies: readonly string[];
}

const inputEdits = new WeakMap<PolicyInput, InputEdit>();

export function recordInputEdit(next: PolicyInput, edit: InputEdit): void {
  forgetInput(edit.from);
  inputEdits.set(next, edit);
}

function forgetInput(input: PolicyInput): void {
  inputChanges.delete(input);
  inputEdits.delete(input);
}

/** The input's edit as recorded, or its InputChange said as an edit; undefined when neither was recorded. */
export function inputEdit(next: PolicyInput): InputEdit | undefined {
  const edit = inputEdits.get(next);
  if (edit) return edit;
  const change = inputChanges.get(next);
  return (
    change && {
      ...change,
      removedSets: [],
      removedNamedPortSets: [],
      endpoints: [],
      removedEndpoints: [],
      policies: [],
      removedPolicies: [],
    }
  );
}
