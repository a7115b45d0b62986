// A set's flags as declared in a script and as compared after reading back agree for every kind
// of set (plain, interval, timeout, both), whichever way nft lists a dynamic set.
import assert from 'node:assert/strict';
import { comparedSetFlags, declaredSetFlags, listedSetFlags } from '../../../felix/policy/set-flags.js';

describe('felix policy set flags', () => {
  const kinds = [
    { interval: false, declared: '', compared: [] },
    { interval: true, declared: 'interval', compared: ['interval'] },
    { interval: false, timeout: 60, declared: 'dynamic,timeout', compared: ['timeout'] },
    { interval: true, timeout: 60, declared: 'interval,dynamic,timeout', compared: ['interval', 'timeout'] },
  ];
  for (const k of kinds) {
    it(`interval ${k.interval}, timeout ${k.timeout ?? 'none'}: declared "${k.declared}", compared [${k.compared.join(', ')}]`, () => {
      assert.equal(declaredSetFlags(k), k.declared);
      assert.deepEqual(comparedSetFlags(k), k.compared);
      const declared = k.declared ? k.declared.split(',') : [];
      // nft 1.0.6 lists `dynamic` back on some sets and not others, and in its own order.
      assert.deepEqual(listedSetFlags([...declared].reverse()), k.compared);
      assert.deepEqual(listedSetFlags(declared.filter((f) => f !== 'dynamic')), k.compared);
    });
  }
});
