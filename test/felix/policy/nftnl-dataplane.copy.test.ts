// The netlink dataplane's copy of its table against a real kernel: a read answers from it only
// while nobody else committed since felix's own last commit, so a hand edit of any kind (a rule
// deleted or added, a chain flushed, an element added or deleted) is read from the kernel and
// repaired by the next resync; the copy equals what the kernel reads back after compiled tables
// change; a refused batch or another writer's commit drops it; each read checks a slice of the
// kernel's table, all of it within fullReadEvery reads, which finds what no commit showed.
// And the full read itself: sets and maps dumped the same as last time are not parsed again, yet
// an element changed in place (same length, other bytes) is seen; the rules read in one dump of
// the table equal those read chain by chain.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import type { InstalledTable } from '../../../felix/policy/dataplane.js';
import type { NftTable } from '../../../felix/policy/nft-model.js';
import { NetlinkNftDataplane } from '../../../felix/policy/nftnl-dataplane.js';
import { readTableNetlink } from '../../../felix/policy/nftnl-read.js';
import { NETLINK_NETFILTER, NFPROTO_INET } from '../../../felix/netlink/nf-constants.js';
import { NetlinkSocket } from '../../../felix/netlink/socket.js';
import { PolicyProgrammer } from '../../../felix/policy/programmer.js';
import { mergeTable } from '../../../felix/policy/table-parts.js';
import { compileServices } from '../../../felix/services/compile.js';
import type { ServicePort } from '../../../felix/services/input.js';
import { Lab, type Netns } from '../../support/netns.js';
import { servicePort } from '../../support/service-ports.js';
import { generateInput } from './compile-generate.js';

/** A Map or Set, or a copy's layer over one (iterable, not an array). */
const collection = (v: unknown): v is Iterable<unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as Iterable<unknown>)[Symbol.iterator] === 'function';

/**
 * Maps and sets as sorted arrays, a rule's references in any order, counters left out (the copy
 * has none), and a map's typeof (a read has none; a copy taken from the planned table has).
 */
const plain = (t: InstalledTable | undefined) =>
  JSON.parse(
    JSON.stringify(t, (k, v) =>
      k === 'counter' || k === 'typeof'
        ? undefined
        : collection(v)
          ? [...v].sort()
          : Array.isArray(v) && v.every((x) => typeof x === 'string')
            ? [...v].sort()
            : v,
    ),
  );

/** A compiled policy table (sets, interval sets, verdict maps) with a services part (data maps, timeout sets). */
const compiled = (seed: number, services: ServicePort[]): NftTable =>
  mergeTable(
    compilePolicy(generateInput(seed)),
    new Map([['services', compileServices({ services, nodeAddresses: [], clusterCidrs: ['10.65.0.0/16'] })]]),
  );

