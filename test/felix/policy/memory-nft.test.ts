// The in-memory nftables dataplane keeps the kernel's rules (all or nothing, no deleting what
// is in use, a chain a map element jumps to included, no element deleted twice), and the PolicyProgrammer on top of it: incremental
// applies, repair on resync, failures reported and retried, applies serialised, counters.
import assert from 'node:assert/strict';
import type { NftOp } from '../../../felix/policy/dataplane.js';
import { MemoryNftDataplane } from '../../../felix/policy/memory-nft.js';
import type { NftChain } from '../../../felix/policy/nft-model.js';
import { base, fwd, table, toCali1, web } from './dataplane-fixtures.js';
import { type PolicyApplyReport, PolicyProgrammer } from '../../../felix/policy/programmer.js';
import { NftTableError } from '../../../felix/policy/table-state.js';

const elements = async (dp: MemoryNftDataplane, set: string) => [...((await dp.read())?.sets.get(set)?.elements ?? [])].sort();

describe('felix/policy in-memory nftables dataplane', () => {
  it('applies a transaction whole, or nothing of it', async () => {
    const dp = new MemoryNftDataplane();
    const ok: NftOp[] = [
      { kind: 'add table' },
      { kind: 'add set', set: 's', type: 'ipv4_addr', interval: true, elements: ['10.0.0.1'] },
      { kind: 'add chain', chain: 'c' },
      { kind: 'add rule', chain: 'c', expr: 'ip saddr @s accept', comment: 'r|1' },
    ];
    assert.equal((await dp.apply(ok)).ok, true);
    const r = await dp.apply([
      { kind: 'add element', set: 's', elements: ['10.0.0.2'] },
      { kind: 'flush chain', chain: 'c' },
      { kind: 'add rule', chain: 'c', expr: 'ip saddr @missing drop', comment: 'r|2' },
    ]);
    assert.equal(r.ok, false);
    assert.match(r.error!, /^line 3 \(add rule inet podroute c ip saddr @missing drop comment "r\|2"\): Error: No such file or directory/);
    assert.deepEqual(await elements(dp, 's'), ['10.0.0.1'], 'the element of the refused transaction is not there');
    assert.deepEqual(dp.rules('c'), ['ip saddr @s accept comment "r|1"'], 'nor was the chain flushed');
    assert.equal(dp.applied.length, 1);
    assert.equal(dp.attempts, 2);
  });

  it('keeps the kernel rules: no deleting a set or chain in use, no element deleted twice, no overlapping intervals', async () => {
    const dp = new MemoryNftDataplane();
    await dp.apply([
      { kind: 'add table' },
      { kind: 'add set', set: 's', type: 'ipv4_addr', interval: true, elements: ['10.0.0.0/24'] },
      { kind: 'add chain', chain: 'c' },
      { kind: 'add chain', chain: 'top', base: { type: 'filter', hook: 'forward', priority: 0, policy: 'accept' } },
      { kind: 'add rule', chain: 'c', expr: 'ip saddr @s accept', comment: 'a|1' },
      { kind: 'add rule', chain: 'top', expr: 'jump c', comment: 'b|1' },
    ]);
    const refused = async (op: NftOp, why: RegExp) => {
      const r = await dp.apply([op]);
      assert.equal(r.ok, false, JSON.stringify(op));
      assert.match(r.error!, why);
    };
    await refused({ kind: 'delete set', set: 's' }, /busy/);
    await refused({ kind: 'delete chain', chain: 'c' }, /busy/);
    await refused({ kind: 'delete element', set: 's', elements: ['10.0.1.0/24'] }, /element does not exist/);
    await refused({ kind: 'add element', set: 's', elements: ['10.0.0.5'] }, /conflicting intervals/);
    // A set without intervals takes bare addresses only: nft refuses a prefix there, even a /32.
    assert.equal((await dp.apply([{ kind: 'add set', set: 'h', type: 'ipv4_addr', interval: false, elements: ['10.0.0.1'] }])).ok, true);
    for (const e of ['10.0.1.0/24', '10.0.0.5/32', '10.0.0.5-10.0.0.6'])
      await refused({ kind: 'add element', set: 'h', elements: [e] }, /You must add 'flags interval'/);
    await refused({ kind: 'add set', set: 'h6', type: 'ipv6_addr', interval: false, elements: ['fd00::/64'] }, /flags interval/);
    await refused({ kind: 'add rule', chain: 'c', expr: 'jump top', comment: 'x|1' }, /base chain/);
    // Emptied first, in the same transaction, both go.
    const r = await dp.apply([
      { kind: 'flush chain', chain: 'top' },
      { kind: 'flush chain', chain: 'c' },
      { kind: 'delete chain', chain: 'c' },
      { kind: 'delete set', set: 's' },
    ]);
    assert.equal(r.ok, true, r.error);
    assert.deepEqual([...((await dp.read())?.chains.keys() ?? [])], ['top']);
  });

  it('keeps the kernel rules for verdict maps: no deleting a chain an element jumps to, nor a map in use; one verdict per key', async () => {
    const dp = new MemoryNftDataplane();
    const setup = await dp.apply([
      { kind: 'add table' },
      { kind: 'add chain', chain: 'to-a' },
      { kind: 'add chain', chain: 'top', base: { type: 'filter', hook: 'forward', priority: 0, policy: 'accept' } },
      { kind: 'add map', map: 'to-wl', type: 'ifname', elements: [{ key: '"a"', verdict: 'jump to-a' }] },
      { kind: 'add rule', chain: 'top', expr: 'oifname vmap @to-wl', comment: 'd|1' },
    ]);
    assert.equal(setup.ok, true, setup.error);
    const refused = async (ops: NftOp[], why: RegExp) => {
      const r = await dp.apply(ops);
      assert.equal(r.ok, false, JSON.stringify(ops));
      assert.match(r.error!, why);
    };
    await refused([{ kind: 'delete chain', chain: 'to-a' }], /busy.*map element/);
    await refused([{ kind: 'delete map', map: 'to-wl' }], /busy/);
    await refused([{ kind: 'add map element', map: 'to-wl', elements: [{ key: 'a', verdict: 'drop' }] }], /File exists/);
    await refused(
      [{ kind: 'add map element', map: 'to-wl', elements: [{ key: '"b"', verdict: 'jump to-b' }] }],
      /No such file.*chain to-b/,
    );
    await refused([{ kind: 'add map element', map: 'to-wl', elements: [{ key: '"b"', verdict: 'jump top' }] }], /base chain/);
    await refused([{ kind: 'delete map element', map: 'to-wl', keys: ['"b"'] }], /element does not exist/);
    await refused([{ kind: 'add set', set: 'to-wl', type: 'ipv4_addr', interval: false, elements: [] }], /File exists \(map to-wl\)/);
    await refused([{ kind: 'add rule', chain: 'top', expr: 'iifname vmap @from-wl', comment: 'x|1' }], /No such file.*from-wl/);
    // The same element again is no error; its key deleted first, the chain can go in the same transaction.
    const r = await dp.apply([
      { kind: 'add map element', map: 'to-wl', elements: [{ key: '"a"', verdict: 'jump to-a' }] },
      { kind: 'delete map element', map: 'to-wl', keys: ['"a"'] },
      { kind: 'delete chain', chain: 'to-a' },
    ]);
    assert.equal(r.ok, true, r.error);
    const t = await dp.read();
    assert.deepEqual(t?.maps.get('to-wl'), { name: 'to-wl', type: 'ifname', data: 'verdict', flags: [], elements: new Map() });
    assert.deepEqual([...(t?.chains.keys() ?? [])], ['top']);
  });

  it('an injected failure refuses exactly one transaction', async () => {
    const dp = new MemoryNftDataplane();
    dp.failNext = 'Error: Could not process rule: Cannot allocate memory';
    assert.deepEqual(await dp.apply([{ kind: 'add table' }]), {
      ok: false,
      error: 'Error: Could not process rule: Cannot allocate memory',
      script: 'add table inet podroute\n',
    });
    assert.equal(dp.exists, false);
    assert.equal((await dp.apply([{ kind: 'add table' }])).ok, true);
    assert.equal(dp.exists, true);
  });
});

