// A pod made and deleted on the node while the PolicyProgrammer keeps the kernel's table, with
// real packets before, between and after: the pod add is its two endpoint chains and one
// element in each dispatch map (the rules of the forward hook's two chains are never rewritten, and
// a connection through them keeps flowing), the pod's policy holds from the first packet, and
// its removal takes the map elements out before the chains they jump to; an element deleted
// behind the programmer's back comes back on resync. A pod that is the first to use a policy
// brings that policy's chain and sets in the same transaction. Root only.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import type { PolicyEndpoint, PolicyInput } from '../../../felix/policy/input.js';
import { FORWARD_CHAIN, FORWARD_TO_ENDPOINT_CHAIN } from '../../../felix/policy/names.js';
import { NftablesDataplane } from '../../../felix/policy/nft-dataplane.js';
import { type PolicyApplyReport, PolicyProgrammer } from '../../../felix/policy/programmer.js';
import { Lab } from '../../support/netns.js';
import { PolicyNode, type PodSpec } from './compile-lab.js';

const A: PodSpec = { name: 'a', address: '10.65.0.2', address6: 'fd00:65::2' };
const B: PodSpec = { name: 'b', address: '10.65.0.3', address6: 'fd00:65::3' };
const C: PodSpec = { name: 'c', address: '10.65.0.4', address6: 'fd00:65::4' };

const endpoint = (p: PodSpec, ingress: string[][]): PolicyEndpoint => ({
  iface: `cali${p.name}`,
  addresses: [p.address, p.address6],
  ingress,
  egress: [],
});

/**
 * b admits nobody; c, once it exists, admits a only (or, with from-b, b only). Only what a local
 * endpoint uses is compiled, so b's second tier names from-a, never reached (its first drops
 * everything): from-a's chain and set are there before c comes. from-b is used by c alone.
 */
function input(withC: boolean, cPolicy = 'knp.x.from-a'): PolicyInput {
  return {
    sets: [
      { id: 'sel-a', members: [A.address, A.address6], hosts: true },
      { id: 'sel-b', members: [B.address, B.address6], hosts: true },
    ],
    namedPortSets: [],
    policies: [
      { id: 'knp.x.deny', ingress: [] },
      { id: 'knp.x.from-a', ingress: [{ action: 'Allow', match: { srcSets: ['sel-a'] } }] },
      { id: 'knp.x.from-b', ingress: [{ action: 'Allow', match: { srcSets: ['sel-b'] } }] },
    ],
    endpoints: [endpoint(A, []), endpoint(B, [['knp.x.deny'], ['knp.x.from-a']]), ...(withC ? [endpoint(C, [[cPolicy]])] : [])],
    pools: [{ cidr: '10.65.0.0/16', natOutgoing: false }],
  };
}

/** Operation kinds and their counts, e.g. { 'add chain': 2, 'add map element': 2, 'add rule': 5 }. */
const counts = (r: PolicyApplyReport) => r.opCounts;

