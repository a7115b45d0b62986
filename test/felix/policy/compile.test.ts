// The policy compiler on small inputs: the exact chains, rules and sets it writes for the
// shapes Calico and Kubernetes policies lower to, and the properties the dataplane relies on
// (deterministic output, a pod add changes set and map elements only, bad input is named).
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import { PolicyCompileError } from '../../../felix/policy/compile-error.js';
import type { Policy, PolicyEndpoint, PolicyInput, TierPolicies } from '../../../felix/policy/input.js';
import { MAX_NAME, MAX_RULE_ID, nftName, ruleId } from '../../../felix/policy/names.js';
import type { NftChain, NftTable } from '../../../felix/policy/nft-model.js';
import { planTable } from '../../../felix/policy/plan.js';
import { tableState } from '../../../felix/policy/table-state.js';
import { generateInput } from './compile-generate.js';

const input = (over: Partial<PolicyInput>): PolicyInput => ({
  sets: [],
  namedPortSets: [],
  policies: [],
  endpoints: [],
  pools: [],
  ...over,
});
const ep = (iface: string, address: string, ingress: TierPolicies[] = [], egress: TierPolicies[] = []): PolicyEndpoint => ({
  iface,
  addresses: [address],
  ingress,
  egress,
});
/** The input with one more endpoint, whose one tier in each direction is every policy: all of them are compiled. */
const used = (over: Partial<PolicyInput>): PolicyInput => {
  const i = input(over);
  const all = [i.policies.map((p) => p.id)];
  return { ...i, endpoints: [...i.endpoints, ep('caliz', '10.65.9.9', all, all)] };
};
const chain = (t: NftTable, name: string): NftChain => {
  const c = t.chains.find((x) => x.name === name);
  assert.ok(c, `chain ${name} in ${t.chains.map((x) => x.name).join(', ')}`);
  return c;
};
/** A chain's rules as `expr  # id` lines: one string to compare, readable when it differs. */
const lines = (t: NftTable, name: string): string[] => chain(t, name).rules.map((r) => (r.id ? `${r.expr}  # ${r.id}` : r.expr));
const elements = (t: NftTable, name: string): readonly string[] => {
  const s = t.sets.find((x) => x.name === name);
  assert.ok(s, `set ${name} in ${t.sets.map((x) => x.name).join(', ')}`);
  return s.elements;
};

const CLEAR = 'meta mark set meta mark & 0xffefffff';
const PASSED = 'meta mark & 0x00100000 == 0x00000000';

