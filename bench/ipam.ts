// IPAM allocation rate against the memory and Redis datastores, with a reference measured
// in the same run: the rate of a bare Redis INCR round trip at the same concurrency (the
// floor any Redis-backed allocator pays), so the ratio shows what IPAM costs on top.
//   npx tsx bench/ipam.ts [allocations]
import { Redis } from 'ioredis';
import { memoryDatastore, redisDatastore, type BackendDatastore } from '../lib/datastore/index.js';
import { Ipam } from '../lib/ipam/index.js';
import { startRedis } from '../test/support/redis.js';

const N = Number(process.argv[2] ?? 10_000);
const NODES = 10;

async function pooled(n: number, width: number, job: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) await job(next++);
    }),
  );
  return n / (Number(process.hrtime.bigint() - t0) / 1e9);
}

async function prepare(ds: BackendDatastore): Promise<void> {
  await ds.apply({
    apiVersion: 'projectcalico.org/v3',
    kind: 'IPPool',
    metadata: { name: 'bench' },
    spec: { cidr: '10.0.0.0/14' },
  } as never);
}

/** open(scenario): a connection to that scenario's datastore (a fresh one per scenario name). */
async function ipamRates(open: (scenario: string) => Promise<BackendDatastore>, label: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  // One node, one call at a time: the latency-bound rate a single CNI ADD sees.
  {
    const ds = await open('serial');
    await prepare(ds);
    const ipam = new Ipam(ds);
    out[`${label} assign, 1 node, 1 in flight`] = await pooled(N, 1, (i) => ipam.autoAssign({ handle: `s${i}`, node: 'n0' }));
    out[`${label} release, 1 node, 1 in flight`] = await pooled(N, 1, (i) => ipam.releaseByHandle(`s${i}`));
    await ds.close();
  }
  // Ten nodes, each with its own connection, 8 calls in flight each.
  {
    const stores = await Promise.all(Array.from({ length: NODES }, () => open('parallel')));
    await prepare(stores[0]!);
    const ipams = stores.map((s) => new Ipam(s));
    out[`${label} assign, 10 nodes x 8 in flight`] = await pooled(N, NODES * 8, (i) =>
      ipams[i % NODES]!.autoAssign({ handle: `c${i}`, node: `n${i % NODES}` }),
    );
    await Promise.all(stores.map((s) => s.close()));
  }
  return out;
}

const redis = await startRedis();
try {
  const memories = new Map<string, BackendDatastore>();
  const rates: Record<string, number> = {
    ...(await ipamRates(async (sc) => {
      if (!memories.has(sc)) memories.set(sc, memoryDatastore());
      return memories.get(sc)!;
    }, 'memory')),
    ...(await ipamRates((sc) => redisDatastore({ url: redis.url, name: `bench-${sc}` }), 'redis')),
  };

  // Reference: bare INCR round trips on one connection, 1 and 80 in flight.
  const c = new Redis(redis.url, { protocol: 2 });
  const ref1 = await pooled(N, 1, () => c.incr('ref'));
  const ref80 = await pooled(N, NODES * 8, () => c.incr('ref'));
  c.disconnect();

  const fmt = (x: number): string => Math.round(x).toLocaleString('en-US').padStart(9);
  console.log(`IPAM allocations, ${N} per scenario, pool 10.0.0.0/14 in /26 blocks, node ${process.version}, redis-server ${redis.port}`);
  for (const [k, v] of Object.entries(rates)) {
    const ref = k.includes('1 in flight') ? ref1 : ref80;
    const ratio = k.startsWith('redis') ? `  (${(v / ref).toFixed(2)} x bare INCR at the same concurrency)` : '';
    console.log(`  ${k.padEnd(40)} ${fmt(v)} /s${ratio}`);
  }
  console.log(`  ${'reference: redis INCR, 1 in flight'.padEnd(40)} ${fmt(ref1)} /s`);
  console.log(`  ${'reference: redis INCR, 80 in flight'.padEnd(40)} ${fmt(ref80)} /s`);
} finally {
  await redis.stop();
}
