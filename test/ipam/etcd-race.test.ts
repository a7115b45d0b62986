// Six simulated nodes, each with its own etcd client and Ipam, allocate 480 addresses in
// parallel from one etcd. The pool has 512 addresses in 8 blocks of 64, fewer blocks than the
// nodes would like (12), so they race for blocks, lose compares, retry, and borrow at the end.
import assert from 'node:assert/strict';
import { etcdDatastore, type BackendDatastore } from '../../lib/datastore/index.js';
import { Ipam, type AssignedAddress } from '../../lib/ipam/index.js';
import { startEtcd, type EtcdServer } from '../support/etcd.js';
import { pool } from '../datastore/suite.js';
import { assertIpamConsistent } from './consistency.js';

const NODES = 6;
const PER_NODE = 80;
const CONCURRENCY = 4;

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

describe('ipam: 6 nodes racing on one etcd', function () {
  this.timeout(180_000);
  let etcd: EtcdServer;
  const stores: BackendDatastore[] = [];
  before(async () => {
    etcd = await startEtcd();
  });
  after(async () => {
    for (const s of stores) await s.close();
    await etcd?.stop();
  });

  it('hands out distinct addresses, keeps affinities and the index consistent, and reuses released ones', async () => {
    const name = `race${process.pid}`;
    for (let i = 0; i < NODES; i++) stores.push(await etcdDatastore({ endpoints: etcd.endpoints, name }));
    await stores[0]!.create(pool('p', '10.100.0.0/23'));
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
    assert.equal(new Set(first.map((a) => a.ip)).size, NODES * PER_NODE, 'no address handed out twice');
    const { addresses, blocks } = await assertIpamConsistent(stores[0]!);
    assert.equal(addresses.size, NODES * PER_NODE);
    assert.equal(blocks, 8);
    for (const a of first) assert.equal(addresses.get(a.ip), a.handle);
    assert.ok(
      first.some((a) => a.borrowed),
      'with 8 blocks for 6 nodes x 80, some nodes must borrow',
    );

    const freed = (
      await Promise.all(nodes.map((n, i) => inParallel(PER_NODE, CONCURRENCY, (k) => n.ipam.releaseByHandle(`a-node-${i}-${k}`))))
    ).flat(2);
    assert.equal(freed.length, NODES * PER_NODE);
    assert.equal((await stores[0]!.list('IPAMBlock')).items.length, 0, 'every emptied block went back to the pool');
    assert.equal((await stores[0]!.list('IPAMHandle')).items.length, 0);
    await assertIpamConsistent(stores[0]!);

    const second = await round('b');
    assert.equal(new Set(second.map((a) => a.ip)).size, NODES * PER_NODE);
    await assertIpamConsistent(stores[0]!);
  });
});
