// AdminNetworkPolicy and BaselineAdminNetworkPolicy as the API server's CRD schema checks them:
// what is required, the enums, list sizes, the priority range, unions of exactly one field, the
// BANP's single name, and unknown fields; every refusal names the field.
import assert from 'node:assert/strict';
import { parseResources, toManifest, ValidationError, validateResource } from '../../../lib/resources/index.js';

const API = 'policy.networking.k8s.io/v1alpha1';
const anp = (spec: unknown, name = 'p') => ({ apiVersion: API, kind: 'AdminNetworkPolicy', metadata: { name }, spec });
const banp = (spec: unknown, name = 'default') => ({ apiVersion: API, kind: 'BaselineAdminNetworkPolicy', metadata: { name }, spec });
const subject = { namespaces: { matchLabels: { ns: 'x' } } };
const peer = { namespaces: {} };
const withIngress = (rule: Record<string, unknown>) => anp({ priority: 1, subject, ingress: [{ action: 'Allow', from: [peer], ...rule }] });
const withEgress = (rule: Record<string, unknown>) => anp({ priority: 1, subject, egress: [{ action: 'Allow', to: [peer], ...rule }] });

function refused(doc: unknown, field: string, reason: RegExp): void {
  assert.throws(
    () => validateResource(doc),
    (e: unknown) => e instanceof ValidationError && e.field === field && reason.test(e.reason),
    `${JSON.stringify(doc)} must be refused naming ${field}`,
  );
}

