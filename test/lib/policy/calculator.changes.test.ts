// A pod that comes, goes or is relabelled changes set members only, and the calculation graph
// says which (felix/policy/derivation.ts): the compiler then rebuilds those sets alone and the
// programmer sends their elements alone. Held to the whole path after random changes: the
// table equals the one compiled from a copy of the input (which says nothing of where it came
// from), and the kernel read back equals the desired table.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import { type TableDelta, tableChange } from '../../../felix/policy/derivation.js';
import type { PolicyInput } from '../../../felix/policy/input.js';
import { MemoryNftDataplane } from '../../../felix/policy/memory-nft.js';
import { PolicyProgrammer } from '../../../felix/policy/programmer.js';
import { PolicyCalculator } from '../../../lib/policy/index.js';
import type { Resource } from '../../../lib/resources/index.js';
import { prng } from '../../support/prng.js';
import { knp, namespace, pod } from './fixtures.js';

const ELEMENT_OPS = new Set(['add element', 'delete element']);

/** True when the change is of set members alone. */
function onlySetMembers(change: TableDelta): boolean {
  return (
    !change.maps?.length &&
    !change.chains?.length &&
    !change.removedChains?.length &&
    !change.removedSets?.length &&
    !change.removedMaps?.length
  );
}

describe('policy calculation: a change of set members reaches the kernel as elements alone', () => {
  it('after random pod changes the table is the whole compile, the kernel holds it, and member-only changes are element operations (400 steps, 2 seeds)', async () => {
    for (const seed of [1, 2]) {
      const next = prng(seed);
      const rand = (n: number): number => Math.floor(next() * n);
      const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;
      const apps = ['web', 'db', 'cache'];
      const c = new PolicyCalculator('n1');
      const dp = new MemoryNftDataplane();
      const prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0, retryDelayMs: 0 });
      const fixed: Resource[] = [
        namespace('x', { team: 'blue' }),
        namespace('y', { team: 'red' }),
        knp('x', 'p', {
          podSelector: { matchLabels: { app: 'db' } },
          ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }],
        }),
        knp('y', 'q', {
          podSelector: {},
          ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'blue' } } }], ports: [{ protocol: 'TCP', port: 'http' }] }],
        }),
      ];
      for (const r of fixed) c.put(r);
      assert.ok((await prog.update(compilePolicy(c.input()))).ok, 'the first table applies');
      const pods = new Map<string, Resource>();
      let memberOnly = 0;
      for (let step = 0; step < 200; step++) {
        const ns = pick(['x', 'y']);
        const name = `p${rand(12)}`;
        const wepKey = (r: Resource) => `${r.metadata.namespace}/${r.metadata.name}`;
        // One pod of a name at a time: a pod moved to another node is another endpoint.
        const old = pods.get(`${ns}/${name}`);
        if (old) {
          pods.delete(`${ns}/${name}`);
          c.delete('WorkloadEndpoint', wepKey(old));
        }
        if (rand(3) !== 0) {
          // Mostly other nodes' pods (set members only); a few of this node's (chains and dispatch too).
          const r = pod(
            ns,
            name,
            `10.65.${ns === 'x' ? 0 : 1}.${rand(12) + 2}`,
            { app: pick(apps) },
            {
              node: rand(5) === 0 ? 'n1' : 'n2',
              ports: [{ name: 'http', protocol: 'TCP', port: 8000 + rand(2) }],
              ...(rand(4) === 0 ? { addresses: [`10.65.2.${rand(12) + 2}/32`, `fd00:65::${rand(12) + 2}/128`] } : {}),
            },
          );
          pods.set(`${ns}/${name}`, r);
          c.put(r);
        }
        const input = c.input();
        const table = compilePolicy(input);
        const change = tableChange(table);
        const fromChange = change !== undefined && onlySetMembers(change);
        const report = await prog.update(table);
        assert.ok(report.ok, `seed ${seed}, step ${step}: applied (${report.error})`);
        if (fromChange) {
          memberOnly++;
          for (const op of report.transaction)
            assert.ok(ELEMENT_OPS.has(op.kind), `seed ${seed}, step ${step}: a member-only change sends elements only, not ${op.kind}`);
        }
        if (step % 4 === 3) {
          // A copy carries no record of where it came from: the whole compile, as before.
          const whole = compilePolicy(structuredClone(input) as PolicyInput);
          assert.equal(tableChange(whole), undefined, 'a copy of the input is compiled whole');
          assert.deepEqual(table, whole, `seed ${seed}, step ${step}: the table equals the whole compile`);
        }
        if (step % 10 === 9) {
          const r = await prog.resync();
          assert.equal(r.ops, 0, `seed ${seed}, step ${step}: the kernel holds the desired table (${r.script})`);
        }
      }
      assert.ok(memberOnly > 40, `seed ${seed}: most changes went the member-only way (${memberOnly} of 200)`);
      prog.stop();
    }
  });
});
