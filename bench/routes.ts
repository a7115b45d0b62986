// Route programming, side by side in one run: `ip -batch` (iproute2: one request and one
// ack at a time) and felix (many rtnetlink requests per sendmsg, each acked), each in a
// fresh network namespace, programming N `/32 dev cali0 scope link` routes; then a resync
// of the N unchanged routes; then removing them all.
//   npx tsx bench/routes.ts [count=100000] [rounds=3]
import { execFileSync } from 'node:child_process';
import { writeFileSync, unlinkSync } from 'node:fs';
import { Felix, LinuxDataplane, PODROUTE_PROTOCOL } from '../felix/index.js';

const N = Number(process.argv[2] ?? 100_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const sh = (cmd: string) => execFileSync('sh', ['-c', cmd], { encoding: 'utf8', maxBuffer: 1 << 30 });

function addresses(n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(`10.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`);
  return out;
}

function freshNs(tag: string): string {
  const ns = `fxbench${process.pid}${tag}`;
  sh(
    `ip netns add ${ns} && ip -n ${ns} link set lo up && ip -n ${ns} link add cali0 type veth peer name cali0p && ip -n ${ns} link set cali0 up && ip -n ${ns} link set cali0p up`,
  );
  return ns;
}

function countRoutes(ns: string): number {
  return Number(sh(`ip -n ${ns} route show proto ${PODROUTE_PROTOCOL} | wc -l`).trim());
}

function time(f: () => void): number {
  const t = performance.now();
  f();
  return (performance.now() - t) / 1000;
}

async function timeAsync(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return (performance.now() - t) / 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rate = (s: number) => `${Math.round(N / s / 1000)}k routes/s`;

async function main(): Promise<void> {
  const addrs = addresses(N);
  const file = `/tmp/fxbench-${process.pid}.batch`;
  const res: Record<string, number[]> = {
    ipAdd: [],
    ipReplace: [],
    ipDump: [],
    ipDel: [],
    fxAdd: [],
    fxResync: [],
    fxDel: [],
    fxAddErrors: [],
    fxDelErrors: [],
  };
  const made: string[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // iproute2
      const a = freshNs(`i${round}`);
      made.push(a);
      writeFileSync(file, addrs.map((x) => `route add ${x}/32 dev cali0 scope link proto ${PODROUTE_PROTOCOL}\n`).join(''));
      res.ipAdd.push(time(() => sh(`ip -n ${a} -batch ${file}`)));
      if (countRoutes(a) !== N) throw new Error('ip -batch did not install every route');
      writeFileSync(file, addrs.map((x) => `route replace ${x}/32 dev cali0 scope link proto ${PODROUTE_PROTOCOL}\n`).join(''));
      res.ipReplace.push(time(() => sh(`ip -n ${a} -batch ${file}`)));
      res.ipDump.push(time(() => JSON.parse(sh(`ip -n ${a} -j route show proto ${PODROUTE_PROTOCOL}`))));
      writeFileSync(file, addrs.map((x) => `route del ${x}/32 dev cali0 proto ${PODROUTE_PROTOCOL}\n`).join(''));
      res.ipDel.push(time(() => sh(`ip -n ${a} -batch ${file}`)));
      sh(`ip netns del ${a}`);
      made.pop();

      // felix, through its public API: desired state, dump, diff, batched writes.
      const b = freshNs(`f${round}`);
      made.push(b);
      const dp = new LinuxDataplane({ netns: `/var/run/netns/${b}` });
      const felix = new Felix(dp, { resyncIntervalMs: 0, sysctls: false });
      let report!: Awaited<ReturnType<typeof felix.start>>;
      // Timed from the agent's input: desired-state computation, dump, diff and writes.
      res.fxAdd.push(
        await timeAsync(async () => {
          felix.update({ node: { uplink: 'cali0p' }, workloads: [{ iface: 'cali0', addresses: addrs }] });
          report = await felix.start();
        }),
      );
      if (report.routesCreated !== N || report.failures.length || countRoutes(b) !== N)
        throw new Error(`felix did not install every route: ${JSON.stringify(report.failures.slice(0, 3))}`);
      res.fxResync.push(
        await timeAsync(async () => {
          report = await felix.resync();
        }),
      );
      if (report.routesUnchanged !== N) throw new Error('resync saw changes');
      felix.setLocalWorkloads([]);
      let del: Awaited<ReturnType<typeof felix.apply>> | undefined;
      res.fxDel.push(
        await timeAsync(async () => {
          del = await felix.apply();
        }),
      );
      if (del?.failures.length || del?.routesDeleted !== N)
        console.error(del?.routesDeleted, del?.kind, del?.failures.length, del?.failures.slice(0, 2), countRoutes(b));
      if (countRoutes(b) !== 0)
        throw new Error(`felix did not remove every route: ${sh(`ip -n ${b} route show proto ${PODROUTE_PROTOCOL} | head -3`)}`);
      felix.stop();
      dp.close();
      sh(`ip netns del ${b}`);
      made.pop();

      // felix with ackMode 'errors': only the last request of each sendmsg asks for an ack.
      const c = freshNs(`e${round}`);
      made.push(c);
      const dpE = new LinuxDataplane({ netns: `/var/run/netns/${c}`, ackMode: 'errors' });
      const felixE = new Felix(dpE, { resyncIntervalMs: 0, sysctls: false });
      res.fxAddErrors.push(
        await timeAsync(async () => {
          felixE.update({ node: { uplink: 'cali0p' }, workloads: [{ iface: 'cali0', addresses: addrs }] });
          report = await felixE.start();
        }),
      );
      if (report.routesCreated !== N || countRoutes(c) !== N) throw new Error('felix (ackMode errors) did not install every route');
      felixE.setLocalWorkloads([]);
      res.fxDelErrors.push(await timeAsync(() => felixE.apply()));
      if (countRoutes(c) !== 0) throw new Error('felix (ackMode errors) did not remove every route');
      felixE.stop();
      dpE.close();
      sh(`ip netns del ${c}`);
      made.pop();
    }
  } finally {
    for (const ns of made) execFileSync('ip', ['netns', 'del', ns]);
    try {
      unlinkSync(file);
    } catch {
      /* not written */
    }
  }
  const row = (what: string, ref: string, refS: number, oursS: number) =>
    console.log(
      `${what.padEnd(34)} ${ref.padEnd(26)} ${refS.toFixed(3)} s (${rate(refS)})   felix ${oursS.toFixed(3)} s (${rate(oursS)})   ratio ${(refS / oursS).toFixed(2)}x`,
    );
  console.log(`bench/routes: ${N} routes, median of ${ROUNDS} rounds, node ${process.version}, ${sh('ip -V').trim()}`);
  row('program N routes', 'ip -batch route add', median(res.ipAdd), median(res.fxAdd));
  row('resync N unchanged routes', 'ip -batch route replace', median(res.ipReplace), median(res.fxResync));
  row('  (read back only)', 'ip -j route show + parse', median(res.ipDump), median(res.fxResync));
  row('remove N routes', 'ip -batch route del', median(res.ipDel), median(res.fxDel));
  row('program N, ackMode errors', 'ip -batch route add', median(res.ipAdd), median(res.fxAddErrors));
  row('remove N, ackMode errors', 'ip -batch route del', median(res.ipDel), median(res.fxDelErrors));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
