// A Kubernetes LabelSelector (matchLabels + matchExpressions) as a Calico selector, the way
// Calico converts a NetworkPolicy's podSelector and namespaceSelector: every pair and every
// expression must hold, and `{}` is all(). NotIn and DoesNotExist hold for an object without
// the key, in both languages.
import type { LabelSelector } from './policy-types.js';
import { compileSelector, formatSelector, type Selector, type SelectorNode } from './selector.js';

/** The selector's tree. Values are assumed valid (validation refuses anything else). */
export function labelSelectorToNode(ls: LabelSelector): SelectorNode {
  const terms: SelectorNode[] = [];
  for (const key of Object.keys(ls.matchLabels ?? {}).sort()) terms.push({ op: '==', key, value: ls.matchLabels![key]! });
  for (const e of ls.matchExpressions ?? []) {
    const values = [...new Set(e.values ?? [])].sort();
    switch (e.operator) {
      case 'In':
        terms.push({ op: 'in', key: e.key, values });
        break;
      case 'NotIn':
        terms.push({ op: 'not in', key: e.key, values });
        break;
      case 'Exists':
        terms.push({ op: 'has', key: e.key });
        break;
      case 'DoesNotExist':
        terms.push({ op: '!', operand: { op: 'has', key: e.key } });
        break;
    }
  }
  if (terms.length === 0) return { op: 'all' };
  return terms.length === 1 ? terms[0]! : { op: '&&', operands: terms };
}

/** The selector in Calico's syntax, canonical (so two equal LabelSelectors give one text). */
export function labelSelectorToCalico(ls: LabelSelector): string {
  return formatSelector(labelSelectorToNode(ls));
}

/** The selector as a predicate over a label map. */
export function matchLabelSelector(ls: LabelSelector): Selector {
  return compileSelector(labelSelectorToNode(ls));
}
