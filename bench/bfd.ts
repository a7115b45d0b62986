// BFD at scale: 1,000 single-hop sessions at 300 ms × 3 between podroute's BFD endpoint (in
// its own process, its sessions on their own thread, as bgpd runs it) and FRR's bfdd, in two namespaces on one veth: bfdd on
// one address with a thousand peers, podroute on a thousand addresses (bfdd keeps one session
// per peer address, so the thousand cannot all be ours on one address). Both ends
// run the same sessions at the same rate, so the CPU each spends over the same window is the
// comparison: podroute's process against bfdd, with the ratio printed. Sessions that went down
// during the window are counted on our side (a flap would show a busy loop or a stall).
// The process's CPU counts every thread of it.
//   npx tsx bench/bfd.ts [sessions] [interval_ms] [seconds]     (BFD_THREAD=main: the endpoint on the main loop)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBfdd } from '../test/support/frr.js';
import { Lab } from '../test/support/netns.js';
import { waitFor } from '../test/support/wait.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const N = Number(process.argv[2] ?? 1000);
const INTERVAL = Number(process.argv[3] ?? 300);
const SECONDS = Number(process.argv[4] ?? 30);
const MULT = 3;
const FRR = '10.77.0.1';
const FIRST = [10, 77, 1, 1];

/** The i-th address of our side: 10.77.1.1 onwards, in a /16 with FRR's. */
function ourAddress(i: number): string {
  const n = ((FIRST[0]! * 256 + FIRST[1]!) * 256 + FIRST[2]!) * 256 + FIRST[3]! + i;
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** utime + stime of a process, in seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

async function main(): Promise<void> {
  const lab = new Lab({ tag: 'benchbfd' });
  try {
    const ours = await lab.namespace('pr');
    const frrNs = await lab.namespace('frr');
    await lab.link(ours, {}, frrNs, { v4: `${FRR}/16` });
    // Our thousand addresses, in one batch.
    const batch = Array.from({ length: N }, (_, i) => `address add ${ourAddress(i)}/16 dev eth0`).join('\n');
    const batchFile = join(lab.dir, 'addresses.batch');
    writeFileSync(batchFile, `${batch}\n`);
    await ours.run(['ip', '-batch', batchFile]);
    // bfdd sends to a thousand neighbours: learnt by ARP they would fill the kernel's neighbour
    // table (gc_thresh3, 1,024 entries for the whole host), so they are written in, permanent
    // entries, which the table does not count.
    const mac = (ns: typeof ours) => ns.run(['cat', '/sys/class/net/eth0/address']).then((m) => m.trim());
    const ourMac = await mac(ours);
    const neigh = Array.from({ length: N }, (_, i) => `neigh replace ${ourAddress(i)} lladdr ${ourMac} dev eth0 nud permanent`).join('\n');
    const neighFile = join(lab.dir, 'neighbours.batch');
    writeFileSync(neighFile, `${neigh}\n`);
    await frrNs.run(['ip', '-batch', neighFile]);
    await ours.run(['ip', 'neigh', 'replace', FRR, 'lladdr', await mac(frrNs), 'dev', 'eth0', 'nud', 'permanent']);

    const dir = join(lab.dir, 'frr');
    mkdirSync(dir, { recursive: true });
    const peers = Array.from({ length: N }, (_, i) =>
      [
        ` peer ${ourAddress(i)} local-address ${FRR}`,
        `  detect-multiplier ${MULT}`,
        `  receive-interval ${INTERVAL}`,
        `  transmit-interval ${INTERVAL}`,
        ' !',
      ].join('\n'),
    );
    const bfdd = await startBfdd(frrNs, dir, peers);
    const node = ours.spawn(
      ['node', '--import', 'tsx', join(ROOT, 'bench/bfd-node.ts'), FRR, ourAddress(0), String(N), String(INTERVAL), String(MULT)],
      {
        name: 'podroute-bfd',
        cwd: ROOT,
      },
    );
    let last = { up: 0, downs: 0, diags: '' };
    node.onOutput((text) => {
      for (const m of text.matchAll(/up (\d+) downs (\d+) ?(\S*)/g)) last = { up: Number(m[1]), downs: Number(m[2]), diags: m[3] ?? '' };
    });
    // bfdd's own count of sessions that went down, summed over its peers.
    const frrDowns = async (): Promise<number> => {
      const text = await frrNs.run(['vtysh', '--vty_socket', dir, '-c', 'show bfd peers counters json']);
      return (JSON.parse(text) as { 'session-down'?: number }[]).reduce((t, p) => t + (p['session-down'] ?? 0), 0);
    };
    const t0 = performance.now();
    try {
      await waitFor(() => last.up, {
        what: `${N} sessions Up`,
        until: (n) => n === N,
        timeoutMs: Number(process.env.BFD_UP_TIMEOUT ?? 180_000),
        intervalMs: 500,
      });
    } catch (e) {
      const brief = await frrNs.run(['vtysh', '--vty_socket', dir, '-c', 'show bfd peers brief']).catch((x: Error) => x.message);
      console.error(`bfdd's sessions:\n${brief.split('\n').slice(0, 20).join('\n')}\nours: ${node.tail()}`);
      throw e;
    }
    const upAfter = (performance.now() - t0) / 1000;
    // Let the Polls of reaching Up settle before measuring.
    await new Promise((r) => setTimeout(r, 3000));
    const load0 = loadAverage();
    const before = { ours: cpuSeconds(node.pid), frr: cpuSeconds(bfdd.pid), downs: last.downs, frrDowns: await frrDowns() };
    const w0 = performance.now();
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    const wall = (performance.now() - w0) / 1000;
    const after = { ours: cpuSeconds(node.pid), frr: cpuSeconds(bfdd.pid), downs: last.downs, frrDowns: await frrDowns() };
    const oursCpu = after.ours - before.ours;
    const frrCpu = after.frr - before.frr;
    const pps = (N * 1000) / (INTERVAL * 0.875); // packets sent a second by each end (jitter: 75–100 %)
    console.log(
      `bfd: ${N} sessions at ${INTERVAL} ms × ${MULT} (podroute's on ${process.env.BFD_THREAD === 'main' ? 'the main loop' : 'their own thread'}), all Up after ${upAfter.toFixed(1)} s; window ${wall.toFixed(1)} s, load ${load0} → ${loadAverage()}`,
    );
    console.log(`  each end sends ~${Math.round(pps)} packets/s and takes as many`);
    console.log(
      `  podroute BFD process: ${oursCpu.toFixed(2)} CPU s = ${((oursCpu / wall) * 100).toFixed(1)} % of a core, ${((oursCpu * 1e6) / (wall * pps * 2)).toFixed(1)} µs a packet in or out`,
    );
    console.log(`  FRR bfdd:             ${frrCpu.toFixed(2)} CPU s = ${((frrCpu / wall) * 100).toFixed(1)} % of a core`);
    console.log(`  ratio podroute / bfdd: ${(oursCpu / Math.max(frrCpu, 0.01)).toFixed(2)}×`);
    console.log(
      `  sessions Up at the end: ${last.up} of ${N}; downs during the window: ours ${after.downs - before.downs}, bfdd's ${after.frrDowns - before.frrDowns} (ours so far by diagnostic: ${last.diags || 'none'})`,
    );
  } finally {
    await lab.destroy();
  }
}

await main();
