// Real packets through compiled tables: three pods on one node (Calico's wiring: cali veths,
// /32 routes, proxy-ARP), and a namespace playing the internet. Each case loads a table the
// compiler made into the node's kernel and measures with TCP, UDP and ping from inside the
// pods what passes, printing the whole table of probes when it differs from the expected one.
// Root only.
import assert from 'node:assert/strict';
import type { Policy, PolicyEndpoint, PolicyInput, TierPolicies } from '../../../felix/policy/input.js';
import { Lab } from '../../support/netns.js';
import { INTERNET_ADDRESS, INTERNET_ADDRESS6, NODE_ADDRESS, NODE_ADDRESS6, PolicyNode, type PodSpec } from './compile-lab.js';
import { counterPackets } from './compile-nft.js';

const PODS: PodSpec[] = [
  { name: 'a', address: '10.65.0.2', address6: 'fd00:65::2' },
  { name: 'b', address: '10.65.0.3', address6: 'fd00:65::3' },
  { name: 'c', address: '10.65.0.4', address6: 'fd00:65::4' },
];
const POOLS = [
  { cidr: '10.65.0.0/16', natOutgoing: true },
  { cidr: 'fd00:65::/64', natOutgoing: true },
];

type Tiers = Partial<Record<string, { ingress?: TierPolicies[]; egress?: TierPolicies[] }>>;
const endpoints = (tiers: Tiers): PolicyEndpoint[] =>
  PODS.map((p) => ({
    iface: `cali${p.name}`,
    addresses: [p.address, p.address6],
    ingress: tiers[p.name]?.ingress ?? [],
    egress: tiers[p.name]?.egress ?? [],
  }));
const input = (over: Partial<PolicyInput>, tiers: Tiers = {}): PolicyInput => ({
  sets: [],
  namedPortSets: [],
  policies: [],
  pools: POOLS,
  ...over,
  endpoints: endpoints(tiers),
});
/** A selector's set: the pods' addresses of both families. */
const podSet = (id: string, ...names: string[]) => ({
  id,
  members: names.flatMap((n) => {
    const p = PODS.find((x) => x.name === n)!;
    return [p.address, p.address6];
  }),
});

/** [from, to, protocol, port, expected to connect]; `to` is a pod or `inet`, with a 6 for its IPv6 address. */
type Case = [string, string, 'tcp' | 'udp', number, boolean];

