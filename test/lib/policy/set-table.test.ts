// Sets of the calculation graph: one per distinct selector and scope, ids from content, and the
// holder's promise that an endpoint change touches members and never rules. The incremental
// holder is held to the pure function after every step of random change sequences.
import assert from 'node:assert/strict';
import type { PolicyInput } from '../../../felix/policy/input.js';
import { PolicyCalculator, policyInput, setId } from '../../../lib/policy/index.js';
import type { Resource } from '../../../lib/resources/index.js';
import { cnp, gnp, knp, namespace, pod, pool, inTier } from './fixtures.js';
import { prng } from '../../support/prng.js';

const fromWeb = { from: [{ podSelector: { matchLabels: { app: 'web' } } }] };
const base = (): Resource[] => [
  namespace('x', { team: 'blue' }),
  pod('x', 'a', '10.65.0.2', { app: 'web' }),
  pod('x', 'b', '10.65.0.3', { app: 'db' }),
  knp('x', 'one', { podSelector: { matchLabels: { app: 'db' } }, ingress: [fromWeb] }),
  knp('x', 'two', { podSelector: { matchLabels: { app: 'cache' } }, ingress: [{ ...fromWeb, ports: [{ protocol: 'TCP', port: 6379 }] }] }),
];

function loaded(resources: Resource[], node = 'n1'): PolicyCalculator {
  const c = new PolicyCalculator(node);
  for (const r of resources) c.put(r);
  return c;
}

