// What a log rule's prefix says decided a packet: the prefix felix writes on the log rule it puts
// before each policy rule that decides (Allow, Deny; a staged policy's would-be verdicts) and
// before each tier's closing drop, and the index that reads a prefix back into the tier, the
// policy and the rule. The prefix holds the rule's counter id when it fits the kernel's 127
// bytes, so `nft list` names the rule too; a longer one is a hash, which only the index reads.

import { createHash } from 'node:crypto';
import { type PolicyInput, type RuleAction, policyTier } from '../policy/input.js';
import { type Direction, ruleId, tierEndId } from '../policy/names.js';
import { type CtMarkLayout, ctMarkLayout, ruleMarkNumber } from './rule-marks.js';

/**
 * A: an Allow; D: a Deny or a tier's closing drop; DN: the same, of a packet a Service's DNAT
 * sent (its destination is the endpoint); SA, SD, SP: a staged policy's Allow, Deny, Pass.
 */
export type DecisionCode = 'A' | 'D' | 'DN' | 'SA' | 'SD' | 'SP';

/** The kernel keeps 128 bytes of a log prefix, NUL included. */
const MAX_PREFIX = 127;
const PREFIX_START = 'pr|';

/** The prefix of the log rule for the rule (or tier end) with counter id `id`. */
export function decisionPrefix(code: DecisionCode, id: string): string {
  // No blank, quote or backslash: the prefix is one token of the rule's nft text.
  const text = `${PREFIX_START}${code}|${id.replace(/[\s"\\]/g, '_')}`;
  if (text.length <= MAX_PREFIX) return text;
  return `${PREFIX_START}${code}|#${createHash('sha256').update(id).digest('hex').slice(0, 24)}`;
}

/** Whether a logged packet's prefix is one of felix's flow log rules. */
export const isDecisionPrefix = (prefix: string): boolean => prefix.startsWith(PREFIX_START);

/** What decided (or, staged, would have decided). */
export interface Decision {
  readonly code: DecisionCode;
  readonly tier: string;
  /** The policy's id; for a tier's closing drop, "end-of-tier". */
  readonly policy: string;
  /** `ingress/0`, `egress/2`; a tier's end: `ingress/end`. */
  readonly rule: string;
  readonly direction: Direction;
}

/** The policy that decides for a tier's end: none did, the tier's default action did. */
export const END_OF_TIER = 'end-of-tier';

export function ruleCode(action: RuleAction, staged: boolean): DecisionCode | undefined {
  if (action === 'Allow') return staged ? 'SA' : 'A';
  if (action === 'Deny') return staged ? 'SD' : 'D';
  if (action === 'Pass' && staged) return 'SP';
  return undefined;
}

/**
 * Every prefix the compiled table's log rules carry, read back into its decision. Built from
 * the same input the compiler had; a policy in no local endpoint's tiers is in no tier here,
 * and its rules log nothing (they are not compiled).
 */
export function decisionIndex(input: PolicyInput): ReadonlyMap<string, Decision> {
  const out = new Map<string, Decision>();
  forEachDecision(input, (d, id) => out.set(decisionPrefix(d.code, id), d));
  return out;
}

/** The Allow rules' numbers in the connections' mark (rule-marks.ts), read back into their decisions. */
export interface MarkDecisions {
  readonly layout: CtMarkLayout;
  readonly byNumber: ReadonlyMap<number, Decision>;
  /** Every Allow rule has a number: a mark without one means no Allow rule met the connection (none logs). */
  readonly complete: boolean;
}

export function decisionMarks(input: PolicyInput, ctMark: number): MarkDecisions {
  const layout = ctMarkLayout(ctMark);
  const byNumber = new Map<number, Decision>();
  let complete = true;
  forEachDecision(input, (d, id) => {
    if (d.code !== 'A') return;
    const n = ruleMarkNumber(id, layout);
    if (n === undefined) complete = false;
    else byNumber.set(n, d);
  });
  return { layout, byNumber, complete };
}

/** Each decision the compiled table's flow log rules may name, with the counter id of its rule. */
function forEachDecision(input: PolicyInput, visit: (d: Decision, id: string) => void): void {
  const tierOf = new Map<string, string>();
  for (const e of input.endpoints) {
    for (const direction of ['ingress', 'egress'] as const) {
      e[direction].forEach((given, t) => {
        const tier = policyTier(given);
        const name = tier.name || 'default';
        for (const id of tier.policies) tierOf.set(id, name);
        if (tier.defaultAction !== 'Pass') {
          const rule = `${direction}/end`;
          const id = tierEndId(e.iface, direction, tier.name || t);
          for (const code of ['D', 'DN'] as const) visit({ code, tier: name, policy: END_OF_TIER, rule, direction }, id);
        }
      });
    }
  }
  for (const p of input.policies) {
    const tier = tierOf.get(p.id);
    if (tier === undefined) continue;
    for (const direction of ['ingress', 'egress'] as const) {
      p[direction]?.forEach((r, i) => {
        const code = ruleCode(r.action, p.staged === true);
        const id = ruleId(p.id, direction, i);
        for (const c of code === 'D' ? (['D', 'DN'] as const) : code ? [code] : [])
          visit({ code: c, tier, policy: p.id, rule: `${direction}/${i}`, direction }, id);
      });
    }
  }
}
