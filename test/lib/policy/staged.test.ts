// Staged policies in the calculation graph: they sit where the policy they preview would run and
// decide nothing, so the verdict is the enforced one; "as if" they were enforced (a Set in place of
// its enforced policy, a Delete with it gone), in Calico's tier order, is said beside it.
import assert from 'node:assert/strict';
import { formatPodExplanation, formatVerdict, PolicyCalculator, PolicyExplainer, policyInput } from '../../../lib/policy/index.js';
import type { Resource } from '../../../lib/resources/index.js';
import { cnp, inTier, knp, namespace, pod, tier } from './fixtures.js';

const CLUSTER: Resource[] = [
  namespace('x', { ns: 'x' }),
  namespace('y', { ns: 'y' }),
  pod('x', 'a', '10.65.0.2', { app: 'web' }),
  pod('y', 'a', '10.65.1.2', { app: 'web' }),
];

function staged(kind: 'StagedNetworkPolicy', ns: string, name: string, spec: Record<string, unknown>): Resource;
function staged(kind: 'StagedGlobalNetworkPolicy', ns: undefined, name: string, spec: Record<string, unknown>): Resource;
function staged(kind: 'StagedKubernetesNetworkPolicy', ns: string, name: string, spec: Record<string, unknown>): Resource;
function staged(kind: string, ns: string | undefined, name: string, spec: Record<string, unknown>): Resource {
  const filled =
    spec.stagedAction === 'Delete'
      ? spec
      : kind === 'StagedKubernetesNetworkPolicy'
        ? { podSelector: {}, policyTypes: ['Ingress'], ...spec }
        : { types: ['Ingress'], ...spec };
  return {
    apiVersion: 'projectcalico.org/v3',
    kind,
    metadata: { name, ...(ns ? { namespace: ns } : {}) },
    spec: { stagedAction: 'Set', ...filled },
  } as Resource;
}

const denyY = { action: 'Deny', source: { namespaceSelector: "ns == 'y'" } };
const explainer = (resources: Resource[]) => new PolicyExplainer([...CLUSTER, ...resources]);
const ingressOf = (resources: Resource[]) =>
  policyInput([...CLUSTER, ...resources], 'n1').endpoints.find((e) => e.iface === 'cali-x-a')!.ingress;