describe('felix/policy PolicyProgrammer (in-memory dataplane)', () => {
  let prog: PolicyProgrammer | undefined;
  afterEach(() => prog?.stop());

  it('programs the table, then a pod add is one element operation', async () => {
    const dp = new MemoryNftDataplane();
    prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0 });
    const first = await prog.update(base);
    assert.equal(first.ok, true, first.error);
    assert.equal(first.kind, 'resync', 'the first apply reads the kernel');
    assert.equal(first.opCounts['add rule'], 4);
    const r = await prog.update(table([{ ...web, elements: [...web.elements, '10.65.0.9'] }], [fwd, toCali1]));
    assert.equal(r.kind, 'incremental');
    assert.deepEqual(r.transaction, [{ kind: 'add element', set: 's4-web', elements: ['10.65.0.9'] }]);
    assert.equal(r.script, 'add element inet podroute s4-web { 10.65.0.9 }\n');
    assert.deepEqual(await elements(dp, 's4-web'), ['10.65.0.2', '10.65.0.3', '10.65.0.9']);
    const same = await prog.update(table([{ ...web, elements: [...web.elements, '10.65.0.9'] }], [fwd, toCali1]));
    assert.equal(same.ops, 0, 'an equal table is no transaction');
    assert.equal(dp.applied.length, 2);
  });

  it('is busy from an update until its transaction is reported, and not after', async () => {
    const dp = new MemoryNftDataplane();
    prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0 });
    assert.equal(prog.busy, false, 'nothing asked yet');
    const seen: boolean[] = [];
    prog.on('report', () => seen.push(prog!.busy));
    const applied = prog.update(base);
    assert.equal(prog.busy, true, 'queued');
    await applied;
    assert.deepEqual(seen, [true], 'still busy as the report is made');
    assert.equal(prog.busy, false, 'idle once it is reported');
  });

  it('resync repairs a rule and an element deleted behind its back', async () => {
    const dp = new MemoryNftDataplane();
    prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0 });
    await prog.update(base);
    dp.deleteRule('to-cali1', 1);
    dp.deleteElement('s4-web', '10.65.0.2');
    const r = await prog.resync();
    assert.equal(r.ok, true, r.error);
    assert.deepEqual(
      r.transaction.map((o) => o.kind),
      ['flush chain', 'add element', 'add rule', 'add rule'],
    );
    assert.deepEqual(await elements(dp, 's4-web'), ['10.65.0.2', '10.65.0.3']);
    assert.equal(dp.rules('to-cali1').length, 2);
    assert.equal((await prog.resync()).ops, 0, 'and then there is nothing left to repair');
  });

  it('a failed apply keeps the previous rules, is reported, and is retried from a fresh read', async () => {
    const dp = new MemoryNftDataplane();
    prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0 });
    const reports: PolicyApplyReport[] = [];
    prog.on('report', (r) => reports.push(r));
    await prog.update(base);
    const before = await dp.read();
    // An element deleted behind our back makes the incremental delete fail.
    dp.deleteElement('s4-web', '10.65.0.2');
    const r = await prog.update(table([{ ...web, elements: ['10.65.0.3'] }], [fwd, { ...toCali1, rules: [toCali1.rules[1]] }]));
    assert.equal(r.ok, false);
    assert.match(r.error!, /element does not exist/);
    assert.deepEqual(dp.rules('to-cali1').length, 2, 'the chain was not flushed: the transaction did nothing');
    assert.deepEqual((await dp.read())?.chains, before?.chains);
    const retry = await prog.update(table([{ ...web, elements: ['10.65.0.3'] }], [fwd, { ...toCali1, rules: [toCali1.rules[1]] }]));
    assert.equal(retry.ok, true, retry.error);
    assert.equal(retry.kind, 'resync');
    assert.deepEqual(
      retry.transaction.map((o) => o.kind),
      ['flush chain', 'add rule'],
    );
    assert.deepEqual(
      reports.map((x) => [x.kind, x.ok]),
      [
        ['resync', true],
        ['incremental', false],
        ['resync', true],
      ],
    );
  });

  it('repairs on its own on the resync timer once started', async () => {
    const dp = new MemoryNftDataplane();
    prog = new PolicyProgrammer(dp, { resyncIntervalMs: 30 });
    await prog.update(base);
    assert.equal((await prog.start()).ops, 0);
    dp.deleteElement('s4-web', '10.65.0.3');
    const repaired = await new Promise<PolicyApplyReport>((resolve) => {
      const seen = (r: PolicyApplyReport) => {
        if (r.ops === 0) return;
        prog!.off('report', seen);
        resolve(r);
      };
      prog!.on('report', seen);
    });
    assert.equal(repaired.kind, 'resync');
    assert.deepEqual(repaired.transaction, [{ kind: 'add element', set: 's4-web', elements: ['10.65.0.3'] }]);
    prog.stop();
    await prog.settled();
    let reports = 0;
    prog.on('report', () => reports++);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(reports, 0, 'stopped: no more resyncs');
  });

  it('retries a failure on its own once started', async () => {
    const dp = new MemoryNftDataplane();
    prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0, retryDelayMs: 20 });
    dp.failNext = 'Error: injected';
    const first = await prog.start();
    assert.equal(first.ok, false);
    const next = await new Promise<PolicyApplyReport>((resolve) => prog!.once('report', resolve));
    assert.equal(next.ok, true, next.error);
    assert.equal(dp.exists, true);
  });

  it('never runs two transactions at once, and folds updates made meanwhile into one', async () => {
    const dp = new MemoryNftDataplane();
    let inFlight = 0;
    let most = 0;
    const apply = dp.apply.bind(dp);
    dp.apply = async (ops) => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 10));
      try {
        return await apply(ops);
      } finally {
        inFlight--;
      }
    };
    prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0 });
    const runs: Promise<PolicyApplyReport>[] = [prog.update(base)];
    const deadline = Date.now() + 5000;
    while (inFlight === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    assert.equal(inFlight, 1, 'the first transaction is under way');
    for (let i = 10; i < 20; i++) runs.push(prog.update(table([{ ...web, elements: [...web.elements, `10.65.0.${i}`] }], [fwd, toCali1])));
    const reports = await Promise.all(runs);
    await prog.settled();
    assert.equal(most, 1);
    assert.ok(
      reports.every((r) => r.ok),
      `an update failed: ${reports
        .filter((r) => !r.ok)
        .map((r) => r.error)
        .join('; ')}`,
    );
    assert.equal(dp.applied.length, 2, 'the first apply, then one for the ten updates made while it ran');
    assert.deepEqual(await elements(dp, 's4-web'), ['10.65.0.19', '10.65.0.2', '10.65.0.3']);
  });

  it('refuses a bad table at once, naming the field, and keeps the one it had', async () => {
    const dp = new MemoryNftDataplane();
    prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0 });
    await prog.update(base);
    assert.throws(
      () => prog!.update(table([web], [{ name: 'c', rules: [{ expr: 'accept; flush ruleset' }] }])),
      (e: unknown) => e instanceof NftTableError && e.field === 'chains[0].rules[0].expr',
    );
    assert.equal(prog.desired, base);
    assert.throws(() => prog!.update({ ...base, name: 'other' }), /manages inet podroute only/);
  });

  it('sums counters per rule id', async () => {
    const dp = new MemoryNftDataplane();
    prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0 });
    const toCali2: NftChain = { name: 'to-cali2', rules: [{ id: 'knp.default.web/in/0', expr: 'ip saddr @s4-web counter accept' }] };
    await prog.update(table([web], [fwd, toCali1, toCali2]));
    dp.count('knp.default.web/in/0|', 3, 180);
    dp.count('cali1/in/tier0|', 1, 60);
    const counters = await prog.counters();
    assert.deepEqual(Object.fromEntries(counters), {
      'knp.default.web/in/0': { packets: 6, bytes: 360 },
      'cali1/in/tier0': { packets: 1, bytes: 60 },
    });
  });
});
