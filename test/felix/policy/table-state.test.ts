// The keyed table state's content caches under churn: a node whose pods come and go compiles a
// new version of its dispatch maps and endpoint chains on every change, and the caches must stay
// bounded by the table in force, not fill with past versions.
import assert from 'node:assert/strict';
import type { NftTable } from '../../../felix/index.js';
import { ruleRefs, tableState, tableStateCacheSizes } from '../../../felix/policy/table-state.js';

/** A node's table with pods first..first+n-1: one dispatch map, one set of pod addresses, a chain per pod. */
function version(first: number, n: number): NftTable {
  const pods = Array.from({ length: n }, (_, i) => first + i);
  return {
    family: 'inet',
    name: 'podroute',
    sets: [{ name: 's4-pods', type: 'ipv4_addr', interval: false, elements: pods.map((p) => `10.65.${p >> 8}.${p & 255}`) }],
    maps: [{ name: 'to-wl', type: 'ifname', elements: pods.map((p) => ({ key: `cali${p}`, verdict: `goto tw-${p}` })) }],
    chains: [
      {
        name: 'forward',
        base: { type: 'filter', hook: 'forward', priority: 0, policy: 'accept' },
        rules: [{ expr: 'oifname vmap @to-wl' }],
      },
      ...pods.map((p) => ({ name: `tw-${p}`, rules: [{ expr: `ip saddr @s4-pods counter accept`, id: `pod-${p}/in/0` }] })),
    ],
  };
}

describe('felix/policy table state caches', () => {
  it('hold a bounded number of past versions under pod churn, whatever the number of changes', () => {
    const pods = 50;
    for (let v = 0; v < 600; v++) tableState(version(v, pods));
    const sizes = tableStateCacheSizes();
    // The table in force has 1 set, 1 map, 101 chains and 101 rules.
    assert.ok(sizes.maps <= 40, `past versions of the dispatch map kept: ${sizes.maps} (each holds ${pods} pods)`);
    assert.ok(sizes.sets <= 40, `past versions of the pod set kept: ${sizes.sets}`);
    assert.ok(sizes.chains <= 3 * (pods + 1), `chains kept: ${sizes.chains} for a table of ${pods + 1}`);
    assert.ok(sizes.rules <= 3 * (pods + 1), `rules kept: ${sizes.rules} for a table of ${pods + 1}`);
  });

  it('still hands back the very state of a part that did not change between versions', () => {
    const a = tableState(version(0, 10));
    const b = tableState(version(1, 10));
    assert.equal(b.chains.get('tw-5'), a.chains.get('tw-5'), 'an unchanged chain is the same state object');
    assert.notEqual(b.maps.get('to-wl'), a.maps.get('to-wl'), 'a changed map is a new state');
  });
});

describe('felix/policy rule references', () => {
  it('names the sets and chains a rule uses, each once, and not what is quoted or a raw payload', () => {
    const cases: [string, string[], string[]][] = [
      ['ct state invalid drop', [], []],
      ['counter drop', [], []],
      ['jump pi-knp.x.web', [], ['pi-knp.x.web']],
      ['meta mark & 0x00100000 == 0x00000000 goto po-a', [], ['po-a']],
      ['ip saddr @s4-sel-a ip daddr @s4-sel-b ip saddr @s4-sel-a counter accept', ['s4-sel-a', 's4-sel-b'], []],
      ['iifname vmap @from-wl', ['from-wl'], []],
      ['ip daddr @svc4 jump svc-a', ['svc4'], ['svc-a']],
      ['@th,16,16 0x50 counter log prefix "@s4-x jump y " accept', [], []],
      ['ip saddr @s4-a log prefix "x" jump c', ['s4-a'], ['c']],
    ];
    for (const [expr, sets, chains] of cases) assert.deepEqual(ruleRefs(expr), { sets, chains }, expr);
  });
});
