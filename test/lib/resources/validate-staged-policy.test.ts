// Calico's staged policies as validation reads them: stagedAction Set (the default) or Delete; a
// staged Set held to every rule of the policy it previews; a staged Delete that names its policy
// and nothing more; unknown fields refused, every error by its field.
import assert from 'node:assert/strict';
import { ValidationError, validateResource } from '../../../lib/resources/index.js';

const doc = (kind: string, spec: Record<string, unknown>, namespace?: string) => ({
  apiVersion: 'projectcalico.org/v3',
  kind,
  metadata: { name: 'p', ...(namespace ? { namespace } : {}) },
  spec,
});

function refused(d: unknown, field: string, reason: RegExp): void {
  assert.throws(
    () => validateResource(d),
    (e: unknown) => e instanceof ValidationError && e.field === field && reason.test(e.reason),
    `${JSON.stringify(d)} must be refused naming ${field}`,
  );
}

describe('resources: staged policies', () => {
  it('a StagedNetworkPolicy is a NetworkPolicy plus stagedAction, Set by default, with the enforced kind defaults filled', () => {
    const r = validateResource(doc('StagedNetworkPolicy', { selector: "app == 'web'", ingress: [{ action: 'Deny' }] }, 'x'));
    assert.equal(r.kind, 'StagedNetworkPolicy');
    assert.equal(r.metadata.namespace, 'x');
    assert.deepEqual(r.spec, { stagedAction: 'Set', selector: "app == 'web'", types: ['Ingress'], ingress: [{ action: 'Deny' }] });
    // Without a namespace it goes to default, as a NetworkPolicy does.
    assert.equal(validateResource(doc('StagedNetworkPolicy', { stagedAction: 'Set' })).metadata.namespace, 'default');
  });

  it('a StagedGlobalNetworkPolicy takes namespaceSelector and a tier; it has no namespace', () => {
    const r = validateResource(
      doc('StagedGlobalNetworkPolicy', { tier: 'security', namespaceSelector: "ns == 'x'", egress: [{ action: 'Pass' }] }),
    );
    assert.deepEqual(r.spec, {
      stagedAction: 'Set',
      tier: 'security',
      namespaceSelector: "ns == 'x'",
      types: ['Egress'],
      egress: [{ action: 'Pass' }],
    });
    refused(doc('StagedGlobalNetworkPolicy', {}, 'x'), 'metadata.namespace', /not namespaced/);
    refused(doc('StagedNetworkPolicy', { namespaceSelector: 'all()' }, 'x'), 'spec.namespaceSelector', /unknown field/);
  });

  it('a StagedKubernetesNetworkPolicy is a Kubernetes NetworkPolicy spec plus stagedAction, under projectcalico.org/v3', () => {
    const r = validateResource(
      doc('StagedKubernetesNetworkPolicy', { podSelector: { matchLabels: { app: 'db' } }, egress: [{ ports: [{ port: 5432 }] }] }, 'x'),
    );
    assert.equal(r.apiVersion, 'projectcalico.org/v3');
    assert.deepEqual(r.spec, {
      stagedAction: 'Set',
      podSelector: { matchLabels: { app: 'db' } },
      policyTypes: ['Ingress', 'Egress'],
      egress: [{ ports: [{ protocol: 'TCP', port: 5432 }] }],
    });
    refused(doc('StagedKubernetesNetworkPolicy', { ingress: [{ from: [{}] }] }, 'x'), 'spec.ingress[0].from[0]', /peer/);
  });

  it('stagedAction is Set or Delete; Learn and Ignore are refused by name', () => {
    refused(doc('StagedNetworkPolicy', { stagedAction: 'Apply' }, 'x'), 'spec.stagedAction', /Set, Delete/);
    refused(doc('StagedGlobalNetworkPolicy', { stagedAction: 'Learn' }), 'spec.stagedAction', /not supported by podroute/);
    refused(doc('StagedKubernetesNetworkPolicy', { stagedAction: 'Ignore' }, 'x'), 'spec.stagedAction', /not supported by podroute/);
  });

  it('a staged Set is held to its enforced kind: bad actions, selectors and unknown fields are refused by path', () => {
    refused(doc('StagedNetworkPolicy', { ingress: [{ action: 'Accept' }] }, 'x'), 'spec.ingress[0].action', /Allow/);
    refused(doc('StagedGlobalNetworkPolicy', { selector: "app = 'x'" }), 'spec.selector', /./);
    refused(doc('StagedNetworkPolicy', { ingres: [] }, 'x'), 'spec.ingres', /unknown field/);
    refused(doc('StagedNetworkPolicy', { tier: 'a.b' }, 'x'), 'spec.tier', /no '\.'/);
    refused(doc('StagedKubernetesNetworkPolicy', { podSelector: {}, types: ['Ingress'] }, 'x'), 'spec.types', /unknown field/);
  });

  it('a staged Delete keeps only its action (and a Calico kind its tier); any other field is refused', () => {
    assert.deepEqual(validateResource(doc('StagedNetworkPolicy', { stagedAction: 'Delete', tier: 'security' }, 'x')).spec, {
      stagedAction: 'Delete',
      tier: 'security',
    });
    assert.deepEqual(validateResource(doc('StagedGlobalNetworkPolicy', { stagedAction: 'Delete' })).spec, { stagedAction: 'Delete' });
    assert.deepEqual(validateResource(doc('StagedKubernetesNetworkPolicy', { stagedAction: 'Delete' }, 'x')).spec, {
      stagedAction: 'Delete',
    });
    refused(
      doc('StagedNetworkPolicy', { stagedAction: 'Delete', selector: 'all()' }, 'x'),
      'spec.selector',
      /empty when stagedAction is Delete/,
    );
    refused(doc('StagedGlobalNetworkPolicy', { stagedAction: 'Delete', order: 10 }), 'spec.order', /empty when stagedAction is Delete/);
    refused(doc('StagedKubernetesNetworkPolicy', { stagedAction: 'Delete', podSelector: {} }, 'x'), 'spec.podSelector', /empty/);
    refused(doc('StagedKubernetesNetworkPolicy', { stagedAction: 'Delete', tier: 'a' }, 'x'), 'spec.tier', /empty/);
  });

  it('staged policies carry Kubernetes label rules on their metadata, as the policies they preview', () => {
    const bad = { ...doc('StagedNetworkPolicy', {}, 'x'), metadata: { name: 'p', namespace: 'x', labels: { 'a b': 'c' } } };
    assert.throws(
      () => validateResource(bad),
      (e: unknown) => e instanceof ValidationError && e.field.startsWith('metadata.labels'),
      'bad label key',
    );
  });
});
