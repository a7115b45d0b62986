// renderNftScript: the exact text of a small table, the replacing form, comments, and what
// cannot be written. (compile.kernel.test.ts shows that nft takes the text.)
import assert from 'node:assert/strict';
import type { NftTable } from '../../../felix/policy/nft-model.js';
import { elementList, quote, renderNftScript, ruleText } from '../../../felix/policy/render.js';

const table: NftTable = {
  family: 'inet',
  name: 'podroute',
  sets: [
    { name: 's4-a', type: 'ipv4_addr', interval: true, elements: ['10.0.0.0/24', '10.0.1.5'] },
    { name: 'np4-b', type: 'ipv4_addr . inet_proto . inet_service', interval: false, elements: [] },
  ],
  maps: [
    {
      name: 'to-wl',
      type: 'ifname',
      elements: [
        { key: '"calia"', verdict: 'jump empty' },
        { key: '"calib"', verdict: 'drop' },
      ],
    },
    { name: 'from-wl', type: 'ifname', elements: [] },
  ],
  chains: [
    {
      name: 'forward',
      base: { type: 'filter', hook: 'forward', priority: 0, policy: 'accept' },
      rules: [{ expr: 'ct state established,related accept' }, { expr: 'ip saddr @s4-a counter accept', id: 'p/in/0' }],
    },
    { name: 'empty', rules: [] },
  ],
};

describe('felix policy render: an NftTable as one nft -f script', () => {
  it('writes sets, then verdict maps, then chains, base chains with their hook line, and ids as comments', () => {
    assert.equal(
      renderNftScript(table),
      [
        'table inet podroute {',
        '\tset s4-a {',
        '\t\ttype ipv4_addr',
        '\t\tflags interval',
        '\t\telements = { 10.0.0.0/24, 10.0.1.5 }',
        '\t}',
        '\tset np4-b {',
        '\t\ttype ipv4_addr . inet_proto . inet_service',
        '\t}',
        '\tmap to-wl {',
        '\t\ttype ifname : verdict',
        '\t\telements = { "calia" : jump empty, "calib" : drop }',
        '\t}',
        '\tmap from-wl {',
        '\t\ttype ifname : verdict',
        '\t}',
        '\tchain forward {',
        '\t\ttype filter hook forward priority 0; policy accept;',
        '\t\tct state established,related accept',
        '\t\tip saddr @s4-a counter accept comment "p/in/0"',
        '\t}',
        '\tchain empty {',
        '\t}',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('replacing: declares the table (so the delete cannot fail), deletes it and writes it anew, one transaction', () => {
    const text = renderNftScript(table, { replace: true });
    assert.ok(text.startsWith('table inet podroute\ndelete table inet podroute\ntable inet podroute {\n'), text);
  });

  it("takes the dataplane's own comment for every rule", () => {
    const text = renderNftScript(table, { comment: (r) => `${r.id ?? ''}|abc` });
    assert.match(text, /\t\tct state established,related accept comment "\|abc"\n/);
    assert.match(text, /counter accept comment "p\/in\/0\|abc"\n/);
    assert.equal(
      ruleText({ expr: 'accept', id: 'x' }, () => undefined),
      'accept',
    );
  });

  it('breaks a long element list into lines of eight', () => {
    const list = elementList(
      Array.from({ length: 10 }, (_, i) => String(i)),
      '\t',
    );
    assert.equal(list, '{\n\t\t0, 1, 2, 3, 4, 5, 6, 7,\n\t\t8, 9\n\t}');
  });

  it('refuses what nft cannot read in a quoted string, and a comment over 127 bytes', () => {
    assert.throws(() => quote('a"b', 'log prefix'), /nft log prefix "a\\"b": quotes, backslashes and line breaks cannot be written/);
    assert.throws(() => ruleText({ expr: 'accept', id: 'x'.repeat(128) }), /longer than 127 bytes/);
    assert.equal(ruleText({ expr: 'accept', id: 'x'.repeat(127) }), `accept comment "${'x'.repeat(127)}"`);
  });
});
