// A services compile after a few ports changed is a change, recorded (policy/derivation.ts), and
// the programmer plans that change alone. Held to the whole path over random sequences of
// changes: the compiler's table equals a compile from scratch, the programmer's transaction holds
// the same operations as one planned from the whole table, and the kernel (the in-memory one, then
// nf_tables through netlink) ends equal; the change path is checked to be the one taken. A change
// the kernel refuses leaves the old table whole, and the next apply repairs from a read.
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { InstalledTable } from '../../../felix/policy/dataplane.js';
import { nftMapChange, partChange } from '../../../felix/policy/derivation.js';
import { MemoryNftDataplane } from '../../../felix/policy/memory-nft.js';
import { NetlinkNftDataplane } from '../../../felix/policy/nftnl-dataplane.js';
import { PolicyProgrammer } from '../../../felix/policy/programmer.js';
import type { NftMap } from '../../../felix/policy/nft-model.js';
import type { NftTablePart } from '../../../felix/policy/table-parts.js';
import { compileServices, ServiceCompiler, type ServiceTable } from '../../../felix/services/compile.js';
import type { ServiceEndpoint, ServiceInput, ServicePort } from '../../../felix/services/input.js';
import { SERVICES_PART } from '../../../felix/services/program.js';
import { Lab, type Netns } from '../../support/netns.js';
import { prng } from '../../support/prng.js';
import { transactionOps, watchChains } from '../../support/nft-tx.js';

/** Random service ports and random changes to them, from a seed. */
class Services {
  private readonly next: () => number;
  readonly ports = new Map<string, ServicePort>();
  private serial = 0;
  cidrs = ['10.64.0.0/10'];

  constructor(seed: number, count: number) {
    this.next = prng(seed);
    for (let i = 0; i < count; i++) this.addPort();
  }

  rand(n: number): number {
    return Math.floor(this.next() * n);
  }

  input(): ServiceInput {
    return { services: [...this.ports.values()], nodeAddresses: [], clusterCidrs: this.cidrs };
  }

  private endpoint(v6: boolean): ServiceEndpoint {
    const n = this.serial++;
    return {
      address: v6 ? `fd00:64::${(n + 1).toString(16)}` : `10.64.${(n >> 8) & 255}.${n & 255}`,
      port: 8080 + this.rand(2),
      local: this.rand(3) === 0,
    };
  }

  addPort(): void {
    const n = this.serial++;
    const v6 = this.rand(6) === 0;
    const id = `ns/svc${n}/p/${this.rand(4) === 0 ? 'udp' : 'tcp'}`;
    this.ports.set(id, {
      id,
      protocol: id.endsWith('udp') ? 'udp' : 'tcp',
      port: 80 + this.rand(3),
      clusterIPs: [`10.96.${(n >> 8) & 255}.${n & 255}`, ...(v6 ? [`fd00:96::${(n + 1).toString(16)}`] : [])],
      ...(this.rand(4) === 0 ? { nodePort: 30000 + n } : {}),
      externalIPs: this.rand(6) === 0 ? [`192.0.2.${n & 255}`] : [],
      loadBalancerIPs: [],
      endpoints: Array.from({ length: this.rand(5) }, () => this.endpoint(false)).concat(v6 ? [this.endpoint(true)] : []),
      ...(this.rand(10) === 0 ? { externalLocal: true } : {}),
    });
  }

  private undo?: ServicePort;

