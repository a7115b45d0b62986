// The nf_tables netlink dataplane against a real kernel, on what only it does: element changes
// as one netlink batch, refused whole; a writer process killed mid-batch or between batches
// leaving every batch whole or absent; another writer's commit detected by the generation and the batch sent again; and its
// netlink reader agreeing with `nft -j list` on compiled policy and services tables.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { compilePolicy } from '../../../felix/policy/compile.js';
import type { InstalledTable, NftOp } from '../../../felix/policy/dataplane.js';
import type { NftSet, NftTable } from '../../../felix/policy/nft-model.js';
import { NftablesDataplane } from '../../../felix/policy/nft-dataplane.js';
import { readTableJson } from '../../../felix/policy/nft-readback.js';
import { NetlinkNftDataplane } from '../../../felix/policy/nftnl-dataplane.js';
import { readTableNetlink } from '../../../felix/policy/nftnl-read.js';
import { planTable } from '../../../felix/policy/plan.js';
import { dumpTable } from '../../../felix/policy/table-dump.js';
import { PolicyProgrammer } from '../../../felix/policy/programmer.js';
import { mergeTable } from '../../../felix/policy/table-parts.js';
import { compileServices } from '../../../felix/services/compile.js';
import { NETLINK_NETFILTER, NFPROTO_INET } from '../../../felix/netlink/nf-constants.js';
import { NetlinkSocket } from '../../../felix/netlink/socket.js';
import { Lab, type Netns } from '../../support/netns.js';
import { rawTable } from '../../support/nft-raw.js';
import { servicePort } from '../../support/service-ports.js';
import { generateInput } from './compile-generate.js';

const BATCH_WRITER = fileURLToPath(new URL('../../support/nft-batch-writer.ts', import.meta.url));
/** Elements in each of the stream writer's batches. */
const BATCH = 4000;

const hosts = (elements: string[]): NftSet => ({ name: 's4-web', type: 'ipv4_addr', interval: false, elements });
const nets = (elements: string[]): NftSet => ({ name: 'n4-out', type: 'ipv4_addr', interval: true, elements });
const table = (sets: NftSet[]): NftTable => ({
  family: 'inet',
  name: 'podroute',
  sets,
  maps: [{ name: 'to-wl', type: 'ifname', elements: [{ key: '"cali1"', verdict: 'jump to-cali1' }] }],
  chains: [{ name: 'to-cali1', rules: [{ id: 'r', expr: 'ip saddr @s4-web ip daddr @n4-out counter accept' }] }],
});

/** A Map or Set, or a copy's layer over one (iterable, not an array). */
const collection = (v: unknown): v is Iterable<unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as Iterable<unknown>)[Symbol.iterator] === 'function';

/** Maps and sets as sorted arrays, and a rule's references in any order, so two reads compare with deepEqual. */
const plain = (t: InstalledTable | undefined) =>
  JSON.parse(
    JSON.stringify(t, (_k, v) =>
      collection(v) ? [...v].sort() : Array.isArray(v) && v.every((x) => typeof x === 'string') ? [...v].sort() : v,
    ),
  );

