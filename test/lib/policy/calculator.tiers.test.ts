// The evaluation order as Calico's tiers decide it, one rule per test: which tier a policy is
// in and where it sorts, what a policy that matches no rule does, Pass, a tier's default action,
// and the endpoint's profile past the last tier. Each test names the Calico documentation it
// follows (the Tier reference's "How policy is evaluated", its spec fields, the tiered policy
// guide's default tier) and reads the verdict from the PolicyInput felix compiles.
import assert from 'node:assert/strict';
import { PolicyCalculator, PolicyExplainer, policyInput } from '../../../lib/policy/index.js';
import type { Resource } from '../../../lib/resources/index.js';
import { cnp, gnp, inTier, knp, namespace, pod, tier } from './fixtures.js';

const CLUSTER: Resource[] = [
  namespace('x', { ns: 'x' }),
  namespace('y', { ns: 'y' }),
  namespace('z', { ns: 'z' }),
  pod('x', 'a', '10.65.0.2', { app: 'web' }),
  pod('y', 'a', '10.65.1.2', { app: 'web' }),
  pod('z', 'a', '10.65.2.2', { app: 'web' }),
];
const verdict = (resources: Resource[], src: string, dst: string, port = 80) =>
  new PolicyExplainer([...CLUSTER, ...resources]).verdict(src, dst, 'tcp', port);
const ingressOf = (resources: Resource[], iface = 'cali-x-a') =>
  policyInput([...CLUSTER, ...resources], 'n1').endpoints.find((e) => e.iface === iface)!.ingress;

const denyFromY = cnp('x', 'deny-y', { order: 500, ingress: [{ action: 'Deny', source: { namespaceSelector: 'ns == "y"' } }] });
const allowAllK8s = knp('x', 'allow-all', { ingress: [{}] });
const denyAllK8s = knp('x', 'deny-all', { policyTypes: ['Ingress'] });

