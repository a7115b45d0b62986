// The kernel takes what the compiler writes: for a matrix of generated inputs, the rendered
// script loads with `nft -f` in a fresh network namespace, and what nft lists back has the
// compiler's chains, rules (with their ids as comments), set elements and dispatch map
// elements. Root only.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import type { PolicyInput } from '../../../felix/policy/input.js';
import type { NftTable } from '../../../felix/policy/nft-model.js';
import { renderNftScript } from '../../../felix/policy/render.js';
import { Lab } from '../../support/netns.js';
import { generateInput } from './compile-generate.js';
import { type Listed, listTable, loadScript } from './compile-nft.js';

function assertListedAsCompiled(listed: Listed, t: NftTable, what: string): void {
  assert.deepEqual([...listed.chains.keys()].sort(), t.chains.map((c) => c.name).sort(), `${what}: chains`);
  for (const c of t.chains) {
    const l = listed.chains.get(c.name)!;
    assert.deepEqual(
      l.comments,
      c.rules.map((r) => r.id),
      `${what}: rules of ${c.name} (their ids as comments, in order)`,
    );
    if (c.base) assert.deepEqual([l.type, l.hook], [c.base.type, c.base.hook], `${what}: base chain ${c.name}`);
  }
  assert.deepEqual(
    [...listed.sets.entries()].sort(),
    t.sets.map((s) => [s.name, { type: s.type, elements: s.elements.length, interval: s.interval }]).sort(),
    `${what}: sets`,
  );
  assert.deepEqual(
    [...listed.maps.entries()].sort(),
    (t.maps ?? [])
      .map((m) => [m.name, { type: `${m.type} : verdict`, elements: m.elements.map((e) => `${e.key.slice(1, -1)} : ${e.verdict}`).sort() }])
      .sort(),
    `${what}: maps`,
  );
}

describe('felix policy compiler: the kernel takes every table it writes (nft -f, fresh namespaces)', function () {
  this.timeout(180_000);
  const lab = new Lab({ tag: 'cpk' });
  after(() => lab.destroy());

  const SEEDS = Array.from({ length: 40 }, (_, i) => i + 1);
  for (const seed of SEEDS) {
    it(`generated input, seed ${seed}: loads, lists back as compiled, and replaces itself`, async () => {
      const input = generateInput(seed);
      const t = compilePolicy(input);
      const ns = await lab.namespace(`s${seed}`);
      await loadScript(ns, renderNftScript(t));
      assertListedAsCompiled(await listTable(ns), t, `seed ${seed}`);
      // A resync from scratch over the same table, in one transaction.
      await loadScript(ns, renderNftScript(t, { replace: true }));
      assertListedAsCompiled(await listTable(ns), t, `seed ${seed} replaced`);
    });
  }

  it('the matrix covers what it claims: every action, both families, ports, named ports, ICMP, Pass, NAT', () => {
    const all = SEEDS.map((s) => compilePolicy(generateInput(s)));
    const exprs = all.flatMap((t) => t.chains.flatMap((c) => c.rules.map((r) => r.expr)));
    for (const needle of [
      / accept$/,
      / drop$/,
      /meta mark \| 0x00100000 return$/,
      /log prefix/,
      /ip saddr @s4-/,
      /ip6 daddr != @s6-/,
      /dport \{ [^}]*-/,
      /th dport/,
      /\. th dport @np4-/,
      /@np6-/,
      /icmpv6 type/,
      /icmp type \. icmp code != /,
      /sctp/,
      /masquerade$/,
      /ip6 saddr @nat-pools-v6/,
      /^iifname vmap @from-wl$/,
      /^oifname vmap @to-wl$/,
    ]) {
      assert.ok(
        exprs.some((e) => needle.test(e)),
        `no generated rule matches ${needle}`,
      );
    }
    assert.ok(
      all.some((t) => t.sets.some((s) => s.elements.length >= 6)),
      'no set with six elements or more',
    );
    // Address sets both plain (a selector's hosts) and with intervals (nets), each of both families.
    for (const interval of [false, true])
      for (const prefix of ['s4-', 's6-'])
        assert.ok(
          all.some((t) => t.sets.some((s) => s.name.startsWith(prefix) && s.interval === interval && s.elements.length >= 2)),
          `no ${prefix} set ${interval ? 'with' : 'without'} intervals and two elements`,
        );
    assert.ok(
      all.some((t) => (t.maps ?? []).every((m) => m.elements.length >= 2)),
      'no table whose maps all have two elements or more',
    );
  });

  it('a node-sized table: 250 endpoints, 300 policies, sets of 5,000 members, loads in one transaction', async () => {
    const members = (n: number, off: number) =>
      Array.from({ length: n }, (_, i) => `10.${64 + ((i + off) >> 16)}.${((i + off) >> 8) & 255}.${(i + off) & 255}`);
    const sets = Array.from({ length: 20 }, (_, i) => ({ id: `sel-${i}`, members: members(5000, i * 977) }));
    const policies = Array.from({ length: 300 }, (_, i) => ({
      id: `knp.ns${i % 30}.p${i}`,
      ingress: [
        { action: 'Allow' as const, match: { srcSets: [`sel-${i % 20}`], protocol: 'tcp' as const, dstPorts: [{ first: 80, last: 80 }] } },
        { action: 'Allow' as const, match: { srcSets: [`sel-${(i + 1) % 20}`] } },
      ],
      egress: [{ action: 'Allow' as const, match: { dstSets: [`sel-${(i + 2) % 20}`] } }],
    }));
    const endpoints = Array.from({ length: 250 }, (_, i) => ({
      iface: `cali${i.toString(16).padStart(11, '0')}`,
      addresses: [`10.65.${i >> 8}.${i & 255}`],
      ingress: [[`knp.ns${i % 30}.p${i % 300}`, `knp.ns${i % 30}.p${(i + 30) % 300}`]],
      egress: [[`knp.ns${i % 30}.p${i % 300}`]],
    }));
    const input: PolicyInput = { sets, namedPortSets: [], policies, endpoints, pools: [{ cidr: '10.64.0.0/10', natOutgoing: true }] };
    const t = compilePolicy(input);
    const ns = await lab.namespace('big');
    const started = Date.now();
    await loadScript(ns, renderNftScript(t));
    const ms = Date.now() - started;
    assertListedAsCompiled(await listTable(ns), t, 'node-sized');
    const rules = t.chains.reduce((n, c) => n + c.rules.length, 0);
    const elements = t.sets.reduce((n, s) => n + s.elements.length, 0);
    assert.deepEqual(
      (t.maps ?? []).map((m) => m.elements.length),
      [250, 250],
    );
    console.log(
      `      ${t.chains.length} chains, ${rules} rules, ${t.sets.length} sets, ${elements} elements, 2 maps of 250: nft -f took ${ms} ms`,
    );
  });
});
