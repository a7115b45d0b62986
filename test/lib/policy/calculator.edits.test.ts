// A local pod that comes, goes or is relabelled, a policy added, edited or deleted, a namespace
// relabelled: the calculation graph records what changed (derivation.ts, InputEdit) and the
// compiler compiles only that (compile-edit.ts), recording on the table which sets, maps and
// chains changed (TableChange). Held over seeded random sequences: each table equals the whole
// compile of a copy of its input, its record equals its actual difference from the table
// before (every part it does not name is the very object the table before had, sets that came
// or went included), and the programmer plans that record alone into the operations it would
// plan from the whole table.
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { compileFromScratch, compilePolicy } from '../../../felix/policy/compile.js';
import { inputEdit, nftMapChange, nftSetChange, type TableChange, tableChange } from '../../../felix/policy/derivation.js';
import type { PolicyInput } from '../../../felix/policy/input.js';
import { MemoryNftDataplane } from '../../../felix/policy/memory-nft.js';
import type { NftChain, NftTable } from '../../../felix/policy/nft-model.js';
import { PolicyProgrammer } from '../../../felix/policy/programmer.js';
import { PolicyCalculator } from '../../../lib/policy/index.js';
import type { Resource } from '../../../lib/resources/index.js';
import { prng } from '../../support/prng.js';
import { gnp, knp, namespace, pod } from './fixtures.js';
import { transactionOps, watchChains } from '../../support/nft-tx.js';

const byName = <T extends { readonly name: string }>(xs: readonly T[] | undefined): Map<string, T> =>
  new Map((xs ?? []).map((x) => [x.name, x]));

/** Asserts that `change` says exactly how `next` differs from `prev`. */
function assertChange(prev: NftTable, next: NftTable, change: TableChange, where: string): void {
  assert.equal(change.from, prev, `${where}: the change is from the table before`);
  // Sets: those not named are the very objects they were; a named one replaces the set of its
  // name or is new; those gone are named removed, and only they.
  const prevSets = byName(prev.sets);
  const nextSets = byName(next.sets);
  const namedSets = new Set(change.sets);
  for (const s of next.sets) {
    const before = prevSets.get(s.name);
    if (!namedSets.has(s)) assert.equal(s, before, `${where}: set ${s.name} is not named, so it is the one before`);
    else if (before) {
      assert.notEqual(s, before, `${where}: set ${s.name} is named, so it changed`);
      const members = nftSetChange(s);
      if (members) {
        assert.equal(members.from, before, `${where}: set ${s.name}'s member change is from the set before`);
        const had = new Set(before.elements);
        for (const e of members.removed) had.delete(e);
        for (const e of members.added) had.add(e);
        assert.deepEqual([...had].sort(), [...s.elements].sort(), `${where}: set ${s.name}'s member change adds up`);
      }
    }
  }
  for (const s of namedSets) assert.equal(nextSets.get(s.name), s, `${where}: set ${s.name} is named and in the table`);
  const removedSets = new Set(change.removedSets ?? []);
  assert.equal(removedSets.size, change.removedSets?.length ?? 0, `${where}: no set is named removed twice`);
  for (const name of prevSets.keys())
    if (!nextSets.has(name)) assert.ok(removedSets.has(name), `${where}: set ${name} went, so it is named removed`);
  for (const name of removedSets) {
    assert.ok(prevSets.has(name), `${where}: set ${name} is named removed, so it was there`);
    assert.ok(!nextSets.has(name), `${where}: set ${name} is named removed, so it is not there`);
  }
  assert.equal(change.removedMaps, undefined, `${where}: the dispatch maps never go`);
  // Maps: likewise.
  const prevMaps = byName(prev.maps);
  const namedMaps = new Set(change.maps ?? []);
  for (const m of next.maps ?? []) {
    if (!namedMaps.has(m)) assert.equal(m, prevMaps.get(m.name), `${where}: map ${m.name} is not named, so it is the one before`);
    else assert.notEqual(m, prevMaps.get(m.name), `${where}: map ${m.name} is named, so it changed`);
  }
  for (const m of namedMaps) assert.ok(next.maps?.includes(m), `${where}: map ${m.name} is named and in the table`);
  // Chains: replaced or added whole, removed by name; every other one the chain before.
  const prevChains = byName(prev.chains);
  const nextChains = byName(next.chains);
  const namedChains = new Set<NftChain>(change.chains ?? []);
  for (const c of next.chains) {
    if (!namedChains.has(c)) assert.equal(c, prevChains.get(c.name), `${where}: chain ${c.name} is not named, so it is the one before`);
    else assert.notEqual(c, prevChains.get(c.name), `${where}: chain ${c.name} is named, so it changed`);
  }
  for (const c of namedChains) assert.equal(nextChains.get(c.name), c, `${where}: chain ${c.name} is named and in the table`);
  const removed = new Set(change.removedChains ?? []);
  for (const name of prevChains.keys())
    if (!nextChains.has(name)) assert.ok(removed.has(name), `${where}: chain ${name} went, so it is named removed`);
  for (const name of removed) {
    assert.ok(prevChains.has(name), `${where}: chain ${name} is named removed, so it was there`);
    assert.ok(!nextChains.has(name), `${where}: chain ${name} is named removed, so it is not there`);
  }
}

