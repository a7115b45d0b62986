// The package as a user gets it: `npm pack` (which builds dist/), installed from the tarball
// into an empty project, then used from an ES module, a CommonJS module and TypeScript, and
// through each of its bins. Dependencies come from the npm cache, else the registry.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { distStaleness } from '../../support/dist.js';

const ROOT = join(fileURLToPath(import.meta.url), '../../../..');
const CONSUMER = join(fileURLToPath(import.meta.url), '../consumer');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed after timeoutMs), with npm's own variables removed, as a user's shell would. */
function run(argv: string[], cwd: string, opts: { env?: Record<string, string>; input?: string; timeoutMs?: number } = {}): Promise<Ran> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('npm_')) env[k] = v;
  Object.assign(env, opts.env);
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

const ok = (r: Ran, what: string): Ran => {
  assert.equal(r.code, 0, `${what} exited ${r.code}\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-2000)}`);
  return r;
};

describe('the packed package, installed in an empty project', function () {
  this.timeout(480_000); // a shared machine's load can make the build alone take minutes
  let tmp = '';
  let app = '';
  const bin = (name: string) => join(app, 'node_modules/.bin', name);

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), `podroute-package-${process.pid}-`));
    // npm pack builds dist/ first (prepack); when the run's own build is current it is what
    // that build would make, and packing it as it is saves a second build.
    const current = distStaleness() === undefined ? ['--ignore-scripts'] : [];
    ok(await run(['npm', 'pack', ...current, '--pack-destination', tmp], ROOT, { timeoutMs: 300_000 }), 'npm pack');
    const [tarball] = readdirSync(tmp).filter((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack made a tarball');
    app = join(tmp, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '0.0.0', private: true }));
    for (const f of readdirSync(CONSUMER)) copyFileSync(join(CONSUMER, f), join(app, f.replace(/\.in$/, '')));
    const install = ['npm', 'install', join(tmp, tarball), '--no-audit', '--no-fund', '--prefer-offline', '--no-package-lock'];
    ok(await run(install, app, { timeoutMs: 180_000 }), 'npm install <tarball>');
  });

  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it("the README's Install section runs these steps: npm pack, then npm install of the tarball it wrote", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = /\n## Install\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    assert.match(block, /^npm ci && npm pack\b/m, `the Install block packs as this test does:\n${block}`);
    const [tarball] = readdirSync(tmp).filter((f) => f.endsWith('.tgz'));
    assert.match(block, new RegExp(`npm install \\S*/${tarball!.replace(/\./g, '\\.')}$`, 'm'), `installs ${tarball}:\n${block}`);
    assert.match(section, /test\/e2e\/package/, 'says where it is tested');
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    assert.equal(scripts.prepack, 'npm run build', "npm pack builds dist/ (the packing above may have used the run's own build)");
  });

  it('ships dist/ and no sources, and installs no build tools', () => {
    const pkg = join(app, 'node_modules/podroute');
    assert.ok(
      existsSync(join(pkg, 'dist/index.js')) && existsSync(join(pkg, 'dist/index.d.ts')),
      `${pkg} lacks dist/index.js or dist/index.d.ts`,
    );
    assert.ok(existsSync(join(pkg, 'dist/cni.js')), 'the bundled CNI plugin');
    assert.ok(!existsSync(join(pkg, 'lib/cni/main.ts')), 'TypeScript sources are not shipped');
    for (const tool of ['tsx', 'esbuild', 'typescript', 'mocha']) {
      assert.ok(!existsSync(join(app, 'node_modules', tool)), `${tool} is not a run-time dependency`);
    }
  });

  it('an ES module consumer encodes and decodes with podroute/codec, which loads nothing else', async () => {
    const trace = join(tmp, 'esm.trace');
    writeFileSync(trace, '');
    const r = ok(await run(['node', '--import', './trace.mjs', 'esm.mjs'], app, { env: { PODROUTE_TRACE: trace } }), 'esm.mjs');
    assert.match(r.stdout, /esm ok/);
    const loaded = (tag: string) =>
      JSON.parse(
        r.stdout
          .split('\n')
          .find((l) => l.startsWith(`${tag} `))!
          .slice(tag.length + 1),
      ) as string[];
    const outside = loaded('codec-loaded').filter(
      (u) => !u.startsWith('node:') && !/\/node_modules\/podroute\/dist\/(bgp\/codec|ip)\//.test(u),
    );
    assert.deepEqual(
      outside.filter((u) => !u.endsWith('/esm.mjs')),
      [],
      'podroute/codec loads only the codec and ip/',
    );
    // The root loads the whole library, but still no database client until one is opened.
    const root = loaded('root-loaded');
    assert.ok(
      root.some((u) => u.endsWith('/podroute/dist/index.js')),
      `the root did not load podroute/dist/index.js (${root.length} modules loaded)`,
    );
    assert.deepEqual(
      root.filter((u) => /\/node_modules\/(ioredis|etcd3)\//.test(u)),
      [],
      'importing podroute loads no Redis or etcd client',
    );
  });

  it('a CommonJS consumer loads it with import(), and with require() where Node can', async () => {
    const r = ok(await run(['node', 'require.cjs'], app), 'require.cjs');
    assert.match(r.stdout, /cjs ok/);
    assert.doesNotMatch(r.stderr, /Error/);
  });

  it('podroute/bfd runs its sessions on a thread that loads the compiled dist/, and they come Up', async function () {
    if (!existsSync(join(app, 'node_modules/podroute/bgp/native/build/Release/bfd_socket.node'))) {
      console.log('      skipped: the BFD socket addon did not build at install (no C compiler)');
      this.skip();
    }
    const r = ok(await run(['node', 'bfd.mjs'], app), 'bfd.mjs');
    assert.match(r.stdout, /bfd ok \(Up on thread \d+\)/);
  });

  it('a TypeScript consumer type-checks against the shipped declarations', async () => {
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules/@types')],
        },
        files: ['typed.ts'],
      }),
    );
    // skipLibCheck false: the package's own .d.ts files are checked too, so a broken declaration
    // fails here; typed.ts's @ts-expect-error fails the check if the types were ever \`any\`.
    ok(await run([join(ROOT, 'node_modules/.bin/tsc'), '-p', app], app, { timeoutMs: 60_000 }), 'tsc --noEmit');
  });

  it('podroute answers --help and --version, and decodes an MRT dump', async () => {
    const help = ok(await run([bin('podroute'), '--help'], app), 'podroute --help');
    assert.match(help.stdout, /^usage: podroute \[command\] \[flags\]\n/);
    assert.equal(ok(await run([bin('podroute'), '-h'], app), 'podroute -h').stdout, help.stdout);
    assert.equal(ok(await run([bin('podroute'), '--version'], app), 'podroute --version').stdout, `podroute ${VERSION}\n`);
    const mrt = ok(await run([bin('podroute'), 'mrt', join(ROOT, 'test/data/updates.20190101.0000.gz')], app), 'podroute mrt');
    const first = JSON.parse(mrt.stdout.slice(0, mrt.stdout.indexOf('\n'))) as { peer: string; message: { nlri: unknown } };
    assert.equal(first.peer, '80.77.16.114');
    assert.deepEqual(first.message.nlri, [{ prefix: '45.169.4.0/22' }]);
    assert.equal(mrt.stdout.trimEnd().split('\n').length, 54_471 + 43);
  });

  it('podroute-cni answers --help, --version and CNI_COMMAND=VERSION, and refuses a stray argument', async () => {
    const help = ok(await run([bin('podroute-cni'), '--help'], app), 'podroute-cni --help');
    assert.match(help.stdout, /CNI_COMMAND/);
    const version = ok(await run([bin('podroute-cni'), '--version'], app), 'podroute-cni --version');
    assert.match(version.stdout, new RegExp(`^podroute-cni ${VERSION.replace(/\./g, '\\.')}\nCNI spec versions: .*1\\.0\\.0`));
    const cni = ok(
      await run([bin('podroute-cni')], app, { env: { CNI_COMMAND: 'VERSION' }, input: '{"cniVersion":"1.0.0"}' }),
      'CNI VERSION',
    );
    const answer = JSON.parse(cni.stdout) as { cniVersion: string; supportedVersions: string[] };
    assert.equal(answer.cniVersion, '1.0.0');
    assert.ok(answer.supportedVersions.includes('1.0.0'), `supportedVersions ${answer.supportedVersions.join(', ')} lacks 1.0.0`);
    // A runtime's error path: no CNI_COMMAND gives the CNI error object and exit 1.
    const bad = await run([bin('podroute-cni')], app, { input: '{}' });
    assert.equal(bad.code, 1);
    assert.match((JSON.parse(bad.stdout) as { msg: string }).msg, /CNI_COMMAND/);
    const stray = await run([bin('podroute-cni'), 'ADD'], app);
    assert.equal(stray.code, 2);
    assert.match(stray.stderr, /unknown argument "ADD"/);
  });

  it('npm install builds the CNI shim, which runs the Node plugin (podroute-cni-node) when no agent listens', async function () {
    const shim = join(app, 'node_modules/podroute/cni/shim/podroute-cni');
    if (!existsSync(shim)) {
      console.log('      skipped: the shim did not build at install (no C compiler)');
      this.skip();
    }
    const env = { CNI_COMMAND: 'VERSION', PODROUTE_CNI_SOCKET: join(tmp, 'no-agent.sock') };
    const viaShim = ok(await run([shim], app, { env, input: '{"cniVersion":"1.0.0"}' }), 'the shim, CNI VERSION');
    const viaNode = ok(await run([bin('podroute-cni-node')], app, { env, input: '{"cniVersion":"1.0.0"}' }), 'podroute-cni-node');
    assert.equal(viaShim.stdout, viaNode.stdout);
    assert.equal((JSON.parse(viaShim.stdout) as { cniVersion: string }).cniVersion, '1.0.0');
  });
});
