// The one interface the policy programmer drives: read back the table podroute owns, apply a
// list of operations on it as one transaction (all of them or none). NftablesDataplane runs
// `nft` in a network namespace; MemoryNftDataplane keeps the same state in maps with the
// kernel's rules, for unit tests and the in-process demo. Neither can name another table: an
// operation carries no table, the dataplane adds its own.

import type { NftBaseChain, NftMapElement } from './nft-model.js';

/** One step of a transaction, as `nft -f` would take it inside the dataplane's table. */
export type NftOp =
  | { readonly kind: 'add table' }
  | {
      readonly kind: 'add set';
      readonly set: string;
      readonly type: string;
      readonly interval: boolean;
      /** Canonical element text (see element-text.ts); may be empty. */
      readonly elements: readonly string[];
      /** Seconds: a dynamic set whose elements expire (`flags dynamic,timeout; timeout Ns`). */
      readonly timeout?: number;
    }
  | { readonly kind: 'delete set'; readonly set: string }
  | { readonly kind: 'add element'; readonly set: string; readonly elements: readonly string[] }
  | { readonly kind: 'delete element'; readonly set: string; readonly elements: readonly string[] }
  | {
      readonly kind: 'add map';
      readonly map: string;
      /** The key's type. */
      readonly type: string;
      /** A data map's data type; absent: the data is a verdict. */
      readonly data?: string;
      /** Its `typeof` declaration, when it needs one (map-typeof.ts). */
      readonly typeof?: string;
      /** Canonical key and verdict (or value) text; may be empty. */
      readonly elements: readonly NftMapElement[];
    }
  | { readonly kind: 'delete map'; readonly map: string }
  /** `add element` on a map: a key must not be there with another verdict (nft refuses it). */
  | { readonly kind: 'add map element'; readonly map: string; readonly elements: readonly NftMapElement[] }
  /** `delete element` on a map, by key. */
  | { readonly kind: 'delete map element'; readonly map: string; readonly keys: readonly string[] }
  | { readonly kind: 'add chain'; readonly chain: string; readonly base?: NftBaseChain }
  | { readonly kind: 'flush chain'; readonly chain: string }
  | { readonly kind: 'delete chain'; readonly chain: string }
  /** Appends a rule; `comment` is its identity (rule-comment.ts), written as nft's rule comment. */
  | { readonly kind: 'add rule'; readonly chain: string; readonly expr: string; readonly comment: string };

export type NftOpKind = NftOp['kind'];

export interface RuleCounter {
  readonly packets: number;
  readonly bytes: number;
}

/**
 * A rule as the comparison sees it. nft prints a rule back in its own words, not ours, so a
 * rule is known by its comment, which holds its id and a hash of its statements.
 */
export interface InstalledRule {
  /** '' for a rule without a comment (written by someone else). */
  readonly comment: string;
  /** Named sets and maps the rule uses (`@name`): they cannot be deleted while it exists. */
  readonly sets: readonly string[];
  /** Chains it jumps or goes to: they cannot be deleted while it exists. */
  readonly chains: readonly string[];
  /** Read from the kernel, for rules with a `counter` statement. */
  readonly counter?: RuleCounter;
}

/** A base chain as read back: the kernel may hold types and hooks the model does not write. */
export interface InstalledBase {
  readonly type: string;
  readonly hook: string;
  readonly priority: number;
  readonly policy: string;
}

export interface InstalledChain {
  readonly name: string;
  readonly base?: InstalledBase;
  readonly rules: readonly InstalledRule[];
}

export interface InstalledSet {
  readonly name: string;
  /** Components joined by ` . ` (`ipv4_addr . inet_proto . inet_service`). */
  readonly type: string;
  /** Sorted (`interval`, and whatever else the kernel reports). */
  readonly flags: readonly string[];
  /** Canonical element text, so the kernel's and ours compare as strings. */
  readonly elements: ReadonlySet<string>;
  /** Seconds, for a set with `flags timeout` (its elements are the packet path's, not compared). */
  readonly timeout?: number;
}

export interface InstalledMap {
  readonly name: string;
  /** The key's type, components joined by ` . `. */
  readonly type: string;
  /** What the key maps to: `verdict`, or a data map's data type (`ipv4_addr . inet_service`). */
  readonly data: string;
  /** Sorted, as for sets. */
  readonly flags: readonly string[];
  /** The `typeof` declaration a desired map is written with; not read back (its types are compared). */
  readonly typeof?: string;
  /** Canonical key → canonical verdict (`"cali1"` → `jump to-cali1`) or value. */
  readonly elements: ReadonlyMap<string, string>;
}

/** The table, keyed for comparison: what the kernel holds, or what a desired NftTable becomes. */
export interface InstalledTable {
  readonly sets: ReadonlyMap<string, InstalledSet>;
  readonly maps: ReadonlyMap<string, InstalledMap>;
  readonly chains: ReadonlyMap<string, InstalledChain>;
}

/** A rule's counter with the chain and comment that find it. */
export interface RuleCounterRow extends RuleCounter {
  readonly chain: string;
  readonly comment: string;
}

export interface NftApplyResult {
  readonly ok: boolean;
  /** Why the transaction was refused, with the operation that nft named where it named one. */
  readonly error?: string;
  /** The transaction as the dataplane wrote it (the `nft -f` text). */
  readonly script: string;
}

export interface NftDataplane {
  readonly description: string;
  /** The family and name of the one table this dataplane manages (`inet podroute`). */
  readonly family: 'inet';
  readonly table: string;
  /**
   * The table as the kernel holds it; undefined when it does not exist. Throws when it cannot be
   * read. A dataplane may answer from a copy it knows the kernel holds (the netlink one, while
   * nobody else committed since its own last commit): the caller must not change what it gets.
   */
  read(): Promise<InstalledTable | undefined>;
  /** Every rule's counter, without reading set elements; empty when the table does not exist. */
  readCounters(): Promise<RuleCounterRow[]>;
  /** Applies the operations as one transaction: all of them, or (ok false) none. */
  apply(ops: readonly NftOp[]): Promise<NftApplyResult>;
  close(): void;
}