  /** One random change; returns what it was. A frontend claimed twice is undone by the next. */
  change(): string {
    if (this.undo) {
      this.ports.set(this.undo.id, this.undo);
      this.undo = undefined;
      return 'conflict resolved';
    }
    const ids = [...this.ports.keys()];
    const id = ids[this.rand(ids.length)]!;
    const p = this.ports.get(id)!;
    const set = (q: Partial<ServicePort>) => this.ports.set(id, { ...p, ...q });
    const eps = p.endpoints;
    const r = this.rand(100);
    if (r < 40 && eps.length) {
      const i = this.rand(eps.length);
      set({ endpoints: eps.map((e, j) => (j === i ? { ...this.endpoint(e.address.includes(':')), local: e.local } : e)) });
      return 'endpoint replaced';
    }
    if (r < 55) {
      set({ endpoints: [...eps, this.endpoint(false)] });
      return 'endpoint added';
    }
    if (r < 65 && eps.length) {
      set({ endpoints: eps.filter((_, j) => j !== this.rand(eps.length)) });
      return 'endpoint removed';
    }
    if (r < 70 && eps.length) {
      const i = this.rand(eps.length);
      set({ endpoints: eps.map((e, j) => (j === i ? { ...e, local: !e.local } : e)) });
      return 'endpoint local flipped';
    }
    if (r < 75) {
      this.addPort();
      return 'port added';
    }
    if (r < 80 && ids.length > 2) {
      this.ports.delete(id);
      return 'port removed';
    }
    if (r < 83) {
      set({ endpoints: [] });
      return 'no endpoint';
    }
    if (r < 86) {
      set(p.affinityTimeoutSeconds ? { affinityTimeoutSeconds: undefined } : { affinityTimeoutSeconds: 60 });
      return 'affinity flipped';
    }
    if (r < 89) {
      set({ internalLocal: !p.internalLocal });
      return 'internal policy flipped';
    }
    if (r < 92) {
      set(p.nodePort === undefined ? { nodePort: 31000 + this.rand(500) } : { nodePort: undefined });
      return 'nodePort flipped';
    }
    if (r < 95) {
      // Another port's cluster IP: a conflict, until this port changes again.
      const other = this.ports.get(ids[this.rand(ids.length)]!)!;
      this.undo = p;
      set({ clusterIPs: other.clusterIPs.slice(0, 1), port: other.port, protocol: other.protocol });
      return 'frontend claimed twice';
    }
    if (r < 97) {
      this.cidrs = this.cidrs.length === 1 ? ['10.64.0.0/10', '172.16.0.0/12'] : ['10.64.0.0/10'];
      return 'pools changed';
    }
    set({ externalIPs: p.externalIPs.length ? [] : [`198.51.100.${this.rand(200)}`] });
    return 'external IP flipped';
  }
}

/** The part as plain data (its lazy fields read), what a compile from scratch gives. */
function plain(t: ServiceTable): unknown {
  return {
    sets: [...t.sets],
    maps: t.maps.map((m) => ({ ...m, elements: [...m.elements] })),
    chains: [...t.chains],
    conflicts: t.conflicts,
  };
}

/** The same part as a new object with no record of where it came from: the programmer takes it whole. */
function whole(t: NftTablePart): NftTablePart {
  return { sets: [...t.sets], maps: [...t.maps], chains: [...t.chains] };
}

function tableText(t: InstalledTable | undefined): string {
  if (!t) return 'none';
  const lines: string[] = [];
  for (const s of [...t.sets.values()].sort((a, b) => a.name.localeCompare(b.name)))
    lines.push(`set ${s.name} ${s.type} ${s.flags.join(',')} ${s.timeout ?? ''}: ${[...s.elements].sort().join(', ')}`);
  for (const m of [...t.maps.values()].sort((a, b) => a.name.localeCompare(b.name)))
    lines.push(
      `map ${m.name} ${m.type} : ${m.data}: ${[...m.elements]
        .map(([k, v]) => `${k} : ${v}`)
        .sort()
        .join(', ')}`,
    );
  for (const c of [...t.chains.values()].sort((a, b) => a.name.localeCompare(b.name)))
    lines.push(`chain ${c.name} ${JSON.stringify(c.base ?? null)}: ${c.rules.map((r) => r.comment).join(' ; ')}`);
  return lines.join('\n');
}

