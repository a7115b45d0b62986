// Kubernetes NetworkPolicy through the calculation graph: each field of the spec, checked on the
// exact PolicyInput it yields (sets with members, rules naming them, tiers per endpoint).
import assert from 'node:assert/strict';
import type { PolicyInput } from '../../../felix/policy/input.js';
import { type NamespaceScope, PolicyCalculator, PolicyConversionError, policyInput, setId } from '../../../lib/policy/index.js';
import type { Resource } from '../../../lib/resources/index.js';
import { knp, namespace, pod, inTier } from './fixtures.js';

const sel = (selector: string, namespaces: NamespaceScope): string => setId({ kind: 'selection', selection: { selector, namespaces } });
const inNs = (name: string): NamespaceScope => ({ kind: 'name', name });
const nets = (...list: string[]): string => setId({ kind: 'nets', nets: list });

// Two namespaces, two nodes: x/a and x/b on n1, y/a on n2.
const CLUSTER: Resource[] = [
  namespace('x', { team: 'blue' }),
  namespace('y', { team: 'red' }),
  pod('x', 'a', '10.65.0.2', { app: 'web' }, { ports: [{ name: 'http', protocol: 'TCP', port: 8080 }] }),
  pod('x', 'b', '10.65.0.3', { app: 'db' }, { ports: [{ name: 'http', protocol: 'TCP', port: 9090 }] }),
  pod('y', 'a', '10.65.1.2', { app: 'web' }, { node: 'n2', ports: [{ name: 'http', protocol: 'UDP', port: 8080 }] }),
];
const calc = (...extra: Resource[]): PolicyInput => policyInput([...CLUSTER, ...extra], 'n1');
const EP_A = { iface: 'cali-x-a', addresses: ['10.65.0.2'] };
const EP_B = { iface: 'cali-x-b', addresses: ['10.65.0.3'] };