describe('felix/policy nftables netlink dataplane in a kernel', function () {
  this.timeout(120_000);
  const lab = new Lab({ tag: 'nfl' });
  let node: Netns;
  let dp: NetlinkNftDataplane;
  let prog: PolicyProgrammer;
  const nft = (...args: string[]) => node.run(['nft', ...args]);
  const ours = () => nft('list', 'table', 'inet', 'podroute');

  before(async () => {
    node = await lab.namespace('node');
    dp = new NetlinkNftDataplane({ netns: node.name });
    prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0, retryDelayMs: 0 });
  });

  after(async () => {
    prog?.stop();
    dp?.close();
    await lab.destroy();
  });

  it('a pod add or delete is one netlink batch of its elements, plain and interval sets alike', async () => {
    assert.equal((await prog.update(table([hosts(['10.65.0.2']), nets(['10.0.0.0/8'])]))).ok, true);
    const add = await prog.update(table([hosts(['10.65.0.2', '10.65.0.3']), nets(['10.0.0.0/8', '192.168.1.0/24', '192.168.2.0/24'])]));
    assert.equal(add.ok, true, add.error);
    assert.deepEqual(Object.keys(add.opCounts), ['add element'], 'elements only');
    assert.match(await ours(), /10\.65\.0\.2, 10\.65\.0\.3/, 'nft lists the hash set with both');
    assert.match(await ours(), /10\.0\.0\.0\/8, 192\.168\.1\.0\/24,\s+192\.168\.2\.0\/24/, 'and the adjacent nets apart');
    const del = await prog.update(table([hosts(['10.65.0.3']), nets(['192.168.2.0/24', '255.255.255.255'])]));
    assert.equal(del.ok, true, del.error);
    assert.equal((await prog.resync()).ops, 0, 'what netlink wrote reads back equal, the span at the last address too');
  });

  it('a batch the kernel refuses leaves the old table whole, and says which operation and why', async () => {
    assert.equal((await prog.update(table([hosts(['10.65.0.2']), nets(['10.0.0.0/8'])]))).ok, true);
    const before = await ours();
    const r = await dp.apply([
      { kind: 'add element', set: 's4-web', elements: ['10.65.0.9'] },
      { kind: 'delete element', set: 'n4-out', elements: ['172.16.0.0/12'] },
      { kind: 'add map element', map: 'to-wl', elements: [{ key: '"cali2"', verdict: 'jump to-cali1' }] },
    ]);
    assert.equal(r.ok, false, 'deleting an element that is not there fails the batch');
    assert.match(r.error ?? '', /^line 2 \(delete element inet podroute n4-out \{ 172\.16\.0\.0\/12 \}\): ENOENT/);
    assert.equal(await ours(), before, 'the element before it was not added, nor the map element after it');
    const loop = await dp.apply([{ kind: 'add map element', map: 'to-wl', elements: [{ key: '"cali3"', verdict: 'jump missing' }] }]);
    assert.equal(loop.ok, false);
    assert.match(loop.error ?? '', /^line 1 \(add element inet podroute to-wl \{ "cali3" : jump missing \}\): ENOENT/);
    assert.equal(await ours(), before);
  });

  it('a script read late says the transaction it came with, and a text nft cannot carry is refused before the kernel sees it', async () => {
    assert.equal((await prog.update(table([hosts(['10.65.0.2']), nets(['10.0.0.0/8'])]))).ok, true);
    const ops: NftOp[] = [{ kind: 'add element', set: 's4-web', elements: ['10.65.0.7'] }];
    const first = await dp.apply(ops);
    // The caller's list reused, and the table changed again, before the first script is read.
    ops[0] = { kind: 'delete element', set: 's4-web', elements: ['10.65.0.7'] };
    const second = await dp.apply(ops);
    assert.ok(first.ok && second.ok, `${first.error} ${second.error}`);
    assert.equal(first.script, 'add element inet podroute s4-web { 10.65.0.7 }\n');
    assert.equal(second.script, 'delete element inet podroute s4-web { 10.65.0.7 }\n');
    const before = await ours();
    const bad = await dp.apply([
      { kind: 'add element', set: 's4-web', elements: ['10.65.0.8'] },
      { kind: 'add rule', chain: 'to-cali1', expr: 'accept', comment: 'a "quoted" comment' },
    ]);
    assert.equal(bad.ok, false, 'a comment nft cannot quote is refused');
    assert.match(bad.error ?? '', /^nft rule comment .*cannot be written$/);
    assert.equal(await ours(), before, 'and nothing of it was sent');
  });

  // A writer in a child process, killed with SIGKILL where the test says (nft-batch-writer.ts).
  let writer: ChildProcess | undefined;
  afterEach(() => {
    if (writer?.exitCode === null && writer.signalCode === null) writer.kill('SIGKILL');
    writer = undefined;
  });
  const startWriter = (mode: 'cut' | 'stream') => {
    const child = spawn(process.execPath, ['--import', 'tsx', BATCH_WRITER, node.name, 'podroute', 's4-web', mode, String(BATCH)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    writer = child;
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    const exited = new Promise<string | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
    /** Resolves once the child has printed a line matching `re`; rejects if it exits first. */
    const said = (re: RegExp) =>
      new Promise<RegExpMatchArray>((resolve, reject) => {
        const look = () => {
          const m = out.match(re);
          if (m) resolve(m);
        };
        child.stdout.on('data', look);
        look();
        void exited.then((how) => reject(new Error(`the writer exited (${how}) before ${re}: ${err.slice(-500)}`)));
      });
    return { child, said, exited, output: () => out };
  };
  const webElements = () => {
    const sock = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: `/var/run/netns/${node.name}` });
    try {
      return readTableNetlink(sock, NFPROTO_INET, 'podroute').table?.sets.get('s4-web')?.elements.size ?? -1;
    } finally {
      sock.close();
    }
  };

  it('a writer killed after BATCH_BEGIN and some messages, before BATCH_END, leaves the table as it was', async () => {
    assert.equal((await prog.update(table([hosts(['10.65.0.2']), nets(['10.0.0.0/8'])]))).ok, true);
    const before = await ours();
    const w = startWriter('cut');
    await w.said(/^sent$/m);
    assert.equal(await ours(), before, 'while the writer lives, nothing of its unfinished batch is in the table');
    w.child.kill('SIGKILL');
    assert.equal(await w.exited, 'SIGKILL');
    assert.equal(await ours(), before, 'nor after it died');
    // Nothing is left locked or half-done: the next transaction commits.
    const next = await prog.update(table([hosts(['10.65.0.2', '10.65.0.5']), nets(['10.0.0.0/8'])]));
    assert.equal(next.ok, true, next.error);
    assert.match(await ours(), /10\.65\.0\.5/);
  });

  it('a writer killed while sending batch after batch leaves each batch whole or absent', async () => {
    assert.equal((await prog.update(table([hosts([]), nets(['10.0.0.0/8'])]))).ok, true);
    const w = startWriter('stream');
    // Killed at once after the kernel confirmed a batch: most likely while it takes the next.
    const m = await w.said(/^batch (\d+)$/m);
    w.child.kill('SIGKILL');
    assert.equal(await w.exited, 'SIGKILL');
    const confirmed = Math.max(...[...w.output().matchAll(/^batch (\d+)$/gm)].map((x) => Number(x[1])), Number(m[1]));
    const count = webElements();
    assert.equal(count % BATCH, 0, `${count} elements: a whole number of ${BATCH}-element batches`);
    assert.ok(count >= confirmed * BATCH && count <= (confirmed + 1) * BATCH, `${count} elements after ${confirmed} confirmed batches`);
    const r = await prog.resync();
    assert.equal(r.ok, true, r.error);
    assert.equal(webElements(), 0, 'the resync takes out what the killed writer added');
  });

  it('another writer committing between two applies is detected by the generation, and the batch sent again', async () => {
    assert.equal((await prog.update(table([hosts(['10.65.0.2']), nets(['10.0.0.0/8'])]))).ok, true);
    const restarts = dp.restarts;
    await nft('add', 'table', 'inet', 'someone-else');
    const r = await prog.update(table([hosts(['10.65.0.2', '10.65.0.4']), nets(['10.0.0.0/8'])]));
    assert.equal(r.ok, true, r.error);
    assert.equal(dp.restarts, restarts + 1, 'the kernel refused the first send (ERESTART)');
    assert.match(await ours(), /10\.65\.0\.4/);
    const again = await prog.update(table([hosts(['10.65.0.2']), nets(['10.0.0.0/8'])]));
    assert.equal(again.ok, true);
    assert.equal(dp.restarts, restarts + 1, 'no other commit came between: sent once');
    await nft('delete', 'table', 'inet', 'someone-else');
  });

  it('the resync repairs elements and map elements edited by hand', async () => {
    assert.equal((await prog.update(table([hosts(['10.65.0.2']), nets(['10.0.0.0/8', '192.168.0.0/16'])]))).ok, true);
    await nft('delete', 'element', 'inet', 'podroute', 'n4-out', '{ 192.168.0.0/16 }');
    await nft('add', 'element', 'inet', 'podroute', 's4-web', '{ 10.65.0.66 }');
    await nft('delete', 'element', 'inet', 'podroute', 'to-wl', '{ "cali1" }');
    const r = await prog.resync();
    assert.equal(r.ok, true, r.error);
    assert.deepEqual(r.transaction.map((o) => o.kind).sort(), ['add element', 'add map element', 'delete element']);
    assert.equal((await prog.resync()).ops, 0);
  });

  // Seed 2 with flow logs: their `limit … log … group` rules are encoded and read back too.
  const compiled = (seed: number) =>
    mergeTable(
      compilePolicy(generateInput(seed), seed === 2 ? { flowLogs: { group: 7, ratePerSecond: 200, burst: 50 } } : {}),
      new Map([
        [
          'services',
          compileServices({
            services: Array.from({ length: 8 }, (_, i) => servicePort(i, (i * 7) % 40, { externalLocal: true })),
            nodeAddresses: [],
            clusterCidrs: ['10.65.0.0/16'],
          }),
        ],
      ]),
    );

  // Every statement shape the compilers write, a few ways each, beside what the generated input gives.
  const shapes: NftTable = {
    family: 'inet',
    name: 'podroute',
    sets: [
      { name: 'aff4', type: 'ipv4_addr', interval: false, elements: [], timeout: 600 },
      { name: 'aff6', type: 'ipv6_addr', interval: false, elements: [], timeout: 600 },
      { name: 'n4-open', type: 'ipv4_addr', interval: true, elements: ['10.0.0.0/8', '255.0.0.0/8'] },
      { name: 'n6-all', type: 'ipv6_addr', interval: true, elements: ['::/0'] },
    ],
    chains: [
      { name: 'ep', rules: [] },
      { name: 'ep2', rules: [] },
      {
        name: 'shapes',
        rules: [
          'tcp sport 80 tcp dport 443 counter accept',
          'th sport 80 th dport 443 accept',
          'meta l4proto 136 th sport 18820-22851 th dport 30252 counter log prefix "podroute gnp.p2-3/in/0: "',
          'tcp dport 100-200 counter accept',
          'sctp sport != 3808-7754 counter goto ep',
          'udp sport != { 10052-11416, 38752 } udp dport { 0-10, 13440, 39225, 55711-65535 } counter goto ep',
          'meta l4proto 136 th dport { 7290-10427, 33244-35393, 50667 } th dport != { 15368, 20906-21076, 51141 } counter return',
          'icmp type 58 icmp code 134 counter log prefix "x: "',
          'icmpv6 type 136 counter drop',
          'icmp type != 3 counter drop',
          'icmpv6 type . icmpv6 code != { 1 . 4 } counter drop',
          'icmp type 3 icmp type . icmp code != { 3 . 4 } counter accept',
          'meta l4proto != tcp icmpv6 type 173 counter log prefix "a"',
          'log group 2 prefix "grouped"',
          'log',
          'ip protocol icmp counter accept',
          'ip daddr 10.96.0.1 ip saddr 10.65.0.2 accept',
          'update @aff4 { ip saddr }',
          'update @aff6 { ip6 saddr }',
          'numgen random mod 2 vmap { 0 : goto ep, 1 : goto ep2 }',
          'meta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.65.5.10 . 8080, 1 : 10.65.5.11 . 8081 }',
          'meta l4proto tcp dnat ip6 to numgen random mod 2 map { 0 : fd00::1 . 8080, 1 : fd00::2 . 8081 }',
          // Flow logs with ct mark bits: an Allow's number, a staged rule's bit as it logs.
          'ip saddr 10.65.0.2 ct mark set ct mark & 0xff01ffff | 0x00060000',
          'ct mark set ct mark | 0x00010000 limit rate 200/second burst 50 packets log prefix "pr|SA|x" group 7',
        ].map((expr, i) => ({ id: `shape-${i}`, expr })),
      },
    ],
  };

  for (const [name, want] of [
    ['seed 1', () => compiled(1)],
    ['seed 2', () => compiled(2)],
    ['every shape', () => shapes],
  ] as const)
    it(`writes every rule by netlink as nft -f writes it: listing, expressions and netlink attributes (${name})`, async () => {
      const ops = planTable(want(), undefined);
      const viaNetlink = new NetlinkNftDataplane({ netns: node.name, table: 'by-netlink' });
      const viaNft = new NftablesDataplane({ netns: node.name, table: 'by-nft' });
      try {
        const a = await viaNetlink.apply(ops);
        assert.equal(a.ok, true, a.error);
        const b = await viaNft.apply(ops);
        assert.equal(b.ok, true, b.error);
        const list = async (table: string, ...debug: string[]) =>
          (await nft(...debug, 'list', 'table', 'inet', table)).replaceAll(table, 'T').replace(/\s+element 0+ {2}: 1 \[end\]/g, '');
        assert.equal(await list('by-netlink'), await list('by-nft'), 'nft lists both alike');
        // The rules' expressions (elements, in hash order, are compared by the listing above).
        const expressions = async (table: string) =>
          (await list(table, '--debug=netlink'))
            .split('\n')
            .filter((l) => !l.includes('element '))
            .join('\n');
        assert.equal(await expressions('by-netlink'), await expressions('by-nft'), 'the same expressions');
        // And byte for byte as the kernel holds them: set flags, sizes and userdata, elements, rules.
        assert.deepEqual(rawTable(node.name, 'by-netlink'), rawTable(node.name, 'by-nft'), 'the same netlink attributes');
      } finally {
        viaNetlink.close();
        await nft('delete', 'table', 'inet', 'by-netlink').catch(() => undefined);
        await nft('delete', 'table', 'inet', 'by-nft').catch(() => undefined);
      }
    });

  it("nft list table inet podroute equals what felix meant: its dump, loaded by nft elsewhere, lists the same; the kernel's dump marks hand edits", async () => {
    // A node of its own, so the table is made by this load alone (nft lists in the order of creation).
    const host = await lab.namespace('dumpnode');
    const ref = await lab.namespace('ref');
    const own = new NetlinkNftDataplane({ netns: host.name });
    const p = new PolicyProgrammer(own, { resyncIntervalMs: 0, retryDelayMs: 0 });
    try {
      const want = compiled(1);
      const r = await p.update(want);
      assert.equal(r.ok, true, r.error);
      // felix's meaning as nft text, given to nft in a namespace of its own.
      const meant = dumpTable(p.desired);
      await ref.run(['nft', '-f', '-'], { input: meant.text });
      const listing = async (ns: Netns) =>
        (await ns.run(['nft', 'list', 'table', 'inet', 'podroute'])).replace(/packets \d+ bytes \d+/g, '');
      assert.equal(await listing(host), await listing(ref), 'the kernel lists what felix meant');
      const clean = dumpTable(p.desired, await own.read());
      assert.equal(clean.differs, false, clean.text);
      // Edited by hand: an element taken out, a rule of someone else's added.
      const set = want.sets.find((x) => x.elements.length > 0 && x.timeout === undefined)!;
      const chain = want.chains.find((c) => !c.base)!;
      await host.run(['nft', 'delete', 'element', 'inet', 'podroute', set.name, `{ ${set.elements[0]} }`]);
      await host.run(['nft', 'add', 'rule', 'inet', 'podroute', chain.name, 'counter', 'comment', '"by hand"']);
      const edited = dumpTable(p.desired, await own.read());
      assert.equal(edited.differs, true);
      const marked = edited.text.split('\n').filter((l) => /^[-+] /.test(l));
      assert.equal(marked.length, 2, edited.text);
      assert.match(marked.find((l) => l.startsWith('- ')) ?? '', new RegExp(`^- \\t\\t\\t${set.elements[0].replaceAll('.', '\\.')},?$`));
      assert.equal(
        marked.find((l) => l.startsWith('+ ')),
        '+ \t\t# a rule felix did not write, comment "by hand"',
      );
      assert.equal((await p.resync()).ok, true);
      assert.equal(dumpTable(p.desired, await own.read()).differs, false, 'the resync repaired both');
    } finally {
      p.stop();
      own.close();
    }
  });

  for (const seed of [1, 2, 3])
    it(`reads compiled policy and services tables as nft -j list does (seed ${seed})`, async () => {
      const want = compiled(seed);
      const viaNft = new PolicyProgrammer(new NftablesDataplane({ netns: node.name }), { resyncIntervalMs: 0 });
      const r = await viaNft.update(want);
      assert.equal(r.ok, true, r.error);
      const json = readTableJson(await nft('-j', 'list', 'table', 'inet', 'podroute'), 'inet', 'podroute');
      const sock = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: `/var/run/netns/${node.name}` });
      try {
        assert.deepEqual(plain(readTableNetlink(sock, NFPROTO_INET, 'podroute').table), plain(json));
        const once = readTableNetlink(sock, NFPROTO_INET, 'podroute', { wholeTableRules: true });
        assert.deepEqual(plain(once.table), plain(json), 'the rules read in one dump of the table');
        const again = readTableNetlink(sock, NFPROTO_INET, 'podroute', { wholeTableRules: true, memo: once.memo });
        assert.deepEqual(plain(again.table), plain(json), "and again, the sets' dumps compared with the last read's");
      } finally {
        sock.close();
      }
      // And what the netlink dataplane then plans against it is nothing.
      const netlink = new NetlinkNftDataplane({ netns: node.name });
      try {
        const again = await new PolicyProgrammer(netlink, { resyncIntervalMs: 0 }).update(want);
        assert.equal(again.kind, 'resync');
        assert.equal(again.ops, 0, again.script);
      } finally {
        netlink.close();
      }
    });
});
