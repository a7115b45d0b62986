// `explain`: a pod's policies per direction in words and resolved to today's pods, and the
// verdict on a connection with what decided it, printed as `podroute policy explain` will.
import assert from 'node:assert/strict';
import { explainPod, formatPodExplanation, formatVerdict, PolicyExplainer, verdict } from '../../../lib/policy/index.js';
import type { Resource } from '../../../lib/resources/index.js';
import { gnp, knp, namespace, pod, tier } from './fixtures.js';

const CLUSTER: Resource[] = [
  namespace('x', { team: 'blue' }),
  namespace('y', { team: 'red' }),
  pod('x', 'a', '10.65.0.2', { app: 'web' }, { ports: [{ name: 'http', protocol: 'TCP', port: 8080 }] }),
  pod('x', 'b', '10.65.0.3', { app: 'db' }),
  pod('y', 'a', '10.65.1.2', { app: 'web' }, { node: 'n2' }),
  knp('x', 'web', {
    podSelector: { matchLabels: { app: 'web' } },
    ingress: [
      {
        from: [{ namespaceSelector: { matchLabels: { team: 'red' } } }, { ipBlock: { cidr: '10.0.0.0/8', except: ['10.65.0.0/16'] } }],
        ports: [{ protocol: 'TCP', port: 'http' }],
      },
    ],
  }),
  knp('x', 'no-egress', { policyTypes: ['Egress'] }),
  tier('security', { order: 100 }),
  gnp('security.no-ssh', {
    tier: 'security',
    order: 10,
    ingress: [{ action: 'Deny', protocol: 'TCP', destination: { ports: [22] } }, { action: 'Pass' }],
  }),
];

