import assert from 'node:assert/strict';
import { decisionIndex, decisionMarks, decisionPrefix, END_OF_TIER } from '../../../felix/flows/decisions.js';
import { ctMarkLayout, markRuleNumber } from '../../../felix/flows/rule-marks.js';
import { compilePolicy } from '../../../felix/policy/compile.js';
import type { PolicyInput } from '../../../felix/policy/input.js';

const input: PolicyInput = {
  sets: [],
  namedPortSets: [],
  policies: [
    {
      id: 'knp.default.web',
      ingress: [
        { action: 'Allow', match: { protocol: 'tcp' } },
        { action: 'Log', match: {} },
      ],
    },
    {
      id: 'sec.block',
      egress: [
        { action: 'Pass', match: {} },
        { action: 'Deny', match: { protocol: 'udp' } },
      ],
    },
    { id: 'staged:sec.try', staged: true, ingress: [{ action: 'Deny', match: {} }] },
    { id: 'unused', ingress: [{ action: 'Deny', match: {} }] },
  ],
  endpoints: [
    {
      iface: 'cali1',
      addresses: ['10.65.0.2'],
      ingress: [
        { name: 'security', policies: ['staged:sec.try'] },
        { name: 'default', policies: ['knp.default.web'] },
      ],
      egress: [{ name: 'security', policies: ['sec.block'], defaultAction: 'Pass' }],
    },
  ],
  pools: [],
};

describe('felix/flows decisions', () => {
  it('every log rule the compiler writes has a prefix the index reads back into tier, policy and rule', () => {
    const flowLogs = { group: 3, ratePerSecond: 10, burst: 5 };
    const table = compilePolicy(input, { flowLogs });
    const prefixes = table.chains
      .flatMap((c) => c.rules)
      .map((r) => /log prefix "([^"]*)" group 3/.exec(r.expr)?.[1])
      .filter((p): p is string => p !== undefined);
    const index = decisionIndex(input);
    assert.ok(prefixes.length >= 4, `log rules written: ${prefixes.join(' ')}`);
    for (const p of prefixes) assert.ok(index.has(p), `the index knows ${p}`);
    assert.deepEqual(index.get(decisionPrefix('A', 'knp.default.web/in/0')), {
      code: 'A',
      tier: 'default',
      policy: 'knp.default.web',
      rule: 'ingress/0',
      direction: 'ingress',
    });
    assert.equal(index.get(decisionPrefix('SD', 'staged:sec.try/in/0'))?.tier, 'security');
    assert.equal(index.get(decisionPrefix('D', 'sec.block/out/1'))?.rule, 'egress/1');
    // The default tier's end denies: logged; the security tier passes at its end: not logged.
    assert.equal(index.get(decisionPrefix('D', 'cali1/in/tier/default'))?.policy, END_OF_TIER);
    assert.equal(index.has(decisionPrefix('D', 'cali1/out/tier/security')), false, 'a Pass end decides nothing');
    assert.ok(![...index.values()].some((d) => d.policy === 'unused'), 'a policy no endpoint uses logs nothing');
    assert.ok(!prefixes.some((p) => p.includes('/in/1')), 'a Log rule decides nothing');
  });

  it('a prefix fits the kernel: a long id becomes a hash, and two long ids stay apart', () => {
    const long = (n: number) => `${'p'.repeat(200)}${n}/in/0`;
    const [a, b] = [decisionPrefix('A', long(1)), decisionPrefix('A', long(2))];
    assert.ok(a.length <= 127 && b.length <= 127, `${a.length} and ${b.length} bytes`);
    assert.notEqual(a, b);
    assert.equal(decisionPrefix('D', 'a b"c/in/0'), 'pr|D|a_b_c/in/0', 'no blank or quote in one nft token');
  });

  it('with ct mark bits an Allow writes its number instead of logging, a staged rule sets the staged bit; the marks read back', () => {
    const flowLogs = { group: 3, ratePerSecond: 10, burst: 5, ctMark: 0x00ff0000 };
    const rules = compilePolicy(input, { flowLogs }).chains.flatMap((c) => c.rules.map((r) => r.expr));
    assert.ok(!rules.some((r) => r.includes('log prefix "pr|A|')), 'no Allow logs');
    const set = rules.map((r) => /ct mark set ct mark & 0xff01ffff \| (0x[0-9a-f]{8})$/.exec(r)?.[1]).filter((v) => v !== undefined);
    assert.equal(set.length, 1, `one Allow rule numbered: ${rules.join('\n')}`);
    const marks = decisionMarks(input, flowLogs.ctMark);
    assert.equal(marks.complete, true);
    assert.equal(marks.byNumber.get(markRuleNumber(Number(set[0]), ctMarkLayout(flowLogs.ctMark)))?.policy, 'knp.default.web');
    assert.ok(
      rules.some((r) => r.startsWith('ct mark set ct mark | 0x00010000 limit rate 10/second') && r.includes('"pr|SD|')),
      'the staged Deny logs and sets the staged bit',
    );
    assert.ok(
      rules.some((r) => r.includes('log prefix "pr|D|')),
      'a Deny still logs',
    );
    assert.throws(
      () => compilePolicy(input, { flowLogs: { ...flowLogs, ctMark: 0x00f0f000 } }),
      /options\.flowLogs\.ctMark: 0xf0f000 is not one run of contiguous bits/,
    );
  });
});
