// The datastore commands while a lab is up on this host: `apply` without --lab or --datastore
// still writes the local file datastore but warns that no lab reads it; `--lab NAME` writes and
// reads the lab's own datastore (a real Redis here, as a lab's is).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import { runPolicyCommand } from '../../../lib/cli/policy.js';
import type { LabState } from '../../../lib/lab/index.js';
import { type RedisServer, startRedis } from '../../support/redis.js';

const POOL = 'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: lab-pool}\nspec: {cidr: 10.61.0.0/24}\n';

describe('datastore CLI and the labs up on this host', function () {
  this.timeout(30_000);
  let redis: RedisServer;
  let dir: string;
  const saved = { ...process.env };

  before(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), 'podroute-cli-lab-'));
    const labs = join(dir, 'labs');
    mkdirSync(join(labs, 'tor'), { recursive: true });
    const state: LabState = {
      name: 'tor',
      topology: 'tor.clab.yml',
      prefix: 'tor-',
      dir: join(labs, 'tor'),
      redisSocket: redis.url,
      namespaces: [],
      processes: [],
      pods: [],
    };
    writeFileSync(join(labs, 'tor', 'state.json'), JSON.stringify(state));
    for (const k of Object.keys(process.env)) if (k.startsWith('PODROUTE_')) delete process.env[k];
    process.env.PODROUTE_LAB_STATE_DIR = labs;
    process.env.PODROUTE_STATE_DIR = join(dir, 'state');
  });

  after(async () => {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const run = async (argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runDatastoreCommand(argv, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), readStdin: () => POOL });
    return { code, stdout: out.join(''), stderr: err.join('') };
  };

  it('apply to the file datastore while lab tor is up: applied, with a warning naming --lab tor and lab env', async () => {
    const r = await run(['apply', '-f', '-']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'applied IPPool lab-pool (revision 1)\n');
    assert.equal(
      r.stderr,
      `podroute apply: warning: this goes to the local file datastore ${join(dir, 'state', 'datastore.json')}, which no lab reads; ` +
        'lab tor is up: podroute apply --lab tor ..., or eval "$(podroute lab env tor)" first\n',
    );
    const del = await run(['delete', 'ippool', 'lab-pool']);
    assert.equal(del.code, 0, del.stderr);
    assert.match(del.stderr, /^podroute delete: warning: this goes to the local file datastore/);
  });

  it("--lab tor: the lab's datastore, no warning; --lab of a lab not up, or with --datastore: usage errors", async () => {
    const r = await run(['apply', '-f', '-', '--lab', 'tor']);
    assert.deepEqual(r, { code: 0, stdout: 'applied IPPool lab-pool (revision 1)\n', stderr: '' });
    const get = await run(['get', 'ippools', '--lab', 'tor']);
    assert.equal(get.code, 0, get.stderr);
    assert.match(get.stdout, /^lab-pool\s+10\.61\.0\.0\/24/m);
    // The file datastore never got it.
    assert.match((await run(['get', 'ippools'])).stdout, /^NAME[^\n]*\n$/);
    const none = await run(['get', 'ippools', '--lab', 'nolab']);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /--lab: no lab "nolab" is up \(up: tor\)/);
    const both = await run(['get', 'ippools', '--lab', 'tor', '--datastore', 'memory']);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--lab and --datastore: give one of them/);
  });

  it("policy explain|verdict --lab read the lab's datastore too", async () => {
    const err: string[] = [];
    const io = { stdout: () => undefined, stderr: (s: string) => err.push(s) };
    assert.equal(await runPolicyCommand(['verdict', '10.61.0.1', '10.61.0.2', 'tcp', '80', '--lab', 'nolab'], io), 2);
    assert.match(err.join(''), /--lab: no lab "nolab" is up \(up: tor\)/);
    const out: string[] = [];
    const code = await runPolicyCommand(['verdict', '10.61.0.1', '10.61.0.2', 'tcp', '80', '--lab', 'tor'], {
      stdout: (s) => out.push(s),
      stderr: (s) => out.push(s),
    });
    assert.equal(code, 0, out.join(''));
  });
});
