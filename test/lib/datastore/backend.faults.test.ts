// The fault on every backend that runs as processes of its own: 8 allocating processes
// (real child processes, test/lib/datastore/allocator.ts) ask for 250 addresses each while the
// store, or its primary or leader, is SIGKILLed mid-run and brought back. Each process writes
// down what it was told it got; afterwards no address may have been told to two callers.
//   - A store that loses acknowledged writes (Redis without persistence, restarted empty and
//     the pool re-applied): every process is refused with the guard's StoreReplaced until
//     `podroute ipam repair` has rebuilt the allocations from the pods' WorkloadEndpoints.
//   - A durable store (Redis with AOF, Sentinel with WAIT, etcd): no refusal, and every
//     acknowledged allocation is in the store afterwards.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { CONTAINER_ID_ANNOTATION, type Resource } from '../../../lib/resources/index.js';
import { assertIpamConsistent } from '../../support/ipam-consistency.js';
import { BACKENDS, type StoreUnderTest } from '../../support/datastore-backends.js';
import { node, pool } from '../../support/datastore-suite.js';
import { waitFor } from '../../support/wait.js';

const PROCESSES = 8;
/**
 * Four /26 blocks a node, so blocks are claimed on both sides of the kill. The run had
 * 500 each; past the first few allocations after the store is back, more of them only repeat
 * what those prove, at up to 60 a second on etcd.
 */
const PER_PROCESS = 250;
/** Kill after about this many acknowledged allocations: 3/8 of the run, as the issue's ~1,500 of 4,000. */
const KILL_AFTER = 750;
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const ALLOCATOR = fileURLToPath(new URL('./allocator.ts', import.meta.url));

interface Ack {
  handle: string;
  ip: string;
  sent: number;
  acked: number;
  process: number;
}

interface Outcomes {
  acks: Ack[];
  /** Per process, the lines in order: ok, refused, unavailable, error, deadline. */
  lines: string[][];
}

function readOutcomes(files: readonly string[]): Outcomes {
  const acks: Ack[] = [];
  const lines = files.map((f) => (existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean) : []));
  lines.forEach((ls, i) => {
    for (const l of ls) {
      if (!l.startsWith('ok ')) continue;
      const [, handle, ip, sent, acked] = l.split(' ');
      acks.push({ handle: handle!, ip: ip!, sent: Number(sent), acked: Number(acked), process: i });
    }
  });
  return { acks, lines };
}

function exitOf(p: ChildProcess): Promise<number | string> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve(p.exitCode ?? p.signalCode ?? 'unknown');
  return new Promise((r) => p.once('exit', (code, signal) => r(code ?? signal ?? 'unknown')));
}

/** The pod the orchestrator knows for an acknowledged allocation: what `ipam repair` rebuilds from. */
const endpoint = (a: Ack): Resource =>
  ({
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: {
      name: `node--${a.process}-k8s-${a.handle}-eth0`,
      namespace: 'default',
      annotations: { [CONTAINER_ID_ANNOTATION]: a.handle },
    },
    spec: { node: `node-${a.process}`, pod: a.handle, workload: a.handle, interfaceName: `cali${a.handle}`, ipNetworks: [`${a.ip}/32`] },
  }) as Resource;

/** `podroute ipam repair` as an operator runs it: the real CLI, reaching the store through the environment. */
function runRepair(env: Record<string, string>): Promise<{ code: number | string; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [join(ROOT, 'bin/podroute.js'), 'ipam', 'repair'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    p.stderr!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const t = setTimeout(() => {
      if (p.pid !== undefined) process.kill(p.pid, 'SIGKILL');
      reject(new Error(`podroute ipam repair did not finish within 30 s: ${out}`));
    }, 30_000);
    p.once('exit', (code, signal) => {
      clearTimeout(t);
      resolve({ code: code ?? signal ?? 'unknown', out });
    });
  });
}

async function applyAll(ds: BackendDatastore, resources: readonly Resource[], width = 16): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < resources.length) await ds.apply(resources[next++]!);
    }),
  );
}

