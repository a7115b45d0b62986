// AdminNetworkPolicy and BaselineAdminNetworkPolicy in the calculation graph: where Calico puts
// them (the adminnetworkpolicy tier by priority, the baselineadminnetworkpolicy tier), what
// their rules become, and the verdicts the PolicyInput felix compiles gives with Kubernetes and
// Calico policies beside them. Each evaluation test names the sentence of the network-policy-api
// reference or Calico's tiered-policy guide it follows.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import { policyTier } from '../../../felix/policy/input.js';
import {
  formatPodExplanation,
  formatVerdict,
  parseAdminPolicy,
  parseBaselinePolicy,
  PolicyExplainer,
  policyInput,
} from '../../../lib/policy/index.js';
import type {
  AdminNetworkPolicy,
  AdminNetworkPolicySpec,
  BaselineAdminNetworkPolicy,
  BaselineAdminNetworkPolicySpec,
  Resource,
} from '../../../lib/resources/index.js';
import { cnp, knp, namespace, pod } from './fixtures.js';

function anp(name: string, spec: AdminNetworkPolicySpec): AdminNetworkPolicy {
  return { apiVersion: 'policy.networking.k8s.io/v1alpha1', kind: 'AdminNetworkPolicy', metadata: { name }, spec };
}

function banp(spec: BaselineAdminNetworkPolicySpec): BaselineAdminNetworkPolicy {
  return { apiVersion: 'policy.networking.k8s.io/v1alpha1', kind: 'BaselineAdminNetworkPolicy', metadata: { name: 'default' }, spec };
}

const ns = (name: string) => ({ matchLabels: { ns: name } });
const PORTS = [
  { name: 'web', protocol: 'TCP' as const, port: 80 },
  { name: 'dns', protocol: 'UDP' as const, port: 53 },
];
const CLUSTER: Resource[] = [
  namespace('x', { ns: 'x' }),
  namespace('y', { ns: 'y' }),
  namespace('z', { ns: 'z' }),
  pod('x', 'a', '10.65.0.2', { app: 'web' }, { ports: PORTS }),
  pod('x', 'b', '10.65.0.3', { app: 'db' }, { ports: PORTS }),
  pod('y', 'a', '10.65.1.2', { app: 'web' }, { ports: PORTS }),
  pod('z', 'a', '10.65.2.2', { app: 'web' }, { ports: PORTS }),
];
const verdict = (resources: Resource[], src: string, dst: string, port = 80, protocol: 'tcp' | 'udp' = 'tcp') =>
  new PolicyExplainer([...CLUSTER, ...resources]).verdict(src, dst, protocol, port);

const denyAllK8s = knp('x', 'deny-all', { policyTypes: ['Ingress'] });
const allowAllK8s = knp('x', 'allow-all', { policyTypes: ['Ingress'], ingress: [{}] });
const fromY = (action: 'Allow' | 'Deny' | 'Pass', priority = 10, name = `${action.toLowerCase()}-y`) =>
  anp(name, { priority, subject: { namespaces: ns('x') }, ingress: [{ action, from: [{ namespaces: ns('y') }] }] });

