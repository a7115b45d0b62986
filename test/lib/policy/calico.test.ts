// Calico NetworkPolicy and GlobalNetworkPolicy through the calculation graph: the order in the
// default tier, namespace scoping of selectors, every rule field; and what the tiers decide
// (order, Deny before a later Allow, Pass out of the tier), read with the same evaluator explain
// uses. calculator.tiers.test.ts holds the rules of tiers themselves.
import assert from 'node:assert/strict';
import type { PolicyInput } from '../../../felix/policy/input.js';
import {
  type NamespaceScope,
  PolicyCalculator,
  PolicyConversionError,
  PolicyExplainer,
  policyInput,
  setId,
} from '../../../lib/policy/index.js';
import type { Resource } from '../../../lib/resources/index.js';
import { cnp, gnp, knp, namespace, pod, inTier } from './fixtures.js';

const sel = (selector: string, namespaces: NamespaceScope): string => setId({ kind: 'selection', selection: { selector, namespaces } });
const nets = (...list: string[]): string => setId({ kind: 'nets', nets: list });

const CLUSTER: Resource[] = [
  namespace('x', { team: 'blue' }),
  namespace('y', { team: 'red' }),
  pod('x', 'a', '10.65.0.2', { app: 'web' }, { ports: [{ name: 'http', protocol: 'TCP', port: 8080 }] }),
  pod('x', 'b', '10.65.0.3', { app: 'db' }),
  pod('y', 'a', '10.65.1.2', { app: 'web' }, { node: 'n2' }),
];
const calc = (...extra: Resource[]): PolicyInput => policyInput([...CLUSTER, ...extra], 'n1');
const ingressOfA = (input: PolicyInput) => input.endpoints.find((e) => e.iface === 'cali-x-a')!.ingress;