describe('felix policy compiler: nftables for policies, endpoints and pools', () => {
  it('with nothing to enforce: the base chains, conntrack first, empty dispatch maps and no sets', () => {
    const t = compilePolicy(input({}));
    assert.equal(t.family, 'inet');
    assert.equal(t.name, 'podroute');
    assert.deepEqual(t.sets, []);
    assert.deepEqual(t.maps, [
      { name: 'from-wl', type: 'ifname', elements: [] },
      { name: 'to-wl', type: 'ifname', elements: [] },
    ]);
    assert.deepEqual(
      t.chains.map((c) => [c.name, c.base]),
      [
        ['forward', { type: 'filter', hook: 'forward', priority: 0, policy: 'accept' }],
        ['postrouting', { type: 'nat', hook: 'postrouting', priority: 100, policy: 'accept' }],
        ['forward-to-wl', { type: 'filter', hook: 'forward', priority: 1, policy: 'accept' }],
      ],
    );
    // The dispatch rules are there with no endpoint: a pod that comes adds map elements, not rules.
    assert.deepEqual(lines(t, 'forward'), ['ct state established,related accept', 'iifname vmap @from-wl']);
    assert.deepEqual(lines(t, 'forward-to-wl'), ['ct state established,related accept', 'oifname vmap @to-wl']);
    assert.deepEqual(lines(t, 'postrouting'), []);
  });

  it('deny-all ingress: the endpoint is dispatched by interface and its one tier drops what no rule allowed', () => {
    const t = compilePolicy(
      input({
        policies: [{ id: 'knp.default.deny', ingress: [] }],
        endpoints: [ep('calib', '10.65.0.3', [['knp.default.deny']]), ep('calia', '10.65.0.2')],
      }),
    );
    assert.deepEqual(lines(t, 'forward'), ['ct state established,related accept', 'iifname vmap @from-wl']);
    assert.deepEqual(lines(t, 'forward-to-wl'), ['ct state established,related accept', 'oifname vmap @to-wl']);
    assert.deepEqual(t.maps, [
      {
        name: 'from-wl',
        type: 'ifname',
        elements: [
          { key: '"calia"', verdict: 'jump from-calia' },
          { key: '"calib"', verdict: 'jump from-calib' },
        ],
      },
      {
        name: 'to-wl',
        type: 'ifname',
        elements: [
          { key: '"calia"', verdict: 'jump to-calia' },
          { key: '"calib"', verdict: 'jump to-calib' },
        ],
      },
    ]);
    // No policy of its tier can Pass: the Pass mark is neither cleared nor tested.
    assert.deepEqual(lines(t, 'to-calib'), ['ct state invalid drop', 'jump pi-knp.default.deny', 'counter drop  # calib/in/tier0']);
    assert.deepEqual(lines(t, 'pi-knp.default.deny'), []);
    // No policy selects calia: nothing but the conntrack and source checks.
    assert.deepEqual(lines(t, 'to-calia'), ['ct state invalid drop']);
    assert.deepEqual(lines(t, 'from-calia'), ['ct state invalid drop', 'fib saddr . iif oif missing counter drop  # calia/out/rpf']);
    // A policy without egress rules has no egress chain.
    assert.equal(
      t.chains.find((c) => c.name === 'po-knp.default.deny'),
      undefined,
    );
    assert.deepEqual(
      t.chains.map((c) => c.name),
      ['forward', 'postrouting', 'forward-to-wl', 'from-calia', 'to-calia', 'from-calib', 'to-calib', 'pi-knp.default.deny'],
    );
  });

  it('each chain is one path from its base chain: a commit that validates walks the table once on a kernel that follows every path', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const t = compilePolicy(generateInput(seed));
      const byName = new Map(t.chains.map((c) => [c.name, c]));
      const maps = new Map((t.maps ?? []).map((m) => [m.name, m]));
      const targets = (expr: string): string[] => [
        ...[...expr.matchAll(/\b(?:jump|goto) (\S+)/g)].map((m) => m[1]!),
        ...[...expr.matchAll(/\bvmap @(\S+)/g)].flatMap((m) => maps.get(m[1]!)!.elements.map((e) => e.verdict.split(' ')[1]!)),
      ];
      // What a kernel without the validation memo visits: every rule once per path that reaches it.
      const walk = (name: string, depth: number): number => {
        assert.ok(depth <= 2, `seed ${seed}: ${name} is ${depth} jumps from a base chain`);
        return byName.get(name)!.rules.reduce((n, r) => n + 1 + targets(r.expr).reduce((m, x) => m + walk(x, depth + 1), 0), 0);
      };
      const visits = t.chains.filter((c) => c.base).reduce((n, c) => n + walk(c.name, 0), 0);
      // Endpoint chains once each; a policy chain once per endpoint chain that jumps to it.
      let expected = t.chains.filter((c) => c.base).reduce((n, c) => n + c.rules.length, 0);
      for (const c of t.chains.filter((x) => /^(from|to)-/.test(x.name)))
        expected += c.rules.length + c.rules.flatMap((r) => targets(r.expr)).reduce((n, x) => n + byName.get(x)!.rules.length, 0);
      assert.equal(visits, expected, `seed ${seed}: rules a validation visits`);
      for (const c of t.chains.filter((x) => /^p[io]-/.test(x.name)))
        for (const r of c.rules) assert.deepEqual(targets(r.expr), [], `seed ${seed}: ${c.name} leads nowhere (${r.expr})`);
    }
  });

  it('allow from a set: one rule per family on per-family interval sets, nested members merged', () => {
    const t = compilePolicy(
      input({
        sets: [{ id: 'sel-a', members: ['10.65.0.2', '10.65.0.0/26', 'fd00:65::2', '10.65.1.7/24', '10.65.0.64/26', '10.65.0.70'] }],
        policies: [{ id: 'knp.x.allow-a', ingress: [{ action: 'Allow', match: { srcSets: ['sel-a'] } }] }],
        endpoints: [ep('calib', '10.65.0.3', [['knp.x.allow-a']])],
      }),
    );
    assert.deepEqual(lines(t, 'pi-knp.x.allow-a'), [
      'ip saddr @s4-sel-a counter accept  # knp.x.allow-a/in/0',
      'ip6 saddr @s6-sel-a counter accept  # knp.x.allow-a/in/0',
    ]);
    // 10.65.0.2 lies in 10.65.0.0/26 and 10.65.0.70 in 10.65.0.64/26: nft refuses overlaps. Host bits of a network are cleared.
    assert.deepEqual(elements(t, 's4-sel-a'), ['10.65.0.0/26', '10.65.0.64/26', '10.65.1.0/24']);
    assert.deepEqual(elements(t, 's6-sel-a'), ['fd00:65::2']);
    assert.deepEqual(
      t.sets.map((s) => [s.name, s.type, s.interval]),
      [
        ['s4-sel-a', 'ipv4_addr', true],
        ['s6-sel-a', 'ipv6_addr', true],
      ],
    );
  });

  it("a selector's set of single addresses is a plain set: bare addresses, sorted, each once; a network in it is refused", () => {
    const t = compilePolicy(
      input({
        sets: [{ id: 'sel-a', hosts: true, members: ['10.65.0.9', 'fd00:65::2', '10.65.0.2', '10.65.0.9/32', 'fd00:65::1/128'] }],
        policies: [{ id: 'knp.x.allow-a', ingress: [{ action: 'Allow', match: { srcSets: ['sel-a'] } }] }],
        endpoints: [ep('calib', '10.65.0.3', [['knp.x.allow-a']])],
      }),
    );
    assert.deepEqual(
      t.sets.map((s) => [s.name, s.type, s.interval, s.elements]),
      [
        ['s4-sel-a', 'ipv4_addr', false, ['10.65.0.2', '10.65.0.9']],
        ['s6-sel-a', 'ipv6_addr', false, ['fd00:65::1', 'fd00:65::2']],
      ],
    );
    assert.deepEqual(lines(t, 'pi-knp.x.allow-a'), [
      'ip saddr @s4-sel-a counter accept  # knp.x.allow-a/in/0',
      'ip6 saddr @s6-sel-a counter accept  # knp.x.allow-a/in/0',
    ]);
    const network = input({
      sets: [{ id: 'sel-a', hosts: true, members: ['10.65.0.2', '10.65.1.0/24'] }],
      policies: [{ id: 'knp.x.allow-a', ingress: [{ action: 'Allow', match: { srcSets: ['sel-a'] } }] }],
      endpoints: [ep('calib', '10.65.0.3', [['knp.x.allow-a']])],
    });
    assert.throws(
      () => compilePolicy(network),
      /^PolicyCompileError: sets\[0\]\.members\[1\]: 10\.65\.1\.0\/24 is a network, and set "sel-a" holds single addresses only$/,
    );
  });

  it('sets in AND, not-sets, and a family of its own: every list becomes one term per set', () => {
    const t = compilePolicy(
      used({
        sets: ['a', 'b', 'c', 'd'].map((id) => ({ id, members: [] })),
        policies: [
          {
            id: 'p',
            ingress: [
              { action: 'Deny', match: { srcSets: ['a', 'b'], notSrcSets: ['c'], dstSets: ['d'], notDstSets: ['a'] } },
              { action: 'Allow', match: { ipVersion: 6, protocol: 'udp' } },
              { action: 'Allow', match: { protocol: 'tcp', notProtocol: 'tcp' } },
              { action: 'Allow', match: { notProtocol: 17 } },
            ],
          },
        ],
      }),
    );
    assert.deepEqual(lines(t, 'pi-p'), [
      'ip saddr @s4-a ip saddr @s4-b ip saddr != @s4-c ip daddr @s4-d ip daddr != @s4-a counter drop  # p/in/0',
      'ip6 saddr @s6-a ip6 saddr @s6-b ip6 saddr != @s6-c ip6 daddr @s6-d ip6 daddr != @s6-a counter drop  # p/in/0',
      'meta nfproto ipv6 meta l4proto udp counter accept  # p/in/1',
      // p/in/2 can match no packet: no rule.
      'meta l4proto != udp counter accept  # p/in/3',
    ]);
  });

  it('Pass leaves the tier through a mark bit; later policies of the tier and its drop run only without it', () => {
    const t = compilePolicy(
      input({
        sets: [{ id: 'sel-a', members: ['10.65.0.2'] }],
        policies: [
          { id: 'gnp.pass-a', ingress: [{ action: 'Pass', match: { srcSets: ['sel-a'] } }] },
          { id: 'gnp.log', ingress: [{ action: 'Log', match: {} }] },
          { id: 'knp.y.allow-80', ingress: [{ action: 'Allow', match: { protocol: 'tcp', dstPorts: [{ first: 80, last: 80 }] } }] },
          { id: 'gnp.egress-only', egress: [{ action: 'Allow', match: {} }] },
        ],
        endpoints: [ep('calib', '10.65.0.3', [['gnp.pass-a', 'gnp.log', 'gnp.egress-only'], ['gnp.egress-only'], ['knp.y.allow-80']])],
      }),
    );
    assert.deepEqual(lines(t, 'pi-gnp.pass-a'), [
      'ip saddr @s4-sel-a counter meta mark set meta mark | 0x00100000 return  # gnp.pass-a/in/0',
      'ip6 saddr @s6-sel-a counter meta mark set meta mark | 0x00100000 return  # gnp.pass-a/in/0',
    ]);
    assert.deepEqual(lines(t, 'pi-gnp.log'), ['counter log prefix "podroute gnp.log/in/0: "  # gnp.log/in/0']);
    // A policy with egress rules only does not apply to ingress: the second tier is empty, and skipped.
    // The third tier has no policy that can Pass: it runs whatever the first passed, and does not
    // read the mark; the chain clears it at its end, as the first tier may have set it.
    assert.deepEqual(lines(t, 'to-calib'), [
      'ct state invalid drop',
      CLEAR,
      'jump pi-gnp.pass-a',
      `${PASSED} jump pi-gnp.log`,
      `${PASSED} counter drop  # calib/in/tier0`,
      'jump pi-knp.y.allow-80',
      'counter drop  # calib/in/tier2',
      CLEAR,
    ]);
    assert.deepEqual(lines(t, 'pi-knp.y.allow-80'), ['tcp dport 80 counter accept  # knp.y.allow-80/in/0']);
  });

  it("a tier's end is its default action: Deny drops, Pass goes on to the next tier; both are counted by the tier's name", () => {
    const t = compilePolicy(
      input({
        policies: [
          { id: 'gnp.platform.deny-22', ingress: [{ action: 'Deny', match: { protocol: 'tcp', dstPorts: [{ first: 22, last: 22 }] } }] },
          { id: 'knp.default.x.web', ingress: [{ action: 'Allow', match: { protocol: 'tcp' } }] },
        ],
        endpoints: [
          ep('calib', '10.65.0.3', [
            { name: 'platform', policies: ['gnp.platform.deny-22'], defaultAction: 'Pass' },
            { name: 'default', policies: ['knp.default.x.web'], defaultAction: 'Deny' },
          ]),
        ],
      }),
    );
    assert.deepEqual(lines(t, 'to-calib'), [
      'ct state invalid drop',
      'jump pi-gnp.platform.deny-22',
      'counter  # calib/in/tier/platform',
      'jump pi-knp.default.x.web',
      'counter drop  # calib/in/tier/default',
    ]);
  });

  it("an egress Allow goes on to the destination endpoint's ingress policy; Deny drops", () => {
    const t = compilePolicy(
      input({
        sets: [{ id: 'net-dns', members: ['10.96.0.10'] }],
        policies: [
          {
            id: 'np.x.egress',
            egress: [
              { action: 'Deny', match: { protocol: 'tcp', dstPorts: [{ first: 25, last: 25 }] } },
              { action: 'Allow', match: { protocol: 'udp', dstSets: ['net-dns'], dstPorts: [{ first: 53, last: 53 }] } },
            ],
          },
        ],
        endpoints: [ep('calia', '10.65.0.2', [], [['np.x.egress']])],
      }),
    );
    assert.deepEqual(lines(t, 'po-np.x.egress'), [
      'tcp dport 25 counter drop  # np.x.egress/out/0',
      'ip daddr @s4-net-dns udp dport 53 counter accept  # np.x.egress/out/1',
      'ip6 daddr @s6-net-dns udp dport 53 counter accept  # np.x.egress/out/1',
    ]);
    assert.deepEqual(lines(t, 'from-calia'), [
      'ct state invalid drop',
      'fib saddr . iif oif missing counter drop  # calia/out/rpf',
      'jump po-np.x.egress',
      'counter drop  # calia/out/tier0',
    ]);
  });

  it('ports: one port bare, several as an anonymous set with overlapping ranges joined, negations, th for other protocols', () => {
    const r = (first: number, last = first) => ({ first, last });
    const t = compilePolicy(
      used({
        policies: [
          {
            id: 'p',
            ingress: [
              { action: 'Allow', match: { protocol: 'tcp', dstPorts: [r(8080), r(1000, 2000), r(1500, 2500), r(2501, 2600), r(80)] } },
              { action: 'Allow', match: { protocol: 'udp', srcPorts: [r(53)], notDstPorts: [r(1, 1023)] } },
              { action: 'Allow', match: { protocol: 'sctp', dstPorts: [r(9000, 9000)], notSrcPorts: [r(5), r(7)] } },
              { action: 'Allow', match: { protocol: 136, dstPorts: [r(4000, 4010)] } },
              { action: 'Allow', match: { protocol: 6 } },
            ],
          },
        ],
      }),
    );
    assert.deepEqual(lines(t, 'pi-p'), [
      'tcp dport { 80, 1000-2600, 8080 } counter accept  # p/in/0',
      'udp sport 53 udp dport != 1-1023 counter accept  # p/in/1',
      'sctp sport != { 5, 7 } sctp dport 9000 counter accept  # p/in/2',
      'meta l4proto 136 th dport 4000-4010 counter accept  # p/in/3',
      'meta l4proto tcp counter accept  # p/in/4',
    ]);
  });

  it('named ports: a concatenated set (address . protocol . port) per family', () => {
    const t = compilePolicy(
      used({
        namedPortSets: [
          {
            id: 'port-http',
            members: [
              { address: '10.65.0.3', protocol: 'tcp', port: 8080 },
              { address: 'fd00:65::3', protocol: 'tcp', port: 8080 },
              { address: '10.65.0.2', protocol: 'udp', port: 8080 },
              { address: '10.65.0.2', protocol: 'tcp', port: 80 },
              { address: '10.65.0.3', protocol: 'tcp', port: 8080 },
            ],
          },
        ],
        policies: [{ id: 'p', ingress: [{ action: 'Allow', match: { protocol: 'tcp', dstNamedPorts: 'port-http' } }] }],
      }),
    );
    assert.deepEqual(lines(t, 'pi-p'), [
      'meta l4proto tcp ip daddr . meta l4proto . th dport @np4-port-http counter accept  # p/in/0',
      'meta l4proto tcp ip6 daddr . meta l4proto . th dport @np6-port-http counter accept  # p/in/0',
    ]);
    assert.deepEqual(elements(t, 'np4-port-http'), ['10.65.0.2 . tcp . 80', '10.65.0.2 . udp . 8080', '10.65.0.3 . tcp . 8080']);
    assert.deepEqual(elements(t, 'np6-port-http'), ['fd00:65::3 . tcp . 8080']);
    const set = t.sets.find((s) => s.name === 'np4-port-http');
    assert.deepEqual([set?.type, set?.interval], ['ipv4_addr . inet_proto . inet_service', false]);
  });

  it('ICMP: the family follows the protocol, and a match no family can carry gives no rule', () => {
    const t = compilePolicy(
      used({
        policies: [
          {
            id: 'p',
            ingress: [
              { action: 'Allow', match: { protocol: 'icmp', icmp: { type: 8 } } },
              { action: 'Allow', match: { protocol: 'icmpv6', icmp: { type: 128, code: 0 } } },
              { action: 'Deny', match: { protocol: 'icmp', notIcmp: { type: 3, code: 4 } } },
              { action: 'Allow', match: { protocol: 'icmp' } },
              { action: 'Allow', match: { protocol: 'icmp', ipVersion: 6 } },
              { action: 'Allow', match: { protocol: 'tcp', icmp: { type: 8 } } },
              { action: 'Allow', match: { icmp: { type: 3 } } },
            ],
          },
        ],
      }),
    );
    assert.deepEqual(lines(t, 'pi-p'), [
      'icmp type 8 counter accept  # p/in/0',
      'icmpv6 type 128 icmpv6 code 0 counter accept  # p/in/1',
      'icmp type . icmp code != { 3 . 4 } counter drop  # p/in/2',
      'meta nfproto ipv4 meta l4proto icmp counter accept  # p/in/3',
      'icmp type 3 counter accept  # p/in/6',
      'icmpv6 type 3 counter accept  # p/in/6',
    ]);
  });

  it('natOutgoing: masquerade from the natOutgoing pools to outside every pool, per family', () => {
    const t = compilePolicy(
      input({
        pools: [
          { cidr: '10.65.0.0/16', natOutgoing: true },
          { cidr: '10.66.0.0/16', natOutgoing: false },
          { cidr: '10.65.128.0/17', natOutgoing: true },
          { cidr: 'fd00:65::/64', natOutgoing: false },
        ],
      }),
    );
    assert.deepEqual(lines(t, 'postrouting'), ['ip saddr @nat-pools-v4 ip daddr != @pools-v4 counter masquerade  # natOutgoing/v4']);
    assert.deepEqual(elements(t, 'pools-v4'), ['10.65.0.0/16', '10.66.0.0/16']);
    assert.deepEqual(elements(t, 'nat-pools-v4'), ['10.65.0.0/16']);
    assert.deepEqual(
      t.sets.map((s) => s.name),
      ['nat-pools-v4', 'pools-v4'],
      'no IPv6 pool has natOutgoing: no IPv6 sets',
    );
    const both = compilePolicy(
      input({
        pools: [
          { cidr: 'fd00:65::/64', natOutgoing: true },
          { cidr: '10.65.0.0/16', natOutgoing: true },
        ],
      }),
    );
    assert.deepEqual(lines(both, 'postrouting'), [
      'ip saddr @nat-pools-v4 ip daddr != @pools-v4 counter masquerade  # natOutgoing/v4',
      'ip6 saddr @nat-pools-v6 ip6 daddr != @pools-v6 counter masquerade  # natOutgoing/v6',
    ]);
  });

  it('options: the pass mark bit, chain priorities, the log prefix and the RPF check', () => {
    const t = compilePolicy(
      input({
        policies: [
          {
            id: 'p',
            ingress: [
              { action: 'Log', match: {} },
              { action: 'Pass', match: {} },
            ],
          },
        ],
        endpoints: [ep('calia', '10.65.0.2', [['p']])],
      }),
      { passMark: 0x4, filterPriority: -10, natPriority: 110, logPrefix: 'cali', rpfCheck: false },
    );
    assert.deepEqual(lines(t, 'pi-p'), [
      'counter log prefix "cali p/in/0: "  # p/in/0',
      'counter meta mark set meta mark | 0x00000004 return  # p/in/1',
    ]);
    assert.deepEqual(lines(t, 'from-calia'), ['ct state invalid drop']);
    assert.equal(chain(t, 'forward').base?.priority, -10);
    assert.equal(chain(t, 'forward-to-wl').base?.priority, -9, 'ingress policy runs after egress policy');
    assert.equal(chain(t, 'postrouting').base?.priority, 110);
    assert.match(lines(t, 'to-calia')[1]!, /& 0xfffffffb$/);
    assert.throws(() => compilePolicy(input({}), { passMark: 3 }), /options\.passMark: 3 is not a single mark bit/);
  });

  it('is deterministic: the same input in any order gives the same table', () => {
    const policies: Policy[] = [
      { id: 'b', ingress: [{ action: 'Allow', match: { srcSets: ['s2'] } }] },
      { id: 'a', egress: [{ action: 'Deny', match: { dstSets: ['s1'] } }] },
    ];
    const one = input({
      sets: [
        { id: 's1', members: ['10.0.0.1', '10.0.0.0/8', 'fd00::1'] },
        { id: 's2', members: ['192.168.0.0/24', '192.168.1.0/24'] },
      ],
      policies,
      endpoints: [ep('calix', '10.65.0.9', [['b']], [['a']]), ep('caliw', '10.65.0.8', [['b']])],
      pools: [{ cidr: '10.65.0.0/16', natOutgoing: true }],
    });
    const two: PolicyInput = {
      ...one,
      sets: [
        { id: 's2', members: ['192.168.1.0/24', '192.168.0.0/24'] },
        { id: 's1', members: ['fd00::1', '10.0.0.0/8', '10.0.0.1'] },
      ],
      policies: [...policies].reverse(),
      endpoints: [...one.endpoints].reverse(),
    };
    assert.deepEqual(compilePolicy(two), compilePolicy(one));
    assert.equal(JSON.stringify(compilePolicy(one)), JSON.stringify(compilePolicy(one)));
  });

  describe("only what this node's endpoints use", () => {
    const sets = [
      { id: 'sel-web', members: ['10.65.0.2'], hosts: true },
      { id: 'sel-db', members: ['10.65.1.5'], hosts: true },
      { id: 'net-out', members: ['10.0.0.0/8'] },
    ];
    const namedPortSets = [{ id: 'port-http', members: [{ address: '10.65.0.2', protocol: 'tcp' as const, port: 8080 }] }];
    const policies: Policy[] = [
      { id: 'knp.x.web', ingress: [{ action: 'Allow', match: { srcSets: ['sel-web'], protocol: 'tcp', dstNamedPorts: 'port-http' } }] },
      {
        id: 'knp.x.db',
        ingress: [{ action: 'Allow', match: { srcSets: ['sel-db'] } }],
        egress: [{ action: 'Allow', match: { dstSets: ['net-out'] } }],
      },
      // Unused, and wrong: nothing of it is compiled, so nothing of it is refused.
      { id: 'knp.x.bad', ingress: [{ action: 'Allow', match: { srcSets: ['no-such-set'] } }] },
    ];
    const names = (t: NftTable) => [t.sets.map((s) => s.name), t.chains.map((c) => c.name).filter((n) => /^p[io]-/.test(n))];

    it('the chains of the policies an endpoint jumps to, per direction, and the sets their rules name', () => {
      const none = compilePolicy(input({ sets, namedPortSets, policies, pools: [{ cidr: '10.65.0.0/16', natOutgoing: true }] }));
      assert.deepEqual(names(none), [['nat-pools-v4', 'pools-v4'], []], 'no endpoint: the NAT sets only');
      const web = compilePolicy(input({ sets, namedPortSets, policies, endpoints: [ep('calia', '10.65.0.2', [['knp.x.web']])] }));
      assert.deepEqual(names(web), [['np4-port-http', 'np6-port-http', 's4-sel-web', 's6-sel-web'], ['pi-knp.x.web']]);
      // knp.x.db in the ingress tiers only: its egress chain, and net-out, stay out.
      const db = compilePolicy(input({ sets, namedPortSets, policies, endpoints: [ep('calia', '10.65.0.2', [['knp.x.db']])] }));
      assert.deepEqual(names(db), [['s4-sel-db', 's6-sel-db'], ['pi-knp.x.db']]);
      const both = compilePolicy(
        input({ sets, namedPortSets, policies, endpoints: [ep('calia', '10.65.0.2', [['knp.x.db']], [['knp.x.db']])] }),
      );
      assert.deepEqual(names(both), [
        ['s4-net-out', 's4-sel-db', 's6-net-out', 's6-sel-db'],
        ['pi-knp.x.db', 'po-knp.x.db'],
      ]);
    });

    it('a local pod that comes to use a policy brings its chain and sets in; the last user leaving takes them out', () => {
      const one = input({ sets, namedPortSets, policies, endpoints: [ep('calia', '10.65.0.2', [['knp.x.web']])] });
      const two: PolicyInput = { ...one, endpoints: [...one.endpoints, ep('calib', '10.65.0.3', [['knp.x.db']])] };
      const add = planTable(compilePolicy(two), tableState(compilePolicy(one)));
      assert.deepEqual(
        add.filter((o) => o.kind !== 'add rule'),
        [
          { kind: 'add set', set: 's4-sel-db', type: 'ipv4_addr', interval: false, elements: ['10.65.1.5'] },
          { kind: 'add set', set: 's6-sel-db', type: 'ipv6_addr', interval: false, elements: [] },
          { kind: 'add chain', chain: 'from-calib', base: undefined },
          { kind: 'add chain', chain: 'to-calib', base: undefined },
          { kind: 'add chain', chain: 'pi-knp.x.db', base: undefined },
          { kind: 'add map element', map: 'from-wl', elements: [{ key: '"calib"', verdict: 'jump from-calib' }] },
          { kind: 'add map element', map: 'to-wl', elements: [{ key: '"calib"', verdict: 'jump to-calib' }] },
        ],
      );
      assert.deepEqual(
        [...new Set(add.flatMap((o) => (o.kind === 'add rule' ? [o.chain] : [])))],
        ['from-calib', 'to-calib', 'pi-knp.x.db'],
      );
      // Back: the map elements, then the chains (emptied first), then the sets they used.
      const remove = planTable(compilePolicy(one), tableState(compilePolicy(two)));
      assert.deepEqual(remove, [
        { kind: 'delete map element', map: 'from-wl', keys: ['"calib"'] },
        { kind: 'delete map element', map: 'to-wl', keys: ['"calib"'] },
        { kind: 'flush chain', chain: 'from-calib' },
        { kind: 'flush chain', chain: 'to-calib' },
        { kind: 'flush chain', chain: 'pi-knp.x.db' },
        { kind: 'delete chain', chain: 'from-calib' },
        { kind: 'delete chain', chain: 'to-calib' },
        { kind: 'delete chain', chain: 'pi-knp.x.db' },
        { kind: 'delete set', set: 's4-sel-db' },
        { kind: 'delete set', set: 's6-sel-db' },
      ]);
    });

    it('a policy no endpoint uses is not checked: it is refused once one does', () => {
      const endpoints = [ep('calia', '10.65.0.2', [['knp.x.bad']])];
      assert.throws(
        () => compilePolicy(input({ sets, namedPortSets, policies, endpoints })),
        /policies\[knp\.x\.bad\]\.ingress\[0\]\.match\.srcSets\[0\]: no set "no-such-set"/,
      );
    });
  });

  describe('recompiling: the parts of unchanged input objects are the objects they were', () => {
    const web = { id: 'sel-web', members: ['10.65.0.2'], hosts: true };
    const db = { id: 'sel-db', members: ['10.65.1.5'], hosts: true };
    const webPolicy: Policy = { id: 'knp.x.web', ingress: [{ action: 'Allow', match: { srcSets: ['sel-web'] } }] };
    const dbPolicy: Policy = { id: 'knp.x.db', ingress: [{ action: 'Allow', match: { srcSets: ['sel-db'] } }] };
    const calia = ep('calia', '10.65.0.2', [['knp.x.web', 'knp.x.db']]);
    const base = input({
      sets: [web, db],
      policies: [webPolicy, dbPolicy],
      endpoints: [calia],
      pools: [{ cidr: '10.65.0.0/16', natOutgoing: true }],
    });
    const same = (a: NftTable, b: NftTable, what: string) => {
      for (const [x, y] of [
        [a.sets, b.sets],
        [a.maps!, b.maps!],
        [a.chains, b.chains],
      ] as const) {
        assert.equal(x.length, y.length, what);
        for (let i = 0; i < x.length; i++) assert.equal(x[i], y[i], `${what}: ${x[i]!.name}`);
      }
    };

    it('the same input twice: every set, map and chain is the same object', () => {
      same(compilePolicy(base), compilePolicy({ ...base }), 'recompiled');
    });

    it('a pod add: only the set it changed is new (and equals a compile from scratch); a new endpoint is only its chains and the maps', () => {
      const before = compilePolicy(base);
      const web2 = { ...web, members: ['10.65.0.2', '10.65.3.9'] };
      const after = compilePolicy({ ...base, sets: [web2, db] });
      const changed = after.sets.filter((set, i) => set !== before.sets[i]).map((set) => set.name);
      assert.deepEqual(changed, ['s4-sel-web', 's6-sel-web']);
      assert.deepEqual(elements(after, 's4-sel-web'), ['10.65.0.2', '10.65.3.9']);
      for (let i = 0; i < after.chains.length; i++) assert.equal(after.chains[i], before.chains[i], after.chains[i]!.name);
      const calib = ep('calib', '10.65.0.3', [['knp.x.web']]);
      const local = compilePolicy({ ...base, endpoints: [calia, calib] });
      assert.deepEqual(
        local.chains.filter((c) => !before.chains.includes(c)).map((c) => c.name),
        ['from-calib', 'to-calib'],
      );
      assert.ok(
        local.sets.every((set, i) => set === before.sets[i]),
        'a set calib does not touch was rebuilt, not reused',
      );
      assert.notEqual(local.maps, before.maps);
    });

    it('a kept part is not trusted blindly: options, a policy that stops applying, a set that went away', () => {
      const plain = compilePolicy(base);
      const marked = compilePolicy(base, { passMark: 0x8, logPrefix: 'x', rpfCheck: false });
      assert.deepEqual(lines(marked, 'from-calia'), ['ct state invalid drop']);
      same(compilePolicy(base), plain, 'the default options again');
      assert.deepEqual(lines(plain, 'to-calia'), [
        'ct state invalid drop',
        'jump pi-knp.x.web',
        'jump pi-knp.x.db',
        'counter drop  # calia/in/tier0',
      ]);
      // The same endpoint object, but knp.x.db can now Pass: its tier clears and tests the mark, the option's bit.
      const passing = {
        ...base,
        policies: [webPolicy, { ...dbPolicy, ingress: [{ action: 'Pass' as const, match: { srcSets: ['sel-db'] } }] }],
      };
      const passed = [CLEAR, 'jump pi-knp.x.web', `${PASSED} jump pi-knp.x.db`, `${PASSED} counter drop  # calia/in/tier0`, CLEAR];
      assert.deepEqual(lines(compilePolicy(passing), 'to-calia'), ['ct state invalid drop', ...passed]);
      const mark8 = (l: string) => l.replace('0xffefffff', '0xfffffff7').replace('0x00100000', '0x00000008');
      assert.deepEqual(lines(compilePolicy(passing, { passMark: 0x8 }), 'to-calia'), ['ct state invalid drop', ...passed.map(mark8)]);
      // The same endpoint object, but knp.x.db now has no ingress rules: it no longer applies, nor is compiled.
      const egressOnly = compilePolicy({ ...base, policies: [webPolicy, { id: 'knp.x.db', egress: [] }] });
      assert.deepEqual(lines(egressOnly, 'to-calia'), ['ct state invalid drop', 'jump pi-knp.x.web', 'counter drop  # calia/in/tier0']);
      assert.deepEqual(
        egressOnly.chains.map((c) => c.name).filter((n) => n.startsWith('p')),
        ['postrouting', 'pi-knp.x.web'],
      );
      // The same policy object, but its set is gone from the input: refused as from scratch.
      assert.throws(
        () => compilePolicy({ ...base, sets: [db] }),
        /policies\[knp\.x\.web\]\.ingress\[0\]\.match\.srcSets\[0\]: no set "sel-web"/,
      );
      // An address read before as a host does not let a network into a set of hosts.
      compilePolicy({ ...base, sets: [{ ...web, members: ['10.65.0.2', '10.66.0.0/16'], hosts: false }, db] });
      assert.throws(() => compilePolicy({ ...base, sets: [{ ...web, members: ['10.65.0.2', '10.66.0.0/16'] }, db] }), /is a network/);
    });
  });

  describe('a pod coming or going', () => {
    const base = input({
      sets: [
        { id: 'sel-web', members: ['10.65.0.2'] },
        { id: 'sel-db', members: ['10.65.1.5'] },
      ],
      namedPortSets: [{ id: 'port-http', members: [{ address: '10.65.0.2', protocol: 'tcp', port: 8080 }] }],
      policies: [
        { id: 'knp.x.web', ingress: [{ action: 'Allow', match: { srcSets: ['sel-web'], protocol: 'tcp', dstNamedPorts: 'port-http' } }] },
        { id: 'knp.x.db', egress: [{ action: 'Allow', match: { dstSets: ['sel-db'] } }] },
      ],
      endpoints: [ep('calia', '10.65.0.2', [['knp.x.web']], [['knp.x.db']])],
      pools: [{ cidr: '10.65.0.0/16', natOutgoing: true }],
    });
    const chainsExcept = (t: NftTable, skip: (name: string) => boolean) => t.chains.filter((c) => !skip(c.name));

    it('on another node: only set elements change', () => {
      const after = compilePolicy({
        ...base,
        sets: [
          { id: 'sel-web', members: ['10.65.0.2', '10.65.3.9'] },
          { id: 'sel-db', members: ['10.65.1.5'] },
        ],
        namedPortSets: [
          {
            id: 'port-http',
            members: [
              { address: '10.65.0.2', protocol: 'tcp', port: 8080 },
              { address: '10.65.3.9', protocol: 'tcp', port: 8080 },
            ],
          },
        ],
      });
      const before = compilePolicy(base);
      assert.deepEqual(after.chains, before.chains);
      assert.deepEqual(
        after.sets.map((s) => s.name),
        before.sets.map((s) => s.name),
      );
      assert.deepEqual(elements(after, 's4-sel-web'), ['10.65.0.2', '10.65.3.9']);
      assert.deepEqual(elements(after, 'np4-port-http'), ['10.65.0.2 . tcp . 8080', '10.65.3.9 . tcp . 8080']);
    });

    it('on this node: set elements, one element in each dispatch map and its own chains; no rule of another chain', () => {
      const before = compilePolicy(base);
      const after = compilePolicy({
        ...base,
        sets: [
          { id: 'sel-web', members: ['10.65.0.2', '10.65.0.3'] },
          { id: 'sel-db', members: ['10.65.1.5'] },
        ],
        endpoints: [...base.endpoints, ep('calib', '10.65.0.3', [['knp.x.web']])],
      });
      // Every chain of before is in after as it was, the dispatch chains too: only calib's own are new.
      const own = (n: string) => n === 'to-calib' || n === 'from-calib';
      assert.deepEqual(chainsExcept(after, own), before.chains);
      assert.deepEqual(
        chain(after, 'to-calib').rules.map((r) => r.expr),
        ['ct state invalid drop', 'jump pi-knp.x.web', 'counter drop'],
      );
      assert.deepEqual(
        after.maps!.map((m) => [m.name, m.elements.length - before.maps!.find((b) => b.name === m.name)!.elements.length]),
        [
          ['from-wl', 1],
          ['to-wl', 1],
        ],
      );
      assert.deepEqual(elements(after, 's4-sel-web'), ['10.65.0.2', '10.65.0.3']);

      // What the kernel is given: calib's chains, one set element, one element per dispatch map.
      const add = planTable(after, tableState(before));
      assert.deepEqual(
        add.filter((o) => o.kind !== 'add rule'),
        [
          { kind: 'add chain', chain: 'from-calib', base: undefined },
          { kind: 'add chain', chain: 'to-calib', base: undefined },
          { kind: 'add element', set: 's4-sel-web', elements: ['10.65.0.3'] },
          { kind: 'add map element', map: 'from-wl', elements: [{ key: '"calib"', verdict: 'jump from-calib' }] },
          { kind: 'add map element', map: 'to-wl', elements: [{ key: '"calib"', verdict: 'jump to-calib' }] },
        ],
      );
      const filled = add.flatMap((o) => (o.kind === 'add rule' ? [o.chain] : []));
      assert.deepEqual(new Set(filled), new Set(['from-calib', 'to-calib']), 'rules go into the new chains only');
      assert.equal(filled.length, chain(after, 'from-calib').rules.length + chain(after, 'to-calib').rules.length);
      // And back: the map elements go before the chains they jump to; nothing else is flushed.
      const remove = planTable(before, tableState(after));
      assert.deepEqual(remove, [
        { kind: 'delete map element', map: 'from-wl', keys: ['"calib"'] },
        { kind: 'delete map element', map: 'to-wl', keys: ['"calib"'] },
        { kind: 'flush chain', chain: 'from-calib' },
        { kind: 'flush chain', chain: 'to-calib' },
        { kind: 'delete chain', chain: 'from-calib' },
        { kind: 'delete chain', chain: 'to-calib' },
        { kind: 'delete element', set: 's4-sel-web', elements: ['10.65.0.3'] },
      ]);
    });

    it('on this node: the transaction does not grow with the number of policies or of local pods', () => {
      const many = (pods: number, policies: number): PolicyInput =>
        input({
          sets: [{ id: 'sel', members: Array.from({ length: pods }, (_, i) => `10.65.${i >> 8}.${i & 255}`) }],
          policies: Array.from({ length: policies }, (_, i) => ({
            id: `knp.x.p${i}`,
            ingress: [{ action: 'Allow', match: { srcSets: ['sel'] } }],
          })),
          endpoints: Array.from({ length: pods }, (_, i) =>
            ep(`cali${i}`, `10.65.${i >> 8}.${i & 255}`, [[`knp.x.p${i % policies}`, `knp.x.p${(i + 1) % policies}`]]),
          ),
        });
      const opsOfAdd = (pods: number, policies: number) => {
        const before = many(pods, policies);
        const after = many(pods + 1, policies);
        const ops = planTable(compilePolicy(after), tableState(compilePolicy(before)));
        const counts: Record<string, number> = {};
        for (const o of ops) counts[o.kind] = (counts[o.kind] ?? 0) + 1;
        return counts;
      };
      // Every policy is in use already (more pods than policies): the new pod brings no policy chain.
      const small = opsOfAdd(3, 2);
      // Its chains: the invalid-state drop in each, the source check, and one tier of jumps and its drop.
      assert.deepEqual(small, { 'add chain': 2, 'add element': 1, 'add map element': 2, 'add rule': 6 });
      assert.deepEqual(opsOfAdd(400, 300), small);
    });
  });

  describe('names and ids', () => {
    it('an id nft can read and that fits stays as it is; others are cut and hashed, stay distinct and fit', () => {
      assert.equal(nftName('pi-', 'knp.default.allow-web'), 'pi-knp.default.allow-web');
      const long = `knp.${'n'.repeat(63)}.${'p'.repeat(200)}`;
      const a = nftName('pi-', long);
      const b = nftName('pi-', `${long}x`);
      assert.ok(a.length <= MAX_NAME && b.length <= MAX_NAME, `${a} ${b}`);
      assert.notEqual(a, b);
      assert.match(a, /^pi-knp\.n+-[0-9a-f]{12}$/);
      const odd = nftName('s4-', 'a b/c');
      assert.match(odd, /^s4-a_b_c-[0-9a-f]{12}$/);
      assert.notEqual(nftName('s4-', 'a_b_c'), odd);
      const id = ruleId(long, 'egress', 12);
      assert.ok(id.length <= MAX_RULE_ID, id);
      assert.match(id, /^knp\.n+\.p+#[0-9a-f]{12}\/out\/12$/);
      assert.equal(ruleId('knp.a.b', 'ingress', 0), 'knp.a.b/in/0');
      assert.match(ruleId('say "hi"', 'ingress', 1), /^say _hi_#[0-9a-f]{12}\/in\/1$/);
    });

    it('chains of long policy ids are named within the limit', () => {
      const id = `knp.${'x'.repeat(100)}`;
      const t = compilePolicy(input({ policies: [{ id, ingress: [] }], endpoints: [ep('calia', '10.65.0.2', [[id]])] }));
      const names = t.chains.map((c) => c.name);
      assert.ok(
        names.every((n) => n.length <= MAX_NAME),
        names.join(' '),
      );
      assert.ok(
        lines(t, 'to-calia').includes(`jump ${nftName('pi-', id)}`),
        `to-calia does not jump to ${nftName('pi-', id)}: ${lines(t, 'to-calia').join('; ')}`,
      );
    });
  });

  describe('bad input is named, and nothing is compiled (the input an endpoint uses; the rest is not compiled)', () => {
    const cases: [string, PolicyInput, RegExp][] = [
      [
        'a set no rule can find',
        used({ policies: [{ id: 'p', ingress: [{ action: 'Allow', match: { srcSets: ['nope'] } }] }] }),
        /policies\[p\]\.ingress\[0\]\.match\.srcSets\[0\]: no set "nope"/,
      ],
      [
        'a named port set no rule can find',
        used({ policies: [{ id: 'p', egress: [{ action: 'Allow', match: { protocol: 'tcp', dstNamedPorts: 'nope' } }] }] }),
        /policies\[p\]\.egress\[0\]\.match\.dstNamedPorts: no named port set "nope"/,
      ],
      [
        'a policy an endpoint names but the input lacks',
        used({ endpoints: [ep('calia', '10.0.0.1', [['ghost']])] }),
        /endpoints\[calia\]\.ingress\[0\]\[0\]: no policy "ghost"/,
      ],
      [
        'a set id twice',
        used({
          sets: [
            { id: 's', members: [] },
            { id: 's', members: [] },
          ],
        }),
        /sets\[1\]: "s" appears twice/,
      ],
      ['a policy id twice', used({ policies: [{ id: 'p' }, { id: 'p' }] }), /policies\[1\]: "p" appears twice/],
      [
        'an interface twice',
        used({ endpoints: [ep('calia', '10.0.0.1'), ep('calia', '10.0.0.2')] }),
        /endpoints\[1\]: "calia" appears twice/,
      ],
      [
        'an interface name too long',
        used({ endpoints: [ep('cali0123456789abc', '10.0.0.1')] }),
        /endpoints\[0\]\.iface: "cali0123456789abc" is not an interface name/,
      ],
      [
        'a member that is no address',
        used({
          sets: [{ id: 's', members: ['10.0.0.300'] }],
          policies: [{ id: 'p', ingress: [{ action: 'Allow', match: { srcSets: ['s'] } }] }],
        }),
        /sets\[0\]\.members\[0\]/,
      ],
      ['a pool that is no CIDR', used({ pools: [{ cidr: 'nope', natOutgoing: true }] }), /pools\[0\]\.cidr/],
      [
        'ports without a protocol that has them',
        used({ policies: [{ id: 'p', ingress: [{ action: 'Allow', match: { dstPorts: [{ first: 80, last: 80 }] } }] }] }),
        /policies\[p\]\.ingress\[0\]\.match: ports need protocol tcp, udp or sctp \(got none\)/,
      ],
      [
        'ports on ICMP',
        used({
          policies: [{ id: 'p', ingress: [{ action: 'Allow', match: { protocol: 'icmp', dstPorts: [{ first: 80, last: 80 }] } }] }],
        }),
        /ports need protocol tcp, udp or sctp \(got icmp\)/,
      ],
      [
        'a port range backwards',
        used({ policies: [{ id: 'p', ingress: [{ action: 'Allow', match: { protocol: 'tcp', dstPorts: [{ first: 90, last: 80 }] } }] }] }),
        /match\.dstPorts\[0\]: 90-80 is not a port range/,
      ],
      [
        'an unknown protocol name',
        used({ policies: [{ id: 'p', ingress: [{ action: 'Allow', match: { protocol: 'tpc' as 'tcp' } }] }] }),
        /match\.protocol: "tpc" is not tcp, udp, sctp, icmp, icmpv6 or a number/,
      ],
      [
        'an ICMP type out of range',
        used({ policies: [{ id: 'p', ingress: [{ action: 'Allow', match: { protocol: 'icmp', icmp: { type: 256 } } }] }] }),
        /match\.icmp\.type: 256 is not an ICMP type/,
      ],
      [
        'a named port member with a bad port',
        used({
          namedPortSets: [{ id: 'n', members: [{ address: '10.0.0.1', protocol: 'tcp', port: 0 }] }],
          policies: [{ id: 'p', ingress: [{ action: 'Allow', match: { protocol: 'tcp', dstNamedPorts: 'n' } }] }],
        }),
        /namedPortSets\[0\]\.members\[0\]\.port: 0 is not a port/,
      ],
      [
        'a named port member that is a network',
        used({
          namedPortSets: [{ id: 'n', members: [{ address: '10.0.0.0/24', protocol: 'tcp', port: 80 }] }],
          policies: [{ id: 'p', ingress: [{ action: 'Allow', match: { protocol: 'tcp', dstNamedPorts: 'n' } }] }],
        }),
        /namedPortSets\[0\]\.members\[0\]\.address/,
      ],
      [
        'an unknown action',
        used({ policies: [{ id: 'p', ingress: [{ action: 'Reject' as 'Deny', match: {} }] }] }),
        /policies\[p\]\.ingress\[0\]\.action: "Reject" is not Allow, Deny, Pass or Log/,
      ],
    ];
    for (const [what, bad, message] of cases) {
      it(what, () => {
        assert.throws(
          () => compilePolicy(bad),
          (e: unknown) => e instanceof PolicyCompileError && message.test(e.message),
        );
      });
    }
  });
});
