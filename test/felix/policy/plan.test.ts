// The plan from desired to current nftables table, as exact operation lists: a member change
// is element operations only, a rule change flushes its one chain, an interface dispatched
// through a named verdict map is map element operations and its own chains, deletions are
// ordered so nothing in use is deleted, and bad desired tables are refused naming the field.
import assert from 'node:assert/strict';
import type { NftOp } from '../../../felix/policy/dataplane.js';
import { canonicalElements } from '../../../felix/policy/element-text.js';
import { MemoryNftDataplane } from '../../../felix/policy/memory-nft.js';
import type { NftChain, NftMap, NftSet, NftTable } from '../../../felix/policy/nft-model.js';
import { base, fwd, table, toCali1, web } from './dataplane-fixtures.js';
import { renderTransaction } from '../../../felix/policy/nft-script.js';
import { planTable } from '../../../felix/policy/plan.js';
import { NftTableError, ruleComment, ruleIdOfComment, tableState } from '../../../felix/policy/table-state.js';

const c = (chain: NftChain, i: number) => ruleComment(chain.rules[i]);

describe('felix/policy plan', () => {
  it('creates the table, sets, chains, then the rules, from nothing', () => {
    const ops = planTable(base, undefined);
    assert.deepEqual(ops, [
      { kind: 'add table' },
      { kind: 'add set', set: 's4-web', type: 'ipv4_addr', interval: true, elements: ['10.65.0.2', '10.65.0.3'] },
      { kind: 'add chain', chain: 'forward', base: fwd.base },
      { kind: 'add chain', chain: 'to-cali1', base: undefined },
      { kind: 'add rule', chain: 'forward', expr: fwd.rules[0].expr, comment: c(fwd, 0) },
      { kind: 'add rule', chain: 'forward', expr: fwd.rules[1].expr, comment: c(fwd, 1) },
      { kind: 'add rule', chain: 'to-cali1', expr: toCali1.rules[0].expr, comment: c(toCali1, 0) },
      { kind: 'add rule', chain: 'to-cali1', expr: toCali1.rules[1].expr, comment: c(toCali1, 1) },
    ]);
  });

  it('plans nothing when the table already matches', () => {
    assert.deepEqual(planTable(base, tableState(base)), []);
    // A copy with equal content (new objects, as a recompile gives) is no change either.
    const copy = structuredClone(base) as NftTable;
    assert.deepEqual(planTable(copy, tableState(base)), []);
  });

  it('keys a recompiled table by content: equal parts are the same objects, also after the caches are trimmed', () => {
    const many = (tag: string, n: number) =>
      table(
        Array.from({ length: n }, (_, i) => ({
          name: `s4-${tag}${i}`,
          type: 'ipv4_addr',
          interval: true,
          elements: [`10.0.${i >> 8}.${i & 255}`],
        })),
        Array.from({ length: n }, (_, i) => ({
          name: `c-${tag}${i}`,
          rules: [{ id: `${tag}${i}`, expr: `ip saddr @s4-${tag}${i} accept` }],
        })),
      );
    const first = tableState(base);
    assert.equal(tableState(structuredClone(base) as NftTable).sets.get('s4-web'), first.sets.get('s4-web'));
    assert.equal(tableState(structuredClone(base) as NftTable).chains.get('to-cali1'), first.chains.get('to-cali1'));
    // Tables of 3000 other sets and chains each outgrow the caches, which then keep only the last.
    for (const tag of ['a', 'b', 'c']) tableState(many(tag, 3000));
    const later = many('c', 3000);
    assert.deepEqual(planTable(later, tableState(structuredClone(later) as NftTable)), []);
    assert.deepEqual(planTable(base, first), []);
    assert.equal(planTable(base, undefined).length, 8);
  });

  it('a pod joining and one leaving a selector is element operations only', () => {
    const next = table([{ ...web, elements: ['10.65.0.3', '10.65.0.9'] }], [fwd, toCali1]);
    assert.deepEqual(planTable(next, tableState(base)), [
      { kind: 'delete element', set: 's4-web', elements: ['10.65.0.2'] },
      { kind: 'add element', set: 's4-web', elements: ['10.65.0.9'] },
    ]);
  });

  it('the cost of a pod add does not grow with the number of policies', () => {
    const sets: NftSet[] = [];
    const chains: NftChain[] = [fwd];
    for (let p = 0; p < 500; p++) {
      sets.push({ name: `s4-p${p}`, type: 'ipv4_addr', interval: true, elements: [`10.${p >> 8}.${p & 255}.1`] });
      chains.push({ name: `pi-p${p}`, rules: [{ id: `p${p}/in/0`, expr: `ip saddr @s4-p${p} counter accept` }] });
    }
    chains.push({ name: 'to-cali1', rules: [] });
    const before = table(sets, chains);
    const after = table(
      sets.map((s, i) => (i === 7 ? { ...s, elements: [...s.elements, '10.200.0.1'] } : s)),
      chains,
    );
    assert.deepEqual(planTable(after, tableState(before)), [{ kind: 'add element', set: 's4-p7', elements: ['10.200.0.1'] }]);
  });

  it('a changed rule flushes and refills its one chain, nothing else', () => {
    const changed: NftChain = {
      ...toCali1,
      rules: [{ ...toCali1.rules[0], expr: 'ip saddr @s4-web tcp dport 8080 counter accept' }, toCali1.rules[1]],
    };
    const ops = planTable(table([web], [fwd, changed]), tableState(base));
    assert.deepEqual(ops, [
      { kind: 'flush chain', chain: 'to-cali1' },
      { kind: 'add rule', chain: 'to-cali1', expr: changed.rules[0].expr, comment: c(changed, 0) },
      { kind: 'add rule', chain: 'to-cali1', expr: changed.rules[1].expr, comment: c(changed, 1) },
    ]);
    assert.notEqual(c(changed, 0), c(toCali1, 0), 'same id, other statements: another comment');
  });

  it('a rule the kernel lacks (deleted behind our back) refills its chain', () => {
    const state = tableState(base);
    const kernel = {
      sets: state.sets,
      maps: state.maps,
      chains: new Map([...state.chains].map(([n, ch]) => [n, n === 'to-cali1' ? { ...ch, rules: ch.rules.slice(1) } : ch])),
    };
    const ops = planTable(base, kernel);
    assert.deepEqual(
      ops.map((o) => o.kind),
      ['flush chain', 'add rule', 'add rule'],
    );
  });

  it('deletes: jumps go first, then chains, then the sets they used', () => {
    const next = table([], [{ ...fwd, rules: [fwd.rules[0]] }]);
    const ops = planTable(next, tableState(base));
    assert.deepEqual(ops, [
      { kind: 'flush chain', chain: 'forward' },
      { kind: 'flush chain', chain: 'to-cali1' },
      { kind: 'delete chain', chain: 'to-cali1' },
      { kind: 'delete set', set: 's4-web' },
      { kind: 'add rule', chain: 'forward', expr: fwd.rules[0].expr, comment: c(fwd, 0) },
    ]);
  });

  it('a set whose type changes is recreated after the chains using it are flushed, and they are refilled', () => {
    const v6: NftSet = { name: 's4-web', type: 'ipv4_addr', interval: false, elements: ['10.65.0.2'] };
    const ops = planTable(table([v6], [fwd, toCali1]), tableState(base));
    assert.deepEqual(ops, [
      { kind: 'flush chain', chain: 'to-cali1' },
      { kind: 'delete set', set: 's4-web' },
      { kind: 'add set', set: 's4-web', type: 'ipv4_addr', interval: false, elements: ['10.65.0.2'] },
      { kind: 'add rule', chain: 'to-cali1', expr: toCali1.rules[0].expr, comment: c(toCali1, 0) },
      { kind: 'add rule', chain: 'to-cali1', expr: toCali1.rules[1].expr, comment: c(toCali1, 1) },
    ]);
  });

  it('a base chain whose policy changes is recreated', () => {
    const dropping: NftChain = { ...fwd, base: { ...fwd.base!, policy: 'drop' } };
    const ops = planTable(table([web], [dropping, toCali1]), tableState(base));
    assert.deepEqual(ops, [
      { kind: 'flush chain', chain: 'forward' },
      { kind: 'delete chain', chain: 'forward' },
      { kind: 'add chain', chain: 'forward', base: dropping.base },
      { kind: 'add rule', chain: 'forward', expr: fwd.rules[0].expr, comment: c(fwd, 0) },
      { kind: 'add rule', chain: 'forward', expr: fwd.rules[1].expr, comment: c(fwd, 1) },
    ]);
  });

  it('a new chain and set come before the rule that jumps to it', () => {
    const toCali2: NftChain = { name: 'to-cali2', rules: [{ id: 'x', expr: 'ip saddr @s4-db drop' }] };
    const db: NftSet = { name: 's4-db', type: 'ipv4_addr', interval: true, elements: [] };
    const fwd2: NftChain = { ...fwd, rules: [...fwd.rules, { id: 'to-cali2', expr: 'oifname "cali2" jump to-cali2' }] };
    const ops = planTable(table([web, db], [fwd2, toCali1, toCali2]), tableState(base));
    assert.deepEqual(
      ops.map((o) => `${o.kind} ${'chain' in o ? o.chain : 'set' in o ? o.set : ''}`),
      [
        'add set s4-db',
        'add chain to-cali2',
        'flush chain forward',
        'add rule forward',
        'add rule forward',
        'add rule forward',
        'add rule to-cali2',
      ],
    );
  });

  it('compares elements as nft prints them: host prefixes bare, overlaps merged, host bits cleared', () => {
    const desired = table([{ ...web, elements: ['10.65.0.2/32', '10.65.0.3', '10.0.0.0/8', '10.1.0.0/16', '192.168.1.7/24'] }], []);
    const ops = planTable(desired, undefined);
    assert.deepEqual(ops[1], {
      kind: 'add set',
      set: 's4-web',
      type: 'ipv4_addr',
      interval: true,
      elements: ['10.0.0.0/8', '192.168.1.0/24'],
    });
    assert.deepEqual(canonicalElements('ipv6_addr', true, ['fd00::1/128', 'FD00:1::/64', 'fd00:2::-fd00:2::ffff']), [
      'fd00::1',
      'fd00:1::/64',
      'fd00:2::/112',
    ]);
    assert.deepEqual(canonicalElements('ipv4_addr . inet_proto . inet_service', false, ['10.0.0.5 . 6 . 80', '10.0.0.5 . tcp . 80']), [
      '10.0.0.5 . tcp . 80',
    ]);
  });

  it('the comment holds the id and a hash; a long id is cut and still fits nft', () => {
    const rule = { id: 'knp.default.web/in/0', expr: 'counter accept' };
    assert.match(ruleComment(rule), /^knp\.default\.web\/in\/0\|[0-9a-f]{12}$/);
    assert.equal(ruleIdOfComment(ruleComment(rule)), 'knp.default.web/in/0');
    const long = ruleComment({ id: 'x'.repeat(300), expr: 'accept' });
    assert.equal(long.length, 127);
    assert.notEqual(long, ruleComment({ id: `${'x'.repeat(299)}y`, expr: 'accept' }));
    assert.equal(ruleComment({ id: 'a', expr: 'ip  saddr 1.2.3.4   accept ' }), ruleComment({ id: 'a', expr: 'ip saddr 1.2.3.4 accept' }));
  });

  it('refuses, naming the field, what would say more than one command', () => {
    const bad = (t: NftTable, field: RegExp) =>
      assert.throws(
        () => planTable(t, undefined),
        (e: unknown) => e instanceof NftTableError && field.test(e.field),
      );
    bad(table([], [{ name: 'c', rules: [{ expr: 'accept; delete table inet other' }] }]), /^chains\[0\]\.rules\[0\]\.expr$/);
    bad(table([], [{ name: 'c', rules: [{ expr: 'accept\nflush ruleset' }] }]), /^chains\[0\]\.rules\[0\]\.expr$/);
    bad(table([], [{ name: 'bad name', rules: [] }]), /^chains\[0\]\.name$/);
    bad(
      table([{ ...web, elements: ['10.0.0.1 }; flush ruleset; add element inet podroute s4-web { 10.0.0.2'] }], []),
      /^sets\[0\]\.elements\[0\]$/,
    );
    bad(table([web, web], []), /^sets\[1\]\.name$/);
    // A quoted `;` is text, not a command.
    assert.doesNotThrow(() => planTable(table([], [{ name: 'c', rules: [{ expr: 'log prefix "a;b" accept' }] }]), undefined));
  });

  it('renders every operation as one line naming the table', () => {
    const text = renderTransaction({ family: 'inet', name: 'podroute' }, [
      ...planTable(base, undefined),
      { kind: 'delete element', set: 's4-web', elements: ['10.65.0.2'] },
      { kind: 'flush chain', chain: 'to-cali1' },
    ] satisfies NftOp[]);
    const lines = text.trimEnd().split('\n');
    assert.equal(lines.length, 10);
    for (const l of lines) assert.match(l, /^(add|delete|flush) (table|set|chain|rule|element) inet podroute\b/);
    assert.equal(lines[1], 'add set inet podroute s4-web { type ipv4_addr; flags interval; elements = { 10.65.0.2, 10.65.0.3 }; }');
    assert.equal(lines[2], 'add chain inet podroute forward { type filter hook forward priority 0; policy accept; }');
    assert.equal(lines[6], `add rule inet podroute to-cali1 ip saddr @s4-web tcp dport 80 counter accept comment "${c(toCali1, 0)}"`);
  });
});

