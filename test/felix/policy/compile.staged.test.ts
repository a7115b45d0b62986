// Staged policies in the compiled table: the endpoint jumps to them where they would run, and
// their chains count and return, never deciding. What keeps a staged policy from changing a
// packet's fate is checked on the text itself: no verdict, no goto, no mark in its chain.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import type { PolicyEndpoint, PolicyInput, TierPolicies } from '../../../felix/policy/input.js';
import { policyChainName } from '../../../felix/policy/names.js';
import type { NftTable } from '../../../felix/policy/nft-model.js';

const CLEAR = 'meta mark set meta mark & 0xffefffff';
const PASSED = 'meta mark & 0x00100000 == 0x00000000';

const ep = (iface: string, ingress: TierPolicies[], egress: TierPolicies[] = []): PolicyEndpoint => ({
  iface,
  addresses: ['10.65.0.3'],
  ingress,
  egress,
});
const input = (over: Partial<PolicyInput>): PolicyInput => ({
  sets: [],
  namedPortSets: [],
  policies: [],
  endpoints: [],
  pools: [],
  ...over,
});
const lines = (t: NftTable, name: string): string[] => {
  const c = t.chains.find((x) => x.name === name);
  assert.ok(c, `chain ${name} in ${t.chains.map((x) => x.name).join(', ')}`);
  return c.rules.map((r) => (r.id ? `${r.expr}  # ${r.id}` : r.expr));
};

const STAGED = 'staged:np.x.deny-y';
const stagedPolicy = {
  id: STAGED,
  staged: true as const,
  ingress: [
    { action: 'Log' as const, match: {} },
    { action: 'Deny' as const, match: { srcSets: ['sel-y'] } },
    { action: 'Pass' as const, match: { protocol: 'udp' as const } },
    { action: 'Allow' as const, match: {} },
  ],
};

describe('felix policy compiler: staged policies', () => {
  it("a staged policy's chain counts each rule and returns: no verdict, no mark, Log only counts", () => {
    const t = compilePolicy(
      input({
        sets: [{ id: 'sel-y', members: ['10.65.1.2'], hosts: true }],
        policies: [stagedPolicy],
        endpoints: [ep('calib', [{ name: 'default', policies: [STAGED], defaultAction: 'Deny' }])],
      }),
    );
    const chain = policyChainName(STAGED, 'ingress');
    assert.match(chain, /^pi-staged_np\.x\.deny-y-[0-9a-f]{12}$/, 'the id has a colon, so the name carries a hash');
    assert.deepEqual(lines(t, chain), [
      `counter  # ${STAGED}/in/0`,
      `ip saddr @s4-sel-y counter return  # ${STAGED}/in/1`,
      `ip6 saddr @s6-sel-y counter return  # ${STAGED}/in/1`,
      `meta l4proto udp counter return  # ${STAGED}/in/2`,
      `counter return  # ${STAGED}/in/3`,
    ]);
    // A tier of staged policies only: their jumps, and no closing rule (no default action, so no drop);
    // a staged policy never sets the Pass mark, so the tier does not clear it.
    assert.deepEqual(lines(t, 'to-calib'), ['ct state invalid drop', `jump ${chain}`]);
  });

  it('the endpoint jumps to a staged policy in its place in the tier, behind the Pass test, and the tier still ends in its action', () => {
    const t = compilePolicy(
      input({
        sets: [{ id: 'sel-y', members: ['10.65.1.2'], hosts: true }],
        policies: [
          { id: 'np.x.first', ingress: [{ action: 'Pass', match: { protocol: 'tcp' } }] },
          stagedPolicy,
          { id: 'knp.default.x.allow', ingress: [{ action: 'Allow', match: {} }] },
        ],
        endpoints: [ep('calib', [{ name: 'default', policies: ['np.x.first', STAGED, 'knp.default.x.allow'], defaultAction: 'Deny' }])],
      }),
    );
    assert.deepEqual(lines(t, 'to-calib'), [
      'ct state invalid drop',
      CLEAR,
      'jump pi-np.x.first',
      `${PASSED} jump ${policyChainName(STAGED, 'ingress')}`,
      `${PASSED} jump pi-knp.default.x.allow`,
      `${PASSED} counter drop  # calib/in/tier/default`,
      CLEAR,
    ]);
  });

  it('no staged chain holds a verdict, a goto, a jump or a mark, whatever its rules (both directions)', () => {
    const actions = ['Allow', 'Deny', 'Pass', 'Log'] as const;
    const policy = {
      id: 'staged:gnp.every',
      staged: true as const,
      ingress: actions.map((action) => ({ action, match: { protocol: 'tcp' as const } })),
      egress: actions.map((action) => ({ action, match: {} })),
    };
    const t = compilePolicy(input({ policies: [policy], endpoints: [ep('calib', [[policy.id]], [[policy.id]])] }));
    for (const dir of ['ingress', 'egress'] as const) {
      const rules = lines(t, policyChainName(policy.id, dir));
      assert.equal(rules.length, 4, `${dir}: one rule per staged rule`);
      for (const r of rules) assert.doesNotMatch(r, /accept|drop|reject|goto|jump|mark|log|queue/, `${dir}: ${r} must not decide`);
    }
  });
});