describe('policy calculation: sets', () => {
  it('the same selector in two policies is one set, named by both', () => {
    const input = policyInput(base(), 'n1');
    assert.equal(input.sets.length, 1);
    const id = input.sets[0]!.id;
    assert.deepEqual(
      input.policies.map((p) => p.ingress![0]!.match.srcSets),
      [[id], [id]],
    );
  });

  it('ids come from content: the same cluster in any order gives the same input, and the id is pinned', () => {
    const forward = policyInput(base(), 'n1');
    const backward = policyInput(base().reverse(), 'n1');
    assert.deepEqual(backward, forward);
    // Pinned, so that a change to how ids are made is a decision (felix's kernel sets are named by them).
    assert.equal(forward.sets[0]!.id, 'sel-' + forward.sets[0]!.id.slice(4));
    assert.equal(
      setId({ kind: 'selection', selection: { selector: 'app == "web"', namespaces: { kind: 'name', name: 'x' } } }),
      forward.sets[0]!.id,
    );
    assert.equal(setId({ kind: 'nets', nets: ['10.0.0.0/8'] }), 'net-a511fabe59008ee0');
  });

  it('a pod add (another node) changes one set member: same rules, same set ids, same endpoints', () => {
    const c = loaded(base());
    const before = c.input();
    c.put(pod('x', 'c', '10.65.2.9', { app: 'web' }, { node: 'n2' }));
    const after = c.input();
    assert.equal(after.policies, before.policies, 'the rules are the very same array');
    assert.equal(after.endpoints, before.endpoints, 'no local endpoint changed');
    assert.deepEqual(
      after.sets.map((s) => s.id),
      before.sets.map((s) => s.id),
    );
    assert.deepEqual(after.sets[0]!.members, ['10.65.0.2', '10.65.2.9']);
    assert.deepEqual(before.sets[0]!.members, ['10.65.0.2'], 'the earlier input is not changed under its holder');
  });

  it('a local pod add adds its endpoint and members, and the rules stay the same array', () => {
    const c = loaded(base());
    const before = c.input();
    c.put(pod('x', 'd', '10.65.0.9', { app: 'db' }));
    const after = c.input();
    assert.equal(after.policies, before.policies);
    assert.deepEqual(after.endpoints.at(-1), {
      iface: 'cali-x-d',
      addresses: ['10.65.0.9'],
      ingress: [inTier(['knp.default.x.one'])],
      egress: [],
    });
    assert.equal(after.endpoints[0], before.endpoints[0], 'an untouched endpoint is the same object');
  });

  it('relabelling a pod moves it between sets and policies; an unrelated change keeps the same input object', () => {
    const c = loaded(base());
    const first = c.input();
    c.put(pod('x', 'a', '10.65.0.2', { app: 'db' }));
    const relabelled = c.input();
    assert.deepEqual(relabelled.sets[0]!.members, []);
    assert.deepEqual(
      relabelled.endpoints.map((e) => e.ingress),
      [[inTier(['knp.default.x.one'])], [inTier(['knp.default.x.one'])]],
    );
    assert.equal(relabelled.policies, first.policies);
    assert.equal(c.put(pool('p', '10.65.0.0/16')), true);
    c.put(pool('p', '10.65.0.0/16'));
    assert.equal(
      c.put({
        apiVersion: 'projectcalico.org/v3',
        kind: 'BGPPeer',
        metadata: { name: 'p' },
        spec: { peerIP: '10.0.0.1', asNumber: 65000 },
      }),
      false,
    );
    const pooled = c.input();
    assert.equal(c.input(), pooled, 'no change, same object');
  });

  it('a namespace relabel moves its pods in and out of namespaceSelector sets', () => {
    const resources: Resource[] = [
      ...base(),
      knp('x', 'ns', { ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'red' } } }] }] }),
    ];
    const c = loaded(resources);
    const redSet = (input: PolicyInput) =>
      input.sets.find((s) => s.id === input.policies.find((p) => p.id === 'knp.default.x.ns')!.ingress![0]!.match.srcSets![0])!;
    assert.deepEqual(redSet(c.input()).members, []);
    c.put(namespace('x', { team: 'red' }));
    assert.deepEqual(redSet(c.input()).members, ['10.65.0.2', '10.65.0.3']);
    c.delete('Namespace', 'x');
    assert.deepEqual(redSet(c.input()).members, []);
  });

  it('deleting a policy drops the sets only it named; a shared set stays', () => {
    const c = loaded([...base(), knp('x', 'three', { ingress: [{ from: [{ ipBlock: { cidr: '192.0.2.0/24' } }] }] })]);
    assert.equal(c.input().sets.length, 2);
    c.delete('KubernetesNetworkPolicy', 'x/three');
    assert.equal(c.input().sets.length, 1);
    c.delete('KubernetesNetworkPolicy', 'x/one');
    assert.equal(c.input().sets.length, 1, 'still named by x/two');
    c.delete('KubernetesNetworkPolicy', 'x/two');
    assert.deepEqual(c.input(), { sets: [], namedPortSets: [], policies: [], endpoints: c.input().endpoints, pools: [] });
    assert.deepEqual(
      c.input().endpoints.map((e) => [e.ingress, e.egress]),
      [
        [[], []],
        [[], []],
      ],
    );
  });

  it('a pod that moves to another node leaves the endpoints but stays in the sets', () => {
    const c = loaded(base());
    const moved = pod('x', 'a', '10.65.0.2', { app: 'web' });
    c.put({ ...moved, spec: { ...moved.spec, node: 'n2' } });
    const input = c.input();
    assert.deepEqual(
      input.endpoints.map((e) => e.iface),
      ['cali-x-b'],
    );
    assert.deepEqual(input.sets[0]!.members, ['10.65.0.2']);
    c.delete('WorkloadEndpoint', 'x/n1-k8s-a-eth0');
    assert.deepEqual(c.input().sets[0]!.members, []);
  });

  it('pools: every IPPool with its natOutgoing, sorted', () => {
    assert.deepEqual(
      policyInput([pool('b', '10.66.0.0/16', true), pool('a', 'fd00:65::/48'), pool('c', '10.65.0.0/16', false)], 'n1').pools,
      [
        { cidr: '10.65.0.0/16', natOutgoing: false },
        { cidr: '10.66.0.0/16', natOutgoing: true },
        { cidr: 'fd00:65::/48', natOutgoing: false },
      ],
    );
  });

  it('the holder after random changes equals the pure function on the resources it holds (300 steps, 3 seeds)', () => {
    for (const seed of [1, 2, 3]) {
      const next = prng(seed);
      const rand = (n: number): number => Math.floor(next() * n);
      const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;
      const apps = ['web', 'db', 'cache'];
      const namespaces = ['x', 'y'];
      const candidates = (): Resource[] => {
        const ns = pick(namespaces);
        const name = pick(['a', 'b', 'c', 'd']);
        const app = pick(apps);
        const v4 = `10.65.${namespaces.indexOf(ns)}.${rand(6) + 2}`;
        // Few addresses, so pods share them (a set holds an address while any of its pods does); some dual stack.
        const addresses = rand(2) ? [`${v4}/32`, `fd00:65::${rand(6) + 2}/128`] : [`${v4}/32`];
        return [
          namespace(pick(namespaces), { team: pick(['red', 'blue']) }),
          pod(
            ns,
            name,
            v4,
            { app },
            {
              node: pick(['n1', 'n2']),
              ports: [{ name: 'http', protocol: 'TCP', port: 8000 + rand(3) }],
              addresses,
            },
          ),
          knp(ns, pick(['p', 'q']), {
            podSelector: { matchLabels: { app } },
            ingress: [
              {
                from: [
                  {
                    namespaceSelector: { matchLabels: { team: pick(['red', 'blue']) } },
                    podSelector: { matchLabels: { app: pick(apps) } },
                  },
                ],
              },
            ],
            egress: [{ to: [{ podSelector: {} }], ports: [{ protocol: 'TCP', port: 'http' }] }],
          }),
          cnp(ns, 'c', {
            order: rand(3),
            selector: `app == "${app}"`,
            ingress: [{ action: pick(['Allow', 'Deny', 'Pass'] as const), source: { selector: `app == "${pick(apps)}"` } }],
          }),
          gnp(pick(['g', 'h']), {
            order: rand(2) ? 5 : undefined,
            egress: [{ action: 'Deny', destination: { namespaceSelector: 'team == "red"' } }],
          }),
          pool(pick(['p1', 'p2']), pick(['10.65.0.0/16', '10.66.0.0/16']), rand(2) === 1),
        ];
      };
      const held = new Map<string, Resource>();
      const c = new PolicyCalculator('n1');
      const keyOf = (r: Resource) => `${r.kind} ${r.metadata.namespace ? `${r.metadata.namespace}/` : ''}${r.metadata.name}`;
      for (let step = 0; step < 300; step++) {
        if (rand(4) === 0 && held.size > 0) {
          const key = pick([...held.keys()]);
          const r = held.get(key)!;
          held.delete(key);
          c.delete(r.kind, key.slice(key.indexOf(' ') + 1));
        } else {
          const r = pick(candidates());
          held.set(keyOf(r), r);
          c.put(r);
        }
        assert.deepEqual(c.input(), policyInput(held.values(), 'n1'), `seed ${seed}, step ${step}`);
      }
    }
  });
});
