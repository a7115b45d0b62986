// A resync compares only what changed: an object a read lends again, found equal to the same
// desired one before, is not compared again, while a read that lends a new object, or a desired
// object that changed, is compared and repaired.
import assert from 'node:assert/strict';
import type { InstalledSet, InstalledTable, NftApplyResult, NftDataplane, NftOp, RuleCounterRow } from '../../../felix/policy/dataplane.js';
import { MemoryNftDataplane } from '../../../felix/policy/memory-nft.js';
import { PolicyProgrammer } from '../../../felix/policy/programmer.js';
import { base, fwd, table, toCali1, web } from './dataplane-fixtures.js';

/** A set's elements that count how often they are looked at. */
class Watched extends Set<string> {
  looks = 0;
  override has(e: string): boolean {
    this.looks++;
    return super.has(e);
  }
  override values(): SetIterator<string> {
    this.looks++;
    return super.values();
  }
  override [Symbol.iterator](): SetIterator<string> {
    this.looks++;
    return super[Symbol.iterator]();
  }
}

/** Lends the same read until told that the kernel changed (as the netlink dataplane's copy does), its sets' elements watched. */
class Lending implements NftDataplane {
  readonly family = 'inet' as const;
  readonly table = 'podroute';
  readonly description = 'lends its last read';
  private last?: InstalledTable;
  constructor(readonly kernel: MemoryNftDataplane) {}
  async read(): Promise<InstalledTable | undefined> {
    if (this.last) return this.last;
    const t = await this.kernel.read();
    if (!t) return undefined;
    const sets = new Map<string, InstalledSet>();
    for (const [name, s] of t.sets) sets.set(name, { ...s, elements: new Watched(s.elements) });
    this.last = { ...t, sets };
    return this.last;
  }
  /** The next read reads the kernel anew. */
  changed(): void {
    this.last = undefined;
  }
  looks(set: string): number {
    return (this.last?.sets.get(set)?.elements as Watched | undefined)?.looks ?? 0;
  }
  readCounters(): Promise<RuleCounterRow[]> {
    return this.kernel.readCounters();
  }
  async apply(ops: readonly NftOp[]): Promise<NftApplyResult> {
    this.last = undefined;
    return this.kernel.apply(ops);
  }
  close(): void {}
}

describe('felix/policy programmer: what a resync compares', () => {
  it('passes over what a read lends again, and compares and repairs what changed on either side', async () => {
    const dp = new Lending(new MemoryNftDataplane());
    const prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0, retryDelayMs: 0 });
    assert.equal((await prog.update(base)).ok, true);
    assert.equal((await prog.resync()).ops, 0, 'the kernel holds the table');
    assert.ok(dp.looks(web.name) > 0, 'the first resync of a read compares its elements');
    const before = dp.looks(web.name);
    assert.equal((await prog.resync()).ops, 0);
    assert.equal(dp.looks(web.name), before, 'the same read lent again: not compared again');

    // The kernel changed behind our back and the read says so: compared, repaired.
    dp.kernel.deleteElement(web.name, '10.65.0.3');
    dp.changed();
    const repair = await prog.resync();
    assert.deepEqual(
      repair.transaction.map((o) => o.kind),
      ['add element'],
      repair.script,
    );
    assert.equal((await prog.resync()).ops, 0, 'repaired');

    // The desired set changed while the read lends the same objects: compared, applied.
    const more = { ...web, elements: [...web.elements, '10.65.0.9'] };
    const r = await prog.update(table([more], [fwd, toCali1]));
    assert.deepEqual(
      r.transaction.map((o) => o.kind),
      ['add element'],
      r.script,
    );
    const again = await prog.resync();
    assert.equal(again.ops, 0, again.script);
    dp.kernel.deleteElement(web.name, '10.65.0.9');
    dp.changed();
    assert.deepEqual(
      (await prog.resync()).transaction.map((o) => o.kind),
      ['add element'],
      'a new read of a changed set is compared',
    );
  });
});
