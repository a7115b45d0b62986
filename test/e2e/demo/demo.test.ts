// `npm start -- --once` as a user runs it: a child process with no Redis and, when the test runs
// as root, as the unprivileged user `nobody`, so nothing in the demo may need root. The routes it
// prints must give every node a route to every other node's block and match the nodes' RIBs
// in the JSON dump, line for line.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../../..');
const NOBODY = 65534;

interface Run {
  code: number | string;
  stdout: string;
  stderr: string;
  ms: number;
}

interface DemoDump {
  converged: boolean;
  phases: { phase: string; converged: boolean; ms: number }[];
  nodes: { name: string; address: string; blocks: string[]; routes: string[]; rib: { prefix: string; nextHop: string; from: string }[] }[];
  pods: { name: string; node: string; ip: string; interfaceName: string }[];
  tor?: { routes: { prefix: string }[] };
}

/** Whether `nobody` can reach and read the checkout (every ancestor searchable by others). */
function nobodyCanRead(path: string): boolean {
  for (let p = path; ; p = dirname(p)) {
    if ((statSync(p).mode & 0o005) !== 0o005) return false;
    if (dirname(p) === p) return true;
  }
}

const asNobody = process.getuid?.() === 0 && nobodyCanRead(ROOT);

/** Runs a command in the checkout with a bare environment; kills its process group after `boundMs`. */
function run(argv: string[], dir: string, boundMs: number, onStdout?: (text: string, pid: number) => void): Promise<Run> {
  const started = Date.now();
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: dir, npm_config_cache: join(dir, 'npm'), npm_config_update_notifier: 'false', LANG: 'C.UTF-8' },
    ...(asNobody ? { uid: NOBODY, gid: NOBODY } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (b: Buffer) => {
    stdout += b.toString('utf8');
    onStdout?.(stdout, child.pid!);
  });
  child.stderr!.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {}
  }, boundMs);
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? 'unknown', stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** The last ROUTES section of the printed view: node name → its lines. */
function printedRoutes(stdout: string): Map<string, string[]> {
  const lines = stdout.split('\n');
  const start = lines.map((l) => l.startsWith('ROUTES (')).lastIndexOf(true);
  assert.ok(start >= 0, `no ROUTES section in:\n${stdout.slice(-2000)}`);
  const out = new Map<string, string[]>();
  let node: string | undefined;
  for (const l of lines.slice(start + 1)) {
    const head = /^(node-\d+):$/.exec(l);
    if (head) out.set((node = head[1]!), []);
    else if (l.startsWith('  ') && node) out.get(node)!.push(l.trim());
    else break;
  }
  return out;
}

/** The last PODS table: pod rows as printed. */
function printedPods(stdout: string): { name: string; node: string; ip: string; iface: string }[] {
  const lines = stdout.split('\n');
  const start = lines.lastIndexOf('PODS');
  const rows: { name: string; node: string; ip: string; iface: string }[] = [];
  for (const l of lines.slice(start + 2)) {
    if (!l.trim()) break;
    const [name, node, ip, iface] = l.trim().split(/\s+/);
    rows.push({ name: name!, node: node!, ip: ip!, iface: iface! });
  }
  return rows;
}

