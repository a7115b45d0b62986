// Simulated nodes, each with its own connection and Ipam, allocate in parallel from one store.
// The pool has fewer blocks than the nodes would like, so they race for blocks (on etcd: lose
// compares and retry) and must borrow at the end; then every address is released at once and
// the same number handed out again, mostly reused. The same test on Redis and on etcd.
import assert from 'node:assert/strict';
import { etcdDatastore, redisDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam, type AssignedAddress } from '../../../lib/ipam/index.js';
import { startEtcd } from '../../support/etcd.js';
import { startRedis } from '../../support/redis.js';
import { pool } from '../../support/datastore-suite.js';
import { assertIpamConsistent } from '../../support/ipam-consistency.js';

async function inParallel<T>(n: number, width: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await job(i);
      }
    }),
  );
  return out;
}

interface Race {
  store: string;
  /** Starts the store; returns how to open a client on it and how to stop it. */
  start(): Promise<{ open(name: string): Promise<BackendDatastore>; stop(): Promise<void> }>;
  nodes: number;
  perNode: number;
  concurrency: number;
  /** The pool: its addresses in /26 blocks, fewer blocks than nodes × perNode would like. */
  cidr: string;
  blocks: number;
  timeoutMs: number;
}

const RACES: Race[] = [
  {
    store: 'Redis',
    start: async () => {
      const redis = await startRedis();
      return { open: (name) => redisDatastore({ url: redis.url, name }), stop: () => redis.stop() };
    },
    nodes: 10,
    perNode: 200,
    concurrency: 8,
    cidr: '10.100.0.0/21',
    blocks: 32,
    timeoutMs: 120_000,
  },
  {
    store: 'etcd',
    start: async () => {
      const etcd = await startEtcd();
      return { open: (name) => etcdDatastore({ endpoints: etcd.endpoints, name }), stop: () => etcd.stop() };
    },
    nodes: 6,
    perNode: 80,
    concurrency: 4,
    cidr: '10.100.0.0/23',
    blocks: 8,
    timeoutMs: 180_000,
  },
];

for (const r of RACES) {
  const total = r.nodes * r.perNode;
  describe(`ipam: ${r.nodes} nodes racing on one ${r.store}`, function () {
    this.timeout(r.timeoutMs);
    let server: Awaited<ReturnType<Race['start']>> | undefined;
    const stores: BackendDatastore[] = [];
    before(async () => {
      server = await r.start();
    });
    after(async () => {
      for (const s of stores.splice(0)) await s.close();
      await server?.stop();
    });

    it(`hands out ${total} distinct addresses, keeps affinities consistent, and reuses released ones`, async () => {
      const name = `race${process.pid}`;
      for (let i = 0; i < r.nodes; i++) stores.push(await server!.open(name));
      await stores[0]!.create(pool('p', r.cidr));
      const nodes = stores.map((ds, i) => ({ name: `node-${i}`, ipam: new Ipam(ds) }));

      const round = async (tag: string): Promise<AssignedAddress[]> =>
        (
          await Promise.all(
            nodes.map((n) =>
              inParallel(r.perNode, r.concurrency, (k) =>
                n.ipam.autoAssign({ handle: `${tag}-${n.name}-${k}`, node: n.name, attrs: { pod: `p${k}` } }),
              ),
            ),
          )
        ).flat();

      const first = await round('a');
      assert.equal(first.length, total);
      assert.equal(new Set(first.map((a) => a.ip)).size, total, 'no address handed out twice');
      const { addresses, blocks } = await assertIpamConsistent(stores[0]!);
      assert.equal(addresses.size, total);
      assert.equal(blocks, r.blocks);
      // Affinity as reported to each caller matches the store: a borrowed address sits in a
      // block affine to another node, an own one in the caller's block.
      const blockList = (await stores[0]!.list('IPAMBlock')).items;
      const affinityOf = new Map(blockList.map((b) => [b.spec.cidr, b.spec.affinity]));
      for (const a of first) {
        const node = a.handle.split('-').slice(1, 3).join('-');
        assert.equal(a.borrowed, affinityOf.get(a.block) !== `host:${node}`, `${a.ip} borrowed flag`);
        assert.equal(addresses.get(a.ip), a.handle);
      }
      assert.ok(
        first.some((a) => a.borrowed),
        `with ${r.blocks} blocks for ${r.nodes} nodes x ${r.perNode}, some nodes must borrow`,
      );
      for (const n of nodes) {
        const own = await n.ipam.blocksForNode(n.name);
        const lent = await n.ipam.borrowedAddresses(n.name);
        const mine = first.filter((a) => a.handle.startsWith(`a-${n.name}-`));
        assert.equal(own.reduce((s, b) => s + b.used, 0) + lent.length >= mine.length, true);
        assert.deepEqual(
          lent.map((x) => x.ip).sort(),
          mine
            .filter((a) => a.borrowed)
            .map((a) => a.ip)
            .sort(),
        );
      }

      // Release everything, from every node at once.
      const freed = (
        await Promise.all(nodes.map((n, i) => inParallel(r.perNode, r.concurrency, (k) => n.ipam.releaseByHandle(`a-node-${i}-${k}`))))
      ).flat(2);
      assert.equal(freed.length, total);
      assert.equal((await stores[0]!.list('IPAMBlock')).items.length, 0, 'every emptied block went back to the pool');
      assert.equal((await stores[0]!.list('IPAMHandle')).items.length, 0);

      // The same number again: the pool has few spare addresses, so most must be reused ones.
      const second = await round('b');
      assert.equal(new Set(second.map((a) => a.ip)).size, total);
      const spare = r.blocks * 64 - total;
      const old = new Set(first.map((a) => a.ip));
      assert.ok(
        second.filter((a) => old.has(a.ip)).length >= total - spare,
        `${second.filter((a) => old.has(a.ip)).length} addresses reused: want at least ${total - spare}`,
      );
      await assertIpamConsistent(stores[0]!);
    });
  });
}