describe('felix/policy: a local pod added and removed through the dispatch maps, in a kernel', function () {
  this.timeout(120_000);
  const lab = new Lab({ tag: 'dpd' });
  let node: PolicyNode;
  let prog: PolicyProgrammer;

  before(async () => {
    node = await PolicyNode.create(lab, [A, B]);
    prog = new PolicyProgrammer(new NftablesDataplane({ netns: node.node.name }), { resyncIntervalMs: 0 });
  });
  after(async () => {
    prog?.stop();
    await lab.destroy();
  });

  const tcp = async (from: string, to: PodSpec, port = 80) => {
    const [v4, v6] = await node.probe(from, [
      { protocol: 'tcp', host: to.address, port },
      { protocol: 'tcp', host: to.address6, port },
    ]);
    assert.equal(v4!.ok, v6!.ok, `${from} -> ${to.name}: IPv4 ${v4!.ok}, IPv6 ${v6!.ok}`);
    return v4!.ok;
  };
  /** No dispatch rule is written, flushed or deleted. */
  const dispatchUntouched = (r: PolicyApplyReport) => {
    for (const chain of [FORWARD_CHAIN, FORWARD_TO_ENDPOINT_CHAIN]) {
      assert.doesNotMatch(r.script, new RegExp(`^(flush|delete) chain inet podroute ${chain}$`, 'm'), r.script);
      assert.doesNotMatch(r.script, new RegExp(`^add rule inet podroute ${chain} `, 'm'), r.script);
    }
  };

  it('before: b admits nobody, a everybody', async () => {
    const r = await prog.update(compilePolicy(input(false)));
    assert.equal(r.ok, true, r.error);
    assert.equal(await tcp('a', B), false);
    assert.equal(await tcp('b', A), true);
    assert.equal((await prog.resync()).ops, 0, 'the kernel, maps included, reads back as applied');
  });

  it('a pod add: its chains and one element per dispatch map; its policy holds at once and a connection through the dispatch keeps flowing', async () => {
    const conn = await node.longConnection('b', A.address, 81);
    try {
      await node.addPod(C);
      const r = await prog.update(compilePolicy(input(true)));
      assert.equal(r.ok, true, r.error);
      assert.equal(r.kind, 'incremental');
      dispatchUntouched(r);
      assert.doesNotMatch(r.script, /^flush chain /m, 'no chain is flushed at all');
      assert.deepEqual(counts(r), { 'add chain': 2, 'add map element': 2, 'add rule': 5 });
      assert.match(r.script, /^add element inet podroute from-wl \{ "calic" : jump from-calic \}$/m);
      assert.match(r.script, /^add element inet podroute to-wl \{ "calic" : jump to-calic \}$/m);
      assert.equal(await tcp('a', C), true, 'c admits a');
      assert.equal(await tcp('b', C), false, 'and nobody else');
      assert.equal(await tcp('c', A), true, 'c reaches a');
      assert.equal(await tcp('c', B), false, 'b still admits nobody');
      assert.ok(((await prog.counters()).get('calic/in/tier0')?.packets ?? 0) > 0, "b's packets reached c's chain through the map");
      await conn.flows();
      assert.equal((await prog.resync()).ops, 0);
    } finally {
      await conn.stop();
    }
  });

  it('resync puts back a map element deleted behind its back, with one element operation', async () => {
    await node.node.run(['nft', 'delete', 'element', 'inet', 'podroute', 'to-wl', '{ "calic" }']);
    assert.equal(await tcp('b', C), true, 'without its element c is not dispatched: nothing polices it');
    const r = await prog.resync();
    assert.equal(r.ok, true, r.error);
    assert.equal(r.script, 'add element inet podroute to-wl { "calic" : jump to-calic }\n');
    assert.equal(await tcp('b', C), false, 'repaired');
  });

  it('a pod removal: map elements out before the chains they jump to; the others are still enforced', async () => {
    const r = await prog.update(compilePolicy(input(false)));
    assert.equal(r.ok, true, r.error);
    dispatchUntouched(r);
    assert.deepEqual(
      r.transaction.map((o) => o.kind),
      ['delete map element', 'delete map element', 'flush chain', 'flush chain', 'delete chain', 'delete chain'],
    );
    assert.deepEqual(
      r.transaction.flatMap((o) => ('chain' in o ? [o.chain] : [])),
      ['from-calic', 'to-calic', 'from-calic', 'to-calic'],
    );
    // The veth stays until the CNI DEL: with no endpoint it is not policed, as any interface felix does not know.
    assert.equal(await tcp('b', C), true, 'c is no longer dispatched');
    assert.equal(await tcp('a', B), false, 'b still admits nobody');
    await node.removePod('c');
    assert.equal((await prog.resync()).ops, 0);
  });

  it('the same pod again, after its veth is gone and made anew: the same two elements', async () => {
    await node.addPod(C);
    const r = await prog.update(compilePolicy(input(true)));
    assert.equal(r.ok, true, r.error);
    dispatchUntouched(r);
    assert.deepEqual(counts(r), { 'add chain': 2, 'add map element': 2, 'add rule': 5 });
    assert.equal(await tcp('b', C), false);
    assert.equal(await tcp('a', C), true);
  });

  it("a pod that is the first to use a policy brings the policy's chain and sets in with its own; its removal takes them out", async () => {
    const gone = await prog.update(compilePolicy(input(false)));
    assert.equal(gone.ok, true, gone.error);
    const r = await prog.update(compilePolicy(input(true, 'knp.x.from-b')));
    assert.equal(r.ok, true, r.error);
    dispatchUntouched(r);
    assert.deepEqual(counts(r), { 'add set': 2, 'add chain': 3, 'add map element': 2, 'add rule': 7 });
    assert.match(r.script, /^add set inet podroute s4-sel-b \{ type ipv4_addr; elements = \{ 10\.65\.0\.3 \}; \}$/m);
    assert.equal(await tcp('b', C), true, 'c admits b');
    assert.equal(await tcp('a', C), false, 'and nobody else');
    assert.equal((await prog.resync()).ops, 0);
    const out = await prog.update(compilePolicy(input(false)));
    assert.equal(out.ok, true, out.error);
    dispatchUntouched(out);
    assert.deepEqual(
      out.transaction.flatMap((o) => (o.kind === 'delete chain' ? [o.chain] : o.kind === 'delete set' ? [o.set] : [])),
      ['from-calic', 'to-calic', 'pi-knp.x.from-b', 's4-sel-b', 's6-sel-b'],
    );
    assert.equal((await prog.resync()).ops, 0, 'the kernel holds neither the chain nor the sets');
    assert.equal(await tcp('a', B), false, 'b still admits nobody');
  });
});
