// Reading `nft -j list table` back: elements in every shape nft prints (bare, prefix, range,
// concatenation, and wrapped with per-element data) come out canonical; named verdict maps as
// key → verdict, and a map of another kind as such; rules are known by comment, with the sets,
// maps and chains they use and their counters; another table's objects,
// even one with our name in another family, are not read as ours.
import assert from 'node:assert/strict';
import { readCountersJson, readTableJson } from '../../../felix/policy/nft-readback.js';

const meta = { metainfo: { version: '1.0.6', release_name: 'Lester Gooch #5', json_schema_version: 1 } };
const ours = { family: 'inet', table: 'podroute' };
const json = JSON.stringify({
  nftables: [
    meta,
    { table: { family: 'inet', name: 'podroute', handle: 1 } },
    {
      set: {
        ...ours,
        name: 's4',
        type: 'ipv4_addr',
        handle: 2,
        flags: ['interval'],
        elem: [
          { prefix: { addr: '10.0.0.0', len: 24 } },
          '10.2.0.5',
          { range: ['10.6.0.1', '10.6.0.9'] },
          { elem: { val: '10.9.0.1', timeout: 60 } },
        ],
      },
    },
    {
      set: {
        ...ours,
        name: 'np4',
        type: ['ipv4_addr', 'inet_proto', 'inet_service'],
        handle: 3,
        flags: ['interval'],
        elem: [{ concat: [{ prefix: { addr: '10.0.0.0', len: 24 } }, 'tcp', { range: [80, 90] }] }, { concat: ['10.0.0.1', 'udp', 53] }],
      },
    },
    { set: { family: 'ip', table: 'podroute', name: 'theirs', type: 'ipv4_addr', handle: 9 } },
    {
      map: {
        ...ours,
        name: 'to-wl',
        type: 'ifname',
        handle: 10,
        map: 'verdict',
        elem: [
          ['cali1', { jump: { target: 'to-a' } }],
          ['cali2', { goto: { target: 'to-a' } }],
          ['cali3', { drop: null }],
        ],
      },
    },
    { map: { ...ours, name: 'from-wl', type: 'ifname', handle: 11, map: 'verdict' } },
    {
      map: {
        ...ours,
        name: 'marks',
        type: ['ipv4_addr', 'inet_service'],
        handle: 12,
        map: 'mark',
        elem: [[{ concat: ['10.0.0.1', 80] }, 7]],
      },
    },
    {
      map: { family: 'ip', table: 'podroute', name: 'to-wl', type: 'ifname', handle: 13, map: 'verdict', elem: [['x', { accept: null }]] },
    },
    { chain: { ...ours, name: 'forward', handle: 4, type: 'filter', hook: 'forward', prio: -5, policy: 'drop' } },
    { chain: { ...ours, name: 'to-a', handle: 5 } },
    { chain: { family: 'ip', table: 'podroute', name: 'forward', handle: 4, type: 'filter', hook: 'forward', prio: 0, policy: 'accept' } },
    {
      rule: {
        ...ours,
        chain: 'forward',
        handle: 6,
        comment: 'dispatch|0123456789ab',
        expr: [
          {
            vmap: {
              key: { meta: { key: 'oifname' } },
              data: { set: [['cali1', { jump: { target: 'to-a' } }]] },
            },
          },
        ],
      },
    },
    {
      rule: {
        ...ours,
        chain: 'to-a',
        handle: 7,
        comment: 'p/in/0|aaaaaaaaaaaa',
        expr: [
          { match: { op: '==', left: { payload: { protocol: 'ip', field: 'saddr' } }, right: '@s4' } },
          { counter: { packets: 5, bytes: 420 } },
          { accept: null },
        ],
      },
    },
    { rule: { ...ours, chain: 'to-a', handle: 8, expr: [{ drop: null }] } },
    {
      rule: {
        ...ours,
        chain: 'forward',
        handle: 14,
        comment: '|bbbbbbbbbbbb',
        expr: [{ vmap: { key: { meta: { key: 'iifname' } }, data: '@from-wl' } }],
      },
    },
    {
      rule: {
        family: 'ip',
        table: 'podroute',
        chain: 'forward',
        handle: 9,
        comment: 'theirs',
        expr: [{ counter: { packets: 1, bytes: 1 } }],
      },
    },
  ],
});

describe('felix/policy nft -j readback', () => {
  it('reads sets with canonical elements, chains with their base, rules by comment', () => {
    const t = readTableJson(json, 'inet', 'podroute');
    assert.deepEqual([...t.sets.keys()], ['s4', 'np4']);
    assert.deepEqual([...t.sets.get('s4')!.elements], ['10.0.0.0/24', '10.2.0.5', '10.6.0.1-10.6.0.9', '10.9.0.1']);
    assert.deepEqual([...t.sets.get('np4')!.elements], ['10.0.0.0/24 . tcp . 80-90', '10.0.0.1 . udp . 53']);
    assert.equal(t.sets.get('np4')!.type, 'ipv4_addr . inet_proto . inet_service');
    assert.deepEqual(t.chains.get('forward')!.base, { type: 'filter', hook: 'forward', priority: -5, policy: 'drop' });
    assert.equal(t.chains.get('to-a')!.base, undefined);
    assert.deepEqual(t.chains.get('forward')!.rules, [
      { comment: 'dispatch|0123456789ab', sets: [], chains: ['to-a'] },
      { comment: '|bbbbbbbbbbbb', sets: ['from-wl'], chains: [] },
    ]);
    assert.deepEqual(t.chains.get('to-a')!.rules, [
      { comment: 'p/in/0|aaaaaaaaaaaa', sets: ['s4'], chains: [], counter: { packets: 5, bytes: 420 } },
      { comment: '', sets: [], chains: [] },
    ]);
  });

  it('reads named maps: verdict maps as canonical key → verdict, another kind with its data type', () => {
    const t = readTableJson(json, 'inet', 'podroute');
    assert.deepEqual([...t.maps.keys()], ['to-wl', 'from-wl', 'marks'], 'the map of the ip family is not ours');
    assert.deepEqual(t.maps.get('to-wl'), {
      name: 'to-wl',
      type: 'ifname',
      data: 'verdict',
      flags: [],
      elements: new Map([
        ['"cali1"', 'jump to-a'],
        ['"cali2"', 'goto to-a'],
        ['"cali3"', 'drop'],
      ]),
    });
    assert.equal(t.maps.get('from-wl')!.elements.size, 0);
    assert.deepEqual(t.maps.get('marks'), {
      name: 'marks',
      type: 'ipv4_addr . inet_service',
      data: 'mark',
      flags: [],
      elements: new Map([['10.0.0.1 . 80', '7']]),
    });
  });

  it('reads counters of our table only', () => {
    assert.deepEqual(readCountersJson(json, 'inet', 'podroute'), [
      { chain: 'to-a', comment: 'p/in/0|aaaaaaaaaaaa', packets: 5, bytes: 420 },
    ]);
  });

  it('says what is wrong with output it cannot read', () => {
    assert.throws(() => readTableJson('Error: x', 'inet', 'podroute'), /not JSON/);
    assert.throws(() => readTableJson('{}', 'inet', 'podroute'), /no "nftables" array/);
  });
});
