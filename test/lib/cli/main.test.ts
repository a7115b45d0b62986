// The podroute command line run as a user runs it (bin/podroute.js): help on every command,
// the version, unknown flags refused by name, -o json that parses, the file datastore with
// nothing installed, and GoBGP's verbs and /metrics against two real bgpd peering in a
// network namespace made for the test.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT as TREE } from '../../../lib/cli/commands.js';
import type { CommandSpec } from '../../../lib/cli/args.js';
import { execCommand, Lab, type Netns } from '../../support/netns.js';
import { startRedis } from '../../support/redis.js';
import type { ManagedProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const BIN = join(ROOT, 'bin/podroute.js');

function podroute(args: string[], env: Record<string, string> = {}, ns?: Netns) {
  const cmd = ['env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), 'node', BIN, ...args];
  return ns ? ns.exec(cmd, { timeoutMs: 60_000 }) : execCommand(cmd, { timeoutMs: 60_000 });
}

/** Every command path of the tree. */
function paths(spec: CommandSpec, prefix: string[] = []): string[][] {
  return (spec.subcommands ?? []).flatMap((s) => [[...prefix, s.name], ...paths(s, [...prefix, s.name])]);
}

/** Runs fns at most n at a time (the machine is shared). */
async function limited<T>(fns: (() => Promise<T>)[], n: number): Promise<T[]> {
  const out: T[] = new Array(fns.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < fns.length) {
        const i = next++;
        out[i] = await fns[i]!();
      }
    }),
  );
  return out;
}

