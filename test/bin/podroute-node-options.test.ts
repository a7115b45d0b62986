// bin/podroute.js run as a unit file or the image's CMD runs it (by its first line, not as
// `node bin/podroute.js`) gives Node.js the options the agent is measured with: a `node` ahead in
// PATH records what it is asked to run, then runs the real one.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/podroute.js', import.meta.url));

describe('bin/podroute.js', () => {
  it('starts Node.js with the agent options of its first line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'podroute-node-options-'));
    try {
      const seen = join(dir, 'argv');
      writeFileSync(join(dir, 'node'), `#!/bin/sh\nprintf '%s\\n' "$@" > ${seen}\nexec ${process.execPath} "$@"\n`);
      chmodSync(join(dir, 'node'), 0o755);
      const out = execFileSync(BIN, ['--version'], { env: { ...process.env, PATH: `${dir}:${process.env.PATH}` }, encoding: 'utf8' });
      assert.match(out, /^podroute \d/, 'podroute --version answers through its first line');
      const argv = readFileSync(seen, 'utf8').split('\n');
      assert.ok(argv.includes('--single-threaded-gc'), `node was started with ${JSON.stringify(argv)}`);
      assert.ok(argv.indexOf('--single-threaded-gc') < argv.indexOf(BIN), "the option is Node.js's, before the script");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