describe('resources: AdminNetworkPolicy and BaselineAdminNetworkPolicy', () => {
  it('a full ANP reads back as written, protocols defaulted to TCP, under its own apiVersion', () => {
    const r = validateResource(
      anp({
        priority: 10,
        subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'web' } } } },
        ingress: [
          {
            name: 'pass-monitoring',
            action: 'Pass',
            from: [{ namespaces: { matchLabels: { team: 'mon' } } }],
            ports: [{ portNumber: { port: 80 } }, { portRange: { protocol: 'UDP', start: 5000, end: 5100 } }, { namedPort: 'http' }],
          },
        ],
        egress: [{ action: 'Deny', to: [{ networks: ['10.0.0.1/8', 'fd00::/64'] }, { pods: { namespaceSelector: {}, podSelector: {} } }] }],
      }),
    );
    assert.equal(r.kind, 'AdminNetworkPolicy');
    assert.equal(r.apiVersion, API);
    assert.deepEqual(r.spec, {
      priority: 10,
      subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'web' } } } },
      ingress: [
        {
          name: 'pass-monitoring',
          action: 'Pass',
          from: [{ namespaces: { matchLabels: { team: 'mon' } } }],
          ports: [
            { portNumber: { protocol: 'TCP', port: 80 } },
            { portRange: { protocol: 'UDP', start: 5000, end: 5100 } },
            { namedPort: 'http' },
          ],
        },
      ],
      egress: [{ action: 'Deny', to: [{ networks: ['10.0.0.1/8', 'fd00::/64'] }, { pods: { namespaceSelector: {}, podSelector: {} } }] }],
    });
    const back = parseResources(
      `apiVersion: ${API}\nkind: AdminNetworkPolicy\nmetadata: {name: p}\nspec: {priority: 0, subject: {namespaces: {}}}\n`,
    );
    assert.deepEqual(toManifest(back[0]!), {
      apiVersion: API,
      kind: 'AdminNetworkPolicy',
      metadata: { name: 'p' },
      spec: { priority: 0, subject: { namespaces: {} } },
    });
  });

  it('priority is required, an integer from 0 to 1000', () => {
    refused(anp({ subject }), 'spec.priority', /is required/);
    refused(anp({ priority: 1001, subject }), 'spec.priority', /0 to 1000/);
    refused(anp({ priority: -1, subject }), 'spec.priority', /0 to 1000/);
    refused(anp({ priority: 1.5, subject }), 'spec.priority', /integer/);
    refused(anp({ priority: '5', subject }), 'spec.priority', /string/);
    assert.equal(validateResource(anp({ priority: 1000, subject })).kind, 'AdminNetworkPolicy');
  });

  it('subject is required and sets exactly one of namespaces and pods; pods needs both selectors', () => {
    refused(anp({ priority: 1 }), 'spec.subject', /is required/);
    refused(anp({ priority: 1, subject: {} }), 'spec.subject', /exactly one of namespaces, pods/);
    refused(
      anp({ priority: 1, subject: { namespaces: {}, pods: { namespaceSelector: {}, podSelector: {} } } }),
      'spec.subject',
      /not namespaces and pods/,
    );
    refused(anp({ priority: 1, subject: { pods: { podSelector: {} } } }), 'spec.subject.pods.namespaceSelector', /is required/);
    refused(anp({ priority: 1, subject: { nodes: {} } }), 'spec.subject.nodes', /unknown field/);
    refused(
      anp({ priority: 1, subject: { namespaces: { matchExpressions: [{ key: 'a', operator: 'Is' }] } } }),
      'spec.subject.namespaces.matchExpressions[0].operator',
      /In, NotIn/,
    );
  });

  it('a rule needs an action of its kind and 1 to 100 peers; at most 100 rules; a name of at most 100 characters', () => {
    refused(withIngress({ action: undefined }), 'spec.ingress[0].action', /is required/);
    refused(withIngress({ action: 'Accept' }), 'spec.ingress[0].action', /Allow, Deny, Pass/);
    refused(withIngress({ from: undefined }), 'spec.ingress[0].from', /is required/);
    refused(withIngress({ from: [] }), 'spec.ingress[0].from', /at least 1/);
    refused(withIngress({ from: Array(101).fill(peer) }), 'spec.ingress[0].from', /at most 100/);
    refused(withIngress({ name: 'n'.repeat(101) }), 'spec.ingress[0].name', /at most 100/);
    refused(withIngress({ to: [peer] }), 'spec.ingress[0].to', /unknown field/);
    const many = Array(101).fill({ action: 'Deny', from: [peer] });
    refused(anp({ priority: 1, subject, ingress: many }), 'spec.ingress', /at most 100/);
    refused(banp({ subject, ingress: [{ action: 'Pass', from: [peer] }] }), 'spec.ingress[0].action', /Allow, Deny, not "Pass"/);
  });

  it('a peer sets exactly one field; networks only in egress, 1 to 25 CIDRs; nodes and domainNames are refused by name', () => {
    refused(withIngress({ from: [{}] }), 'spec.ingress[0].from[0]', /exactly one of namespaces, pods/);
    refused(withIngress({ from: [{ networks: ['10.0.0.0/8'] }] }), 'spec.ingress[0].from[0].networks', /unknown field/);
    refused(withEgress({ to: [{ namespaces: {}, networks: ['10.0.0.0/8'] }] }), 'spec.egress[0].to[0]', /not namespaces and networks/);
    refused(withEgress({ to: [{ networks: [] }] }), 'spec.egress[0].to[0].networks', /at least 1/);
    refused(
      withEgress({ to: [{ networks: Array.from({ length: 26 }, (_, i) => `10.${i}.0.0/16`) }] }),
      'spec.egress[0].to[0].networks',
      /at most 25/,
    );
    refused(withEgress({ to: [{ networks: ['10.0.0.1'] }] }), 'spec.egress[0].to[0].networks[0]', /not a CIDR/);
    refused(withEgress({ to: [{ networks: ['10.0.0.0/8', '10.0.0.0/8'] }] }), 'spec.egress[0].to[0].networks[1]', /twice/);
    refused(withEgress({ to: [{ nodes: {} }] }), 'spec.egress[0].to[0].nodes', /not supported.*host endpoints/);
    refused(withEgress({ to: [{ domainNames: ['example.com'] }] }), 'spec.egress[0].to[0].domainNames', /not supported/);
  });

  it('a port sets exactly one of portNumber, namedPort, portRange; numbers 1-65535; a range ends above its start', () => {
    refused(withIngress({ ports: [] }), 'spec.ingress[0].ports', /at least 1/);
    refused(withIngress({ ports: [{}] }), 'spec.ingress[0].ports[0]', /exactly one of portNumber, namedPort, portRange/);
    refused(
      withIngress({ ports: [{ portNumber: { port: 80 }, namedPort: 'x' }] }),
      'spec.ingress[0].ports[0]',
      /not portNumber and namedPort/,
    );
    refused(withIngress({ ports: [{ portNumber: {} }] }), 'spec.ingress[0].ports[0].portNumber.port', /is required/);
    refused(withIngress({ ports: [{ portNumber: { port: 0 } }] }), 'spec.ingress[0].ports[0].portNumber.port', /1 to 65535/);
    refused(
      withIngress({ ports: [{ portNumber: { port: 80, protocol: 'ICMP' } }] }),
      'spec.ingress[0].ports[0].portNumber.protocol',
      /TCP, UDP, SCTP/,
    );
    refused(
      withIngress({ ports: [{ portRange: { start: 90, end: 80 } }] }),
      'spec.ingress[0].ports[0].portRange.end',
      /greater than start 90/,
    );
    refused(withIngress({ ports: [{ portRange: { start: 90 } }] }), 'spec.ingress[0].ports[0].portRange.end', /is required/);
    refused(withIngress({ ports: [{ namedPort: 'Web' }] }), 'spec.ingress[0].ports[0].namedPort', /not a port name/);
    refused(
      withEgress({ to: [{ networks: ['10.0.0.0/8'] }], ports: [{ namedPort: 'web' }] }),
      'spec.egress[0].ports',
      /namedPort cannot be used with a networks peer/,
    );
  });

  it('unknown fields are refused, in spec and in a rule', () => {
    refused(anp({ priority: 1, subject, tier: 'x' }), 'spec.tier', /unknown field/);
    refused(withIngress({ protocol: 'TCP' }), 'spec.ingress[0].protocol', /unknown field/);
    refused(banp({ subject, priority: 1 }), 'spec.priority', /unknown field/);
  });

  it('the BaselineAdminNetworkPolicy is one, named default; it is cluster-wide; the apiVersion is its own', () => {
    refused(banp({ subject }, 'other'), 'metadata.name', /must be "default"/);
    refused(banp({}), 'spec.subject', /is required/);
    refused({ ...banp({ subject }), metadata: { name: 'default', namespace: 'x' } }, 'metadata.namespace', /not namespaced/);
    refused({ ...banp({ subject }), apiVersion: 'projectcalico.org/v3' }, 'apiVersion', /must be policy\.networking\.k8s\.io\/v1alpha1/);
    assert.deepEqual(validateResource(banp({ subject, egress: [{ action: 'Deny', to: [peer] }] })).spec, {
      subject,
      egress: [{ action: 'Deny', to: [peer] }],
    });
  });
});