describe('policy calculation: Kubernetes NetworkPolicy', () => {
  it('deny-all ingress: an Ingress policy without rules isolates every pod of its namespace, allowing nothing', () => {
    assert.deepEqual(calc(knp('x', 'deny-all', { policyTypes: ['Ingress'] })), {
      sets: [],
      namedPortSets: [],
      policies: [{ id: 'knp.default.x.deny-all', ingress: [] }],
      endpoints: [
        { ...EP_A, ingress: [inTier(['knp.default.x.deny-all'])], egress: [] },
        { ...EP_B, ingress: [inTier(['knp.default.x.deny-all'])], egress: [] },
      ],
      pools: [],
    });
  });

  it('deny-all egress: policyTypes [Egress] with no rules', () => {
    const input = calc(knp('x', 'deny-egress', { policyTypes: ['Egress'] }));
    assert.deepEqual(input.policies, [{ id: 'knp.default.x.deny-egress', egress: [] }]);
    assert.deepEqual(input.endpoints[0], { ...EP_A, ingress: [], egress: [inTier(['knp.default.x.deny-egress'])] });
  });

  it('allow-all: one empty rule `{}` is an Allow that matches everything', () => {
    const input = calc(knp('x', 'allow-all', { policyTypes: ['Ingress'], ingress: [{}] }));
    assert.deepEqual(input.policies, [{ id: 'knp.default.x.allow-all', ingress: [{ action: 'Allow', match: {} }] }]);
  });

  describe('policyTypes defaulting (omitted)', () => {
    it('no egress rules: Ingress only, even with no ingress rules either', () => {
      assert.deepEqual(calc(knp('x', 'p', {})).policies, [{ id: 'knp.default.x.p', ingress: [] }]);
    });
    it('egress rules present: Ingress and Egress', () => {
      assert.deepEqual(calc(knp('x', 'p', { egress: [{}] })).policies, [
        { id: 'knp.default.x.p', ingress: [], egress: [{ action: 'Allow', match: {} }] },
      ]);
    });
    it('given policyTypes win: rules of a type not listed are ignored', () => {
      assert.deepEqual(calc(knp('x', 'p', { policyTypes: ['Egress'], ingress: [{}], egress: [{}] })).policies, [
        { id: 'knp.default.x.p', egress: [{ action: 'Allow', match: {} }] },
      ]);
    });
  });

  it('podSelector picks endpoints in the policy namespace only, on this node only', () => {
    const input = calc(knp('x', 'web', { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'] }));
    // y/a is app=web too, but in another namespace and on n2.
    assert.deepEqual(input.endpoints, [
      { ...EP_A, ingress: [inTier(['knp.default.x.web'])], egress: [] },
      { ...EP_B, ingress: [], egress: [] },
    ]);
    assert.deepEqual(policyInput([...CLUSTER, knp('y', 'web', { podSelector: { matchLabels: { app: 'web' } } })], 'n2').endpoints, [
      { iface: 'cali-y-a', addresses: ['10.65.1.2'], ingress: [inTier(['knp.default.y.web'])], egress: [] },
    ]);
  });

  it('from podSelector alone: pods of the policy namespace, resolved cluster-wide', () => {
    const input = calc(knp('y', 'p', { ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }] }));
    const id = sel('app == "web"', inNs('y'));
    assert.deepEqual(input.sets, [{ id, members: ['10.65.1.2'], hosts: true }]);
    assert.deepEqual(input.policies, [{ id: 'knp.default.y.p', ingress: [{ action: 'Allow', match: { srcSets: [id] } }] }]);
  });

  it('from namespaceSelector alone: every pod of the matching namespaces', () => {
    const input = calc(knp('x', 'p', { ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'red' } } }] }] }));
    const id = sel('all()', { kind: 'selector', selector: 'team == "red"' });
    assert.deepEqual(input.sets, [{ id, members: ['10.65.1.2'], hosts: true }]);
    assert.deepEqual(input.policies[0]!.ingress, [{ action: 'Allow', match: { srcSets: [id] } }]);
  });

  it('from namespaceSelector {}: every pod of every namespace', () => {
    const input = calc(knp('x', 'p', { ingress: [{ from: [{ namespaceSelector: {} }] }] }));
    const id = sel('all()', { kind: 'all' });
    assert.deepEqual(input.sets, [{ id, members: ['10.65.0.2', '10.65.0.3', '10.65.1.2'], hosts: true }]);
  });

  it('podSelector and namespaceSelector in one peer: both must hold (AND), one set', () => {
    const input = calc(
      knp('x', 'p', {
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } }, namespaceSelector: { matchLabels: { team: 'red' } } }] }],
      }),
    );
    const id = sel('app == "web"', { kind: 'selector', selector: 'team == "red"' });
    assert.deepEqual(input.sets, [{ id, members: ['10.65.1.2'], hosts: true }]);
    assert.deepEqual(input.policies[0]!.ingress, [{ action: 'Allow', match: { srcSets: [id] } }]);
  });

  it('separate peers are alternatives: one rule per peer, in order', () => {
    const input = calc(
      knp('x', 'p', {
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'db' } } }, { namespaceSelector: { matchLabels: { team: 'red' } } }] }],
      }),
    );
    assert.deepEqual(input.policies[0]!.ingress, [
      { action: 'Allow', match: { srcSets: [sel('app == "db"', inNs('x'))] } },
      { action: 'Allow', match: { srcSets: [sel('all()', { kind: 'selector', selector: 'team == "red"' })] } },
    ]);
  });

  it('matchExpressions: In, NotIn, Exists, DoesNotExist as Calico selectors', () => {
    const input = calc(
      knp('x', 'p', {
        ingress: [
          {
            from: [
              {
                podSelector: {
                  matchExpressions: [
                    { key: 'app', operator: 'In', values: ['web', 'db'] },
                    { key: 'tier', operator: 'DoesNotExist' },
                  ],
                },
              },
            ],
          },
        ],
      }),
    );
    assert.deepEqual(input.sets, [
      { id: sel('app in {"db", "web"} && !has(tier)', inNs('x')), members: ['10.65.0.2', '10.65.0.3'], hosts: true },
    ]);
  });

  it('ipBlock with except: the cidr as a set to be in, the exceptions as a set to be out of; host bits cleared', () => {
    const input = calc(
      knp('x', 'p', { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.1/8', except: ['10.65.0.0/16', '10.66.0.0/16'] } }] }] }),
    );
    const cidr = nets('10.0.0.0/8');
    const except = nets('10.65.0.0/16', '10.66.0.0/16');
    assert.deepEqual(
      input.sets,
      [
        { id: cidr, members: ['10.0.0.0/8'] },
        { id: except, members: ['10.65.0.0/16', '10.66.0.0/16'] },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
    assert.deepEqual(input.policies[0]!.ingress, [{ action: 'Allow', match: { srcSets: [cidr], notSrcSets: [except] } }]);
  });

  describe('ports', () => {
    it('numeric ports of one protocol share a rule; each protocol is a rule of its own; endPort is a range', () => {
      const input = calc(
        knp('x', 'p', {
          ingress: [
            {
              ports: [
                { protocol: 'TCP', port: 80 },
                { protocol: 'UDP', port: 53 },
                { protocol: 'TCP', port: 8000, endPort: 8080 },
                { protocol: 'SCTP', port: 80 },
              ],
            },
          ],
        }),
      );
      assert.deepEqual(input.policies[0]!.ingress, [
        {
          action: 'Allow',
          match: {
            protocol: 'tcp',
            dstPorts: [
              { first: 80, last: 80 },
              { first: 8000, last: 8080 },
            ],
          },
        },
        { action: 'Allow', match: { protocol: 'udp', dstPorts: [{ first: 53, last: 53 }] } },
        { action: 'Allow', match: { protocol: 'sctp', dstPorts: [{ first: 80, last: 80 }] } },
      ]);
    });

    it('a port entry without a port: every port of its protocol', () => {
      const input = calc(
        knp('x', 'p', {
          ingress: [
            {
              ports: [{ protocol: 'UDP' }, { protocol: 'TCP', port: 80 }],
            },
          ],
        }),
      );
      assert.deepEqual(input.policies[0]!.ingress, [
        { action: 'Allow', match: { protocol: 'udp' } },
        { action: 'Allow', match: { protocol: 'tcp', dstPorts: [{ first: 80, last: 80 }] } },
      ]);
    });

    it('named port on ingress: (address, protocol, port) of the selected pods that name it with that protocol', () => {
      const input = calc(
        knp('x', 'p', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ ports: [{ protocol: 'TCP', port: 'http' }] }] }),
      );
      // x/b names http too but is not selected; y/a names it for UDP and is in another namespace.
      const id = setId({
        kind: 'namedPorts',
        within: [{ selector: 'app == "web"', namespaces: inNs('x') }],
        protocol: 'tcp',
        names: ['http'],
      });
      assert.deepEqual(input.namedPortSets, [{ id, members: [{ address: '10.65.0.2', protocol: 'tcp', port: 8080 }] }]);
      assert.deepEqual(input.policies[0]!.ingress, [{ action: 'Allow', match: { protocol: 'tcp', dstNamedPorts: id } }]);
    });

    it('named and numeric ports in one rule: two rules, since a rule matches one or the other', () => {
      const input = calc(
        knp('x', 'p', {
          ingress: [
            {
              ports: [
                { protocol: 'TCP', port: 'http' },
                { protocol: 'TCP', port: 443 },
              ],
            },
          ],
        }),
      );
      const id = setId({ kind: 'namedPorts', within: [{ selector: 'all()', namespaces: inNs('x') }], protocol: 'tcp', names: ['http'] });
      assert.deepEqual(input.namedPortSets, [
        {
          id,
          members: [
            { address: '10.65.0.2', protocol: 'tcp', port: 8080 },
            { address: '10.65.0.3', protocol: 'tcp', port: 9090 },
          ],
        },
      ]);
      assert.deepEqual(input.policies[0]!.ingress, [
        { action: 'Allow', match: { protocol: 'tcp', dstPorts: [{ first: 443, last: 443 }] } },
        { action: 'Allow', match: { protocol: 'tcp', dstNamedPorts: id } },
      ]);
    });

    it('named port on egress: looked up on the destination peer pods, across nodes', () => {
      const input = calc(
        knp('x', 'p', {
          policyTypes: ['Egress'],
          egress: [{ to: [{ namespaceSelector: { matchLabels: { team: 'red' } } }], ports: [{ protocol: 'UDP', port: 'http' }] }],
        }),
      );
      const peer = { selector: 'all()', namespaces: { kind: 'selector', selector: 'team == "red"' } } as const;
      const id = setId({ kind: 'namedPorts', within: [peer], protocol: 'udp', names: ['http'] });
      assert.deepEqual(input.namedPortSets, [{ id, members: [{ address: '10.65.1.2', protocol: 'udp', port: 8080 }] }]);
      assert.deepEqual(input.policies[0]!.egress, [
        { action: 'Allow', match: { protocol: 'udp', dstSets: [setId({ kind: 'selection', selection: peer })], dstNamedPorts: id } },
      ]);
    });
  });

  it('egress: peers and ports on the destination; peer × protocol rules in order', () => {
    const input = calc(
      knp('x', 'p', {
        policyTypes: ['Egress'],
        egress: [
          {
            to: [{ podSelector: { matchLabels: { app: 'db' } } }, { ipBlock: { cidr: '192.0.2.0/24' } }],
            ports: [
              { protocol: 'TCP', port: 5432 },
              { protocol: 'UDP', port: 53 },
            ],
          },
        ],
      }),
    );
    const db = sel('app == "db"', inNs('x'));
    const net = nets('192.0.2.0/24');
    assert.deepEqual(input.policies[0]!.egress, [
      { action: 'Allow', match: { protocol: 'tcp', dstSets: [db], dstPorts: [{ first: 5432, last: 5432 }] } },
      { action: 'Allow', match: { protocol: 'udp', dstSets: [db], dstPorts: [{ first: 53, last: 53 }] } },
      { action: 'Allow', match: { protocol: 'tcp', dstSets: [net], dstPorts: [{ first: 5432, last: 5432 }] } },
      { action: 'Allow', match: { protocol: 'udp', dstSets: [net], dstPorts: [{ first: 53, last: 53 }] } },
    ]);
  });

  it('an empty `from` list is from anywhere', () => {
    assert.deepEqual(calc(knp('x', 'p', { ingress: [{ from: [], ports: [{ protocol: 'TCP', port: 80 }] }] })).policies[0]!.ingress, [
      { action: 'Allow', match: { protocol: 'tcp', dstPorts: [{ first: 80, last: 80 }] } },
    ]);
  });

  it('several policies select a pod: all in the default tier at order 1000, by name', () => {
    const input = calc(knp('x', 'zeta', { podSelector: { matchLabels: { app: 'web' } } }), knp('x', 'alpha', {}));
    assert.deepEqual(input.endpoints[0], { ...EP_A, ingress: [inTier(['knp.default.x.alpha', 'knp.default.x.zeta'])], egress: [] });
  });

  it('IPv6 and dual-stack pods: every address, canonical text', () => {
    const input = policyInput(
      [
        pod('x', 'a', '', {}, { addresses: ['10.65.0.2/32', 'FD00:65::0002/128'] }),
        knp('x', 'p', { ingress: [{ from: [{ podSelector: {} }] }] }),
      ],
      'n1',
    );
    assert.deepEqual(input.sets[0]!.members, ['10.65.0.2', 'fd00:65::2']);
    assert.deepEqual(input.endpoints[0]!.addresses, ['10.65.0.2', 'fd00:65::2']);
  });

  it('a bad ipBlock is refused naming the field, and the calculator keeps its state', () => {
    const c = new PolicyCalculator('n1');
    for (const r of CLUSTER) c.put(r);
    c.put(knp('x', 'p', { policyTypes: ['Ingress'] }));
    const before = c.input();
    assert.throws(
      () => c.put(knp('x', 'p', { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }] }] })),
      (e: Error) => e instanceof PolicyConversionError && e.message.startsWith('spec.ingress[0].from[0].ipBlock.cidr'),
    );
    assert.equal(c.input(), before);
  });
});