describe('felix services: a change of a few ports is programmed as that change', () => {
  it('over random changes the table equals a compile from scratch, the transaction the whole plan, the kernel the same (2 seeds × 60 steps)', async () => {
    const kinds = new Map<string, number>();
    let taken = 0;
    for (const seed of [1, 2]) {
      const svc = new Services(seed, 20);
      const compiler = new ServiceCompiler();
      const byChange = new PolicyProgrammer(new MemoryNftDataplane(), { resyncIntervalMs: 0, retryDelayMs: 0 });
      const byWhole = new PolicyProgrammer(new MemoryNftDataplane(), { resyncIntervalMs: 0, retryDelayMs: 0 });
      let conflicts = 0;
      for (let step = 0; step < 60; step++) {
        const what = step === 0 ? 'first' : svc.change();
        const input = svc.input();
        const table = compiler.compile(input);
        assert.deepEqual(
          plain(table),
          plain(compileServices(input)),
          `seed ${seed} step ${step} (${what}): the table a compile from scratch gives`,
        );
        const recorded = partChange(table) !== undefined;
        const watched = watchChains(table);
        const a = await byChange.updatePart(SERVICES_PART, table);
        const reads = watched.reads;
        const b = await byWhole.updatePart(SERVICES_PART, whole(table));
        assert.ok(a.ok && b.ok, `seed ${seed} step ${step} (${what}): ${a.error ?? b.error}`);
        assert.deepEqual(
          transactionOps(a.transaction),
          transactionOps(b.transaction),
          `seed ${seed} step ${step} (${what}): the operations the whole plan has`,
        );
        if (recorded && reads === 0) {
          taken++;
          kinds.set(what, (kinds.get(what) ?? 0) + 1);
        }
        // A frontend two ports claim compiles whole until it is resolved; anything else about endpoints is a change.
        if ((what === 'endpoint replaced' || what === 'endpoint added') && conflicts === 0)
          assert.ok(recorded && reads === 0, `seed ${seed} step ${step} (${what}): taken as a change, not read whole`);
        conflicts = table.conflicts.length;
        assert.equal(
          tableText(await byChange.dataplane.read()),
          tableText(await byWhole.dataplane.read()),
          `seed ${seed} step ${step} (${what}): the kernels hold the same`,
        );
      }
      const r = await byChange.resync();
      assert.deepEqual(r.transaction, [], `seed ${seed}: a resync finds nothing to repair`);
    }
    assert.ok(taken > 75, `only ${taken} of 118 changes were taken as changes`);
    for (const k of ['endpoint removed', 'port added', 'port removed', 'no endpoint', 'nodePort flipped'])
      assert.ok((kinds.get(k) ?? 0) > 0, `no "${k}" was taken as a change: ${JSON.stringify([...kinds])}`);
  });

  it('the newest table does not hold the tables before it alive (an agent under churn would keep them all)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const svc = new Services(5, 20);
    const compiler = new ServiceCompiler();
    compiler.compile(svc.input());
    // Made in a function of its own, so that no local of this one holds the table.
    const changed = (): WeakRef<ServiceTable> => {
      const ids = [...svc.ports.keys()];
      const p = svc.ports.get(ids[0]!)!;
      svc.ports.set(p.id, { ...p, endpoints: [...p.endpoints, { address: '10.64.200.1', port: 8080, local: false }] });
      return new WeakRef(compiler.compile(svc.input()));
    };
    const first = changed();
    for (let i = 0; i < 5; i++) {
      const ids = [...svc.ports.keys()];
      const p = svc.ports.get(ids[1 + i]!)!;
      svc.ports.set(p.id, { ...p, endpoints: [...p.endpoints, { address: `10.64.201.${i + 1}`, port: 8080, local: false }] });
      compiler.compile(svc.input());
    }
    assert.ok(partChange(compiler.compile(svc.input())) !== undefined, 'the newest table still says how it came from the one before');
    // A WeakRef's target stays until the job that made it ends.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    assert.equal(first.deref(), undefined, 'a table five changes old was collected');
  });

  it('a change the kernel refuses leaves the old table; the next apply reads the kernel and repairs it', async () => {
    const svc = new Services(7, 20);
    const compiler = new ServiceCompiler();
    const dp = new MemoryNftDataplane();
    const prog = new PolicyProgrammer(dp, { resyncIntervalMs: 0, retryDelayMs: 0 });
    assert.ok((await prog.updatePart(SERVICES_PART, compiler.compile(svc.input()))).ok, 'the first table applies');
    const before = tableText(await dp.read());
    let what = svc.change();
    while (what !== 'endpoint replaced') what = svc.change();
    const t = compiler.compile(svc.input());
    assert.ok(partChange(t), 'the compiler recorded the change');
    dp.failNext = 'injected';
    const refused = await prog.updatePart(SERVICES_PART, t);
    assert.equal(refused.ok, false, 'refused');
    assert.equal(tableText(await dp.read()), before, 'the kernel keeps the old table whole');
    svc.change();
    const next = await prog.updatePart(SERVICES_PART, compiler.compile(svc.input()));
    assert.equal(next.ok, true, next.error);
    assert.equal(next.kind, 'resync', 'the next apply reads the kernel first');
    assert.deepEqual((await prog.resync()).transaction, [], 'and leaves it as felix means it');
  });
});

