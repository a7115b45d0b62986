// The README's library snippet, run as it is written: the block is taken from README.md, its
// `from 'podroute'` pointed at this checkout and its port at a free one (so that a busy port
// on the machine cannot fail it), then run by Node as a user's module. What it prints is
// what the README says it prints.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort } from '../../../bgp/session/free-port.js';

const ROOT = join(fileURLToPath(import.meta.url), '../../../..');

/** The first ```ts block after `marker` in README.md. */
function snippet(marker: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(marker);
  assert.ok(at >= 0, `README.md has no "${marker}"`);
  const m = /```ts\n([\s\S]*?)```/.exec(readme.slice(at));
  assert.ok(m, `no ts block after "${marker}" in README.md`);
  return m[1]!;
}

describe('README: the library section’s two speakers', function () {
  this.timeout(60_000);
  let dir: string;
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('runs as written: the session comes up, b learns the route, and prints it with its community as text', async () => {
    const code = snippet('Two speakers on one host');
    assert.match(code, /from 'podroute'/, 'the snippet imports the package as a user would');
    assert.match(code, /port: 1790/, 'the snippet names its port');
    const port = String(await freePort('127.0.0.41'));
    const runnable = code.replace(/from 'podroute'/g, `from '${pathToFileURL(join(ROOT, 'index.ts')).href}'`).replace(/\b1790\b/g, port);
    dir = mkdtempSync(join(tmpdir(), 'readme-'));
    const file = join(dir, 'two-speakers.mts');
    writeFileSync(file, runnable);
    const {
      stdout,
      stderr,
      code: exit,
    } = await new Promise<{ stdout: string; stderr: string; code: number }>((resolve) =>
      execFile('node', ['--import', 'tsx', file], { cwd: ROOT, timeout: 45_000 }, (e, stdout, stderr) =>
        resolve({ stdout, stderr, code: e ? ((e as { code?: number }).code ?? 1) : 0 }),
      ),
    );
    assert.equal(exit, 0, `the snippet failed: ${stderr}`);
    assert.match(stdout, /^a: up with 127\.0\.0\.42, hold time 9 s$/m, `a's peerUp line: ${stdout}`);
    assert.match(
      stdout,
      /^b: added 10\.1\.0\.0\/16 via 127\.0\.0\.41 from 127\.0\.0\.41 AS 65001, as-path 65001, origin igp, med 5, communities 65001:7$/m,
      `b's bestPaths line: ${stdout}`,
    );
    assert.match(stdout, /^10\.1\.0\.0\/16 via 127\.0\.0\.41 from 127\.0\.0\.41 AS 65001, as-path 65001, /m, 'the lookup, printed');
    const json = stdout.split('\n').find((l) => l.startsWith('[{'));
    assert.ok(json, `a line of JSON routes: ${stdout}`);
    const routes = JSON.parse(json) as { prefix: string; peer: { address: string }; attributes: { communities: string[] } }[];
    assert.deepEqual(
      routes.map((r) => [r.prefix, r.peer.address, r.attributes.communities]),
      [['10.1.0.0/16', '127.0.0.41', ['65001:7']]],
    );
    assert.match(stdout, /state: 'Established'/, 'peerStatus printed');
    assert.doesNotMatch(stderr, /refused/, 'no connection refused');
  });
});