for (const backend of BACKENDS.filter((b) => b.outOfProcess)) {
  describe(`datastore faults: ${backend.name}, ${PROCESSES} processes x ${PER_PROCESS} allocations, the store killed mid-run`, function () {
    this.timeout(240_000);
    let store: StoreUnderTest | undefined;
    let ds: BackendDatastore | undefined;
    const children: ChildProcess[] = [];
    // Made in a hook, not here: a describe body runs even when --grep skips its tests and hooks.
    let dir = '';
    before(() => {
      dir = mkdtempSync(join(tmpdir(), `podroute-faults-${backend.name}-`));
    });
    after(async () => {
      for (const c of children) if (c.pid !== undefined && c.exitCode === null && c.signalCode === null) process.kill(c.pid, 'SIGKILL');
      await Promise.all(children.map(exitOf));
      await ds?.close();
      await store?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it(
      backend.durable
        ? 'no address told to two callers, no acknowledged allocation lost, no refusal'
        : 'refused with StoreReplaced once the store came back empty; after `podroute ipam repair` no address told to two callers',
      async () => {
        store = await backend.start();
        const s = store;
        const name = `faults${process.pid}`;
        ds = await s.open(name);
        const setup = async (d: BackendDatastore): Promise<void> => {
          await d.apply(pool('p', '10.20.0.0/16', { blockSize: 26 }));
          for (let i = 0; i < PROCESSES; i++) await d.apply(node(`node-${i}`));
        };
        await setup(ds);

        const files = Array.from({ length: PROCESSES }, (_, i) => join(dir, `allocator-${i}.log`));
        const spawnedAt = Date.now();
        const exits = files.map((out, index) => {
          const args = { config: s.config!(name), index, count: PER_PROCESS, out, deadlineMs: 150_000 };
          const c = spawn(process.execPath, ['--import', 'tsx', ALLOCATOR, JSON.stringify(args)], { cwd: ROOT, stdio: 'ignore' });
          children.push(c);
          return exitOf(c);
        });

        await waitFor(() => readOutcomes(files).acks.length >= KILL_AFTER, {
          what: `${KILL_AFTER} acknowledged allocations`,
          timeoutMs: 90_000,
          intervalMs: 10,
        });
        const killedStoreId = (await ds.raw.identity()).storeId;
        assert.ok(killedStoreId, 'the store has an id before the kill');
        const pid = await s.kill!();
        const killedAt = Date.now();
        assert.throws(() => process.kill(pid, 0), /ESRCH/, `the killed process ${pid} is gone`);
        await s.recover!();
        const recoveredMs = Date.now() - killedAt;

        if (!backend.durable) {
          // Back empty. The operator re-applies the pool and the nodes, as the operator did.
          await waitFor(
            () =>
              ds!.revision().then(
                () => true,
                () => false,
              ),
            { what: 'the datastore answers again', intervalMs: 10 },
          );
          // Not `null`: an allocator that reconnected first may already have written the empty
          // store, which gives it a fresh id. Either way it is not the store that was killed.
          assert.notEqual((await ds.raw.identity()).storeId, killedStoreId, 'the store came back empty: not the one killed');
          await setup(ds);
          // Every process must meet the guard: refused, never an address from the emptied store.
          await waitFor(() => readOutcomes(files).lines.every((ls) => ls.some((l) => l.startsWith('refused StoreReplaced'))), {
            what: 'every process refused by the guard',
            timeoutMs: 20_000,
            intervalMs: 10,
          });
          const before = readOutcomes(files);
          for (const [i, ls] of before.lines.entries()) {
            const first = ls.findIndex((l) => l.startsWith('refused '));
            const after = ls.slice(first);
            assert.deepEqual(
              after.filter((l) => l.startsWith('ok ')),
              [],
              `process ${i} was given an address after the guard refused it`,
            );
            assert.match(ls[first]!, /the datastore (is empty|was replaced).*podroute ipam repair/);
          }
          // The orchestrator still knows every pod: their endpoints are applied again, then repaired.
          await applyAll(ds, before.acks.map(endpoint));
          const repair = await runRepair(s.env!(name));
          assert.equal(repair.code, 0, repair.out);
          assert.match(repair.out, new RegExp(`rebuilt \\d+ blocks, ${before.acks.length} handles, ${before.acks.length} addresses`));
          assert.match(repair.out, /marked repaired .*allocation may resume/);
        }

        let timer: NodeJS.Timeout | undefined;
        const codes = await Promise.race([
          Promise.all(exits),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error('the allocators did not finish within 160 s')), 160_000);
          }),
        ]).finally(() => clearTimeout(timer));
        const doneAt = Date.now();
        const { acks, lines } = readOutcomes(files);
        assert.deepEqual(
          codes,
          files.map(() => 0),
          `allocator exits; last lines: ${lines.map((ls) => ls.at(-1)).join(' | ')}`,
        );
        assert.equal(acks.length, PROCESSES * PER_PROCESS);

        const byIp = new Map<string, string>();
        const twice: string[] = [];
        for (const a of acks) {
          if (byIp.has(a.ip)) twice.push(`${a.ip} (${byIp.get(a.ip)} and ${a.handle})`);
          byIp.set(a.ip, a.handle);
        }
        assert.deepEqual(twice.slice(0, 5), [], `${twice.length} addresses were told to two callers`);

        const { addresses } = await assertIpamConsistent(ds);
        const lost = acks.filter((a) => addresses.get(a.ip) !== a.handle);
        assert.deepEqual(
          lost.slice(0, 5).map((a) => `${a.ip} ${a.handle}`),
          [],
          `${lost.length} acknowledged allocations are not in the store`,
        );

        const refused = lines.flat().filter((l) => l.startsWith('refused ')).length;
        const unavailable = lines.flat().filter((l) => l.startsWith('unavailable ')).length;
        const resumed = Math.min(...acks.filter((a) => a.sent > killedAt).map((a) => a.acked)) - killedAt;
        console.log(
          `      ${backend.name}: ${acks.length} acknowledged, ${refused} refused by the guard, ${unavailable} unavailable; killed after ${acks.filter((a) => a.acked <= killedAt).length}, store back in ${recoveredMs} ms, first allocation begun after the kill acknowledged at +${resumed} ms; first acknowledged ${Math.min(...acks.map((a) => a.acked)) - spawnedAt} ms after the spawn, killed at ${killedAt - spawnedAt} ms, all done at ${doneAt - spawnedAt} ms`,
        );
        // The bar for a durable store: allocations go on within seconds of losing a member.
        if (backend.durable) assert.ok(resumed < 10_000, `allocation resumed ${resumed} ms after the kill`);
        if (backend.durable) {
          const firstRefusal = lines.flat().find((l) => l.startsWith('refused ')) ?? '';
          assert.equal(refused, 0, `the store kept its data: the guard has nothing to refuse (${firstRefusal})`);
          assert.ok(resumed < 15_000, `allocations resumed ${resumed} ms after the kill`);
        }
      },
    );
  });
}
