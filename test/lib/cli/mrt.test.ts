import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const cli = (...args: string[]) => spawnSync('node', ['bin/podroute.js', ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });

describe('podroute CLI', function () {
  this.timeout(60_000);

  it('prints usage on help and refuses an unknown command', () => {
    const help = cli('help');
    assert.equal(help.status, 0);
    assert.match(help.stdout, /mrt <file>/);
    const bad = cli('frobnicate');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /unknown command "frobnicate"/);
  });

  it('mrt prints every record of a dump as a JSON line', () => {
    const r = cli('mrt', 'test/data/updates.20190101.0000.gz');
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(lines.length, 54_471 + 43, 'every message and every state change');
    assert.equal(lines.filter((l) => l.message?.type === 'update').length, 54_107);
    assert.equal(lines.filter((l) => l.error).length, 0);
    assert.deepEqual(lines[0].message.nlri, [{ prefix: '45.169.4.0/22' }]);
    assert.equal(lines[0].peer, '80.77.16.114');
  });

  it('mrt names the file it cannot read', () => {
    const r = cli('mrt', '/nonexistent.mrt');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /nonexistent\.mrt/);
  });
});
