// The canonical text of what a policy selects on, so that two rules that mean the same
// selector or net name the same set: selectors printed in lib/resources' one canonical form
// (Kubernetes LabelSelectors converted to it), namespace scopes with all() and global() told
// apart, nets as canonical CIDRs.
import { cidrNetwork, formatCidr, parseInterfaceAddress } from '../../ip/index.js';
import { canonicalSelector, labelSelectorToCalico, type LabelSelector } from '../resources/index.js';
import { type NamespaceScope, PolicyConversionError } from './model.js';

/** A Kubernetes LabelSelector as canonical Calico selector text; `{}` is all(). */
export function labelSelectorText(s: LabelSelector): string {
  return labelSelectorToCalico(s);
}

/** Calico selector text in its canonical form (absent or blank: all()); a bad one throws naming the field. */
export function selectorText(s: string | undefined, field: string, namespaces = false): string {
  try {
    return canonicalSelector(s ?? '', { allowGlobal: namespaces });
  } catch (e) {
    throw new PolicyConversionError(field, e instanceof Error ? e.message : String(e));
  }
}

/** The namespaces a namespaceSelector picks. */
export function namespaceScope(selector: string, field: string): NamespaceScope {
  const t = selectorText(selector, field, true);
  if (t === 'all()') return { kind: 'all' };
  if (t === 'global()') return { kind: 'global' };
  return { kind: 'selector', selector: t };
}

/** A net as written (host bits allowed, a bare address is a host) as its canonical CIDR. */
export function canonicalNet(text: string, field: string): string {
  try {
    return formatCidr(cidrNetwork(parseInterfaceAddress(text, field)));
  } catch (e) {
    throw new PolicyConversionError(field, e instanceof Error ? e.message : String(e));
  }
}
