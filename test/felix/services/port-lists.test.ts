import assert from 'node:assert/strict';
import { PortLists, PortListsBuilder } from '../../../felix/services/port-lists.js';
import { prng } from '../../support/prng.js';

/** The lists a PortLists must hold, as a plain sorted map. */
const plain = (m: Map<string, number[]>) => {
  const ids = [...m.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { ids, lists: ids.map((id) => m.get(id)!), all: ids.flatMap((id) => m.get(id)!) };
};

describe('felix/services PortLists', () => {
  it('reads as the lists in id order after random replacements, additions and removals, each version unchanged by later ones', () => {
    const random = prng(11);
    const rand = (n: number) => Math.floor(random() * n);
    const id = (i: number) => `ns${i % 7}/svc${i}`;
    const want = new Map<string, number[]>();
    const b = new PortListsBuilder<number>();
    for (const i of Array.from({ length: 600 }, (_, i) => i).sort((x, y) => (id(x) < id(y) ? -1 : 1))) {
      want.set(id(i), [i]);
      b.push(id(i), [i]);
    }
    let lists = b.done();
    const versions: { lists: PortLists<number>; want: ReturnType<typeof plain> }[] = [];
    for (let step = 0; step < 1500; step++) {
      const k = id(rand(3000));
      const what = rand(3);
      const list = what === 0 ? undefined : [step, step + 1];
      if (list) want.set(k, list);
      else want.delete(k);
      lists = lists.with(k, list);
      assert.deepEqual(lists.get(k), list, `step ${step}: ${k} read back`);
      if (step % 100 === 0) versions.push({ lists, want: plain(want) });
    }
    versions.push({ lists, want: plain(want) });
    for (const [i, v] of versions.entries()) {
      assert.equal(v.lists.size, v.want.ids.length, `version ${i}: size`);
      assert.deepEqual(v.lists.ids, v.want.ids, `version ${i}: ids in order`);
      assert.deepEqual(v.lists.lists, v.want.lists, `version ${i}: lists`);
      assert.deepEqual(v.lists.all(), v.want.all, `version ${i}: every element in order`);
    }
  });

  it('an empty one takes a first port, and gives back itself for a port it lacks taken out', () => {
    const empty = new PortLists<number>();
    assert.equal(empty.with('a', undefined), empty, 'nothing to take out');
    const one = empty.with('b', [1]).with('a', [2]);
    assert.deepEqual(one.ids, ['a', 'b'], 'in id order');
    assert.deepEqual(one.with('a', undefined).with('b', undefined).ids, [], 'every port out');
    assert.deepEqual(empty.ids, [], 'the empty one unchanged');
  });
});