describe('felix services: changes through nf_tables netlink, against the whole path, in a kernel', function () {
  this.timeout(180_000);
  const lab = new Lab({ tag: 'svch' });
  let a: Netns;
  let b: Netns;
  const programmers: PolicyProgrammer[] = [];
  const programmer = (ns: Netns) => {
    const p = new PolicyProgrammer(new NetlinkNftDataplane({ netns: ns.name }), { resyncIntervalMs: 0, retryDelayMs: 0 });
    programmers.push(p);
    return p;
  };

  before(async () => {
    a = await lab.namespace('change');
    b = await lab.namespace('whole');
  });
  after(async () => {
    for (const p of programmers) {
      p.stop();
      p.dataplane.close();
    }
    await lab.destroy();
  });

  /** `nft -j list table inet podroute` without handles, elements sorted, objects in name order (rules kept in their chain's order). */
  async function listed(ns: Netns): Promise<string> {
    const out = JSON.parse(await ns.run(['nft', '-j', 'list', 'table', 'inet', 'podroute'])) as {
      nftables: Record<string, Record<string, unknown>>[];
    };
    const objects: string[] = [];
    const rules = new Map<string, string[]>();
    for (const o of out.nftables) {
      const [kind, body] = Object.entries(o)[0]!;
      if (kind === 'metainfo') continue;
      const { handle: _h, ...x } = body;
      if (kind === 'rule') {
        const chain = String(x.chain);
        rules.set(chain, [...(rules.get(chain) ?? []), JSON.stringify(x)]);
        continue;
      }
      if (Array.isArray(x.elem)) x.elem = x.elem.map((e) => JSON.stringify(e)).sort();
      objects.push(JSON.stringify({ [kind]: x }));
    }
    return [...objects.sort(), ...[...rules].sort(([x], [y]) => x.localeCompare(y)).map(([c, r]) => `${c}:\n${r.join('\n')}`)].join('\n');
  }

  it('after each random change nft lists the same table as the whole path wrote (8 steps)', async () => {
    const svc = new Services(11, 25);
    const compiler = new ServiceCompiler();
    const pa = programmer(a);
    const pb = programmer(b);
    let taken = 0;
    for (let step = 0; step < 8; step++) {
      const what = step === 0 ? 'first' : svc.change();
      const table = compiler.compile(svc.input());
      const watched = watchChains(table);
      const ra = await pa.updatePart(SERVICES_PART, table);
      if (partChange(table) && watched.reads === 0) taken++;
      const rb = await pb.updatePart(SERVICES_PART, whole(table));
      assert.ok(ra.ok && rb.ok, `step ${step} (${what}): ${ra.error ?? rb.error}`);
      assert.equal(await listed(a), await listed(b), `step ${step} (${what}): nft lists the same table`);
    }
    assert.ok(taken >= 4, `only ${taken} of 7 changes were taken as changes`);
    assert.deepEqual((await pa.resync()).transaction, [], 'a resync finds nothing to repair');
  });

  it('a change the kernel refuses (an element deleted by hand) leaves the old table whole; the next apply repairs from a read', async () => {
    const svc = new Services(12, 25);
    const compiler = new ServiceCompiler();
    const pa = programmers[0]!;
    const pb = programmers[1]!;
    const first = compiler.compile(svc.input());
    assert.ok((await pa.updatePart(SERVICES_PART, first)).ok && (await pb.updatePart(SERVICES_PART, whole(first))).ok, 'loaded');
    // An endpoint replaced: its old element is deleted by the change; delete it first, by hand.
    let t: ServiceTable | undefined;
    let map: NftMap | undefined;
    for (let i = 0; i < 50 && !map; i++) {
      if (svc.change() !== 'endpoint replaced') continue;
      t = compiler.compile(svc.input());
      map = partChange(t)?.maps?.find((m) => m.name.includes('eps') && nftMapChange(m)?.removed.length);
      if (!map) assert.ok((await pa.updatePart(SERVICES_PART, t)).ok && (await pb.updatePart(SERVICES_PART, whole(t))).ok, 'applied');
    }
    assert.ok(t && map, 'an endpoint replaced took an element out of an endpoint map');
    const gone = nftMapChange(map)!.removed[0]!;
    await a.run(['nft', `delete element inet podroute ${map.name} { ${gone.key} }`]);
    const edited = await listed(a);
    const refused = await pa.updatePart(SERVICES_PART, t);
    assert.equal(refused.ok, false, 'the kernel refuses the batch (ENOENT)');
    assert.match(refused.error ?? '', /ENOENT/, 'and says why');
    assert.equal(await listed(a), edited, 'nothing of the batch took effect');
    const repaired = await pa.updatePart(SERVICES_PART, compiler.compile(svc.input()));
    assert.equal(repaired.ok, true, repaired.error);
    assert.equal(repaired.kind, 'resync', 'the next apply reads the kernel first');
    const now = compiler.compile(svc.input());
    assert.ok((await pb.updatePart(SERVICES_PART, whole(now))).ok, 'the whole path applies');
    assert.equal(await listed(a), await listed(b), 'repaired: the table the whole path wrote');
  });
});
