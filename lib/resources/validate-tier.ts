// Calico's projectcalico.org/v3 Tier, checked as Calico checks it: a name that can prefix a
// policy's (one DNS label, no dots), an order, and a default action of Deny or Pass. The tiers
// Calico builds in keep the order and action Calico fixes for them.
import type { Checker, Obj } from './checker.js';
import type { TierDefaultAction, TierSpec } from './policy-types.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const ACTIONS: readonly TierDefaultAction[] = ['Deny', 'Pass'];

/** The tiers Calico creates itself, with the order and default action it does not let a user change. */
export const BUILT_IN_TIERS: Readonly<Record<string, { readonly order: number; readonly defaultAction: TierDefaultAction }>> = {
  default: { order: 1_000_000, defaultAction: 'Deny' },
  'kube-admin': { order: 1_000, defaultAction: 'Pass' },
  'kube-baseline': { order: 10_000_000, defaultAction: 'Pass' },
  // Where Calico puts the Kubernetes AdminNetworkPolicies (by priority) and the BaselineAdminNetworkPolicy.
  adminnetworkpolicy: { order: 1_000, defaultAction: 'Pass' },
  baselineadminnetworkpolicy: { order: 10_000_000, defaultAction: 'Pass' },
};

/** A tier's name: one DNS label, since `<tier>.<name>` names its policies. Undefined when it is one. */
export function tierNameProblem(name: string): string | undefined {
  if (name.length > 63) return `${JSON.stringify(name)} is longer than 63 characters`;
  if (!DNS_LABEL.test(name))
    return `${JSON.stringify(name)} must be lower-case letters, digits and '-' (no '.': a policy may still be named <tier>.<name>)`;
  return undefined;
}

export function checkTier(c: Checker, s: Obj, name: string): TierSpec {
  const bad = tierNameProblem(name);
  if (bad) c.fail('metadata.name', bad);
  c.only(s, ['order', 'defaultAction'], 'spec');
  const spec: TierSpec = { defaultAction: c.oneOf(s, 'defaultAction', 'spec', ACTIONS, 'Deny') };
  if (s.order !== undefined && s.order !== null) {
    if (typeof s.order !== 'number' || !Number.isFinite(s.order)) c.fail('spec.order', `must be a number, not ${JSON.stringify(s.order)}`);
    spec.order = s.order;
  }
  const fixed = Object.hasOwn(BUILT_IN_TIERS, name) ? BUILT_IN_TIERS[name] : undefined;
  if (fixed) {
    if (spec.order !== fixed.order) c.fail('spec.order', `the ${name} tier's order is ${fixed.order}, not ${spec.order ?? 'absent'}`);
    if (spec.defaultAction !== fixed.defaultAction)
      c.fail('spec.defaultAction', `the ${name} tier's default action is ${fixed.defaultAction}, not ${spec.defaultAction}`);
  }
  return { ...(spec.order !== undefined ? { order: spec.order } : {}), defaultAction: spec.defaultAction };
}