describe('policy calculation: Calico policies', () => {
  describe('tiers and order', () => {
    it('one default tier: policies by order (missing last), Kubernetes ones at 1000; ties by name, namespace, kind', () => {
      const input = calc(
        knp('x', 'k8s', {}),
        gnp('later', { order: 200 }),
        cnp('x', 'unordered', {}),
        gnp('b-first', { order: 10 }),
        cnp('x', 'a-first', { order: 10 }),
        gnp('also-unordered', {}),
        cnp('y', 'a-first', { order: 10 }),
      );
      assert.deepEqual(ingressOfA(input), [
        inTier(['np.x.a-first', 'gnp.b-first', 'gnp.later', 'knp.default.x.k8s', 'gnp.also-unordered', 'np.x.unordered']),
      ]);
      assert.deepEqual(
        input.policies.map((p) => p.id),
        ['np.x.a-first', 'np.y.a-first', 'gnp.b-first', 'gnp.later', 'knp.default.x.k8s', 'gnp.also-unordered', 'np.x.unordered'],
      );
    });

    it('a tier appears in a direction only when a selecting policy has that type', () => {
      const input = calc(gnp('in', { types: ['Ingress'] }), knp('x', 'out', { policyTypes: ['Egress'] }));
      const a = input.endpoints.find((e) => e.iface === 'cali-x-a')!;
      assert.deepEqual(a.ingress, [inTier(['gnp.in'])]);
      assert.deepEqual(a.egress, [inTier(['knp.default.x.out'])]);
    });

    it('types defaulting (omitted): egress rules only is Egress only; both kinds is both; none is Ingress', () => {
      assert.deepEqual(calc(gnp('p', { egress: [{ action: 'Allow' }] })).policies, [
        { id: 'gnp.p', egress: [{ action: 'Allow', match: {} }] },
      ]);
      assert.deepEqual(calc(gnp('p', { ingress: [{ action: 'Deny' }], egress: [{ action: 'Allow' }] })).policies, [
        { id: 'gnp.p', ingress: [{ action: 'Deny', match: {} }], egress: [{ action: 'Allow', match: {} }] },
      ]);
      assert.deepEqual(calc(gnp('p', {})).policies, [{ id: 'gnp.p', ingress: [] }]);
    });
  });

  describe('selection and namespaces', () => {
    it('NetworkPolicy selects in its own namespace; GlobalNetworkPolicy in every one, or those its namespaceSelector picks', () => {
      const all = policyInput(
        [...CLUSTER, cnp('x', 'np', { selector: 'app == "web"' }), gnp('g', { selector: 'app == "web"' })],
        undefined,
      );
      const tiers = (iface: string) => all.endpoints.find((e) => e.iface === iface)!.ingress;
      assert.deepEqual(tiers('cali-x-a'), [inTier(['gnp.g', 'np.x.np'])]);
      assert.deepEqual(tiers('cali-y-a'), [inTier(['gnp.g'])]);
      assert.deepEqual(tiers('cali-x-b'), []);
      const red = policyInput([...CLUSTER, gnp('g', { namespaceSelector: 'team == "red"' })], undefined);
      assert.deepEqual(
        red.endpoints.map((e) => [e.iface, e.ingress]),
        [
          ['cali-x-a', []],
          ['cali-x-b', []],
          ['cali-y-a', [inTier(['gnp.g'])]],
        ],
      );
    });

    it('rule selectors: own namespace in a NetworkPolicy, every namespace in a GlobalNetworkPolicy, a namespaceSelector overrides', () => {
      const input = calc(
        cnp('x', 'np', {
          ingress: [
            { action: 'Allow', source: { selector: 'app == "web"' } },
            { action: 'Allow', source: { selector: 'app == "web"', namespaceSelector: 'team == "red"' } },
            { action: 'Allow', source: { namespaceSelector: 'all()' } },
          ],
        }),
        gnp('g', { ingress: [{ action: 'Allow', source: { selector: 'app  ==  "web"' } }] }),
      );
      const own = sel('app == "web"', { kind: 'name', name: 'x' });
      const red = sel('app == "web"', { kind: 'selector', selector: 'team == "red"' });
      const everyPod = sel('all()', { kind: 'all' });
      const anyNs = sel('app == "web"', { kind: 'all' });
      assert.deepEqual(input.policies.find((p) => p.id === 'np.x.np')!.ingress, [
        { action: 'Allow', match: { srcSets: [own] } },
        { action: 'Allow', match: { srcSets: [red] } },
        { action: 'Allow', match: { srcSets: [everyPod] } },
      ]);
      // The blanks differ; the canonical selector, hence the set, is the same.
      assert.deepEqual(input.policies.find((p) => p.id === 'gnp.g')!.ingress, [{ action: 'Allow', match: { srcSets: [anyNs] } }]);
      const members = Object.fromEntries(input.sets.map((s) => [s.id, s.members]));
      assert.deepEqual(members, {
        [own]: ['10.65.0.2'],
        [red]: ['10.65.1.2'],
        [everyPod]: ['10.65.0.2', '10.65.0.3', '10.65.1.2'],
        [anyNs]: ['10.65.0.2', '10.65.1.2'],
      });
    });

    it('namespaceSelector global() picks no pod', () => {
      const input = calc(gnp('g', { ingress: [{ action: 'Allow', source: { namespaceSelector: 'global()' } }] }));
      assert.deepEqual(input.sets, [{ id: sel('all()', { kind: 'global' }), members: [], hosts: true }]);
    });
  });

  it('every rule field: nets, notNets, selector, notSelector, ports and notPorts with ranges, protocol, notProtocol, ICMP, ipVersion', () => {
    const input = calc(
      cnp('x', 'np', {
        types: ['Ingress', 'Egress'],
        ingress: [
          {
            action: 'Deny',
            protocol: 'TCP',
            source: {
              nets: ['192.0.2.7', '198.51.100.0/24'],
              notNets: ['198.51.100.128/25'],
              notSelector: 'app == "db"',
              ports: ['1024:65535'],
            },
            destination: { ports: [80, '8000:8080'], notPorts: [8001] },
          },
          { action: 'Allow', protocol: 'ICMP', ipVersion: 4, icmp: { type: 8, code: 0 }, notICMP: { type: 3 } },
          { action: 'Log', notProtocol: 'UDPLite' },
          { action: 'Pass', protocol: 47 },
        ],
        egress: [{ action: 'Allow', protocol: 'SCTP', destination: { selector: 'app == "db"', notNets: ['10.65.0.3/32'] } }],
      }),
    );
    const srcNets = nets('192.0.2.7/32', '198.51.100.0/24');
    const notNets = nets('198.51.100.128/25');
    const db = sel('app == "db"', { kind: 'name', name: 'x' });
    assert.deepEqual(input.policies, [
      {
        id: 'np.x.np',
        ingress: [
          {
            action: 'Deny',
            match: {
              protocol: 'tcp',
              srcSets: [srcNets],
              notSrcSets: [notNets, db],
              srcPorts: [{ first: 1024, last: 65535 }],
              notDstPorts: [{ first: 8001, last: 8001 }],
              dstPorts: [
                { first: 80, last: 80 },
                { first: 8000, last: 8080 },
              ],
            },
          },
          { action: 'Allow', match: { ipVersion: 4, protocol: 'icmp', icmp: { type: 8, code: 0 }, notIcmp: { type: 3 } } },
          { action: 'Log', match: { notProtocol: 136 } },
          { action: 'Pass', match: { protocol: 47 } },
        ],
        egress: [{ action: 'Allow', match: { protocol: 'sctp', dstSets: [db], notDstSets: [nets('10.65.0.3/32')] } }],
      },
    ]);
  });

  it('a named port in notPorts, or among source ports, is refused naming the field (felix has no set match for it)', () => {
    assert.throws(
      () => calc(cnp('x', 'np', { ingress: [{ action: 'Allow', protocol: 'TCP', destination: { notPorts: ['http'] } }] })),
      (e: Error) => e instanceof PolicyConversionError && /spec\.ingress\[0\].*destination\.notPorts/.test(e.message),
    );
    assert.throws(
      () => calc(cnp('x', 'np', { ingress: [{ action: 'Allow', protocol: 'TCP', source: { ports: ['http'] } }] })),
      (e: Error) => e instanceof PolicyConversionError && /source\.ports/.test(e.message),
    );
  });

  it('named ports without a protocol: one rule per protocol, each port looked up under its own', () => {
    const input = calc(cnp('x', 'np', { ingress: [{ action: 'Allow', notProtocol: 'SCTP', destination: { ports: ['http'] } }] }));
    const within = [{ selector: 'all()', namespaces: { kind: 'name', name: 'x' } }] as const;
    const tcp = setId({ kind: 'namedPorts', within: [...within], protocol: 'tcp', names: ['http'] });
    const udp = setId({ kind: 'namedPorts', within: [...within], protocol: 'udp', names: ['http'] });
    assert.deepEqual(input.policies[0]!.ingress, [
      { action: 'Allow', match: { protocol: 'tcp', notProtocol: 'sctp', dstNamedPorts: tcp } },
      { action: 'Allow', match: { protocol: 'udp', notProtocol: 'sctp', dstNamedPorts: udp } },
    ]);
    assert.deepEqual(input.namedPortSets.find((s) => s.id === tcp)!.members, [{ address: '10.65.0.2', protocol: 'tcp', port: 8080 }]);
    assert.deepEqual(input.namedPortSets.find((s) => s.id === udp)!.members, []);
  });

  it('ports under a protocol without ports, or port numbers without a protocol, are refused', () => {
    assert.throws(
      () => calc(cnp('x', 'np', { ingress: [{ action: 'Allow', protocol: 'ICMP', destination: { ports: ['http'] } }] })),
      (e: Error) => e instanceof PolicyConversionError && /need protocol TCP, UDP or SCTP/.test(e.message),
    );
    assert.throws(
      () => calc(cnp('x', 'np', { ingress: [{ action: 'Allow', destination: { ports: [80] } }] })),
      (e: Error) => e instanceof PolicyConversionError && /port numbers need protocol/.test(e.message),
    );
  });

  it('a bad selector is refused naming the field, leaving the calculator as it was', () => {
    const c = new PolicyCalculator('n1');
    for (const r of CLUSTER) c.put(r);
    const before = c.input();
    assert.throws(
      () => c.put(cnp('x', 'np', { ingress: [{ action: 'Allow', source: { selector: 'app == ' } }] })),
      (e: Error) => e instanceof PolicyConversionError && e.message.startsWith('spec.ingress[0].source.selector'),
    );
    assert.equal(c.input(), before);
  });

  describe('what the tiers decide (read with explain.verdict)', () => {
    const verdict = (resources: Resource[], src: string, dst: string, port: number) =>
      new PolicyExplainer([...CLUSTER, ...resources]).verdict(src, dst, 'tcp', port);

    it('order: the first Allow or Deny decides, so a lower order Deny beats a later Allow', () => {
      const deny = gnp('deny-web', {
        order: 10,
        selector: 'app == "web"',
        ingress: [{ action: 'Deny', protocol: 'TCP', destination: { ports: [80] } }],
      });
      const allow = gnp('allow-all', { order: 20, ingress: [{ action: 'Allow' }] });
      const v = verdict([deny, allow], 'x/b', 'x/a', 80);
      assert.equal(v.allowed, false);
      assert.deepEqual(v.ingress?.rule, { policy: 'gnp.deny-web', direction: 'ingress', index: 0, action: 'Deny' });
      assert.equal(verdict([deny, allow], 'x/b', 'x/a', 81).allowed, true);
      // Swapped orders: the Allow comes first.
      const swapped = [{ ...deny, spec: { ...deny.spec, order: 30 } }, allow];
      assert.equal(verdict(swapped, 'x/b', 'x/a', 80).allowed, true);
    });

    it('Pass leaves the default tier, Kubernetes policies of it included: past the last tier the pod is allowed', () => {
      const pass = gnp('pass', { order: 1, ingress: [{ action: 'Pass' }] });
      const denyAll = knp('x', 'deny', {});
      const v = verdict([pass, denyAll], 'y/a', 'x/a', 80);
      assert.deepEqual([v.allowed, v.ingress?.reason], [true, 'passed']);
      // Without the Pass the Kubernetes deny-all ends the default tier.
      const denied = verdict([denyAll], 'y/a', 'x/a', 80);
      assert.deepEqual([denied.allowed, denied.ingress?.reason, denied.ingress?.tierName], [false, 'end-of-tier', 'default']);
    });

    it('a tier whose policies select the pod and decide nothing drops; one that selects it not is skipped', () => {
      const onlyDb = gnp('db-only', { selector: 'app == "db"', ingress: [{ action: 'Allow', source: { selector: 'app == "none"' } }] });
      assert.equal(verdict([onlyDb], 'y/a', 'x/b', 80).allowed, false);
      assert.equal(verdict([onlyDb], 'y/a', 'x/a', 80).allowed, true);
    });

    it('GlobalNetworkPolicy over every namespace: egress Deny to port 22 applies to pods in x and y', () => {
      const no22 = gnp('no-ssh', { egress: [{ action: 'Deny', protocol: 'TCP', destination: { ports: [22] } }, { action: 'Allow' }] });
      assert.equal(verdict([no22], 'x/a', 'y/a', 22).allowed, false);
      assert.equal(verdict([no22], 'y/a', 'x/a', 22).allowed, false);
      assert.equal(verdict([no22], 'y/a', 'x/a', 23).allowed, true);
    });

    it('named port: matches the port the destination pod names, not the name elsewhere', () => {
      const web = cnp('x', 'web', { ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: ['http'] } }] });
      assert.equal(verdict([web], 'x/b', 'x/a', 8080).allowed, true);
      assert.equal(verdict([web], 'x/b', 'x/a', 80).allowed, false);
    });
  });
});
