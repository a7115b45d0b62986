// The nftables dataplane and the PolicyProgrammer against a real kernel, in namespaces this
// test makes: a node that forwards between two clients and a pod behind a cali-like veth.
// Real pings show what the rules enforce; `nft` run beside the programmer plays the operator
// who deletes a rule or an element behind its back; two tables that are not ours (another
// name, and our name in another family) must come out of every test as they went in. The same
// suite runs on both dataplanes: `nft -f` and nf_tables netlink.
import assert from 'node:assert/strict';
import type { NftChain, NftSet, NftTable } from '../../../felix/policy/nft-model.js';
import type { NftDataplane } from '../../../felix/policy/dataplane.js';
import { NftablesDataplane } from '../../../felix/policy/nft-dataplane.js';
import { NetlinkNftDataplane } from '../../../felix/policy/nftnl-dataplane.js';
import { PolicyProgrammer } from '../../../felix/policy/programmer.js';
import { Lab, type Netns } from '../../support/netns.js';

const POD = '10.65.0.2';
const C1 = '10.99.0.2';
const C2 = '10.99.0.3';
const CALI = 'cali1a2b3c4d5e6';

const deny = (elements: string[]): NftSet => ({ name: 's4-deny', type: 'ipv4_addr', interval: true, elements });
const forward: NftChain = {
  name: 'forward',
  base: { type: 'filter', hook: 'forward', priority: 0, policy: 'accept' },
  rules: [{ id: 'to-wl', expr: `oifname "${CALI}" jump to-${CALI}` }],
};
const toPod: NftChain = {
  name: `to-${CALI}`,
  rules: [
    { id: 'deny/in/0', expr: 'ip saddr @s4-deny counter drop' },
    { id: 'allow/in/0', expr: 'ip protocol icmp counter accept' },
  ],
};
const table = (sets: NftSet[], chains: NftChain[]): NftTable => ({ family: 'inet', name: 'podroute', sets, chains });
const policy = (members: string[]) => table([deny(members)], [forward, toPod]);

// Tables of others: a different name, and our name in another family.
const OTHERS = `
table inet other {
  set keep { type ipv4_addr; elements = { 10.99.0.2, 10.99.0.3 } }
  chain input { type filter hook input priority 0; policy accept; ip saddr @keep counter accept comment "theirs"; }
}
table ip podroute {
  chain output { type filter hook output priority 0; policy accept; counter comment "theirs too"; }
}
`;

const DATAPLANES: [string, string, (netns: string) => NftDataplane][] = [
  ['nft -f', 'dpk', (netns) => new NftablesDataplane({ netns })],
  ['netlink', 'dpn', (netns) => new NetlinkNftDataplane({ netns })],
];