/** The same table as a new object with no record of where it came from: the programmer takes it whole. */
const whole = (t: NftTable): NftTable => ({ ...t, sets: [...t.sets], maps: [...(t.maps ?? [])], chains: [...t.chains] });

describe('policy calculation: endpoint and policy changes compile as what they touch', () => {
  it('records the endpoints, policies and sets a change put and removed', () => {
    const c = new PolicyCalculator('n1');
    c.put(namespace('x'));
    c.put(pod('x', 'a', '10.65.0.2', { app: 'web' }));
    const start = c.input();
    const policy = knp('x', 'p', { podSelector: {}, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'db' } } }] }] });
    c.put(policy);
    const added = c.input();
    const put = inputEdit(added);
    assert.equal(put?.from, start, 'the edit is from the input before');
    assert.deepEqual(
      put.policies.map((p) => p.id),
      added.policies.map((p) => p.id),
      'the new policy is put',
    );
    assert.deepEqual(
      put.sets.map((s) => s.id),
      added.sets.map((s) => s.id),
      'its new set is put',
    );
    assert.deepEqual(put.endpoints, added.endpoints, 'the endpoint it selects is put again, with its new tiers');
    assert.deepEqual([put.removedSets, put.removedPolicies, put.removedEndpoints], [[], [], []], 'nothing is removed');
    c.delete('KubernetesNetworkPolicy', 'x/p');
    c.delete('WorkloadEndpoint', 'x/n1-k8s-a-eth0');
    const gone = inputEdit(c.input());
    assert.equal(gone?.from, added, 'the next edit is from the input after the first');
    assert.deepEqual(gone.removedPolicies, [added.policies[0]!.id], 'the policy is removed by id');
    assert.deepEqual(gone.removedSets, [added.sets[0]!.id], 'its set, named by no policy now, is removed by id');
    assert.deepEqual(gone.removedEndpoints, ['cali-x-a'], 'the endpoint is removed by interface');
    assert.deepEqual([gone.sets, gone.policies, gone.endpoints], [[], [], []], 'nothing is put');
  });

  it('the newest input does not hold the inputs and set versions before it alive (a long-running agent would keep them all)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const c = new PolicyCalculator('n1');
    c.put(namespace('x'));
    c.put(knp('x', 'p', { podSelector: {}, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'db' } } }] }] }));
    c.put(pod('x', 'a', '10.65.0.2', { app: 'web' }));
    // Made in a function of its own, so that no local of this one holds the first versions.
    const firsts = (): { input: WeakRef<PolicyInput>; set: WeakRef<object> } => {
      const input = c.input();
      compilePolicy(input);
      return { input: new WeakRef(input), set: new WeakRef(input.sets[0]!) };
    };
    const first = firsts();
    for (let i = 0; i < 5; i++) {
      // A db pod joins the set and leaves it: its members change, the rest stays.
      c.put(pod('x', `db${i}`, `10.65.1.${i + 1}`, { app: 'db' }));
      compilePolicy(c.input());
      c.delete('WorkloadEndpoint', `x/n1-k8s-db${i}-eth0`);
      compilePolicy(c.input());
    }
    const last = c.input();
    assert.ok(inputEdit(last) !== undefined, 'the newest input still says how it came from the one before');
    // A WeakRef's target stays until the job that made it ends.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    assert.equal(first.input.deref(), undefined, 'the first input was collected');
    assert.equal(first.set.deref(), undefined, "the first input's set was collected");
  });

  it('a local pod that comes or goes changes the dispatch maps by its own elements: recorded so, and planned so', async () => {
    const c = new PolicyCalculator('n1');
    c.put(namespace('x'));
    for (const name of ['a', 'b', 'c']) c.put(pod('x', name, `10.65.0.${name.charCodeAt(0)}`, { app: 'web' }));
    const prog = new PolicyProgrammer(new MemoryNftDataplane(), { resyncIntervalMs: 0, retryDelayMs: 0 });
    const first = compilePolicy(c.input());
    assert.ok((await prog.update(first)).ok, 'the first table applies');
    const maps = (t: NftTable) => byName(t.maps);
    c.put(pod('x', 'd', '10.65.0.100', { app: 'web' }));
    const added = compilePolicy(c.input());
    for (const [name, m] of maps(added)) {
      const change = nftMapChange(m);
      assert.ok(change, `map ${name}: its change is recorded`);
      assert.equal(change.from, maps(first).get(name), `map ${name}: its change is from the map before`);
      assert.deepEqual(
        change.added.map((e) => e.key),
        ['"cali-x-d"'],
        `map ${name}: the new pod's interface came`,
      );
      assert.deepEqual(change.removed, [], `map ${name}: nothing went`);
    }
    const report = await prog.update(added);
    const mapAdds = report.transaction.filter((op) => op.kind === 'add map element');
    assert.deepEqual(
      mapAdds.map((op) => (op.kind === 'add map element' ? op.elements.length : 0)),
      [1, 1],
      'one element into each dispatch map',
    );
    c.delete('WorkloadEndpoint', 'x/n1-k8s-b-eth0');
    const removed = compilePolicy(c.input());
    for (const [name, m] of maps(removed)) {
      const change = nftMapChange(m);
      assert.ok(change, `map ${name}: its change is recorded`);
      assert.equal(change.from, maps(added).get(name), `map ${name}: its change is from the map before`);
      assert.deepEqual(change.added, [], `map ${name}: nothing came`);
      assert.deepEqual(
        change.removed.map((e) => e.key),
        ['"cali-x-b"'],
        `map ${name}: the deleted pod's interface went`,
      );
    }
    const gone = await prog.update(removed);
    assert.deepEqual(
      gone.transaction
        .filter((op) => op.kind === 'delete map element')
        .map((op) => (op.kind === 'delete map element' ? op.keys.length : 0)),
      [1, 1],
      'one element out of each dispatch map',
    );
    const resync = await prog.resync();
    assert.equal(resync.ops, 0, 'the kernel holds the desired table');
  });

  it("after random changes of pods, policies and namespaces each table is the whole compile, its record its difference, and the programmer's transaction the whole plan (300 steps, 2 seeds)", async () => {
    let recorded = 0;
    let setsCame = 0;
    let setsWent = 0;
    let withChains = 0;
    let withMaps = 0;
    for (const seed of [1, 2]) {
      const next = prng(seed);
      const rand = (n: number): number => Math.floor(next() * n);
      const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;
      const apps = ['web', 'db', 'cache'];
      const namespaces = ['x', 'y', 'z'];
      const c = new PolicyCalculator('n1');
      for (const ns of namespaces) c.put(namespace(ns, { team: pick(['blue', 'red']) }));
      const pods = new Map<string, Resource>();
      const policies = new Map<string, Resource>();
      const wepKey = (r: Resource) => `${r.metadata.namespace}/${r.metadata.name}`;
      const selector = () =>
        rand(4) === 0
          ? { namespaceSelector: { matchLabels: { team: pick(['blue', 'red']) } } }
          : { podSelector: { matchLabels: { app: pick(apps) } } };
      const port = () => (rand(3) === 0 ? { protocol: 'TCP' as const, port: 'http' } : { protocol: 'TCP' as const, port: 80 + rand(3) });
      const randomPolicy = (ns: string, name: string): Resource => {
        if (rand(6) === 0)
          return gnp(name, {
            order: rand(3),
            selector: `app == '${pick(apps)}'`,
            types: ['Ingress'],
            ingress: [
              { action: pick(['Allow', 'Deny', 'Pass'] as const), protocol: 'TCP', source: { selector: `app == '${pick(apps)}'` } },
            ],
          });
        const ingress = rand(5) === 0 ? undefined : [{ from: [selector()], ports: [port()] }];
        const egress = rand(3) === 0 ? [{ to: [rand(2) ? selector() : { ipBlock: { cidr: '10.0.0.0/8' } }] }] : undefined;
        return knp(ns, name, {
          podSelector: rand(4) === 0 ? {} : { matchLabels: { app: pick(apps) } },
          ...(ingress ? { ingress } : {}),
          ...(egress ? { egress } : {}),
          policyTypes: [...(ingress || !egress ? ['Ingress' as const] : []), ...(egress ? ['Egress' as const] : [])],
        });
      };
      let prev = compilePolicy(c.input());
      const byChange = new PolicyProgrammer(new MemoryNftDataplane(), { resyncIntervalMs: 0, retryDelayMs: 0 });
      const byWhole = new PolicyProgrammer(new MemoryNftDataplane(), { resyncIntervalMs: 0, retryDelayMs: 0 });
      assert.ok((await byChange.update(prev)).ok && (await byWhole.update(whole(prev))).ok, `seed ${seed}: the first table is loaded`);
      for (let step = 0; step < 150; step++) {
        const what = rand(10);
        const ns = pick(namespaces);
        if (what < 5) {
          const name = `p${rand(10)}`;
          const old = pods.get(`${ns}/${name}`);
          if (old) {
            pods.delete(`${ns}/${name}`);
            c.delete('WorkloadEndpoint', wepKey(old));
          }
          if (rand(4) !== 0) {
            // Half on this node (chains and dispatch), half elsewhere (set members only).
            const r = pod(
              ns,
              name,
              `10.65.${namespaces.indexOf(ns)}.${rand(12) + 2}`,
              { app: pick(apps) },
              {
                node: rand(2) === 0 ? 'n1' : 'n2',
                ports: [{ name: 'http', protocol: 'TCP', port: 8000 + rand(2) }],
              },
            );
            pods.set(`${ns}/${name}`, r);
            c.put(r);
          }
        } else if (what < 8) {
          const key = `${ns}-np${rand(6)}`;
          const old = policies.get(key);
          const drop = (r: Resource) => c.delete(r.kind, r.metadata.namespace ? wepKey(r) : r.metadata.name);
          if (old && rand(3) === 0) {
            policies.delete(key);
            drop(old);
          } else {
            const r = randomPolicy(ns, key);
            if (old && old.kind !== r.kind) drop(old);
            policies.set(key, r);
            c.put(r);
          }
        } else {
          c.put(namespace(ns, { team: pick(['blue', 'red']) }));
        }
        const input = c.input();
        const where = `seed ${seed}, step ${step}`;
        const table = compilePolicy(input);
        assert.deepEqual(table, compileFromScratch(structuredClone(input) as PolicyInput), `${where}: the table equals the whole compile`);
        // An input that did not change is the table before, whose record is of the change before it.
        const change = table === prev ? undefined : tableChange(table);
        if (change) {
          recorded++;
          if (change.chains?.length || change.removedChains?.length) withChains++;
          if (change.maps?.length) withMaps++;
          assertChange(prev, table, change, where);
          if (change.sets.some((x) => !prev.sets.some((p) => p.name === x.name))) setsCame++;
          if (change.removedSets?.length) setsWent++;
        }
        // The programmer plans a recorded change alone, and the same operations as from the whole table.
        const watched = watchChains(table);
        const a = await byChange.update(table);
        const reads = watched.reads;
        const b = await byWhole.update(whole(table));
        assert.ok(a.ok && b.ok, `${where}: ${a.error ?? b.error}`);
        assert.deepEqual(transactionOps(a.transaction), transactionOps(b.transaction), `${where}: the operations the whole plan has`);
        if (change) assert.equal(reads, 0, `${where}: a recorded change is taken as such, the table not read whole`);
        assert.equal(compilePolicy(input), table, `${where}: the same input compiled again is the same table`);
        prev = table;
      }
      assert.deepEqual((await byChange.resync()).transaction, [], `seed ${seed}: a resync finds nothing to repair`);
    }
    assert.ok(recorded > 250, `nearly every change carries a record (${recorded} of 300)`);
    assert.ok(setsCame > 10 && setsWent > 10, `many records name sets that came (${setsCame}) or went (${setsWent})`);
    assert.ok(withChains > 40, `many records name chains (${withChains})`);
    assert.ok(withMaps > 15, `some records name the dispatch maps (${withMaps})`);
  });
});