describe('policy explain', () => {
  it('explainPod: tiers, policies and rules per direction, peers resolved, isolation', () => {
    const e = explainPod(CLUSTER, 'x', 'a');
    assert.deepEqual(e.pod, {
      key: 'x/n1-k8s-a-eth0',
      namespace: 'x',
      pod: 'a',
      node: 'n1',
      addresses: ['10.65.0.2'],
      labels: { app: 'web' },
    });
    assert.deepEqual(e.ingress, {
      isolated: true,
      tiers: [
        {
          tier: 'security',
          order: 100,
          defaultAction: 'Deny',
          policies: [
            {
              id: 'gnp.security.no-ssh',
              kind: 'GlobalNetworkPolicy',
              name: 'security.no-ssh',
              order: 10,
              rules: [
                { origin: 'spec.ingress[0]', action: 'Deny', text: 'Deny TCP port 22 from anywhere', felixRules: [0] },
                { origin: 'spec.ingress[1]', action: 'Pass', text: 'Pass any protocol from anywhere', felixRules: [1] },
              ],
            },
          ],
        },
        {
          tier: 'default',
          order: 1000000,
          defaultAction: 'Deny',
          policies: [
            {
              id: 'knp.default.x.web',
              kind: 'KubernetesNetworkPolicy',
              name: 'web',
              namespace: 'x',
              order: 1000,
              rules: [
                {
                  origin: 'spec.ingress[0].from[0]',
                  action: 'Allow',
                  text: 'Allow TCP named port http from every pod in namespaces matching team == "red"',
                  peers: [{ key: 'y/n2-k8s-a-eth0', namespace: 'y', pod: 'a', node: 'n2', addresses: ['10.65.1.2'] }],
                  felixRules: [0],
                },
                {
                  origin: 'spec.ingress[0].from[1]',
                  action: 'Allow',
                  text: 'Allow TCP named port http from addresses in 10.0.0.0/8 except 10.65.0.0/16',
                  peers: [],
                  felixRules: [1],
                },
              ],
            },
          ],
        },
      ],
    });
    assert.equal(e.egress.isolated, true);
    assert.deepEqual(e.egress.tiers[0]!.policies[0]!.rules, []);
    const b = explainPod(CLUSTER, 'y', 'a');
    assert.equal(b.egress.isolated, false);
    assert.deepEqual(b.egress.tiers, []);
  });

  it('the text form', () => {
    assert.equal(
      formatPodExplanation(explainPod(CLUSTER, 'x', 'a')),
      [
        'pod x/a on node n1, addresses 10.65.0.2, labels app=web',
        'ingress: policies select the pod, tier by tier (replies to allowed connections pass); past the last tier, allowed',
        '  tier security (order 100, what none of its policies decides drops)',
        '    gnp.security.no-ssh (Calico GlobalNetworkPolicy security.no-ssh, order 10)',
        '      spec.ingress[0]: Deny TCP port 22 from anywhere',
        '      spec.ingress[1]: Pass any protocol from anywhere',
        '  tier default (order 1000000, what none of its policies decides drops)',
        '    knp.default.x.web (Kubernetes NetworkPolicy x/web, order 1000)',
        '      spec.ingress[0].from[0]: Allow TCP named port http from every pod in namespaces matching team == "red"',
        '        today: y/a 10.65.1.2',
        '      spec.ingress[0].from[1]: Allow TCP named port http from addresses in 10.0.0.0/8 except 10.65.0.0/16',
        '        today: no pod',
        'egress: policies select the pod, tier by tier (replies to allowed connections pass); past the last tier, allowed',
        '  tier default (order 1000000, what none of its policies decides drops)',
        '    knp.default.x.no-egress (Kubernetes NetworkPolicy x/no-egress, order 1000)',
        '      no rules: selects the pod and allows nothing',
      ].join('\n'),
    );
    assert.equal(
      formatPodExplanation(explainPod(CLUSTER, 'x', 'b')).split('\n')[0],
      'pod x/b on node n1, addresses 10.65.0.3, labels app=db',
    );
  });

  it('an unknown pod is an error naming it', () => {
    assert.throws(() => explainPod(CLUSTER, 'x', 'zz'), /no pod x\/zz/);
  });

  describe('verdict', () => {
    const e = new PolicyExplainer(CLUSTER);

    it('allowed by a Kubernetes policy of the default tier after the security tier passed it on', () => {
      const v = e.verdict('y/a', 'x/a', 'tcp', 8080);
      assert.equal(v.allowed, true);
      assert.deepEqual(v.packet, { src: '10.65.1.2', dst: '10.65.0.2', protocol: 'tcp', dstPort: 8080 });
      assert.deepEqual(v.egress, { allowed: true, reason: 'no-policy', logged: [], direction: 'egress', pod: 'y/a' });
      assert.deepEqual(v.ingress, {
        allowed: true,
        reason: 'rule',
        rule: { policy: 'knp.default.x.web', direction: 'ingress', index: 0, action: 'Allow' },
        tier: 1,
        tierName: 'default',
        logged: [],
        direction: 'ingress',
        pod: 'x/a',
        origin: 'spec.ingress[0].from[0]',
      });
      assert.equal(
        formatVerdict(v),
        [
          '10.65.1.2 -> 10.65.0.2 TCP 8080: allowed',
          '  egress of y/a: allowed, no policy selects it for egress',
          '  ingress of x/a: allowed by knp.default.x.web spec.ingress[0].from[0] (Allow, tier default)',
        ].join('\n'),
      );
    });

    it('denied by a Calico Deny; denied at the end of a tier; denied on egress', () => {
      assert.equal(
        formatVerdict(e.verdict('y/a', 'x/a', 'tcp', 22)).split('\n')[2],
        '  ingress of x/a: denied by gnp.security.no-ssh spec.ingress[0] (Deny, tier security)',
      );
      assert.equal(
        formatVerdict(e.verdict('y/a', 'x/a', 'tcp', 80)).split('\n')[2],
        "  ingress of x/a: denied, no policy of tier default decided and the tier's default action is Deny",
      );
      assert.equal(
        formatVerdict(e.verdict('x/b', 'y/a', 'udp', 53)),
        [
          '10.65.0.3 -> 10.65.1.2 UDP 53: denied',
          "  egress of x/b: denied, no policy of tier default decided and the tier's default action is Deny",
          "  ingress of y/a: allowed, every tier passed it on and the namespace's profile allows it",
        ].join('\n'),
      );
    });

    it('addresses outside the cluster: only the pod side has policy; an ipBlock allows, its except does not', () => {
      const outside = e.verdict('10.1.2.3', 'x/a', 'tcp', 8080);
      assert.equal(outside.allowed, true);
      assert.equal(outside.ingress?.origin, 'spec.ingress[0].from[1]');
      assert.equal(formatVerdict(outside).split('\n')[1], '  egress: the source is no pod of the cluster, no egress policy applies');
      assert.equal(e.verdict('10.65.9.9', 'x/a', 'tcp', 8080).allowed, false);
      // A pod's address names the pod.
      assert.equal(e.verdict('10.65.1.2', 'x/a', 'tcp', 8080).ingress?.origin, 'spec.ingress[0].from[0]');
    });

    it('Log rules are reported on the way; ICMP is an echo request', () => {
      const logged = [...CLUSTER, gnp('log', { order: 1, ingress: [{ action: 'Log', protocol: 'ICMP' }] })];
      const v = verdict(logged, 'y/a', 'x/a', 'icmp');
      assert.deepEqual(v.packet.icmp, { type: 8, code: 0 });
      assert.deepEqual(v.ingress?.logged, [{ policy: 'gnp.log', direction: 'ingress', index: 0, action: 'Log' }]);
      assert.equal(formatVerdict(v).split('\n').at(-1), '  logged by gnp.log rule 0');
    });

    it("a pod's traffic to itself is allowed whatever its policies say", () => {
      const v = e.verdict('x/a', 'x/a', 'tcp', 80);
      assert.deepEqual([v.allowed, v.samePod, v.ingress, v.egress], [true, true, undefined, undefined]);
      assert.equal(formatVerdict(v).split('\n')[1], '  one pod: its traffic to itself never leaves it, no policy applies');
    });

    it('an unknown pod is an error', () => {
      assert.throws(() => e.verdict('x/zz', 'x/a', 'tcp', 80), /no pod x\/zz/);
    });
  });
});