describe('felix policy compiler: real packets through the compiled table (pods on one node)', function () {
  this.timeout(120_000);
  const lab = new Lab({ tag: 'cpt' });
  let node: PolicyNode;

  before(async () => {
    node = await PolicyNode.create(lab, PODS);
  });
  after(() => lab.destroy());

  const host = (to: string) => {
    const v6 = to.endsWith('6');
    const name = v6 ? to.slice(0, -1) : to;
    if (name === 'inet') return v6 ? INTERNET_ADDRESS6 : INTERNET_ADDRESS;
    return v6 ? node.address6(name) : node.address(name);
  };

  /** Probes every case (per source pod, all at once) and compares the whole table. */
  async function expectReach(cases: readonly Case[]): Promise<void> {
    const byFrom = new Map<string, Case[]>();
    for (const c of cases) byFrom.set(c[0], [...(byFrom.get(c[0]) ?? []), c]);
    const row = (c: Case, ok: boolean) => `${c[0]} -> ${c[1]} ${c[2]}/${c[3]}: ${ok ? 'connects' : 'blocked'}`;
    const measured: string[] = [];
    await Promise.all(
      [...byFrom].map(async ([from, list]) => {
        const results = await node.probe(
          from,
          list.map((c) => ({ protocol: c[2], host: host(c[1]), port: c[3] })),
        );
        list.forEach((c, i) => {
          measured.push(row(c, results[i]!.ok));
        });
      }),
    );
    const want = cases.map((c) => row(c, c[4])).sort();
    assert.deepEqual(measured.sort(), want, `measured (actual) vs expected:\n${measured.join('\n')}`);
  }

  it('with no policy, every pod reaches every pod (TCP, UDP, ping) and sees its real source address', async () => {
    await node.apply(input({}));
    const cases: Case[] = [];
    for (const from of PODS) {
      for (const to of PODS) {
        if (from === to) continue;
        cases.push(
          [from.name, to.name, 'tcp', 80, true],
          [from.name, to.name, 'udp', 80, true],
          [from.name, `${to.name}6`, 'tcp', 80, true],
        );
      }
    }
    await expectReach(cases);
    const [r, r6] = await node.probe('a', [
      { protocol: 'tcp', host: node.address('b'), port: 81 },
      { protocol: 'tcp', host: node.address6('b'), port: 81 },
    ]);
    assert.equal(r?.seen, node.address('a'), 'pod to pod is not NATed');
    assert.equal(r6?.seen, node.address6('a'), 'pod to pod is not NATed (IPv6)');
    assert.equal(await node.ping('a', node.address('c')), true);
    assert.equal(await node.ping('a', node.address6('c')), true);
  });

  it('deny-all ingress: nothing new reaches the pod, while the replies of what it opens come back', async () => {
    await node.apply(input({ policies: [{ id: 'knp.default.deny-b', ingress: [] }] }, { b: { ingress: [['knp.default.deny-b']] } }));
    await expectReach([
      ['a', 'b', 'tcp', 80, false],
      ['a', 'b', 'udp', 80, false],
      ['a', 'b6', 'tcp', 80, false],
      ['c', 'b', 'tcp', 81, false],
      ['b', 'a', 'tcp', 80, true],
      ['b', 'a6', 'udp', 80, true],
      ['b', 'c', 'udp', 80, true],
      ['a', 'c', 'tcp', 80, true],
    ]);
    assert.equal(await node.ping('a', node.address('b')), false);
    assert.equal(await node.ping('b', node.address('a')), true, 'the echo reply reaches b: conntrack');
    assert.ok((await counterPackets(node.node, 'calib/in/tier0')) > 0, 'the tier drop counted the blocked packets');
  });

  it('a policy change keeps an established connection that stays allowed, and one that is no longer (conntrack first)', async () => {
    await node.apply(input({}));
    const conn = await node.longConnection('a', node.address('b'), 80);
    const other = await node.longConnection('c', node.address('b'), 81);
    try {
      // b now admits only a, on port 80: a's connection stays allowed, c's no longer is.
      await node.apply(
        input(
          {
            sets: [podSet('sel-a', 'a')],
            policies: [
              {
                id: 'knp.default.only-a',
                ingress: [{ action: 'Allow', match: { protocol: 'tcp', srcSets: ['sel-a'], dstPorts: [{ first: 80, last: 80 }] } }],
              },
            ],
          },
          { b: { ingress: [['knp.default.only-a']] } },
        ),
      );
      await conn.flows();
      await other.flows();
      await expectReach([
        ['a', 'b', 'tcp', 80, true],
        ['c', 'b', 'tcp', 81, false],
        ['c', 'b', 'tcp', 80, false],
      ]);
    } finally {
      await conn.stop();
      await other.stop();
    }
  });

  it('allow from a set admits exactly its members; changing the members alone changes who gets in', async () => {
    const policies: Policy[] = [{ id: 'knp.default.from-set', ingress: [{ action: 'Allow', match: { srcSets: ['sel-web'] } }] }];
    const first = await node.apply(input({ sets: [podSet('sel-web', 'a')], policies }, { b: { ingress: [['knp.default.from-set']] } }));
    await expectReach([
      ['a', 'b', 'tcp', 80, true],
      ['a', 'b', 'udp', 8050, true],
      ['a', 'b6', 'tcp', 80, true],
      ['a', 'b6', 'udp', 80, true],
      ['c', 'b', 'tcp', 80, false],
      ['c', 'b', 'udp', 80, false],
      ['c', 'b6', 'tcp', 80, false],
    ]);
    assert.ok((await counterPackets(node.node, 'knp.default.from-set/in/0')) > 0, "the allow rule's counter, read by its id");
    const second = await node.apply(input({ sets: [podSet('sel-web', 'c')], policies }, { b: { ingress: [['knp.default.from-set']] } }));
    assert.deepEqual(second.chains, first.chains, 'only set elements differ');
    await expectReach([
      ['a', 'b', 'tcp', 80, false],
      ['a', 'b6', 'tcp', 80, false],
      ['c', 'b', 'tcp', 80, true],
      ['c', 'b', 'udp', 80, true],
      ['c', 'b6', 'tcp', 80, true],
    ]);
  });

  it('tiers: Pass goes on to the next tier, a tier that decided nothing drops, and Deny before a later Allow wins', async () => {
    await node.apply(
      input(
        {
          sets: [podSet('sel-a', 'a'), podSet('sel-c', 'c')],
          policies: [
            // tier 1: a is passed to tier 2; c is denied before the Allow that follows; nothing else is decided here.
            { id: 'gnp.pass-a', ingress: [{ action: 'Pass', match: { srcSets: ['sel-a'] } }] },
            { id: 'gnp.deny-c', ingress: [{ action: 'Deny', match: { srcSets: ['sel-c'] } }] },
            {
              id: 'gnp.allow-all',
              ingress: [
                { action: 'Log', match: {} },
                { action: 'Allow', match: { protocol: 'udp' } },
              ],
            },
            // tier 2 (Kubernetes): TCP 80 only.
            { id: 'knp.default.web', ingress: [{ action: 'Allow', match: { protocol: 'tcp', dstPorts: [{ first: 80, last: 80 }] } }] },
          ],
        },
        { b: { ingress: [['gnp.pass-a', 'gnp.deny-c', 'gnp.allow-all'], ['knp.default.web']] } },
      ),
    );
    await expectReach([
      ['a', 'b', 'tcp', 80, true], // passed, then allowed by tier 2
      ['a', 'b', 'tcp', 81, false], // passed, then nothing in tier 2 decided
      ['a', 'b', 'udp', 80, false], // passed before tier 1's UDP Allow could see it
      ['c', 'b', 'tcp', 80, false], // denied in tier 1
      ['c', 'b', 'udp', 80, false], // Deny comes before the Allow
    ]);
    assert.ok((await counterPackets(node.node, 'gnp.pass-a/in/0')) > 0, 'gnp.pass-a/in/0 counted no packets');
    assert.ok((await counterPackets(node.node, 'calib/in/tier1')) > 0, 'the drop at the end of tier 2 counted a -> b tcp/81');
    assert.ok((await counterPackets(node.node, 'gnp.allow-all/in/0')) === 0, 'the Log rule saw nothing: everything left tier 1 before it');
  });

  it("a tier's default action: Pass sends what it did not decide to the next tier, Deny drops it there; both ends are counted", async () => {
    await node.apply(
      input(
        {
          sets: [podSet('sel-c', 'c')],
          policies: [
            // platform (ends in Pass): c is denied, the rest is not decided here.
            { id: 'gnp.platform.deny-c', ingress: [{ action: 'Deny', match: { srcSets: ['sel-c'] } }] },
            // default (ends in Deny): TCP 80 only.
            { id: 'knp.default.web', ingress: [{ action: 'Allow', match: { protocol: 'tcp', dstPorts: [{ first: 80, last: 80 }] } }] },
          ],
        },
        {
          b: {
            ingress: [
              { name: 'platform', policies: ['gnp.platform.deny-c'], defaultAction: 'Pass' },
              { name: 'default', policies: ['knp.default.web'], defaultAction: 'Deny' },
            ],
          },
        },
      ),
    );
    await expectReach([
      ['a', 'b', 'tcp', 80, true], // platform passed it on, default allowed it
      ['a', 'b', 'tcp', 81, false], // platform passed it on, the default tier's end dropped it
      ['c', 'b', 'tcp', 80, false], // denied in platform
    ]);
    assert.ok((await counterPackets(node.node, 'calib/in/tier/platform')) > 0, "platform's end counted what it passed on");
    assert.ok((await counterPackets(node.node, 'calib/in/tier/default')) > 0, "the default tier's end counted a -> b tcp/81");
  });

  it("egress: the source pod may send only what its egress rules allow, and pod to pod also passes the destination's ingress", async () => {
    await node.apply(
      input(
        {
          sets: [podSet('sel-b', 'b'), podSet('sel-c', 'c')],
          policies: [
            {
              id: 'np.default.a-out',
              egress: [
                { action: 'Allow', match: { protocol: 'tcp', dstSets: ['sel-b'], dstPorts: [{ first: 80, last: 81 }] } },
                { action: 'Allow', match: { protocol: 'udp', dstSets: ['sel-c'] } },
              ],
            },
            { id: 'knp.default.b-in', ingress: [{ action: 'Allow', match: { protocol: 'tcp', dstPorts: [{ first: 81, last: 81 }] } }] },
          ],
        },
        { a: { egress: [['np.default.a-out']] }, b: { ingress: [['knp.default.b-in']] } },
      ),
    );
    await expectReach([
      ['a', 'b', 'tcp', 81, true], // a's egress and b's ingress both allow
      ['a', 'b', 'tcp', 80, false], // a's egress allows, b's ingress does not
      ['a', 'b', 'tcp', 8080, false], // a's egress does not allow
      ['a', 'c', 'udp', 80, true],
      ['a', 'c', 'tcp', 80, false],
      ['a', 'inet', 'tcp', 80, false],
      ['b', 'a', 'tcp', 80, true], // a's egress policy does not touch the replies it sends
      ['c', 'a', 'udp', 80, true],
    ]);
  });

  it('a port range, per protocol', async () => {
    await node.apply(
      input(
        {
          policies: [
            {
              id: 'knp.default.range',
              ingress: [
                {
                  action: 'Allow',
                  match: {
                    protocol: 'tcp',
                    dstPorts: [
                      { first: 8000, last: 8100 },
                      { first: 81, last: 81 },
                    ],
                  },
                },
              ],
            },
          ],
        },
        { b: { ingress: [['knp.default.range']] } },
      ),
    );
    await expectReach([
      ['a', 'b', 'tcp', 8050, true],
      ['a', 'b', 'tcp', 8080, true],
      ['a', 'b', 'tcp', 81, true],
      ['a', 'b', 'tcp', 8101, false],
      ['a', 'b', 'tcp', 80, false],
      ['a', 'b', 'udp', 8050, false],
    ]);
  });

  it('a named port: the (address, protocol, port) set admits the port that pod names, not its neighbour', async () => {
    await node.apply(
      input(
        {
          namedPortSets: [
            {
              id: 'port-http',
              members: [
                { address: node.address('b'), protocol: 'tcp', port: 8080 },
                { address: node.address('c'), protocol: 'tcp', port: 8081 },
              ],
            },
          ],
          policies: [{ id: 'knp.default.named', ingress: [{ action: 'Allow', match: { protocol: 'tcp', dstNamedPorts: 'port-http' } }] }],
        },
        { b: { ingress: [['knp.default.named']] }, c: { ingress: [['knp.default.named']] } },
      ),
    );
    await expectReach([
      ['a', 'b', 'tcp', 8080, true],
      ['a', 'b', 'tcp', 8081, false],
      ['a', 'c', 'tcp', 8081, true],
      ['a', 'c', 'tcp', 8080, false],
    ]);
  });

  it('ICMP by type: echo requests pass, TCP does not', async () => {
    await node.apply(
      input(
        { policies: [{ id: 'gnp.ping', ingress: [{ action: 'Allow', match: { protocol: 'icmp', icmp: { type: 8 } } }] }] },
        { b: { ingress: [['gnp.ping']] } },
      ),
    );
    assert.equal(await node.ping('a', node.address('b')), true);
    await expectReach([['a', 'b', 'tcp', 80, false]]);
  });

  it("natOutgoing: the internet sees the node's address and answers; pod to pod keeps its source; without it there is no answer", async () => {
    await node.apply(input({}));
    const [out] = await node.probe('a', [{ protocol: 'tcp', host: INTERNET_ADDRESS, port: 80 }]);
    assert.deepEqual(out, { ok: true, seen: NODE_ADDRESS });
    const [udp] = await node.probe('c', [{ protocol: 'udp', host: INTERNET_ADDRESS, port: 80 }]);
    assert.deepEqual(udp, { ok: true, seen: NODE_ADDRESS });
    assert.equal(await node.ping('b', INTERNET_ADDRESS), true);
    const [inside] = await node.probe('a', [{ protocol: 'tcp', host: node.address('c'), port: 80 }]);
    assert.deepEqual(inside, { ok: true, seen: node.address('a') });
    assert.ok((await counterPackets(node.node, 'natOutgoing/v4')) > 0, 'natOutgoing/v4 counted no packets');
    const [out6, inside6] = await node.probe('a', [
      { protocol: 'tcp', host: INTERNET_ADDRESS6, port: 80 },
      { protocol: 'udp', host: node.address6('b'), port: 80 },
    ]);
    assert.deepEqual(out6, { ok: true, seen: NODE_ADDRESS6 });
    assert.deepEqual(inside6, { ok: true, seen: node.address6('a') });
    assert.equal(await node.ping('b', INTERNET_ADDRESS6), true);

    await node.apply({
      ...input({}),
      pools: [
        { cidr: '10.65.0.0/16', natOutgoing: false },
        { cidr: 'fd00:65::/64', natOutgoing: false },
      ],
    });
    const [plain, plain6] = await node.probe('b', [
      { protocol: 'tcp', host: INTERNET_ADDRESS, port: 81 },
      { protocol: 'tcp', host: INTERNET_ADDRESS6, port: 81 },
    ]);
    assert.equal(plain?.ok, false, 'the internet has no route back to a pod address');
    assert.equal(plain6?.ok, false, 'the internet has no route back to a pod address (IPv6)');
  });

  it("RPF: a pod's packet from an address not routed to its veth is dropped, even when a policy would admit it", async () => {
    const a = node.pod('a');
    await a.ns.ip('addr', 'add', '10.65.0.99/32', 'dev', 'eth0');
    try {
      await node.apply(
        input(
          {
            sets: [{ id: 'sel-spoof', members: ['10.65.0.99'] }],
            policies: [{ id: 'knp.default.spoof', ingress: [{ action: 'Allow', match: { srcSets: ['sel-spoof'] } }] }],
          },
          { b: { ingress: [['knp.default.spoof']] } },
        ),
      );
      const before = await counterPackets(node.node, 'calia/out/rpf');
      const [spoofed] = await node.probe('a', [{ protocol: 'tcp', host: node.address('b'), port: 80, source: '10.65.0.99' }]);
      assert.equal(spoofed?.ok, false);
      assert.ok((await counterPackets(node.node, 'calia/out/rpf')) > before, 'dropped by the RPF rule');
      // Routed to a's veth (an address of the pod, as felix would route it), the same source passes.
      await node.node.ip('route', 'add', '10.65.0.99/32', 'dev', 'calia');
      const [routed] = await node.probe('a', [{ protocol: 'tcp', host: node.address('b'), port: 80, source: '10.65.0.99' }]);
      assert.deepEqual(routed, { ok: true, seen: '10.65.0.99' });
    } finally {
      await node.node.exec(['ip', 'route', 'del', '10.65.0.99/32', 'dev', 'calia']);
      await a.ns.exec(['ip', 'addr', 'del', '10.65.0.99/32', 'dev', 'eth0']);
    }
  });
});