for (const [kind, tag, make] of DATAPLANES)
  describe(`felix/policy nftables dataplane in a kernel (${kind})`, function () {
    this.timeout(60_000);
    const lab = new Lab({ tag });
    let node: Netns;
    let c1: Netns;
    let c2: Netns;
    let dp: NftDataplane;
    let prog: PolicyProgrammer;
    let othersBefore: string;

    const nft = (...args: string[]) => node.run(['nft', ...args]);
    // A table as nft lists it, counters left out (packets move them; we never write them).
    const listing = async (family: string, name: string) =>
      (await nft('-j', 'list', 'table', family, name)).replace(/"packets": \d+, "bytes": \d+/g, '');
    const others = async () => (await listing('inet', 'other')) + (await listing('ip', 'podroute'));
    const ours = () => listing('inet', 'podroute');
    const pings = async (from: Netns, count = 1) =>
      (await from.exec(['ping', '-n', '-q', '-c', String(count), '-i', '0.2', '-W', '1', POD])).code === 0;

    before(async () => {
      node = await lab.namespace('node');
      c1 = await lab.namespace('c1');
      c2 = await lab.namespace('c2');
      const pod = await lab.namespace('pod');
      const sw = await lab.segment();
      await sw.attach(node, { ifname: 'eth0', v4: '10.99.0.1/24' });
      await sw.attach(c1, { ifname: 'eth0', v4: `${C1}/24` });
      await sw.attach(c2, { ifname: 'eth0', v4: `${C2}/24` });
      await lab.link(node, { ifname: CALI, v4: '10.65.0.1/24' }, pod, { ifname: 'eth0', v4: `${POD}/24` });
      await node.run(['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
      for (const c of [c1, c2]) await c.ip('route', 'add', '10.65.0.0/24', 'via', '10.99.0.1');
      await pod.ip('route', 'add', '10.99.0.0/24', 'via', '10.65.0.1');
      await node.run(['nft', '-f', '-'], { input: OTHERS });
      othersBefore = await others();
      dp = make(node.name);
      prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0 });
      assert.ok(await pings(c1), 'before any policy the pod answers');
    });

    afterEach(async () => {
      assert.equal(await others(), othersBefore, 'the tables of others are untouched');
    });

    after(async () => {
      prog?.stop();
      await lab.destroy();
    });

    it('applies a hand-written table, and real packets show it enforced', async () => {
      const r = await prog.update(policy([C2]));
      assert.equal(r.ok, true, r.error);
      assert.equal(r.kind, 'resync');
      assert.ok(await pings(c1), 'c1 is not in the deny set');
      assert.equal(await pings(c2), false, 'c2 is in the deny set: dropped');
      // The kernel reads back equal to what was asked for.
      assert.equal((await prog.resync()).ops, 0);
    });

    it('a member added to the set takes effect through one element operation', async () => {
      const r = await prog.update(policy([C2, C1]));
      assert.equal(r.ok, true, r.error);
      assert.equal(r.kind, 'incremental');
      assert.equal(r.script, `add element inet podroute s4-deny { ${C1} }\n`);
      assert.equal(await pings(c1), false, 'c1 is now dropped');
      const back = await prog.update(policy([C2]));
      assert.equal(back.script, `delete element inet podroute s4-deny { ${C1} }\n`);
      assert.ok(await pings(c1), 'and passes again once removed');
    });

    it('a failing transaction leaves the previous rules in force and is reported', async () => {
      assert.equal((await prog.update(policy([C2]))).ok, true);
      const before = await ours();
      // A member change and a rule that uses a set that does not exist: all or nothing.
      const bad = table([deny([C1])], [forward, { ...toPod, rules: [{ id: 'bad', expr: 'ip saddr @s4-missing drop' }, ...toPod.rules] }]);
      const r = await prog.update(bad);
      assert.equal(r.ok, false);
      assert.match(
        r.error!,
        /line \d+ \(add rule inet podroute to-cali1a2b3c4d5e6 ip saddr @s4-missing drop comment .*\): (Error|ENOENT): No such file or directory/,
      );
      assert.equal(await ours(), before, 'the kernel table did not change');
      assert.ok(await pings(c1), 'c1 still passes: its element was not added');
      assert.equal(await pings(c2), false, 'c2 is still dropped: the chain was not flushed');
      // A statement nft cannot read fails the same way.
      const garbled = await prog.update(table([deny([C1])], [forward, { ...toPod, rules: [{ id: 'g', expr: 'tcp dport 99999 drop' }] }]));
      assert.equal(garbled.ok, false);
      if (kind === 'netlink') assert.match(garbled.error!, /^line \d+ \(add rule .* tcp dport 99999 drop comment .*\): .*"99999"/);
      assert.equal(await ours(), before);
      // The next update reads the kernel again and goes through.
      const good = await prog.update(policy([C2]));
      assert.equal(good.ok, true, good.error);
      assert.equal(good.kind, 'resync');
      assert.equal(good.ops, 0, 'nothing had changed in the kernel');
    });

    it('resync repairs a rule deleted with nft delete rule and an element deleted with nft delete element', async () => {
      assert.equal((await prog.update(policy([C2]))).ok, true);
      const listing = JSON.parse(await nft('-a', '-j', 'list', 'chain', 'inet', 'podroute', `to-${CALI}`)) as {
        nftables: { rule?: { handle: number; comment?: string } }[];
      };
      const drop = listing.nftables.find((e) => e.rule?.comment?.startsWith('deny/in/0|'))?.rule;
      assert.ok(drop, 'the drop rule is found by its comment');
      await nft('delete', 'rule', 'inet', 'podroute', `to-${CALI}`, 'handle', String(drop.handle));
      await nft('delete', 'element', 'inet', 'podroute', 's4-deny', `{ ${C2} }`);
      assert.ok(await pings(c2), 'with both gone, c2 passes');
      const r = await prog.resync();
      assert.equal(r.ok, true, r.error);
      assert.deepEqual(
        r.transaction.map((o) => o.kind),
        ['flush chain', 'add element', 'add rule', 'add rule'],
      );
      assert.equal(await pings(c2), false, 'repaired: c2 is dropped again');
      assert.equal((await prog.resync()).ops, 0);
    });

    it('counters count real packets per rule id', async () => {
      assert.equal((await prog.update(policy([C2]))).ok, true);
      const before = await prog.counters();
      assert.equal(await pings(c2, 3), false);
      assert.ok(await pings(c1, 2), 'c1 cannot ping while only c2 is denied');
      const after = await prog.counters();
      const delta = (id: string) => (after.get(id)?.packets ?? 0) - (before.get(id)?.packets ?? 0);
      assert.equal(delta('deny/in/0'), 3, 'three echo requests from c2 dropped');
      assert.equal(delta('allow/in/0'), 2, 'two echo requests from c1 accepted (replies leave by eth0)');
      assert.equal((after.get('deny/in/0')?.bytes ?? 0) - (before.get('deny/in/0')?.bytes ?? 0), 3 * 84);
    });

    it('moves between unlike tables in one transaction each, and reads back equal', async () => {
      // Sets of every kind the compiler writes, given as a person would write them.
      const rich = table(
        [
          deny(['10.99.0.3/32', '10.98.7.7/16', '10.97.0.0/24', '10.97.0.9']),
          { name: 's6-web', type: 'ipv6_addr', interval: true, elements: ['fd00::1/128', 'fd00:1::/64'] },
          {
            name: 'np4-web',
            type: 'ipv4_addr . inet_proto . inet_service',
            interval: false,
            elements: [`${POD} . 6 . 80`, `${POD} . udp . 53`],
          },
        ],
        [
          { ...forward, base: { ...forward.base!, priority: -5 } },
          { ...toPod, rules: [...toPod.rules, { id: 'np', expr: 'ip daddr . meta l4proto . th dport @np4-web counter accept' }] },
          { name: 'unused', rules: [{ id: 'v6', expr: 'ip6 saddr @s6-web counter accept' }] },
        ],
      );
      const r1 = await prog.update(rich);
      assert.equal(r1.ok, true, r1.error);
      assert.equal((await prog.resync()).ops, 0, 'host prefixes, host bits, overlaps and protocol numbers read back equal');
      assert.equal(await pings(c2), false);
      // Sets and chains go, a set changes flags, the base chain's priority changes.
      const plain = table([{ ...deny([C1]), interval: false }], [{ ...forward, base: { ...forward.base!, policy: 'accept' } }, toPod]);
      const r2 = await prog.update(plain);
      assert.equal(r2.ok, true, r2.error);
      assert.equal((await prog.resync()).ops, 0);
      assert.equal(await pings(c1), false);
      assert.ok(await pings(c2), 'c2 cannot ping after the update that denies only c1');
      const r3 = await prog.update(policy([C2]));
      assert.equal(r3.ok, true, r3.error);
      assert.equal((await prog.resync()).ops, 0);
      assert.equal(await pings(c2), false);
    });

    it('recreates the table when someone deletes it', async () => {
      assert.equal((await prog.update(policy([C2]))).ok, true);
      await nft('delete', 'table', 'inet', 'podroute');
      assert.ok(await pings(c2), 'c2 cannot ping with the table deleted');
      const r = await prog.resync();
      assert.equal(r.ok, true, r.error);
      assert.equal(r.transaction[0].kind, 'add table');
      assert.equal(await pings(c2), false);
    });
  });
