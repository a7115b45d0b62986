// checkOp refuses exactly what opLine refuses, with its words: the netlink dataplane checks a
// transaction with the one and writes its script with the other only when it is read.

import assert from 'node:assert/strict';
import type { NftOp } from '../../../felix/policy/dataplane.js';
import { checkOp, opLine } from '../../../felix/policy/nft-script.js';

const TABLE = { family: 'inet', name: 'podroute' } as const;

/** The error a call throws, or undefined. */
function thrown(f: () => unknown): string | undefined {
  try {
    f();
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

const ops: NftOp[] = [
  { kind: 'add table' },
  { kind: 'add set', set: 's4-web', type: 'ipv4_addr', interval: false, elements: ['10.65.0.2'] },
  { kind: 'add set', set: 'bad name', type: 'ipv4_addr', interval: false, elements: [] },
  { kind: 'add set', set: 's4-web', type: 'ipv4 addr!', interval: false, elements: [] },
  { kind: 'add set', set: 's4-web', type: 'ipv4_addr', interval: false, timeout: 0, elements: [] },
  { kind: 'add set', set: 's4-web', type: 'ipv4_addr', interval: false, elements: ['10.65.0.2', '1 } ; flush ruleset'] },
  { kind: 'add element', set: 's4-web', elements: ['10.65.0.2\n'] },
  { kind: 'delete element', set: 's4;x', elements: ['10.65.0.2'] },
  { kind: 'delete set', set: 's4-web' },
  { kind: 'add map', map: 'to-wl', type: 'ifname', elements: [{ key: '"cali1"', verdict: 'jump to-cali1' }] },
  { kind: 'add map', map: 'to-wl', type: 'ifname', elements: [{ key: '"cali1"', verdict: 'flush ruleset' }] },
  { kind: 'add map', map: 'to-wl', type: 'ifname', data: 'nope!', elements: [] },
  { kind: 'add map', map: 'to-wl', type: 'ifname', data: 'ipv4_addr', elements: [{ key: '"a"', verdict: '10.0.0.1 }' }] },
  { kind: 'add map element', map: 'to-wl', elements: [{ key: '"a", "b"', verdict: 'accept' }] },
  { kind: 'add map element', map: 'to-wl', elements: [{ key: '"cali2"', verdict: ' jump  to-cali2' }] },
  { kind: 'add map element', map: 'to-wl', elements: [{ key: '  ', verdict: 'accept' }] },
  { kind: 'delete map element', map: 'to-wl', keys: ['"a"', 'b}'] },
  { kind: 'delete map', map: 'to wl' },
  { kind: 'add chain', chain: 'to-cali1' },
  { kind: 'flush chain', chain: 'to cali1' },
  { kind: 'add rule', chain: 'to-cali1', expr: 'accept', comment: 'r' },
  { kind: 'add rule', chain: 'to-cali1', expr: 'accept\nflush ruleset', comment: 'r' },
  { kind: 'add rule', chain: 'to-cali1', expr: 'accept', comment: 'a "quoted" one' },
];

describe('felix/policy nft script', () => {
  it('checkOp refuses what opLine refuses, with the same error, and passes what it writes', () => {
    let refused = 0;
    for (const op of ops) {
      const want = thrown(() => opLine(TABLE, op));
      if (want !== undefined) refused++;
      assert.equal(
        thrown(() => checkOp(op)),
        want,
        JSON.stringify(op),
      );
    }
    assert.ok(refused >= 12, `the list refuses something of every kind (${refused})`);
  });
});
