// A rule's encoded expressions, kept by its text across transactions. An endpoint's chains are
// the same few statements for every pod (`ct state invalid drop`, jumps to the policies its
// namespace's pods share, the tier's drop), so a pod's add writes rules whose
// texts earlier transactions already compiled: their bytes are copied, not compiled again from
// the text. Only rules without anonymous sets (whose ids are the batch's) and without IPv4
// addresses (those are nftnl-rule-template.ts's) are kept.

/** Texts kept per family; past this the memory starts again (a policy table has a few thousand). */
const MAX_RULES = 8192;

const known = new Map<number, Map<string, Buffer>>();

/** The NFTA_RULE_EXPRESSIONS payload a rule with this text was written with before, if kept. */
export function knownExpressions(family: number, expr: string): Buffer | undefined {
  return known.get(family)?.get(expr);
}

/** Keeps `bytes` (copied) as the expressions of `expr`. */
export function keepExpressions(family: number, expr: string, bytes: Uint8Array): void {
  let texts = known.get(family);
  if (!texts) known.set(family, (texts = new Map()));
  if (texts.size >= MAX_RULES) texts.clear();
  texts.set(expr, Buffer.from(bytes));
}