describe('felix/policy plan: named verdict maps', () => {
  const forward: NftChain = {
    name: 'forward',
    base: { type: 'filter', hook: 'forward', priority: 0, policy: 'accept' },
    rules: [{ expr: 'ct state established,related accept' }, { expr: 'oifname vmap @to-wl' }],
  };
  const to = (iface: string): NftChain => ({ name: `to-${iface}`, rules: [{ id: `${iface}/in/tier0`, expr: 'counter drop' }] });
  const toWl = (...ifaces: string[]): NftMap => ({
    name: 'to-wl',
    type: 'ifname',
    elements: ifaces.map((i) => ({ key: `"${i}"`, verdict: `jump to-${i}` })),
  });
  const node = (...ifaces: string[]): NftTable => ({
    family: 'inet',
    name: 'podroute',
    sets: [],
    maps: [toWl(...ifaces)],
    chains: [forward, ...ifaces.map(to)],
  });
  const brief = (ops: NftOp[]) =>
    ops.map((o) =>
      [o.kind, 'chain' in o ? o.chain : 'set' in o ? o.set : 'map' in o ? o.map : '', 'keys' in o ? o.keys.join(',') : ''].join(' ').trim(),
    );

  it('from nothing: the map with its elements comes after the chains they jump to, and before the rule that uses it', () => {
    assert.deepEqual(brief(planTable(node('cali1', 'cali2'), undefined)), [
      'add table',
      'add chain forward',
      'add chain to-cali1',
      'add chain to-cali2',
      'add map to-wl',
      'add rule forward',
      'add rule forward',
      'add rule to-cali1',
      'add rule to-cali2',
    ]);
    const add = planTable(node('cali1'), undefined).find((o) => o.kind === 'add map');
    assert.deepEqual(add, { kind: 'add map', map: 'to-wl', type: 'ifname', elements: [{ key: '"cali1"', verdict: 'jump to-cali1' }] });
    assert.ok(
      planTable(node(), undefined).some((o) => o.kind === 'add rule' && o.chain === 'forward' && o.expr === 'oifname vmap @to-wl'),
      'the rule that consults the map is there before any interface is',
    );
  });

  it('an interface more is its chain and one map element; the rule that consults the map stays', () => {
    const ops = planTable(node('cali1', 'cali2', 'cali3'), tableState(node('cali1', 'cali2')));
    assert.deepEqual(ops, [
      { kind: 'add chain', chain: 'to-cali3', base: undefined },
      { kind: 'add map element', map: 'to-wl', elements: [{ key: '"cali3"', verdict: 'jump to-cali3' }] },
      { kind: 'add rule', chain: 'to-cali3', expr: 'counter drop', comment: ruleComment(to('cali3').rules[0]) },
    ]);
  });

  it('an interface less: its map element goes before its chain, and no other chain is flushed', () => {
    assert.deepEqual(planTable(node('cali1'), tableState(node('cali1', 'cali2'))), [
      { kind: 'delete map element', map: 'to-wl', keys: ['"cali2"'] },
      { kind: 'flush chain', chain: 'to-cali2' },
      { kind: 'delete chain', chain: 'to-cali2' },
    ]);
  });

  it('a verdict that changes is the key deleted, then added with the new verdict', () => {
    const goto: NftTable = { ...node('cali1'), maps: [{ ...toWl('cali1'), elements: [{ key: '"cali1"', verdict: 'goto to-cali1' }] }] };
    assert.deepEqual(planTable(goto, tableState(node('cali1'))), [
      { kind: 'delete map element', map: 'to-wl', keys: ['"cali1"'] },
      { kind: 'add map element', map: 'to-wl', elements: [{ key: '"cali1"', verdict: 'goto to-cali1' }] },
    ]);
  });

  it('a map element whose chain is recreated is deleted before, and added after', () => {
    // The kernel as read holds to-cali2 as a base chain (as another program might have made it):
    // it is recreated as a regular chain, and the element that jumps to it goes before and comes back after.
    const kernel = tableState(node('cali1', 'cali2'));
    const other = { ...node('cali1', 'cali2'), chains: [forward, to('cali1'), { ...to('cali2'), rules: [{ expr: 'accept' }] }] };
    const state = tableState(other);
    const recreated = {
      ...state,
      chains: new Map(
        [...state.chains].map(([n, c]) => [
          n,
          n === 'to-cali2' ? { ...c, base: { type: 'filter', hook: 'input', priority: 0, policy: 'accept' } } : c,
        ]),
      ),
    };
    assert.deepEqual(brief(planTable(node('cali1', 'cali2'), recreated)), [
      'delete map element to-wl "cali2"',
      'flush chain to-cali2',
      'delete chain to-cali2',
      'add chain to-cali2',
      'add map element to-wl',
      'add rule to-cali2',
    ]);
    assert.deepEqual(planTable(node('cali1', 'cali2'), kernel), []);
  });

  it('a map no longer wanted: the rules using it are flushed, then it goes, then the chains it jumped to', () => {
    const none: NftTable = { family: 'inet', name: 'podroute', sets: [], maps: [], chains: [{ ...forward, rules: [forward.rules[0]] }] };
    assert.deepEqual(brief(planTable(none, tableState(node('cali1')))), [
      'flush chain forward',
      'flush chain to-cali1',
      'delete map to-wl',
      'delete chain to-cali1',
      'add rule forward',
    ]);
  });

  it('a set and a map trade a name: the old one goes before the new one is declared', () => {
    const asSet: NftTable = {
      family: 'inet',
      name: 'podroute',
      sets: [{ name: 'to-wl', type: 'ipv4_addr', interval: false, elements: [] }],
      maps: [],
      chains: [],
    };
    assert.deepEqual(brief(planTable(asSet, tableState(node('cali1')))), [
      'flush chain forward',
      'flush chain to-cali1',
      'delete map to-wl',
      'delete chain forward',
      'delete chain to-cali1',
      'add set to-wl',
    ]);
    assert.deepEqual(brief(planTable(node(), tableState(asSet))), [
      'add chain forward',
      'delete set to-wl',
      'add map to-wl',
      'add rule forward',
      'add rule forward',
    ]);
  });

  it('every plan above applies in the in-memory kernel, which holds map elements to the kernel rules', async () => {
    const steps = [node('cali1'), node('cali1', 'cali2', 'cali3'), node('cali3'), node(), node('cali2')];
    const dp = new MemoryNftDataplane();
    for (const step of steps) {
      const r = await dp.apply(planTable(step, await dp.read()));
      assert.equal(r.ok, true, r.error);
      assert.deepEqual(planTable(step, await dp.read()), [], 'reads back equal');
    }
  });

  it('refuses, naming the field, a map nft could not be given', () => {
    const bad = (maps: NftMap[], field: RegExp, sets: NftSet[] = []) =>
      assert.throws(
        () => planTable({ family: 'inet', name: 'podroute', sets, maps, chains: [] }, undefined),
        (e: unknown) => e instanceof NftTableError && field.test(e.field),
      );
    bad([{ ...toWl(), elements: [{ key: '"a"', verdict: 'jump to-a; flush ruleset' }] }], /^maps\[0\]\.elements\[0\]\.verdict$/);
    bad([{ ...toWl(), elements: [{ key: '"a"', verdict: 'masquerade' }] }], /^maps\[0\]\.elements\[0\]\.verdict$/);
    bad([{ ...toWl(), elements: [{ key: '"a" : accept, "b"', verdict: 'accept' }] }], /^maps\[0\]\.elements\[0\]\.key$/);
    bad(
      [
        {
          ...toWl(),
          elements: [
            { key: '"a"', verdict: 'accept' },
            { key: 'a', verdict: 'drop' },
          ],
        },
      ],
      /^maps\[0\]\.elements\[1\]\.key$/,
    );
    bad([{ ...toWl(), type: 'ifname : verdict' }], /^maps\[0\]\.type$/);
    bad([toWl(), toWl()], /^maps\[1\]\.name$/);
    bad([toWl()], /^maps\[0\]\.name$/, [{ name: 'to-wl', type: 'ipv4_addr', interval: false, elements: [] }]);
  });

  it('renders map operations as nft element commands on the table', () => {
    const text = renderTransaction({ family: 'inet', name: 'podroute' }, [
      { kind: 'add map', map: 'to-wl', type: 'ifname', elements: [{ key: '"cali1"', verdict: 'jump to-cali1' }] },
      { kind: 'add map', map: 'from-wl', type: 'ifname', elements: [] },
      {
        kind: 'add map element',
        map: 'to-wl',
        elements: [
          { key: '"cali2"', verdict: 'jump to-cali2' },
          { key: '"cali3"', verdict: 'drop' },
        ],
      },
      { kind: 'delete map element', map: 'to-wl', keys: ['"cali2"', '"cali3"'] },
      { kind: 'delete map', map: 'from-wl' },
    ]);
    assert.equal(
      text,
      [
        'add map inet podroute to-wl { type ifname : verdict; elements = { "cali1" : jump to-cali1 }; }',
        'add map inet podroute from-wl { type ifname : verdict; }',
        'add element inet podroute to-wl { "cali2" : jump to-cali2, "cali3" : drop }',
        'delete element inet podroute to-wl { "cali2", "cali3" }',
        'delete map inet podroute from-wl',
        '',
      ].join('\n'),
    );
    assert.throws(
      () =>
        renderTransaction({ family: 'inet', name: 'podroute' }, [
          { kind: 'add map element', map: 'to-wl', elements: [{ key: '"a"', verdict: 'accept; flush ruleset' }] },
        ]),
      NftTableError,
    );
    assert.throws(
      () =>
        renderTransaction({ family: 'inet', name: 'podroute' }, [
          { kind: 'delete map element', map: 'to-wl', keys: ['"a" }; flush ruleset'] },
        ]),
      NftTableError,
    );
  });
});
