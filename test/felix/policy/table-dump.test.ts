// The policy table in nft syntax: felix's own (as nft -f reads it), and the kernel's marked
// line by line against it. (test/felix/policy/nftnl-dataplane.test.ts loads the dump with nft
// and compares it with the kernel's table.)
import assert from 'node:assert/strict';
import type { InstalledTable } from '../../../felix/policy/dataplane.js';
import type { NftTable } from '../../../felix/policy/nft-model.js';
import { dumpTable } from '../../../felix/policy/table-dump.js';
import { ruleComment, tableState } from '../../../felix/policy/table-state.js';

const desired: NftTable = {
  family: 'inet',
  name: 'podroute',
  sets: [
    { name: 's4-web', type: 'ipv4_addr', interval: false, elements: ['10.65.0.3', '10.65.0.2'] },
    { name: 'aff4', type: 'ipv4_addr', interval: false, elements: [], timeout: 600 },
  ],
  maps: [{ name: 'to-wl', type: 'ifname', elements: [{ key: '"cali1"', verdict: 'jump to-cali1' }] }],
  chains: [
    { name: 'forward', base: { type: 'filter', hook: 'forward', priority: 0, policy: 'accept' }, rules: [{ expr: 'oifname vmap @to-wl' }] },
    {
      name: 'to-cali1',
      rules: [
        { id: 'a', expr: 'ip saddr @s4-web tcp dport { 80, 443 } counter accept' },
        { id: 'b', expr: 'counter drop' },
      ],
    },
  ],
};

describe('felix/policy table dump', () => {
  it("felix's table: nft -f syntax, elements one per line and sorted, rules with the comments felix writes", () => {
    const d = dumpTable(desired);
    assert.equal(d.differs, false);
    const comment = ruleComment(desired.chains[1].rules[0]);
    assert.equal(
      d.text,
      [
        'table inet podroute {',
        '\tset s4-web {',
        '\t\ttype ipv4_addr',
        '\t\telements = {',
        '\t\t\t10.65.0.2,',
        '\t\t\t10.65.0.3',
        '\t\t}',
        '\t}',
        '\tset aff4 {',
        '\t\ttype ipv4_addr',
        '\t\tflags dynamic,timeout',
        '\t\ttimeout 600s',
        '\t}',
        '\tmap to-wl {',
        '\t\ttype ifname : verdict',
        '\t\telements = {',
        '\t\t\t"cali1" : jump to-cali1',
        '\t\t}',
        '\t}',
        '\tchain forward {',
        '\t\ttype filter hook forward priority 0; policy accept;',
        `\t\toifname vmap @to-wl comment "${ruleComment(desired.chains[0].rules[0])}"`,
        '\t}',
        '\tchain to-cali1 {',
        `\t\tip saddr @s4-web tcp dport { 80, 443 } counter accept comment "${comment}"`,
        `\t\tcounter drop comment "${ruleComment(desired.chains[1].rules[1])}"`,
        '\t}',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('the kernel holding what felix meant: every line unmarked', () => {
    const d = dumpTable(desired, tableState(desired));
    assert.equal(d.differs, false);
    assert.ok(
      d.text.split('\n').every((l) => l === '' || l.startsWith('  ')),
      d.text,
    );
  });

  it('the kernel differing: a missing element and rule marked -, a foreign element, rule, set and chain marked +', () => {
    const k = tableState(desired);
    const web = k.sets.get('s4-web')!;
    const to = k.chains.get('to-cali1')!;
    const kernel: InstalledTable = {
      ...k,
      sets: new Map([
        ...k.sets,
        ['s4-web', { ...web, elements: new Set(['10.65.0.2', '10.65.0.66']) }],
        ['theirs', { name: 'theirs', type: 'ipv4_addr', flags: [], elements: new Set(['1.2.3.4']) }],
      ]),
      chains: new Map([
        ...k.chains,
        ['to-cali1', { ...to, rules: [to.rules[0], { comment: 'by hand', sets: [], chains: [] }] }],
        ['extra', { name: 'extra', rules: [] }],
      ]),
    };
    const d = dumpTable(desired, kernel);
    assert.equal(d.differs, true);
    const lines = d.text.split('\n');
    const marked = (mark: string) => lines.filter((l) => l.startsWith(`${mark} `)).map((l) => l.slice(2).trim());
    assert.deepEqual(marked('-'), ['10.65.0.3,', `counter drop comment "${ruleComment(desired.chains[1].rules[1])}"`]);
    assert.deepEqual(marked('+'), [
      '10.65.0.66',
      'set theirs {',
      'type ipv4_addr',
      'elements = {',
      '1.2.3.4',
      '}',
      '}',
      '# a rule felix did not write, comment "by hand"',
      'chain extra {',
      '}',
    ]);
  });

  it("a data map declared with typeof is dumped with it (nft has no name for integer), and the kernel's, read back without it, matches", () => {
    const t: NftTable = {
      ...desired,
      maps: [
        {
          name: 'eps',
          type: 'inet_proto . inet_service . integer',
          data: 'ipv4_addr . inet_service',
          typeof: 'meta l4proto . th dport . numgen random mod 1 : ip daddr . tcp dport',
          elements: [{ key: 'tcp . 80 . 0', verdict: '10.65.5.10 . 8080' }],
        },
      ],
    };
    const d = dumpTable(t);
    assert.ok(d.text.includes('\tmap eps {\n\t\ttypeof meta l4proto . th dport . numgen random mod 1 : ip daddr . tcp dport\n'), d.text);
    assert.ok(!d.text.includes('integer'), d.text);
    const k = tableState(t);
    const { typeof: _declared, ...readBack } = k.maps.get('eps')!;
    const kernel = dumpTable(t, { ...k, maps: new Map([['eps', readBack]]) });
    assert.equal(kernel.differs, false, kernel.text);
  });

  it('no table in the kernel: every line marked -', () => {
    const d = dumpTable(desired, null);
    assert.equal(d.differs, true);
    assert.ok(
      d.text.split('\n').every((l) => l === '' || l.startsWith('- ')),
      d.text,
    );
  });
});