describe('policy calculation: tiers (Calico evaluation order)', () => {
  it('Kubernetes NetworkPolicies are policies of the default tier at order 1000, interleaved with Calico policies by order', () => {
    // Tiered policy guide: the default tier holds policies without a tier and Kubernetes policies;
    // Calico converts a Kubernetes NetworkPolicy to knp.default.<name> with order 1000.
    const before = gnp('before', { order: 999, ingress: [{ action: 'Allow' }] });
    const after = gnp('after', { order: 1001, ingress: [{ action: 'Allow' }] });
    assert.deepEqual(ingressOf([after, allowAllK8s, before]), [inTier(['gnp.before', 'knp.default.x.allow-all', 'gnp.after'])]);
  });

  it('equal orders are broken by name, then namespace, then kind (a Kubernetes policy by knp.default.<name>)', () => {
    // NetworkPolicy reference (order) and felix's policy sorter: ties by name.
    const resources = [
      gnp('m', { order: 1000 }),
      cnp('x', 'a', { order: 1000 }),
      knp('x', 'a', {}),
      cnp('x', 'm', { order: 1000 }),
      gnp('l', {}),
    ];
    assert.deepEqual(ingressOf(resources), [inTier(['np.x.a', 'knp.default.x.a', 'gnp.m', 'np.x.m', 'gnp.l'])]);
  });

  it('a policy that selects the endpoint but matches no rule hands the packet to the next policy of the same tier', () => {
    // Tier reference, "How policy is evaluated": a tier's policies are processed in order;
    // only an Allow or Deny ends the evaluation.
    assert.equal(verdict([denyFromY, allowAllK8s], 'y/a', 'x/a').allowed, false, 'y is denied at order 500');
    const z = verdict([denyFromY, allowAllK8s], 'z/a', 'x/a');
    assert.equal(z.allowed, true, 'z matches no rule of deny-y, so the Kubernetes policy at 1000 allows it');
    assert.equal(z.ingress?.rule?.policy, 'knp.default.x.allow-all');
  });

  it('at the end of a tier that has a policy for the endpoint, its default action Deny drops the packet', () => {
    // Tier reference: a tier that applies to the endpoint but takes no action on the packet drops it.
    const v = verdict([denyFromY], 'z/a', 'x/a');
    assert.deepEqual([v.allowed, v.ingress?.reason, v.ingress?.tierName], [false, 'end-of-tier', 'default']);
  });

  it('Pass jumps to the next tier that has a policy for the endpoint; past the last tier the profile allows', () => {
    // Tier reference: Pass hands the packet to the next tier holding a policy for the endpoint;
    // past the last, the endpoint's profile (a pod's namespace profile allows).
    const pass = gnp('pass', { order: 10, ingress: [{ action: 'Pass' }] });
    const v = verdict([pass, denyAllK8s], 'y/a', 'x/a');
    assert.deepEqual([v.allowed, v.ingress?.reason], [true, 'passed'], 'the Kubernetes deny-all in the same tier is skipped');
    const security = tier('security', { order: 100 });
    const passToDefault = gnp('security.pass', { tier: 'security', ingress: [{ action: 'Pass' }] });
    const next = verdict([security, passToDefault, denyAllK8s], 'y/a', 'x/a');
    assert.deepEqual([next.allowed, next.ingress?.reason, next.ingress?.tierName], [false, 'end-of-tier', 'default']);
  });

  it('a tier whose default action is Pass sends what none of its policies decided to the next tier', () => {
    // Tier reference: defaultAction Pass changes the end of the tier from a drop to the next tier.
    const platform = gnp('platform.deny-y', {
      tier: 'platform',
      ingress: [{ action: 'Deny', source: { namespaceSelector: 'ns == "y"' } }],
    });
    const passing = tier('platform', { order: 100, defaultAction: 'Pass' });
    assert.equal(verdict([passing, platform], 'z/a', 'x/a').allowed, true, 'z passes the platform tier; no later tier: allowed');
    assert.equal(verdict([passing, platform], 'y/a', 'x/a').allowed, false, 'the tier still denies what its rules deny');
    assert.equal(verdict([passing, platform, denyAllK8s], 'z/a', 'x/a').allowed, false, 'the default tier decides next');
    const denying = tier('platform', { order: 100, defaultAction: 'Deny' });
    assert.equal(verdict([denying, platform, allowAllK8s], 'z/a', 'x/a').allowed, false, 'Deny ends it before the default tier');
  });

  it('tiers run by order, lowest first, an unordered tier last, equal orders by name; the default tier is at 1,000,000', () => {
    // Tier reference, spec.order; the default tier's order is 1,000,000.
    const resources: Resource[] = [
      tier('b', { order: 10 }),
      tier('a', { order: 10 }),
      tier('late', { order: 2_000_000 }),
      tier('never', {}),
      gnp('never.p', { tier: 'never' }),
      gnp('late.p', { tier: 'late' }),
      gnp('b.p', { tier: 'b' }),
      gnp('a.p', { tier: 'a' }),
      gnp('p', {}),
    ];
    assert.deepEqual(
      ingressOf(resources).map((t) => ('name' in t ? t.name : '?')),
      ['a', 'b', 'default', 'late', 'never'],
    );
  });

  it('a tier with no policy for the endpoint in a direction is left out of that direction', () => {
    // Tier reference: only the tiers that contain a policy applying to the endpoint process the packet.
    const resources: Resource[] = [tier('t', { order: 1 }), gnp('t.out', { tier: 't', types: ['Egress'] }), allowAllK8s];
    const input = policyInput([...CLUSTER, ...resources], 'n1');
    const a = input.endpoints.find((e) => e.iface === 'cali-x-a')!;
    assert.deepEqual(a.ingress, [inTier(['knp.default.x.allow-all'])]);
    assert.deepEqual(a.egress, [inTier(['gnp.t.out'], 't')]);
  });

  it('a Tier changed or deleted re-orders every endpoint it touches, one change at a time', () => {
    const c = new PolicyCalculator('n1');
    for (const r of [...CLUSTER, tier('t', { order: 1 }), gnp('t.p', { tier: 't' }), gnp('p', {})]) c.put(r);
    const a = () => c.input().endpoints.find((e) => e.iface === 'cali-x-a')!.ingress;
    assert.deepEqual(a(), [inTier(['gnp.t.p'], 't'), inTier(['gnp.p'])]);
    c.put(tier('t', { order: 2_000_000, defaultAction: 'Pass' }));
    assert.deepEqual(a(), [inTier(['gnp.p']), inTier(['gnp.t.p'], 't', 'Pass')]);
    c.delete('Tier', 't');
    assert.deepEqual(a(), [inTier(['gnp.p']), inTier(['gnp.t.p'], 't')], 'a tier no Tier names denies and sorts last');
    c.put(tier('default', { order: 1_000_000, defaultAction: 'Deny' }));
    assert.deepEqual(a(), [inTier(['gnp.p']), inTier(['gnp.t.p'], 't')], 'the default tier is always there, unchanged');
  });
});