describe('podroute demo (npm start): a whole cluster in one process, no root, no Redis', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), `podroute-demo-${process.pid}-`));
    chmodSync(dir, 0o777);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('npm start -- --once converges and exits 0; every node routes every other block, as its RIB says', async () => {
    const json = join(dir, 'final.json');
    const r = await run(['npm', 'start', '--silent', '--', '--once', '--json', json], dir, 45_000);
    assert.equal(r.code, 0, `exit ${r.code} after ${r.ms} ms${asNobody ? ' (as nobody)' : ''}\n${r.stderr}\n${r.stdout.slice(-3000)}`);
    assert.ok(r.ms < 30_000, `took ${r.ms} ms`);
    // Plain snapshots, not ANSI redraws: stdout is a pipe.
    assert.ok(!r.stdout.includes('\x1b['), 'no escape sequences into a pipe');
    // Into a pipe the title and each phase's line are printed once, not again above each snapshot.
    const lines = r.stdout.split('\n');
    assert.equal(lines.filter((l) => l.startsWith('podroute demo: ')).length, 1, 'the title once');
    for (let i = 1; i <= 4; i++)
      assert.equal(lines.filter((l) => l.startsWith(`phase ${i}/4: `)).length, 1, `phase ${i}'s line once:\n${r.stdout.slice(0, 3000)}`);
    // The progress line: "converging: …" while it is, "converged in …" once done (a phase over
    // loopback can converge before the first snapshot).
    assert.match(r.stdout, /(converging|converged in [\d.]+ s): \d+\/\d+ sessions established, \d+\/\d+ routes programmed/);
    const dump = JSON.parse(readFileSync(json, 'utf8')) as DemoDump;
    assert.equal(dump.converged, true);
    assert.deepEqual(
      dump.phases.map((p) => [p.phase.split(':')[0], p.converged]),
      [
        ['full mesh', true],
        ['route reflector', true],
        ['top of rack', true],
        ['live change', true],
      ],
    );
    assert.equal(dump.nodes.length, 5, 'four nodes, and one added live');

    const printed = printedRoutes(r.stdout);
    const pods = printedPods(r.stdout);
    assert.deepEqual(
      [...printed.keys()],
      dump.nodes.map((n) => n.name),
    );
    assert.deepEqual(
      pods.map((p) => `${p.name} ${p.node} ${p.ip} ${p.iface}`),
      dump.pods.map((p) => `${p.name} ${p.node} ${p.ip} ${p.interfaceName}`),
    );
    assert.ok(!pods.some((p) => p.name === 'web-2-0'), 'the pod deleted live is gone');
    for (const n of dump.nodes) {
      const lines = printed.get(n.name)!;
      assert.deepEqual(lines, n.routes, `${n.name}: the printed routes are the dataplane's`);
      // Every other node's blocks, via that node.
      for (const other of dump.nodes) {
        if (other.name === n.name) continue;
        assert.ok(other.blocks.length > 0, `${other.name} holds a block`);
        for (const b of other.blocks)
          assert.ok(
            lines.includes(`${b} via ${other.address} dev eth0 proto 81`),
            `${n.name} lacks ${b} via ${other.address}:\n${lines.join('\n')}`,
          );
      }
      // The printed routes are the RIB: learned best paths via their next hop, originated
      // blocks as blackholes, and nothing else but the node's own pods on their veths.
      const fromRib = n.rib
        .map((x) => (x.from === 'local' ? `blackhole ${x.prefix} proto 81` : `${x.prefix} via ${x.nextHop} dev eth0 proto 81`))
        .sort();
      const ownPods = pods.filter((p) => p.node === n.name).map((p) => `${p.ip} dev ${p.iface} proto 81 scope link`);
      assert.deepEqual(lines.filter((l) => !ownPods.includes(l)).sort(), fromRib, `${n.name}: printed routes differ from its RIB`);
      assert.equal(lines.filter((l) => ownPods.includes(l)).length, ownPods.length, `${n.name}: a /32 for each of its pods`);
    }
    const blocks = dump.nodes.flatMap((n) => n.blocks).sort();
    assert.deepEqual(dump.tor!.routes.map((x) => x.prefix).sort(), blocks, 'the top-of-rack learned every block');
  });

  it('Ctrl-C stops every agent and exits 130, as demo --help says, run alone or by npm start; a bad flag is refused by name', async () => {
    const help = await run(['node', 'bin/podroute.js', 'demo', '--help'], dir, 20_000);
    assert.match(help.stdout.replace(/\s+/g, ' '), /Ctrl-C stops every agent and exits 130/);
    // Ctrl-C reaches the terminal's whole process group: npm and the demo alike.
    for (const argv of [
      ['node', 'bin/podroute.js', 'demo', '--nodes', '3'],
      ['npm', 'start', '--silent', '--', '--nodes', '3'],
    ]) {
      let sent = false;
      const r = await run(argv, dir, 40_000, (text, pid) => {
        // Interrupt once the reflector phase has begun: sessions are up and changing.
        if (!sent && text.includes('phase 2/4')) {
          sent = true;
          process.kill(-pid, 'SIGINT');
        }
      });
      assert.ok(sent, `${argv.join(' ')}: never reached phase 2:\n${r.stdout}\n${r.stderr}`);
      // As a shell reports it: npm passes the interrupt on by ending itself with SIGINT, 128 + 2.
      const shellCode = typeof r.code === 'string' ? 128 + (constants.signals[r.code as NodeJS.Signals] ?? 0) : r.code;
      assert.equal(shellCode, 130, `${argv.join(' ')}: exit ${r.code}\n${r.stderr}`);
      assert.match(r.stderr, /stopped 3 agents/);
    }

    const bad = await run(['node', 'bin/podroute.js', 'demo', '--nodes', '1'], dir, 20_000);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--nodes: "1" is not a whole number from 2 to 50/);
    assert.equal(bad.stdout, '');
  });

  it("the README's line for the final state as JSON puts JSON alone on stdout (no npm banner)", async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const line = /`(npm start[^`|]*--json - )\| jq[^`]*`/.exec(readme);
    assert.ok(line, "the README shows the demo's JSON piped to jq");
    const r = await run(['sh', '-c', line[1]!], dir, 45_000);
    assert.equal(r.code, 0, `${line[1]}: exit ${r.code}\n${r.stderr.slice(-2000)}`);
    const doc = JSON.parse(r.stdout) as DemoDump;
    assert.equal(doc.converged, true, 'converged');
  });
});