describe('policy calculation: AdminNetworkPolicy and BaselineAdminNetworkPolicy', () => {
  describe('conversion', () => {
    it('an ANP is a policy of tier adminnetworkpolicy, its priority as order, named kanp.adminnetworkpolicy.<name>', () => {
      const p = parseAdminPolicy(fromY('Deny', 42));
      assert.equal(p.id, 'kanp.adminnetworkpolicy.deny-y');
      assert.equal(p.tier, 'adminnetworkpolicy');
      assert.equal(p.order, 42);
      assert.deepEqual(p.selection, { selector: 'all()', namespaces: { kind: 'selector', selector: 'ns == "x"' } });
      assert.equal(p.egress, undefined, 'no egress rules: not an egress policy');
      assert.deepEqual(p.ingress, [
        {
          origin: 'spec.ingress[0].from[0]',
          action: 'Deny',
          source: { selection: { selector: 'all()', namespaces: { kind: 'selector', selector: 'ns == "y"' } } },
          destination: {},
        },
      ]);
    });

    it('a subject or peer of pods is both selectors; each peer and each protocol of the ports is a rule; names stand alone', () => {
      const p = parseAdminPolicy(
        anp('mixed', {
          priority: 0,
          subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'web' } } } },
          egress: [
            {
              action: 'Allow',
              to: [{ pods: { namespaceSelector: ns('y'), podSelector: {} } }, { networks: ['10.65.2.9/24'] }],
              ports: [
                { portNumber: { protocol: 'TCP', port: 80 } },
                { portRange: { protocol: 'UDP', start: 50, end: 60 } },
                { portRange: { protocol: 'TCP', start: 8000, end: 8080 } },
              ],
            },
            { action: 'Pass', to: [{ namespaces: {} }], ports: [{ namedPort: 'dns' }] },
          ],
        }),
      );
      assert.deepEqual(p.selection, { selector: 'app == "web"', namespaces: { kind: 'all' } });
      assert.deepEqual(
        p.egress!.map((r) => [r.origin, r.action, r.protocol, r.destination.nets, r.destination.ports]),
        [
          [
            'spec.egress[0].to[0]',
            'Allow',
            'tcp',
            undefined,
            [
              { first: 80, last: 80 },
              { first: 8000, last: 8080 },
            ],
          ],
          ['spec.egress[0].to[0]', 'Allow', 'udp', undefined, [{ first: 50, last: 60 }]],
          [
            'spec.egress[0].to[1]',
            'Allow',
            'tcp',
            ['10.65.2.0/24'],
            [
              { first: 80, last: 80 },
              { first: 8000, last: 8080 },
            ],
          ],
          ['spec.egress[0].to[1]', 'Allow', 'udp', ['10.65.2.0/24'], [{ first: 50, last: 60 }]],
          ['spec.egress[1].to[0]', 'Pass', undefined, undefined, [{ name: 'dns' }]],
        ],
      );
    });

    it('the BANP is a policy of tier baselineadminnetworkpolicy named kbanp.baselineadminnetworkpolicy.default', () => {
      const p = parseBaselinePolicy(banp({ subject: { namespaces: {} }, egress: [{ action: 'Deny', to: [{ namespaces: ns('z') }] }] }));
      assert.equal(p.id, 'kbanp.baselineadminnetworkpolicy.default');
      assert.equal(p.tier, 'baselineadminnetworkpolicy');
      assert.equal(p.ingress, undefined);
      assert.equal(p.egress?.length, 1);
    });

    it('the tiers sit around the default tier, and both pass what they leave undecided', () => {
      const resources = [
        ...CLUSTER,
        fromY('Deny'),
        allowAllK8s,
        banp({ subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] }),
      ];
      const ep = policyInput(resources, 'n1').endpoints.find((e) => e.iface === 'cali-x-a')!;
      assert.deepEqual(
        ep.ingress.map(policyTier).map((t) => [t.name, t.defaultAction, t.policies]),
        [
          ['adminnetworkpolicy', 'Pass', ['kanp.adminnetworkpolicy.deny-y']],
          ['default', 'Deny', ['knp.default.x.allow-all']],
          ['baselineadminnetworkpolicy', 'Pass', ['kbanp.baselineadminnetworkpolicy.default']],
        ],
      );
    });
  });

  describe('evaluation', () => {
    it('an ANP Allow wins over a Kubernetes deny-all', () => {
      // Reference, priority: every ANP rule comes before any NetworkPolicy rule.
      const resources = [fromY('Allow'), denyAllK8s];
      const v = verdict(resources, 'y/a', 'x/a');
      assert.equal(v.allowed, true, formatVerdict(v));
      assert.equal(v.ingress?.rule?.policy, 'kanp.adminnetworkpolicy.allow-y');
      assert.equal(verdict(resources, 'z/a', 'x/a').allowed, false, 'z is not matched by the ANP: the deny-all decides');
    });

    it('an ANP Deny wins over a Kubernetes allow-all', () => {
      const resources = [fromY('Deny'), allowAllK8s];
      assert.equal(verdict(resources, 'y/a', 'x/a').allowed, false, 'the ANP denies y');
      assert.equal(verdict(resources, 'z/a', 'x/a').ingress?.rule?.policy, 'knp.default.x.allow-all', 'z goes on to the allow-all');
    });

    it('Pass skips the remaining ANPs and hands the packet to the Kubernetes policies', () => {
      // Reference, action Pass: skip the remaining ANP rules, go to the NetworkPolicies selecting the pod.
      const resources = [fromY('Pass', 10), fromY('Deny', 20), allowAllK8s];
      const v = verdict(resources, 'y/a', 'x/a');
      assert.equal(v.allowed, true, formatVerdict(v));
      assert.equal(v.ingress?.rule?.policy, 'knp.default.x.allow-all');
      const withDeny = verdict([fromY('Pass', 10), denyAllK8s], 'y/a', 'x/a');
      assert.equal(withDeny.allowed, false, 'a passed packet meets the deny-all');
      assert.equal(withDeny.ingress?.reason, 'end-of-tier');
    });

    it('ANPs run by priority, lowest first; equal priorities by name', () => {
      // Reference, priority: lower values are checked first. Equal ones are undefined by the API; Calico orders by name.
      assert.equal(verdict([fromY('Allow', 5), fromY('Deny', 6)], 'y/a', 'x/a').allowed, true);
      assert.equal(verdict([fromY('Allow', 6), fromY('Deny', 5)], 'y/a', 'x/a').allowed, false);
      assert.equal(verdict([fromY('Deny', 5, 'b'), fromY('Allow', 5, 'a')], 'y/a', 'x/a').allowed, true, 'a before b');
    });

    it('an ANP that matches nothing passes: its tier never drops', () => {
      // Calico's guide: the adminnetworkpolicy tier's default action is Pass.
      const v = verdict([fromY('Deny')], 'z/a', 'x/a');
      assert.equal(v.allowed, true, formatVerdict(v));
      assert.equal(v.ingress?.reason, 'passed');
    });

    it('the BANP decides for a pod no NetworkPolicy selects, and not for one a NetworkPolicy selects', () => {
      // Reference, BANP rules: they apply to traffic no ANP or NetworkPolicy rule matched; a
      // NetworkPolicy that selects the pod isolates it, so the default tier ends in Deny first.
      const baseline = banp({ subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: ns('y') }] }] });
      assert.equal(verdict([baseline], 'y/a', 'z/a').allowed, false, 'z has no policy: the BANP denies y');
      assert.equal(verdict([baseline], 'x/a', 'z/a').allowed, true, 'the BANP does not match x, its tier passes');
      const k = knp('z', 'from-y', { policyTypes: ['Ingress'], ingress: [{ from: [{ namespaceSelector: ns('y') }] }] });
      const v = verdict([baseline, k], 'y/a', 'z/a');
      assert.equal(v.allowed, true, 'a Kubernetes policy admitting y overrides the BANP');
      assert.equal(verdict([baseline, k], 'x/a', 'z/a').ingress?.reason, 'end-of-tier', 'and isolates z from x before the BANP');
    });

    it('an ANP Pass with no NetworkPolicy for the pod goes to the BANP', () => {
      const baseline = banp({ subject: { namespaces: ns('x') }, ingress: [{ action: 'Deny', from: [{ namespaces: ns('y') }] }] });
      const v = verdict([fromY('Pass'), baseline], 'y/a', 'x/a');
      assert.equal(v.allowed, false, formatVerdict(v));
      assert.equal(v.ingress?.rule?.policy, 'kbanp.baselineadminnetworkpolicy.default');
    });

    it("a named port is the destination pod's port of that name", () => {
      // Reference, namedPort: a port on the pod, chosen by name.
      const onlyWeb = anp('web-only', {
        priority: 1,
        subject: { namespaces: ns('x') },
        ingress: [
          { action: 'Allow', from: [{ namespaces: {} }], ports: [{ namedPort: 'web' }] },
          { action: 'Deny', from: [{ namespaces: {} }] },
        ],
      });
      assert.equal(verdict([onlyWeb], 'y/a', 'x/a', 80).allowed, true, 'TCP 80 is web');
      assert.equal(verdict([onlyWeb], 'y/a', 'x/a', 81).allowed, false, 'TCP 81 is no named port');
      assert.equal(verdict([onlyWeb], 'y/a', 'x/a', 53, 'udp').allowed, false, 'UDP 53 is dns, not web');
    });

    it('egress: networks and pods peers, and the subject of pods', () => {
      const egress = anp('egress', {
        priority: 1,
        subject: { pods: { namespaceSelector: ns('x'), podSelector: { matchLabels: { app: 'db' } } } },
        egress: [
          { action: 'Allow', to: [{ networks: ['10.65.1.0/24'] }] },
          { action: 'Deny', to: [{ pods: { namespaceSelector: {}, podSelector: {} } }] },
        ],
      });
      assert.equal(verdict([egress], 'x/b', 'y/a').allowed, true, 'y/a is inside 10.65.1.0/24');
      assert.equal(verdict([egress], 'x/b', 'z/a').allowed, false, 'z/a is a pod outside it');
      assert.equal(verdict([egress], 'x/a', 'z/a').allowed, true, 'x/a is not app=db: not a subject');
    });

    it('a Calico policy of the default tier runs between the ANPs and the BANP', () => {
      const baseline = banp({ subject: { namespaces: {} }, ingress: [{ action: 'Allow', from: [{ namespaces: {} }] }] });
      const calico = cnp('x', 'deny-z', { order: 10, ingress: [{ action: 'Deny', source: { namespaceSelector: 'ns == "z"' } }] });
      assert.equal(verdict([fromY('Pass'), calico, baseline], 'z/a', 'x/a').allowed, false, 'the Calico Deny decides before the BANP');
      assert.equal(verdict([fromY('Allow'), calico, baseline], 'y/a', 'x/a').allowed, true);
    });
  });

  it('explain names the tiers, the kinds and what each tier does with what it leaves', () => {
    const baseline = banp({ subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: ns('z') }] }] });
    const text = formatPodExplanation(new PolicyExplainer([...CLUSTER, fromY('Pass'), baseline]).explainPod('x', 'a'));
    assert.match(text, /tier adminnetworkpolicy \(order 1000, what none of its policies decides passes on to the next tier\)/);
    assert.match(text, /kanp\.adminnetworkpolicy\.pass-y \(Kubernetes AdminNetworkPolicy pass-y, order 10\)/);
    assert.match(text, /tier baselineadminnetworkpolicy \(order 10000000, /);
    assert.match(text, /kbanp\.baselineadminnetworkpolicy\.default \(Kubernetes BaselineAdminNetworkPolicy default, order 1000\)/);
    assert.match(text, /egress: not isolated/);
  });

  it('felix compiles the admin tiers as tiers that pass on, the default tier as one that drops', () => {
    const baseline = banp({ subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: ns('z') }] }] });
    const table = compilePolicy(policyInput([...CLUSTER, fromY('Deny'), denyAllK8s, baseline], 'n1'));
    const ends = new Map(
      table.chains.flatMap((c) =>
        c.rules.flatMap((r) => (r.id?.startsWith('cali-x-a/') && r.id.includes('/tier/') ? [[r.id, r.expr]] : [])),
      ),
    );
    const end = (tier: string) => [...ends].find(([id]) => id.endsWith(`/tier/${tier}`))?.[1];
    assert.match(end('adminnetworkpolicy') ?? '', /counter$/, `the admin tier's end passes: ${[...ends].join('; ')}`);
    assert.match(end('default') ?? '', /counter drop$/, "the default tier's end drops");
    assert.match(end('baselineadminnetworkpolicy') ?? '', /counter$/, "the baseline tier's end passes");
  });
});