describe('policy calculation: staged policies', () => {
  it('a staged deny changes no verdict; as if enforced, it denies, naming the staged rule', () => {
    const v = explainer([staged('StagedNetworkPolicy', 'x', 'deny-y', { ingress: [denyY] })]).verdict('y/a', 'x/a', 'tcp', 80);
    assert.equal(v.allowed, true, 'the enforced verdict: no enforced policy selects x/a');
    assert.equal(v.ingress?.reason, 'no-policy', 'a staged policy alone does not isolate the pod');
    assert.equal(v.staged?.allowed, false, 'as if enforced, the staged deny drops it');
    assert.equal(v.staged?.ingress?.rule?.policy, 'staged:np.x.deny-y');
    assert.equal(v.staged?.ingress?.origin, 'spec.ingress[0]');
    assert.match(
      formatVerdict(v),
      /: allowed\n[\s\S]*as if the staged policies were enforced: denied, a change\n[\s\S]* {4}ingress of x\/a: denied by staged:np\.x\.deny-y spec\.ingress\[0\]/,
    );
  });

  it('without staged policies nothing is said about them, and the input holds no staged policy', () => {
    const v = explainer([cnp('x', 'deny-y', { types: ['Ingress'], ingress: [denyY as never] })]).verdict('y/a', 'x/a', 'tcp', 80);
    assert.equal(v.staged, undefined, 'no staged verdict when nothing is staged');
    assert.doesNotMatch(formatVerdict(v), /staged/);
    const input = policyInput([...CLUSTER, cnp('x', 'p', { types: ['Ingress'] })], 'n1');
    assert.ok(
      input.policies.every((p) => p.staged === undefined),
      'no policy is marked staged',
    );
  });

  it('a staged policy sits where its enforced policy would: same tier, order and tie key, marked staged in the input', () => {
    const resources = [
      cnp('x', 'first', { order: 10, types: ['Ingress'] }),
      knp('x', 'k', { policyTypes: ['Ingress'] }),
      staged('StagedNetworkPolicy', 'x', 'mid', { order: 500, ingress: [denyY] }),
      staged('StagedKubernetesNetworkPolicy', 'x', 'k', { ingress: [{}] }),
    ];
    // Kubernetes policies sort by knp.default.<name> at order 1000; the staged one shares the key, then ids break the tie.
    assert.deepEqual(ingressOf(resources), [inTier(['np.x.first', 'staged:np.x.mid', 'knp.default.x.k', 'staged:knp.default.x.k'])]);
    const input = policyInput([...CLUSTER, ...resources], 'n1');
    assert.deepEqual(
      input.policies.filter((p) => p.staged).map((p) => p.id),
      ['staged:np.x.mid', 'staged:knp.default.x.k'],
    );
  });

  it('a staged Set replaces the enforced policy of its kind and name; the other kinds of that name stay', () => {
    const enforced = [
      cnp('x', 'web', { order: 100, types: ['Ingress'], ingress: [{ action: 'Allow' }] }),
      knp('x', 'web', { ingress: [{}] }),
    ];
    const e = explainer([...enforced, staged('StagedNetworkPolicy', 'x', 'web', { order: 100, ingress: [denyY] })]);
    const v = e.verdict('y/a', 'x/a', 'tcp', 80);
    assert.equal(v.allowed, true, 'np.x.web allows today');
    assert.equal(v.ingress?.rule?.policy, 'np.x.web');
    assert.equal(v.staged?.allowed, false, 'as if staged, the new web denies y before the Kubernetes web allows it');
    assert.equal(v.staged?.ingress?.rule?.policy, 'staged:np.x.web');
    const text = formatPodExplanation(e.explainPod('x', 'a'));
    assert.match(text, /np\.x\.web \(Calico NetworkPolicy x\/web, order 100\): a staged policy sets or deletes it/);
    assert.match(
      text,
      /staged:np\.x\.web \(staged Calico NetworkPolicy x\/web, order 100\): staged, counts what it would match and decides nothing/,
    );
    assert.doesNotMatch(text, /knp\.default\.x\.web[^\n]*staged/, 'the Kubernetes policy of the same name is not replaced');
  });

  it('a staged Delete previews its enforced policy gone, and a tier it empties is no tier', () => {
    const denyAll = knp('x', 'deny-all', { policyTypes: ['Ingress'] });
    const v = explainer([denyAll, staged('StagedKubernetesNetworkPolicy', 'x', 'deny-all', { stagedAction: 'Delete' })]).verdict(
      'y/a',
      'x/a',
      'tcp',
      80,
    );
    assert.equal(v.allowed, false, 'the deny-all is enforced');
    assert.equal(v.staged?.allowed, true, 'as if deleted, nothing isolates x/a');
    assert.equal(v.staged?.ingress?.reason, 'no-policy');
  });

  it('a staged Delete of one kind leaves the other kinds alone', () => {
    const denyAll = knp('x', 'p', { policyTypes: ['Ingress'] });
    const v = explainer([denyAll, staged('StagedNetworkPolicy', 'x', 'p', { stagedAction: 'Delete' })]).verdict('y/a', 'x/a', 'tcp', 80);
    assert.equal(v.staged?.allowed, false, 'a StagedNetworkPolicy names np.x.p, not knp.default.x.p');
  });

  it('as if follows the tiers: a staged deny in a tier before default decides before the default tier allows', () => {
    const resources = [
      tier('security', { order: 100 }),
      knp('x', 'allow-all', { ingress: [{}] }),
      staged('StagedGlobalNetworkPolicy', undefined, 'no-y', {
        tier: 'security',
        ingress: [denyY, { action: 'Pass' }],
      }),
    ];
    const fromY = explainer(resources).verdict('y/a', 'x/a', 'tcp', 80);
    assert.equal(fromY.allowed, true);
    assert.equal(fromY.staged?.allowed, false);
    assert.equal(fromY.staged?.ingress?.tierName, 'security');
    // The staged tier's Pass hands the rest to the default tier, where the Kubernetes policy allows.
    const fromX = explainer([...resources, pod('x', 'b', '10.65.0.3')]).verdict('x/b', 'x/a', 'tcp', 80);
    assert.equal(fromX.staged?.allowed, true);
    assert.equal(fromX.staged?.ingress?.rule?.policy, 'knp.default.x.allow-all');
    // A tier of staged policies only is in the endpoint's tiers, and has no default action today.
    assert.deepEqual(ingressOf(resources), [inTier(['staged:gnp.no-y'], 'security'), inTier(['knp.default.x.allow-all'])]);
  });

  it('as if, a staged policy that matches nothing lets its tier end: the tier default action applies', () => {
    const resources = [
      tier('security', { order: 100 }),
      staged('StagedGlobalNetworkPolicy', undefined, 'only-x', {
        tier: 'security',
        ingress: [{ action: 'Allow', source: { namespaceSelector: "ns == 'x'" } }],
      }),
    ];
    const v = explainer(resources).verdict('y/a', 'x/a', 'tcp', 80);
    assert.equal(v.allowed, true);
    assert.equal(v.staged?.allowed, false);
    assert.equal(v.staged?.ingress?.reason, 'end-of-tier');
  });

  it('the holder follows staged puts and deletes: a Set becoming a Delete, a delete taking it out', () => {
    const c = new PolicyCalculator('n1');
    for (const r of [...CLUSTER, knp('x', 'p', { policyTypes: ['Ingress'] })]) c.put(r);
    const before = c.input();
    assert.equal(c.hasStaged, false);
    c.put(staged('StagedKubernetesNetworkPolicy', 'x', 'p', { ingress: [{}] }));
    assert.ok(
      c.input().policies.some((p) => p.id === 'staged:knp.default.x.p'),
      'the staged Set is in the input',
    );
    assert.deepEqual([...c.stagedReplaced()], ['knp.default.x.p']);
    c.put(staged('StagedKubernetesNetworkPolicy', 'x', 'p', { stagedAction: 'Delete' }));
    assert.ok(!c.input().policies.some((p) => p.id === 'staged:knp.default.x.p'), 'a Delete holds no policy');
    assert.deepEqual([...c.stagedReplaced()], ['knp.default.x.p']);
    c.delete('StagedKubernetesNetworkPolicy', 'x/p');
    assert.equal(c.hasStaged, false);
    assert.deepEqual(c.input().endpoints, before.endpoints, 'the endpoints are as before anything was staged');
  });
});
