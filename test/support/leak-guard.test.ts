// The leak guard on a run that leaves an interval and a child behind: the run still ends, the
// leftovers are named, the child is killed by its PID, and the exit code is the tests' own.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execCommand } from '../../lib/lab/system.js';

const ROOT = join(fileURLToPath(import.meta.url), '../../..');

describe('leak guard', function () {
  this.timeout(60_000);

  it('ends a run that a test left holding an interval and a child, naming both and killing the child', async () => {
    const r = await execCommand(
      [
        process.execPath,
        join(ROOT, 'node_modules/mocha/bin/mocha.js'),
        '--no-config',
        '--node-option',
        'import=tsx',
        '--require',
        join(ROOT, 'test/support/leak-guard.ts'),
        join(ROOT, 'test/data/leak-guard/leaky.fixture.ts'),
      ],
      { timeoutMs: 45_000 },
    );
    assert.equal(r.code, 0, `the tests passed, so the exit code is 0: ${r.stderr}`);
    assert.match(r.stderr, /leak guard: the suite ended but something keeps the process alive/);
    assert.match(r.stderr, /interval 1000 ms: /);
    const child = /ChildProcess pid (\d+): sleep 300/.exec(r.stderr);
    assert.ok(child, `the child is named: ${r.stderr}`);
    // Gone, or a zombie its new parent has not reaped yet: either way no longer running.
    const stat = existsSync(`/proc/${child[1]}/stat`) ? readFileSync(`/proc/${child[1]}/stat`, 'utf8') : '';
    assert.ok(stat === '' || / Z /.test(stat), `the child was killed: ${stat}`);
  });
});
