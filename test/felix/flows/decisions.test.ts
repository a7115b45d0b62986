import assert from 'node:assert/strict';
import { decisionIndex, decisionPrefix, END_OF_TIER } from '../../../felix/flows/decisions.js';
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
});