describe('felix/policy netlink dataplane: the copy of the table a resync may answer from', function () {
  this.timeout(120_000);
  const lab = new Lab({ tag: 'nfc' });
  let node: Netns;
  let dp: NetlinkNftDataplane;
  let kernel: NetlinkNftDataplane;
  let prog: PolicyProgrammer;
  const nft = (...args: string[]) => node.run(['nft', ...args]);
  const ports = [servicePort(0, 3), servicePort(1, 2), servicePort(2, 4)];

  before(async () => {
    node = await lab.namespace('node');
    dp = new NetlinkNftDataplane({ netns: node.name, fullReadEvery: 1000 });
    // Reads the kernel every time: what the copy is held to.
    kernel = new NetlinkNftDataplane({ netns: node.name, fullReadEvery: 1 });
    prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0, retryDelayMs: 0 });
    const r = await prog.update(compiled(1, ports));
    assert.equal(r.ok, true, r.error);
  });

  after(async () => {
    prog?.stop();
    dp?.close();
    kernel?.close();
    await lab.destroy();
  });

  /** A resync right after our own commit, answered from the copy, finding nothing. */
  const quietResync = async (why: string) => {
    const copy = dp.reads.copy;
    const r = await prog.resync();
    assert.equal(r.ok, true, r.error);
    assert.equal(r.ops, 0, `${why}: ${r.script}`);
    assert.equal(dp.reads.copy, copy + 1, `${why}: answered from the copy`);
  };

  /** A resync after a hand edit: read from the kernel and repaired, then nothing to do. */
  const repairs = async (edit: () => Promise<unknown>, expect: string[]) => {
    await quietResync('before the edit');
    await edit();
    const before = dp.reads.kernel;
    const r = await prog.resync();
    assert.equal(r.ok, true, r.error);
    assert.equal(dp.reads.kernel, before + 1, 'the hand edit made the resync read the kernel');
    assert.deepEqual([...new Set(r.transaction.map((o) => o.kind))].sort(), expect, r.script);
    assert.equal((await prog.resync()).ops, 0, 'repaired');
    assert.deepEqual(plain(await dp.read()), plain(await kernel.read()), 'the copy is the kernel again');
  };

  it('after the load that made the table, is the planned table itself and equals what the kernel reads back', async () => {
    assert.equal(dp.adopted, 1, 'the copy was taken from the planned table, not replayed');
    const copy = (await dp.read())!;
    assert.equal(dp.reads.copy, 1, 'answered from the copy');
    const desired = compiled(1, ports);
    const typed = desired.maps!.find((m) => m.typeof !== undefined && m.elements.length)!;
    assert.equal(copy.maps.get(typed.name)?.typeof, typed.typeof, `map ${typed.name} is the desired state's, declaration and all`);
    assert.deepEqual(plain(copy), plain(await kernel.read()), "the copy is the kernel's table");
    await quietResync('after the load');
  });

  it('equals what the kernel reads back while compiled policy and services tables change', async () => {
    const steps: NftTable[] = [
      compiled(2, ports),
      compiled(2, [servicePort(0, 3, { moved: 1 }), servicePort(1, 2), servicePort(2, 4)]),
      compiled(2, [servicePort(0, 5, { moved: 1 }), servicePort(2, 1)]),
      compiled(3, [servicePort(0, 5, { moved: 2 }), servicePort(2, 1), servicePort(3, 2)]),
      compiled(1, ports),
    ];
    for (const [i, want] of steps.entries()) {
      const r = await prog.update(want);
      assert.equal(r.ok, true, r.error);
      assert.deepEqual(plain(await dp.read()), plain(await kernel.read()), `step ${i}: the copy is the kernel's table`);
      await quietResync(`step ${i}`);
    }
  });

  it('a rule deleted by hand is read from the kernel and put back', async () => {
    const chain = prog.desired.chains.find((c) => !c.base && c.rules.length > 1)!;
    await repairs(async () => {
      const listing = await nft('-a', 'list', 'chain', 'inet', 'podroute', chain.name);
      const handle = /# handle (\d+)\s*$/m.exec(listing.split('\n').filter((l) => /comment/.test(l))[0] ?? '')?.[1];
      assert.ok(handle, `a rule handle in ${listing}`);
      await nft('delete', 'rule', 'inet', 'podroute', chain.name, 'handle', handle);
    }, ['add rule', 'flush chain']);
  });

  it('a chain flushed by hand is read from the kernel and refilled', async () => {
    const chain = prog.desired.chains.find((c) => !c.base && c.rules.length > 0)!;
    await repairs(() => nft('flush', 'chain', 'inet', 'podroute', chain.name), ['add rule', 'flush chain']);
  });

  it('a rule added by hand is read from the kernel and taken out', async () => {
    const chain = prog.desired.chains.find((c) => !c.base)!;
    await repairs(() => nft('add', 'rule', 'inet', 'podroute', chain.name, 'counter'), ['add rule', 'flush chain']);
  });

  it('elements added and deleted by hand, in a set and in a data map, are read from the kernel and repaired', async () => {
    const set = prog.desired.sets.find((s) => !s.interval && s.timeout === undefined && s.type === 'ipv4_addr' && s.elements.length)!;
    const map = prog.desired.maps!.find((m) => m.data !== undefined && m.elements.length)!;
    await repairs(async () => {
      await nft('add', 'element', 'inet', 'podroute', set.name, '{ 10.99.0.1 }');
      await nft('delete', 'element', 'inet', 'podroute', map.name, `{ ${map.elements[0].key} }`);
    }, ['add map element', 'delete element']);
  });

  it('a table deleted by hand is made again, and the copy is again the table planned', async () => {
    await quietResync('before');
    await nft('delete', 'table', 'inet', 'podroute');
    const adopted = dp.adopted;
    const r = await prog.resync();
    assert.equal(r.ok, true, r.error);
    assert.equal(r.transaction[0]?.kind, 'add table', 'made from none');
    assert.equal(dp.adopted, adopted + 1, 'the copy taken from the planned table');
    assert.deepEqual(plain(await dp.read()), plain(await kernel.read()), "the copy is the kernel's table");
    await quietResync('after');
  });

  it("another writer's commit, even to another table, makes the next read dump the kernel", async () => {
    await quietResync('before');
    await nft('add', 'table', 'inet', 'someone-else');
    const before = dp.reads.kernel;
    assert.equal((await prog.resync()).ops, 0);
    assert.equal(dp.reads.kernel, before + 1, 'read from the kernel');
    await nft('delete', 'table', 'inet', 'someone-else');
    assert.equal((await prog.resync()).ops, 0);
    assert.equal(dp.reads.kernel, before + 2, 'and again after the table went');
  });

  it('a refused batch drops the copy: the next read dumps the kernel', async () => {
    await quietResync('before');
    const r = await dp.apply([
      { kind: 'delete element', set: prog.desired.sets.find((s) => !s.interval && !s.timeout)!.name, elements: ['10.99.9.9'] },
    ]);
    assert.equal(r.ok, false, 'the kernel refuses deleting what is not there');
    const before = dp.reads.kernel;
    assert.equal((await prog.resync()).ops, 0);
    assert.equal(dp.reads.kernel, before + 1, 'read from the kernel');
  });

  it('checks a slice of the kernel on each read, all of it within fullReadEvery reads, and so repairs what the generation cannot show', async () => {
    // Elements a packet adds (`update @set` on a set felix compares) come with no commit: the
    // generation stays felix's and only reading the set finds them.
    const spreadNode = await lab.namespace('spread');
    const spreadDp = new NetlinkNftDataplane({ netns: spreadNode.name, fullReadEvery: 4 });
    const spreadProg = new PolicyProgrammer(spreadDp, { resyncIntervalMs: 0, retryDelayMs: 0 });
    try {
      const n = Array.from({ length: 12 }, (_, i) => i);
      const want: NftTable = {
        family: 'inet',
        name: 'podroute',
        sets: [
          { name: 'seen', type: 'ipv4_addr', interval: false, elements: [] },
          ...n.map((i) => ({ name: `s${i}`, type: 'ipv4_addr', interval: false, elements: [`10.0.${i}.1`, `10.0.${i}.2`] })),
        ],
        maps: [{ name: 'm', type: 'ipv4_addr', elements: n.map((i) => ({ key: `10.1.0.${i}`, verdict: `jump c${i}` })) }],
        chains: [
          {
            name: 'out',
            base: { type: 'filter', hook: 'output', priority: 0, policy: 'accept' },
            rules: [{ id: 'seen', expr: 'ip daddr 127.0.0.2 update @seen { ip daddr }' }],
          },
          ...n.map((i) => ({ name: `c${i}`, rules: [{ id: `c${i}`, expr: `ip saddr @s${i} counter accept` }] })),
        ],
      };
      const r = await spreadProg.update(want);
      assert.equal(r.ok, true, r.error);
      const resync = async (why: string) => {
        const copy = spreadDp.reads.copy;
        const kernel = spreadDp.reads.kernel;
        const x = await spreadProg.resync();
        assert.equal(x.ok, true, x.error);
        return {
          ops: x.transaction.map((o) => o.kind),
          slice: spreadDp.lastSlice,
          fromCopy: spreadDp.reads.copy === copy + 1,
          kernel: spreadDp.reads.kernel - kernel,
          why,
        };
      };
      // A cycle: four reads from the copy, each a part, together the whole table.
      const cycle = [await resync('1'), await resync('2'), await resync('3'), await resync('4')];
      const sets = new Set<string>();
      const chains = new Set<string>();
      for (const c of cycle) {
        assert.deepEqual(c, { ...c, ops: [], fromCopy: true, kernel: 0 }, `resync ${c.why}: answered from the copy, nothing to repair`);
        assert.ok(c.slice!.chains.length < want.chains.length, `resync ${c.why} read a part of the chains, not all`);
        for (const name of c.slice!.sets) sets.add(name);
        for (const name of c.slice!.chains) chains.add(name);
      }
      assert.deepEqual([...sets].sort(), [...want.sets.map((x) => x.name), 'm'].sort(), 'every set and map read within the cycle');
      assert.deepEqual([...chains].sort(), want.chains.map((c) => c.name).sort(), "every chain's rules read within the cycle");
      assert.equal(cycle.filter((c) => c.slice!.heads).length, 1, "every chain's head read once in the cycle");

      // Right after the read that checked `seen`, a packet adds to it: the next reads check other slices.
      let k = 0;
      while (!spreadDp.lastSlice!.sets.includes('seen'))
        assert.ok(++k <= 4 && (await resync('to seen')).fromCopy, 'seen is checked within a cycle');
      await spreadNode.run(['ping', '-c', '1', '-W', '1', '127.0.0.2']);
      const next = await resync('after the packet');
      assert.deepEqual(
        [next.ops, next.fromCopy],
        [[], true],
        'the next read, from the copy, checked another slice: the generation did not move',
      );
      const after = [next];
      while (!after.at(-1)!.ops.length) {
        assert.ok(after.length < 4, `repaired within the cycle: ${JSON.stringify(after)}`);
        after.push(await resync(`after the packet, ${after.length + 1}`));
      }
      const repair = after.at(-1)!;
      assert.deepEqual(
        [repair.ops, repair.kernel],
        [['delete element'], 1],
        'the slice holding seen differed: the whole table read and the element deleted',
      );
      const listed = await spreadNode.run(['nft', 'list', 'set', 'inet', 'podroute', 'seen']);
      assert.doesNotMatch(listed, /127\.0\.0\.2/, 'the element is gone from the kernel');
      assert.deepEqual((await resync('repaired')).ops, [], 'nothing left to repair');
      assert.throws(() => new NetlinkNftDataplane({ fullReadEvery: 0 }), /fullReadEvery: 0/);
    } finally {
      spreadProg.stop();
      spreadDp.close();
    }
  });

  it('a full read parses again only what dumps differently, misses no change, and reads the rules alike in one dump', async () => {
    const sock = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: `/var/run/netns/${node.name}` });
    try {
      const read = (memo?: ReturnType<typeof readTableNetlink>['memo'], wholeTableRules = true) =>
        readTableNetlink(sock, NFPROTO_INET, 'podroute', { ...(memo ? { memo } : {}), wholeTableRules });
      const first = read();
      assert.deepEqual(plain(first.table), plain(read(undefined, false).table), 'one rule dump reads what a dump per chain does');
      const again = read(first.memo);
      for (const [name, m] of first.table!.maps) assert.equal(again.table!.maps.get(name), m, `map ${name}: not parsed again`);
      // A timeout set's elements are the packet path's: never dumped.
      for (const [name, s] of first.table!.sets)
        if (s.timeout === undefined) assert.equal(again.table!.sets.get(name), s, `set ${name}: not parsed again`);
      // Edited by hand: an element added to a set, and a data map's value replaced by one as long.
      const set = prog.desired.sets.find((x) => !x.interval && x.timeout === undefined && x.type === 'ipv4_addr')!;
      const map = prog.desired.maps!.find((m) => m.data === 'ipv4_addr . inet_service' && m.elements.length)!;
      const { key, verdict } = map.elements[0];
      const moved = verdict.replace(/^(\d+\.\d+\.\d+\.)(\d+)/, (_m, net: string, host: string) => `${net}${(Number(host) + 1) % 10}`);
      assert.equal(moved.length, verdict.length, `${verdict} → ${moved}`);
      await nft('add', 'element', 'inet', 'podroute', set.name, '{ 10.99.0.2 }');
      await node.run(['nft', '-f', '-'], {
        input: `delete element inet podroute ${map.name} { ${key} }\nadd element inet podroute ${map.name} { ${key} : ${moved} }\n`,
      });
      const edited = read(again.memo);
      assert.ok(edited.table!.sets.get(set.name)!.elements.has('10.99.0.2'), 'the element added by hand');
      assert.equal(edited.table!.maps.get(map.name)!.elements.get(key), moved, 'the value replaced by hand');
      assert.deepEqual(plain(edited.table), plain(read().table), 'as a read without memory gives');
      const other = [...first.table!.maps.keys()].find((n) => n !== map.name)!;
      assert.equal(edited.table!.maps.get(other), first.table!.maps.get(other), 'a map nobody touched is still not parsed');
    } finally {
      sock.close();
    }
    const r = await prog.resync();
    assert.equal(r.ok, true, r.error);
    assert.deepEqual([...new Set(r.transaction.map((o) => o.kind))].sort(), ['add map element', 'delete element', 'delete map element']);
  });
});
