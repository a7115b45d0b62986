// The plan from desired to current nftables table, as exact operation lists: a member change
// is element operations only, a rule change flushes its one chain, deletions are ordered so
// nothing in use is deleted, and bad desired tables are refused naming the field.
import assert from 'node:assert/strict';
import type { NftOp } from '../../felix/policy/dataplane.js';
import { canonicalElements } from '../../felix/policy/element-text.js';
import type { NftChain, NftSet, NftTable } from '../../felix/policy/nft-model.js';
import { renderTransaction } from '../../felix/policy/nft-script.js';
import { planTable } from '../../felix/policy/plan.js';
import { NftTableError, ruleComment, ruleIdOfComment, tableState } from '../../felix/policy/table-state.js';

const web: NftSet = { name: 's4-web', type: 'ipv4_addr', interval: true, elements: ['10.65.0.2', '10.65.0.3'] };
const fwd: NftChain = {
  name: 'forward',
  base: { type: 'filter', hook: 'forward', priority: 0, policy: 'accept' },
  rules: [
    { id: 'conntrack', expr: 'ct state established,related accept' },
    { id: 'to-cali1', expr: 'oifname "cali1" jump to-cali1' },
  ],
};
const toCali1: NftChain = {
  name: 'to-cali1',
  rules: [
    { id: 'knp.default.web/in/0', expr: 'ip saddr @s4-web tcp dport 80 counter accept' },
    { id: 'cali1/in/tier0', expr: 'counter drop' },
  ],
};

function table(sets: NftSet[], chains: NftChain[]): NftTable {
  return { family: 'inet', name: 'podroute', sets, chains };
}

const base = table([web], [fwd, toCali1]);
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
