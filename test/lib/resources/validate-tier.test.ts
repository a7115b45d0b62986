// Calico's Tier as validation reads it: order and defaultAction (Deny by default), a name that
// can prefix its policies' names, and the order and action Calico fixes for its built-in tiers.
import assert from 'node:assert/strict';
import { type GlobalNetworkPolicy, ValidationError, validateResource } from '../../../lib/resources/index.js';

const tier = (name: string, spec?: Record<string, unknown>) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Tier',
  metadata: { name },
  spec,
});

function refused(doc: unknown, field: string, reason: RegExp): void {
  assert.throws(
    () => validateResource(doc),
    (e: unknown) => e instanceof ValidationError && e.field === field && reason.test(e.reason),
    `${JSON.stringify(doc)} must be refused naming ${field}`,
  );
}

describe('resources: Tier', () => {
  it('defaultAction defaults to Deny; order is kept; an absent order stays absent (the tier sorts last)', () => {
    assert.deepEqual(validateResource(tier('security', { order: 100 })).spec, { order: 100, defaultAction: 'Deny' });
    assert.deepEqual(validateResource(tier('platform', { defaultAction: 'Pass' })).spec, { defaultAction: 'Pass' });
    assert.deepEqual(validateResource(tier('empty')).spec, { defaultAction: 'Deny' });
  });

  it('defaultAction is Deny or Pass; order a number; no other field', () => {
    refused(tier('t', { defaultAction: 'Allow' }), 'spec.defaultAction', /Deny, Pass/);
    refused(tier('t', { order: '10' }), 'spec.order', /must be a number/);
    refused(tier('t', { selector: 'all()' }), 'spec.selector', /unknown field/);
  });

  it('a tier name is one DNS label: it prefixes its policies, so it has no dot', () => {
    refused(tier('a.b'), 'metadata.name', /no '\.'/);
    refused(tier('x'.repeat(64)), 'metadata.name', /longer than 63/);
    refused({ ...tier('t'), metadata: { name: 't', namespace: 'x' } }, 'metadata.namespace', /not namespaced/);
  });

  it('the built-in tiers keep the order and action Calico fixes: default 1000000 Deny, kube-admin 1000 Pass, kube-baseline 10000000 Pass', () => {
    assert.deepEqual(validateResource(tier('default', { order: 1_000_000 })).spec, { order: 1_000_000, defaultAction: 'Deny' });
    refused(tier('default', { order: 10 }), 'spec.order', /1000000/);
    refused(tier('default', { order: 1_000_000, defaultAction: 'Pass' }), 'spec.defaultAction', /Deny/);
    refused(tier('kube-admin', { order: 1000 }), 'spec.defaultAction', /Pass/);
    assert.deepEqual(validateResource(tier('kube-baseline', { order: 10_000_000, defaultAction: 'Pass' })).spec, {
      order: 10_000_000,
      defaultAction: 'Pass',
    });
  });

  it("the admin policies' tiers keep Calico's too: adminnetworkpolicy 1000 Pass, baselineadminnetworkpolicy 10000000 Pass", () => {
    assert.deepEqual(validateResource(tier('adminnetworkpolicy', { order: 1000, defaultAction: 'Pass' })).spec, {
      order: 1000,
      defaultAction: 'Pass',
    });
    refused(tier('adminnetworkpolicy', { order: 5, defaultAction: 'Pass' }), 'spec.order', /is 1000, not 5/);
    refused(tier('baselineadminnetworkpolicy', { order: 10_000_000 }), 'spec.defaultAction', /Pass, not Deny/);
  });

  it("a policy's name need not carry its tier (Calico 3.31 dropped the <tier>.<name> rule); spec.tier alone places it", () => {
    const gnp = (name: string, spec: Record<string, unknown>) => ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name },
      spec,
    });
    assert.equal((validateResource(gnp('security.p', { tier: 'security' })) as GlobalNetworkPolicy).spec.tier, 'security');
    assert.equal((validateResource(gnp('p', { tier: 'security' })) as GlobalNetworkPolicy).spec.tier, 'security');
    assert.equal((validateResource(gnp('default.p', {})) as GlobalNetworkPolicy).spec.tier, undefined);
    assert.equal((validateResource(gnp('allow.web', {})) as GlobalNetworkPolicy).spec.tier, undefined);
    assert.equal((validateResource(gnp('p', { tier: 'default' })) as GlobalNetworkPolicy).spec.tier, 'default');
    refused(gnp('security.p', { tier: 7 }), 'spec.tier', /string/);
    refused(gnp('p', { tier: 'a.b' }), 'spec.tier', /no '\.'/);
  });
});
