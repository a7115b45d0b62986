// npm's install step (`npm run install`, which `npm ci` and `npm install` run) as an
// unprivileged user with an empty home: node-gyp builds the addons against the installed
// Node's headers instead of downloading them, so no `gyp ERR!` and no "did not build"; and
// when a build does fail, one line says why and one what still works.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(fileURLToPath(import.meta.url), '../../..');
const NOBODY = 65534;
const nodePrefix = dirname(dirname(process.execPath));
const haveHeaders = existsSync(join(nodePrefix, 'include/node/node_api.h'));

function npmInstallScript(dir: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const asRoot = process.getuid?.() === 0;
  const child = spawn('npm', ['run', 'install', '--foreground-scripts'], {
    cwd: dir,
    env: {
      PATH: process.env.PATH!,
      HOME: join(dir, 'home'),
      npm_config_cache: join(dir, 'npm-cache'),
      npm_config_update_notifier: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('npm install step: the addons, as an unprivileged user', function () {
  this.timeout(240_000);
  let dir: string;

  before(function () {
    if (!haveHeaders) this.skip(); // node-gyp would have to download them: nothing of ours to test
    dir = mkdtempSync(join(tmpdir(), 'podroute-addons-'));
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'addons', version: '0.0.0', private: true, type: 'module', scripts: { install: pkg.scripts.install } }),
    );
    for (const f of ['bin/build-addons.js', 'felix/native', 'bgp/native', 'cni/shim/podroute-cni.c', 'cni/shim/build.sh'])
      cpSync(join(ROOT, f), join(dir, f), { recursive: true, filter: (src) => !/\/native\/build(\/|$)/.test(src) });
    mkdirSync(join(dir, 'home'));
    rmSync(join(dir, 'cni/shim/podroute-cni'), { force: true });
    chmodSync(dir, 0o777);
    for (const d of ['home', 'bin', 'felix', 'felix/native', 'bgp', 'bgp/native', 'cni', 'cni/shim']) chmodSync(join(dir, d), 0o777);
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('builds both addons and the shim from the local headers: no gyp ERR!, nothing left unbuilt', async () => {
    const r = await npmInstallScript(dir, {});
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /gyp ERR!/, r.stderr);
    assert.doesNotMatch(r.stderr, /did not build/, r.stderr);
    for (const built of ['felix/native/build/Release/netlink.node', 'bgp/native/build/Release/tcp_md5.node', 'cni/shim/podroute-cni'])
      assert.ok(existsSync(join(dir, built)), `${built} was not built`);
  });

  it('without a C compiler: one line per part with the reason, one on what works without them, exit 0', async () => {
    const r = await npmInstallScript(dir, { CC: '/nonexistent/cc', CXX: '/nonexistent/c++' });
    assert.equal(r.code, 0, r.stderr);
    const ours = r.stderr.split('\n').filter((l) => l.startsWith('podroute: '));
    assert.equal(ours.filter((l) => / did not build \(.+\); /.test(l)).length, 3, r.stderr);
    assert.match(ours.at(-1) ?? '', /^podroute: everything else works without them: the speaker library, bgpd/);
    assert.doesNotMatch(r.stderr, /gyp ERR!/, "node-gyp's log stays out of it");
  });
});