describe('podroute CLI', function () {
  this.timeout(300_000);

  it('--help through the bin: exit 0 and a usage naming its flags (test/lib/cli walks the whole tree in-process)', async () => {
    const some = [['get'], ['demo'], ['node', 'run'], ['lab', 'exec'], ['bgpd', 'neighbor'], ['policy', 'counters']];
    for (const p of some)
      assert.ok(
        paths(TREE).some((q) => q.join(' ') === p.join(' ')),
        `${p.join(' ')} is not in the tree`,
      );
    const results = await limited(
      some.map((p) => () => podroute([...p, '--help'])),
      3,
    );
    for (const [i, r] of results.entries()) {
      const p = some[i]!;
      assert.equal(r.code, 0, `${p.join(' ')} --help: ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^usage: podroute ${p.join(' ')}`), `${p.join(' ')} --help`);
    }
    const get = results[0]!.stdout;
    for (const flag of ['--namespace', '--output json|yaml|wide', '--datastore', '--help'])
      assert.ok(get.includes(flag), `get --help lacks ${flag}`);
  });

  it('--version, -h, an unknown flag refused by name, completion', async () => {
    const [version, help, bad, completion] = await Promise.all([
      podroute(['--version']),
      podroute(['-h']),
      podroute(['get', 'ippool', '--colour', 'red']),
      podroute(['completion', 'bash']),
    ]);
    assert.match(version.stdout, /^podroute \d+\.\d+\.\d+/);
    for (const c of TREE.subcommands ?? []) assert.match(help.stdout, new RegExp(`^  ${c.name}\\b`, 'm'), `-h lacks ${c.name}`);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /get: Unknown option '--colour'/);
    const words = await execCommand(
      [
        'bash',
        '-c',
        `source <(node ${BIN} completion bash); COMP_WORDS=(podroute bgpd neighbor --f); COMP_CWORD=3; _podroute; echo "\${COMPREPLY[@]}"`,
      ],
      { timeoutMs: 60_000 },
    );
    assert.equal(completion.code, 0);
    assert.equal(words.stdout.trim(), '--family');
  });

  describe('the file datastore, nothing installed', () => {
    let dir: string;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'podroute-cli-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('apply then get round-trips through $PODROUTE_STATE_DIR/datastore.json; two applies at once both kept', async () => {
      const env = { PODROUTE_STATE_DIR: dir };
      const pool = (n: number) =>
        `apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pool-${n}}\nspec: {cidr: 10.${n}.0.0/16}\n`;
      for (const n of [1, 2]) writeFileSync(join(dir, `p${n}.yaml`), pool(n));
      const applies = await Promise.all([1, 2].map((n) => podroute(['apply', '-f', join(dir, `p${n}.yaml`)], env)));
      for (const a of applies) assert.equal(a.code, 0, a.stderr);
      const get = await podroute(['get', 'ippools', '-o', 'json'], env);
      assert.equal(get.code, 0, get.stderr);
      const list = JSON.parse(get.stdout) as { items: { metadata: { name: string }; spec: { cidr: string } }[] };
      assert.deepEqual(list.items.map((i) => [i.metadata.name, i.spec.cidr]).sort(), [
        ['pool-1', '10.1.0.0/16'],
        ['pool-2', '10.2.0.0/16'],
      ]);
      // Revisions survive the file: two reads see the same, and the two pools have different ones.
      const versions = async () => {
        const r = JSON.parse((await podroute(['get', 'ippools', '-o', 'json'], env)).stdout) as {
          items: { metadata: { resourceVersion: string } }[];
        };
        return r.items.map((i) => i.metadata.resourceVersion);
      };
      const first = await versions();
      assert.deepEqual(await versions(), first);
      assert.equal(new Set(first).size, 2);
      const del = await podroute(['delete', 'ippool', 'pool-1'], env);
      assert.equal(del.code, 0, del.stderr);
      const wide = await podroute(['get', 'ippool', '-o', 'wide'], env);
      assert.match(wide.stdout, /^NAME +CIDR.*LABELS +REVISION/);
      assert.doesNotMatch(wide.stdout, /pool-1/);
      const ipam = await podroute(['ipam', 'show', '-o', 'json'], env);
      assert.deepEqual(
        (JSON.parse(ipam.stdout) as { name: string }[]).map((p) => p.name),
        ['pool-2'],
      );
    });
  });

  it('against Redis with --datastore or PODROUTE_REDIS_URL: nothing written to the state dir', async () => {
    const redis = await startRedis();
    const dir = mkdtempSync(join(tmpdir(), 'podroute-cli-redis-'));
    try {
      const file = join(dir, 'pool.yaml');
      writeFileSync(file, 'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: in-redis}\nspec: {cidr: 10.77.0.0/16}\n');
      const apply = await podroute(['apply', '-f', file, '--datastore', redis.url], { PODROUTE_STATE_DIR: dir });
      assert.equal(apply.code, 0, apply.stderr);
      const get = await podroute(['get', 'ippool', 'in-redis', '-o', 'yaml'], { PODROUTE_STATE_DIR: dir, PODROUTE_REDIS_URL: redis.url });
      assert.equal(get.code, 0, get.stderr);
      assert.match(get.stdout, /cidr: 10\.77\.0\.0\/16/);
      const fromFile = await podroute(['get', 'ippool', 'in-redis'], { PODROUTE_STATE_DIR: dir });
      assert.equal(fromFile.code, 1, 'the file datastore has not seen it');
    } finally {
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe("GoBGP's verbs and /metrics against two bgpd", () => {
    let lab: Lab;
    let ns: Netns;
    let a: string;
    let procA: ManagedProcess;
    let procB: ManagedProcess;
    const CONFIG = (me: string, peer: string, net: string) => `asn: 64512
routerId: ${me}
listen: { host: ${me}, port: 179 }
peers:
  - { address: ${peer}, asn: 64513, localAddress: ${me}, idleHoldTime: 1, connectRetryTime: 1 }
networks:
  - ${net}
`;

    before(async () => {
      lab = new Lab({ tag: 'clicmd' });
      ns = await lab.namespace('gobgp');
      a = join(lab.dir, 'a.sock');
      const b = join(lab.dir, 'b.sock');
      writeFileSync(join(lab.dir, 'a.yaml'), CONFIG('127.0.0.1', '127.0.0.2', '10.1.0.0/24'));
      writeFileSync(
        join(lab.dir, 'b.yaml'),
        CONFIG('127.0.0.2', '127.0.0.1', '10.2.0.0/24').replace('asn: 64512\n', 'asn: 64513\n').replace('asn: 64513,', 'asn: 64512,'),
      );
      procA = ns.spawn(
        [
          'node',
          BIN,
          'bgpd',
          '--config',
          join(lab.dir, 'a.yaml'),
          '--control',
          a,
          '--metrics-port',
          '9911',
          '--log-level',
          'debug',
          '--log-format',
          'text',
        ],
        { name: 'a', cwd: ROOT },
      );
      procB = ns.spawn(['node', BIN, 'bgpd', '--config', join(lab.dir, 'b.yaml'), '--control', b], { name: 'b', cwd: ROOT });
      await waitFor(
        async () => {
          const r = await podroute(['bgpd', 'status', '--control', a, '-o', 'json'], {}, ns);
          if (r.code !== 0) return false;
          return (JSON.parse(r.stdout) as { peers: { state: string; prefixesReceived: number }[] }).peers.some(
            (p) => p.state === 'Established' && p.prefixesReceived === 1,
          );
        },
        { what: 'the two bgpd up with each other’s route', timeoutMs: 90_000 },
      );
    });
    after(async () => {
      await lab?.destroy();
    });

    it('rib add with attributes reaches the peer; adj-out and adj-in show it; rib del withdraws it', async () => {
      const add = await podroute(['bgpd', 'rib', 'add', '10.7.0.0/24', '--control', a, '--med', '7', '--community', '64512:9'], {}, ns);
      assert.equal(add.code, 0, add.stderr);
      await waitFor(
        async () => {
          const r = await podroute(['bgpd', 'neighbor', '127.0.0.2', 'adj-out', '--control', a, '-o', 'json'], {}, ns);
          const routes = JSON.parse(r.stdout) as { prefix: string; attributes: { med?: number; communities?: string[] } }[];
          const sent = routes.find((x) => x.prefix === '10.7.0.0/24');
          return sent !== undefined && sent.attributes.med === 7 && sent.attributes.communities?.[0] === '64512:9';
        },
        { what: '10.7.0.0/24 in the Adj-RIB-Out to 127.0.0.2', timeoutMs: 20_000 },
      );
      const adjIn = await podroute(['bgpd', 'neighbor', '127.0.0.2', 'adj-in', '--control', a, '-o', 'yaml'], {}, ns);
      assert.match(adjIn.stdout, /prefix: 10\.2\.0\.0\/24/);
      const show = await podroute(['bgpd', 'neighbor', '127.0.0.2', '--control', a], {}, ns);
      assert.match(show.stdout, /state: +Established/);
      const del = await podroute(['bgpd', 'rib', 'del', '10.7.0.0/24', '--control', a], {}, ns);
      assert.equal(del.code, 0, del.stderr);
      const routes = await podroute(['bgpd', 'routes', '--control', a, '-o', 'json'], {}, ns);
      assert.ok(
        !(JSON.parse(routes.stdout) as { prefix: string }[]).some((r) => r.prefix === '10.7.0.0/24'),
        '10.7.0.0/24 still in bgpd routes after rib del',
      );
      const unknown = await podroute(['bgpd', 'neighbor', '127.0.0.99', '--control', a], {}, ns);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /127\.0\.0\.99 is not a peer/);
    });

    it('softreset and reset: a hard reset brings the session down and up again', async () => {
      const soft = await podroute(['bgpd', 'neighbor', '127.0.0.2', 'softreset', 'in', '--control', a], {}, ns);
      assert.equal(soft.code, 0, soft.stderr);
      const before = await podroute(['bgpd', 'neighbor', '127.0.0.2', '--control', a, '-o', 'json'], {}, ns);
      const since = (JSON.parse(before.stdout) as { since: number }).since;
      const reset = await podroute(['bgpd', 'neighbor', '127.0.0.2', 'reset', '--control', a], {}, ns);
      assert.equal(reset.code, 0, reset.stderr);
      await waitFor(
        async () => {
          const r = await podroute(['bgpd', 'neighbor', '127.0.0.2', '--control', a, '-o', 'json'], {}, ns);
          const p = JSON.parse(r.stdout) as { state: string; since: number };
          return p.state === 'Established' && p.since > since;
        },
        { what: 'the session back after the reset', timeoutMs: 30_000 },
      );
    });

    it('logs: text with debug lines on one, json at info (no debug) on the other; a bad level refused before listening', async () => {
      await waitFor(() => /DEBUG +end-of-rib peer=127\.0\.0\.2/.test(procA.tail()), { what: 'a debug line in text', timeoutMs: 10_000 });
      assert.match(procA.tail(), /INFO +peer-up peer=127\.0\.0\.2 /);
      const lines = procB
        .tail()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: string; event: string });
      assert.ok(
        lines.some((l) => l.level === 'info' && l.event === 'peer-up'),
        `no info peer-up in B's JSON log: ${lines
          .slice(-10)
          .map((l) => `${l.level} ${l.event}`)
          .join(', ')}`,
      );
      assert.ok(!lines.some((l) => l.event === 'end-of-rib'), 'debug lines are not logged at info');
      const [bgpd, node] = await Promise.all([
        podroute(['bgpd', '--config', join(lab.dir, 'a.yaml'), '--log-level', 'loud']),
        podroute(['node', 'run', '--dataplane', 'memory', '--health-port', '0', '--log-level', 'loud']),
      ]);
      assert.equal(bgpd.code, 2);
      assert.match(bgpd.stderr, /--log-level "loud" must be one of debug, info, warning, error/);
      assert.equal(node.code, 1);
      assert.match(node.stderr, /logSeverityScreen: "loud" must be/);
    });

    it('the reflector takes metrics and logSeverityScreen from its file; a bad level there is refused by field', async () => {
      const file = join(lab.dir, 'rr.yaml');
      const rr = 'asn: 64512\nrouterId: 10.0.0.3\nclusterId: 10.0.0.3\nlisten: { host: 127.0.0.3, port: 179 }\nmetrics: { port: 9912 }\n';
      writeFileSync(join(lab.dir, 'bad-rr.yaml'), `${rr}logSeverityScreen: Loud\n`);
      const bad = await podroute(['reflector', '--config', join(lab.dir, 'bad-rr.yaml')], {}, ns);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /logSeverityScreen: "Loud" must be/);
      writeFileSync(file, `${rr}logSeverityScreen: Warning\n`);
      const proc = ns.spawn(['node', BIN, 'reflector', '--config', file], { name: 'rr', cwd: ROOT });
      const scrape = () => ns.exec(['curl', '-sf', 'http://127.0.0.1:9912/metrics'], { timeoutMs: 10_000 });
      await waitFor(async () => (await scrape()).code === 0, { what: 'the reflector /metrics', timeoutMs: 60_000 });
      assert.match((await scrape()).stdout, /podroute_bgp_rib_prefixes\{family="ipv4-unicast"\} 0/);
      assert.doesNotMatch(proc.tail(), /"event":"started"/, 'info lines are not logged at Warning');
    });

    it('/metrics: per-peer state, prefixes and messages, process metrics', async () => {
      const r = await ns.exec(['curl', '-sf', 'http://127.0.0.1:9911/metrics'], { timeoutMs: 10_000 });
      assert.match(r.stdout, /podroute_bgp_peer_up\{peer="127\.0\.0\.2",asn="64513"\} 1/);
      assert.match(r.stdout, /podroute_bgp_peer_prefixes_accepted\{peer="127\.0\.0\.2"\} 1/);
      assert.match(r.stdout, /podroute_bgp_peer_messages_received_total\{peer="127\.0\.0\.2"\} [1-9]/);
      assert.match(r.stdout, /# TYPE process_cpu_seconds_total counter/);
    });
  });
});
