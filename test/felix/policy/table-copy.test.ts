import assert from 'node:assert/strict';
import type { InstalledTable } from '../../../felix/policy/dataplane.js';
import { TableCopy } from '../../../felix/policy/table-copy.js';

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
