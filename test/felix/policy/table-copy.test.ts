import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import type { InstalledTable, NftOp } from '../../../felix/policy/dataplane.js';
import { planTable } from '../../../felix/policy/plan.js';
import { TableCopy } from '../../../felix/policy/table-copy.js';
import { mergeTable } from '../../../felix/policy/table-parts.js';
import { tableState } from '../../../felix/policy/table-state.js';
import { compileServices } from '../../../felix/services/compile.js';
import { prng } from '../../support/prng.js';
import { servicePort } from '../../support/service-ports.js';
import { generateInput } from './compile-generate.js';

const read = (): InstalledTable => ({
  sets: new Map([
    ['s4-web', { name: 's4-web', type: 'ipv4_addr', flags: [], elements: new Set(['10.65.0.2']) }],
    ['n4-out', { name: 'n4-out', type: 'ipv4_addr', flags: ['interval'], elements: new Set(['10.0.0.0/8']) }],
  ]),
  maps: new Map([
    ['to-wl', { name: 'to-wl', type: 'ifname', data: 'verdict', flags: [], elements: new Map([['"cali1"', 'jump to-cali1']]) }],
  ]),
  chains: new Map([['to-cali1', { name: 'to-cali1', rules: [{ comment: 'r1', sets: ['s4-web'], chains: [] }] }]]),
});

describe('felix/policy TableCopy', () => {
  it('applies elements, map elements, chains and rules as a read would show them', () => {
    const copy = new TableCopy(read());
    assert.equal(
      copy.apply([
        { kind: 'add element', set: 's4-web', elements: ['10.65.0.3'] },
        { kind: 'delete element', set: 's4-web', elements: ['10.65.0.2'] },
        { kind: 'add chain', chain: 'to-cali2' },
        { kind: 'add rule', chain: 'to-cali2', expr: 'ip saddr @s4-web counter jump to-cali1', comment: 'r2' },
        { kind: 'add map element', map: 'to-wl', elements: [{ key: '"cali2"', verdict: 'jump to-cali2' }] },
        { kind: 'flush chain', chain: 'to-cali1' },
        { kind: 'add set', set: 'aff4', type: 'ipv4_addr', interval: false, elements: [], timeout: 600 },
      ]),
      true,
    );
    const t = copy.lend()!;
    assert.deepEqual([...t.sets.get('s4-web')!.elements], ['10.65.0.3'], 'the set as the kernel holds it');
    assert.deepEqual(t.chains.get('to-cali2'), { name: 'to-cali2', rules: [{ comment: 'r2', sets: ['s4-web'], chains: ['to-cali1'] }] });
    assert.deepEqual(t.chains.get('to-cali1')!.rules, [], 'flushed');
    assert.equal(t.maps.get('to-wl')!.elements.get('"cali2"'), 'jump to-cali2');
    assert.deepEqual(t.sets.get('aff4'), { name: 'aff4', type: 'ipv4_addr', flags: ['timeout'], elements: new Set(), timeout: 600 });
  });

  it('leaves what it lent, and the read it was made from, as they were', () => {
    const first = read();
    const copy = new TableCopy(first);
    const lent = copy.lend()!;
    assert.equal(copy.apply([{ kind: 'add element', set: 's4-web', elements: ['10.65.0.9'] }]), true);
    assert.equal(copy.apply([{ kind: 'delete map element', map: 'to-wl', keys: ['"cali1"'] }]), true);
    assert.deepEqual([...first.sets.get('s4-web')!.elements], ['10.65.0.2'], 'the read is unchanged');
    assert.equal(lent.maps.get('to-wl')!.elements.size, 1, 'the lent table is unchanged');
    assert.deepEqual([...copy.lend()!.sets.get('s4-web')!.elements], ['10.65.0.2', '10.65.0.9']);
  });

  it('gives up on what it cannot know: interval elements, an element it lacks, a key of another value, no table', () => {
    assert.equal(new TableCopy(read()).apply([{ kind: 'add element', set: 'n4-out', elements: ['192.168.0.0/16'] }]), false);
    assert.equal(new TableCopy(read()).apply([{ kind: 'delete element', set: 's4-web', elements: ['10.65.0.77'] }]), false);
    assert.equal(new TableCopy(read()).apply([{ kind: 'delete map element', map: 'to-wl', keys: ['"cali9"'] }]), false);
    assert.equal(
      new TableCopy(read()).apply([{ kind: 'add map element', map: 'to-wl', elements: [{ key: '"cali1"', verdict: 'drop' }] }]),
      false,
    );
    assert.equal(new TableCopy(undefined).apply([{ kind: 'add chain', chain: 'x' }]), false);
    const made = new TableCopy(undefined);
    assert.equal(made.apply([{ kind: 'add table' }, { kind: 'add chain', chain: 'x' }]), true);
    assert.deepEqual([...made.lend()!.chains.keys()], ['x']);
  });
});

