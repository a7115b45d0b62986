// The PolicyProgrammer with the compiler's real tables in a kernel: every table of the
// compiler's generated inputs is applied and reads back equal (a resync finds nothing to do,
// whatever nft's rewriting of rules and elements); moving from one input to the next is one
// transaction; and an address joining or leaving a selector's set, recompiled from scratch,
// is element operations only.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import type { PolicyInput } from '../../../felix/policy/input.js';
import { addressSetName } from '../../../felix/policy/names.js';
import { NftablesDataplane } from '../../../felix/policy/nft-dataplane.js';
import { PolicyProgrammer } from '../../../felix/policy/programmer.js';
import { Lab } from '../../support/netns.js';
import { generateInput } from './compile-generate.js';

const SEEDS = Array.from({ length: 12 }, (_, i) => i + 1);

describe('felix/policy programmer with compiled tables in a kernel', function () {
  this.timeout(120_000);
  const lab = new Lab({ tag: 'dpc' });
  let prog: PolicyProgrammer;

  before(async () => {
    const ns = await lab.namespace('node');
    prog = new PolicyProgrammer(new NftablesDataplane({ netns: ns.name }), { resyncIntervalMs: 0 });
  });
  after(async () => {
    prog?.stop();
    await lab.destroy();
  });

  it('applies each generated input in one transaction and reads it back equal', async () => {
    for (const seed of SEEDS) {
      const r = await prog.update(compilePolicy(generateInput(seed)));
      assert.equal(r.ok, true, `seed ${seed}: ${r.error}`);
      const again = await prog.resync();
      assert.equal(again.ok, true, `seed ${seed}: ${again.error}`);
      assert.deepEqual(again.transaction, [], `seed ${seed}: the kernel reads back as applied`);
    }
  });

  it('an address joining or leaving a selector is element operations only, after a full recompile', async () => {
    let checked = 0;
    let withElements = 0;
    for (const seed of SEEDS) {
      const input = generateInput(seed);
      // A set the table holds: only those a local endpoint's policies name are compiled.
      const compiled = new Set(compilePolicy(input).sets.map((s) => s.name));
      const used = input.sets.find((s) => s.members.length > 0 && compiled.has(addressSetName(s.id, 4)));
      if (!used) continue;
      const base = await prog.update(compilePolicy(input));
      assert.equal(base.ok, true, base.error);
      const joined: PolicyInput = {
        ...input,
        sets: input.sets.map((s) => (s === used ? { ...s, members: [...s.members, '10.201.7.9', 'fd00:201::9'] } : s)),
      };
      for (const next of [joined, input]) {
        const r = await prog.update(compilePolicy(next));
        assert.equal(r.ok, true, `seed ${seed}: ${r.error}`);
        const kinds = new Set(r.transaction.map((o) => o.kind));
        for (const k of kinds) assert.ok(k === 'add element' || k === 'delete element', `seed ${seed}: ${r.script}`);
        if (r.elementsAdded + r.elementsDeleted > 0) withElements++;
        assert.deepEqual((await prog.resync()).transaction, [], `seed ${seed}: the kernel holds the new members`);
      }
      checked++;
    }
    assert.ok(checked >= 6, `only ${checked} inputs had a set with members`);
    assert.ok(withElements >= 6, `only ${withElements} changes reached a kernel set (a member inside a wider one changes nothing)`);
  });
});
