// What RFC 4271, RFC 4760, RFC 6793 and RFC 7606 §7 say each known attribute looks like:
// its Optional/Transitive flags, and how a malformed one is handled.
import { AttrFlag, AttrType as T } from './constants.js';
import type { ErrorAction } from './errors.js';

const WELL_KNOWN = AttrFlag.TRANSITIVE;
const OPTIONAL = AttrFlag.OPTIONAL;
const OPTIONAL_TRANSITIVE = AttrFlag.OPTIONAL | AttrFlag.TRANSITIVE;

export interface AttributeRule {
  /** The Optional and Transitive bits the attribute must carry. */
  flags: number;
  /** RFC 7606 §7: what to do when it is malformed (wrong length, bad value, wrong flags). */
  malformed: ErrorAction;
}

export const attributeRules: ReadonlyMap<number, AttributeRule> = new Map<number, AttributeRule>([
  [T.ORIGIN, { flags: WELL_KNOWN, malformed: 'treat-as-withdraw' }],
  [T.AS_PATH, { flags: WELL_KNOWN, malformed: 'treat-as-withdraw' }],
  [T.NEXT_HOP, { flags: WELL_KNOWN, malformed: 'treat-as-withdraw' }],
  [T.MULTI_EXIT_DISC, { flags: OPTIONAL, malformed: 'treat-as-withdraw' }],
  [T.LOCAL_PREF, { flags: WELL_KNOWN, malformed: 'treat-as-withdraw' }],
  [T.ATOMIC_AGGREGATE, { flags: WELL_KNOWN, malformed: 'attribute-discard' }],
  [T.AGGREGATOR, { flags: OPTIONAL_TRANSITIVE, malformed: 'attribute-discard' }],
  [T.COMMUNITIES, { flags: OPTIONAL_TRANSITIVE, malformed: 'treat-as-withdraw' }],
  [T.ORIGINATOR_ID, { flags: OPTIONAL, malformed: 'treat-as-withdraw' }],
  [T.CLUSTER_LIST, { flags: OPTIONAL, malformed: 'treat-as-withdraw' }],
  // RFC 7606 §7.11: without its NLRI we cannot know what to withdraw.
  [T.MP_REACH_NLRI, { flags: OPTIONAL, malformed: 'session-reset' }],
  [T.MP_UNREACH_NLRI, { flags: OPTIONAL, malformed: 'session-reset' }],
  [T.EXTENDED_COMMUNITIES, { flags: OPTIONAL_TRANSITIVE, malformed: 'treat-as-withdraw' }],
  // RFC 6793 §6: a bad AS4_PATH or AS4_AGGREGATOR is dropped, the route kept.
  [T.AS4_PATH, { flags: OPTIONAL_TRANSITIVE, malformed: 'attribute-discard' }],
  [T.AS4_AGGREGATOR, { flags: OPTIONAL_TRANSITIVE, malformed: 'attribute-discard' }],
  [T.LARGE_COMMUNITY, { flags: OPTIONAL_TRANSITIVE, malformed: 'treat-as-withdraw' }],
]);

/** The rules indexed by type code: the decoder looks one up per attribute. */
export const ruleByType: readonly (AttributeRule | undefined)[] = Array.from({ length: 256 }, (_, t) => attributeRules.get(t));

/** The flags a speaker puts on an attribute it sends: the rule's bits, extended length when needed. */
export function canonicalFlags(type: number, valueLength: number, rawFlags = 0): number {
  const rule = ruleByType[type];
  const base = rule ? rule.flags : rawFlags & ~AttrFlag.EXTENDED_LENGTH & 0xf0;
  return valueLength > 255 ? base | AttrFlag.EXTENDED_LENGTH : base;
}