describe('felix/policy TableCopy from a planned table', () => {
  // A policy table (sets, interval sets, verdict maps) with a services part (data maps declared with typeof, timeout sets).
  const desired = mergeTable(
    compilePolicy(generateInput(3)),
    new Map([
      [
        'services',
        compileServices({ services: [0, 1, 2, 3].map((i) => servicePort(i, 3)), nodeAddresses: [], clusterCidrs: ['10.65.0.0/16'] }),
      ],
    ]),
  );
  /** Elements as sorted arrays and no typeof (a read has none): what a replay and a read hold alike. */
  const plain = (t: InstalledTable | undefined) =>
    JSON.parse(JSON.stringify(t, (k, v) => (k === 'typeof' ? undefined : v instanceof Map || v instanceof Set ? [...v].sort() : v)));

  it('is the planned table itself, equal to the transaction replayed, and stays as planned while the copy changes', () => {
    const planned = tableState(desired);
    const ops = planTable(desired, undefined, planned);
    const replayed = new TableCopy(undefined);
    assert.equal(replayed.apply(ops), true, 'replayed');
    const copy = TableCopy.planned(planned, ops);
    assert.ok(copy, 'the operations make the planned table');
    const t = copy.lend()!;
    for (const [name, c] of planned.chains) assert.equal(t.chains.get(name), c, `chain ${name} is the planned one, not a copy`);
    for (const [name, m] of planned.maps) assert.equal(t.maps.get(name), m, `map ${name} is the planned one, not a copy`);
    assert.deepEqual(plain(t), plain(replayed.lend()), 'what a replay of the transaction holds');
    const before = plain(planned);
    const set = [...planned.sets.values()].find((x) => !x.flags.length && x.elements.size)!;
    const map = [...planned.maps.values()].find((x) => x.elements.size)!;
    const chain = [...planned.chains.values()].find((x) => x.rules.length)!;
    assert.equal(
      copy.apply([
        { kind: 'delete element', set: set.name, elements: [[...set.elements][0]!] },
        { kind: 'delete map element', map: map.name, keys: [[...map.elements.keys()][0]!] },
        { kind: 'flush chain', chain: chain.name },
        { kind: 'delete chain', chain: chain.name },
      ]),
      true,
    );
    assert.equal(copy.lend()!.chains.has(chain.name), false, 'the copy changed');
    assert.deepEqual(plain(planned), before, 'the planned table did not');
  });

  it('is refused for operations that do not make exactly the planned table', () => {
    const planned = tableState(desired);
    const ops = planTable(desired, undefined, planned);
    const without = (kind: NftOp['kind']) => ops.filter((o, i) => o.kind !== kind || i !== ops.findIndex((x) => x.kind === kind));
    assert.equal(TableCopy.planned(planned, without('add rule')), undefined, 'a rule missing');
    assert.equal(TableCopy.planned(planned, without('add chain')), undefined, 'a chain missing');
    assert.equal(TableCopy.planned(planned, [...ops, { kind: 'add chain', chain: 'other' }]), undefined, 'a chain not planned');
    const set = [...planned.sets.values()][0]!;
    assert.equal(TableCopy.planned(planned, [...ops, { kind: 'delete set', set: set.name }]), undefined, 'a set deleted after');
  });
});

describe('felix/policy TableCopy layers', () => {
  it('a set and a map changed across many lends read as plain ones changed alike, and every lent table stays as lent', () => {
    const random = prng(5);
    const rand = (n: number) => Math.floor(random() * n);
    const wantSet = new Set(Array.from({ length: 40 }, (_, i) => `10.0.0.${i}`));
    const wantMap = new Map(Array.from({ length: 40 }, (_, i) => [`k${i}`, `v${i}`]));
    const copy = new TableCopy({
      sets: new Map([['s', { name: 's', type: 'ipv4_addr', flags: [], elements: new Set(wantSet) }]]),
      maps: new Map([['m', { name: 'm', type: 'ifname', data: 'ipv4_addr', flags: [], elements: new Map(wantMap) }]]),
      chains: new Map(),
    });
    const lent: { t: InstalledTable; set: string[]; map: [string, string][] }[] = [];
    for (let step = 0; step < 3000; step++) {
      const e = `10.0.0.${rand(600)}`;
      const k = `k${rand(600)}`;
      const ops: NftOp[] = [];
      if (wantSet.has(e)) {
        ops.push({ kind: 'delete element', set: 's', elements: [e] });
        wantSet.delete(e);
      } else {
        ops.push({ kind: 'add element', set: 's', elements: [e] });
        wantSet.add(e);
      }
      if (wantMap.has(k)) {
        ops.push({ kind: 'delete map element', map: 'm', keys: [k] });
        wantMap.delete(k);
        if (rand(2)) {
          ops.push({ kind: 'add map element', map: 'm', elements: [{ key: k, verdict: `w${step}` }] });
          wantMap.set(k, `w${step}`);
        }
      } else {
        ops.push({ kind: 'add map element', map: 'm', elements: [{ key: k, verdict: `v${step}` }] });
        wantMap.set(k, `v${step}`);
      }
      assert.equal(copy.apply(ops), true, `step ${step}: applied`);
      if (rand(50) === 0) {
        const t = copy.lend()!;
        lent.push({ t, set: [...wantSet].sort(), map: [...wantMap].sort() });
      }
    }
    lent.push({ t: copy.lend()!, set: [...wantSet].sort(), map: [...wantMap].sort() });
    for (const [i, l] of lent.entries()) {
      const s = l.t.sets.get('s')!.elements;
      const m = l.t.maps.get('m')!.elements;
      assert.deepEqual([...s].sort(), l.set, `lend ${i}: the set's elements`);
      assert.equal(s.size, l.set.length, `lend ${i}: the set's size`);
      assert.ok(l.set.every((e) => s.has(e)) && !s.has('10.0.0.999'), `lend ${i}: has`);
      assert.deepEqual([...m].sort(), l.map, `lend ${i}: the map's elements`);
      assert.equal(m.size, l.map.length, `lend ${i}: the map's size`);
      assert.ok(l.map.every(([k, v]) => m.get(k) === v && m.has(k)) && m.get('k999') === undefined, `lend ${i}: get`);
    }
  });
});
