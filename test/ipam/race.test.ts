// 10 simulated nodes, each with its own connection and Ipam, allocate 2,000 addresses in
// parallel from one Redis. The pool has 2,048 addresses in 32 blocks of 64, fewer blocks than
// the nodes would like (40), so they race for blocks and must borrow at the end.
import assert from 'node:assert/strict';
import { redisDatastore, type BackendDatastore } from '../../lib/datastore/index.js';
import { Ipam, type AssignedAddress } from '../../lib/ipam/index.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { pool } from '../datastore/suite.js';
import { assertIpamConsistent } from './consistency.js';

const NODES = 10;
const PER_NODE = 200;
const CONCURRENCY = 8;

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

describe('ipam: 10 nodes racing on one Redis', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  const stores: BackendDatastore[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const s of stores) await s.close();
    await redis?.stop();
  });

  it('hands out 2,000 distinct addresses, keeps affinities consistent, and reuses released ones', async () => {
    const name = `race${process.pid}`;
    for (let i = 0; i < NODES; i++) stores.push(await redisDatastore({ url: redis.url, name }));
    await stores[0]!.create(pool('p', '10.100.0.0/21'));
    const nodes = stores.map((ds, i) => ({ name: `node-${i}`, ipam: new Ipam(ds) }));

    const round = async (tag: string): Promise<AssignedAddress[]> =>
      (
        await Promise.all(
          nodes.map((n) =>
            inParallel(PER_NODE, CONCURRENCY, (k) =>
              n.ipam.autoAssign({ handle: `${tag}-${n.name}-${k}`, node: n.name, attrs: { pod: `p${k}` } }),
            ),
          ),
        )
      ).flat();

    const first = await round('a');
    assert.equal(first.length, 2000);
    assert.equal(new Set(first.map((a) => a.ip)).size, 2000, 'no address handed out twice');
    const { addresses, blocks } = await assertIpamConsistent(stores[0]!);
    assert.equal(addresses.size, 2000);
    assert.equal(blocks, 32);
    // Affinity as reported to each caller matches the store: a borrowed address sits in a
    // block affine to another node, an own one in the caller's block.
    const blockList = (await stores[0]!.list('IPAMBlock')).items;
    const affinityOf = new Map(blockList.map((b) => [b.spec.cidr, b.spec.affinity]));
    for (const a of first) {
      const node = a.handle.split('-').slice(1, 3).join('-');
      assert.equal(a.borrowed, affinityOf.get(a.block) !== `host:${node}`, `${a.ip} borrowed flag`);
      assert.equal(addresses.get(a.ip), a.handle);
    }
    const borrowed = first.filter((a) => a.borrowed).length;
    assert.ok(borrowed > 0, 'with 32 blocks for 10 nodes x 200, some nodes must borrow');
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
      await Promise.all(nodes.map((n, i) => inParallel(PER_NODE, CONCURRENCY, (k) => n.ipam.releaseByHandle(`a-node-${i}-${k}`))))
    ).flat(2);
    assert.equal(freed.length, 2000);
    assert.equal((await stores[0]!.list('IPAMBlock')).items.length, 0, 'every emptied block went back to the pool');
    assert.equal((await stores[0]!.list('IPAMHandle')).items.length, 0);

    // The same 2,000 again: the pool has only 48 spare addresses, so most must be reused ones.
    const second = await round('b');
    assert.equal(new Set(second.map((a) => a.ip)).size, 2000);
    const old = new Set(first.map((a) => a.ip));
    assert.ok(second.filter((a) => old.has(a.ip)).length >= 2000 - 48);
    await assertIpamConsistent(stores[0]!);
  });
});
