// IPAM allocation rate on every datastore backend of test/support/datastore-backends.ts (memory, Redis,
// Redis + Sentinel with WAIT, etcd ...), each with a reference measured in the same run: the
// rate of a bare round trip to that same store at the same concurrency (Redis PING, etcd get),
// the floor any allocator on it pays, so the ratio shows what IPAM costs on top.
//   npx tsx bench/ipam.ts [allocations] [backend ...]
import { execFileSync } from 'node:child_process';
import type { BackendDatastore } from '../lib/datastore/index.js';
import { Ipam } from '../lib/ipam/index.js';
import { BACKENDS, type StoreUnderTest } from '../test/support/datastore-backends.js';

const N = Number(process.argv[2] ?? 10_000);
const ONLY = process.argv.slice(3);
const NODES = 10;
const WIDE = NODES * 8;

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

interface Row {
  scenario: string;
  rate: number;
  /** The bare round trip's rate at the same concurrency. */
  reference?: number;
}

async function measure(store: StoreUnderTest): Promise<Row[]> {
  const rows: Row[] = [];
  const ref1 = store.roundTrip ? await pooled(N, 1, () => store.roundTrip!()) : undefined;
  const refWide = store.roundTrip ? await pooled(N, WIDE, () => store.roundTrip!()) : undefined;
  // One node, one call at a time: the latency-bound rate a single CNI ADD sees.
  {
    const ds = await store.open('bench-serial');
    await prepare(ds);
    const ipam = new Ipam(ds);
    rows.push({
      scenario: 'assign, 1 node, 1 in flight',
      rate: await pooled(N, 1, (i) => ipam.autoAssign({ handle: `s${i}`, node: 'n0' })),
      reference: ref1,
    });
    rows.push({
      scenario: 'release, 1 node, 1 in flight',
      rate: await pooled(N, 1, (i) => ipam.releaseByHandle(`s${i}`)),
      reference: ref1,
    });
    await ds.close();
  }
  // Ten nodes, each with its own connection (one store shared in memory), 8 calls in flight each.
  {
    const first = await store.open('bench-parallel');
    const stores = store.config
      ? [first, ...(await Promise.all(Array.from({ length: NODES - 1 }, () => store.open('bench-parallel'))))]
      : [first];
    await prepare(first);
    const ipams = Array.from({ length: NODES }, (_, i) => new Ipam(stores[i % stores.length]!));
    rows.push({
      scenario: `assign, ${NODES} nodes x 8 in flight`,
      rate: await pooled(N, WIDE, (i) => ipams[i % NODES]!.autoAssign({ handle: `c${i}`, node: `n${i % NODES}` })),
      reference: refWide,
    });
    await Promise.all(stores.map((s) => s.close()));
  }
  return rows;
}

/** `<cmd> <version>` from its --version output (the first x.y.z in it). */
const version = (cmd: string): string => {
  try {
    return `${cmd} ${/\d+\.\d+\.\d+/.exec(execFileSync(cmd, ['--version'], { encoding: 'utf8' }))?.[0] ?? '?'}`;
  } catch {
    return `${cmd}: not found`;
  }
};

const fmt = (x: number): string => Math.round(x).toLocaleString('en-US');
const lines = [
  `IPAM allocations, ${N} per scenario, pool 10.0.0.0/14 in /26 blocks; node ${process.version}; ${version('redis-server')}; ${version('etcd')}`,
  '',
  '| backend | scenario | ops/s | reference (bare round trip, same concurrency) | ratio |',
  '|---|---|---:|---:|---:|',
];
for (const backend of BACKENDS.filter((b) => (ONLY.length > 0 ? ONLY.includes(b.name) : !b.sameCodeAs))) {
  const store = await backend.start();
  try {
    for (const r of await measure(store)) {
      const ref = r.reference === undefined ? '' : `${fmt(r.reference)}/s`;
      const ratio = r.reference === undefined ? '' : `${(r.rate / r.reference).toFixed(2)} ×`;
      lines.push(`| ${backend.name} | ${r.scenario} | ${fmt(r.rate)} | ${ref} | ${ratio} |`);
    }
  } finally {
    await store.stop();
  }
  console.error(`${backend.name}: done`);
}
console.log(lines.join('\n'));
