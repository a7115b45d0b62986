// The paths a daemon's configuration names: /proc and /sys refused by the field, through a
// symbolic link too, and directories made in a bounded number of steps, where Node's recursive
// mkdir loops for ever on procfs.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../../lib/bgpd/fields.js';
import { checkedFile, checkedPath } from '../../../lib/bgpd/paths.js';

const refusedAs = (message: RegExp) => (e: unknown) => {
  assert.ok(e instanceof ConfigError, String(e));
  assert.match(e.message, message);
  return true;
};

describe('bgpd: paths in a configuration', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-paths-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses /proc and /sys by the field, as written, by a detour or through a link', () => {
    for (const [path, tree] of [
      ['/proc', '/proc'],
      ['/proc/podroute/state', '/proc'],
      ['/sys/podroute', '/sys'],
      ['//proc/podroute', '/proc'],
      ['/run/../proc/podroute', '/proc'],
      ['/dev/fd/podroute', '/proc'],
    ])
      assert.throws(
        () => checkedPath(path, 'gracefulRestart.stateDir'),
        refusedAs(new RegExp(`^gracefulRestart\\.stateDir: .* is under ${tree}, `)),
        path,
      );
    const link = join(dir, 'to-proc');
    symlinkSync('/proc/self', link);
    assert.throws(() => checkedPath(join(link, 'x'), 'control'), refusedAs(/^control: .*to-proc\/x \(\/proc\/\d+\/x\) is under \/proc/));
  });

  it('takes any other path as written, and refuses what is not one', () => {
    for (const path of ['/run/podroute', '/var/lib/podroute/state', 'relative/dir', '/processes', '/system'])
      assert.equal(checkedPath(path, 'f'), path);
    assert.throws(() => checkedPath('', 'f', 'a directory path'), refusedAs(/^f: "" is not a directory path$/));
    assert.throws(() => checkedPath(7, 'f', 'a socket path'), refusedAs(/^f: 7 is not a socket path$/));
    assert.throws(() => checkedPath('/run/a\0b', 'f'), refusedAs(/^f: .* holds a NUL byte$/));
  });

  it('a key file is a regular file when it is there; a missing one is left to the reader', () => {
    const key = join(dir, 'key');
    writeFileSync(key, 'secret\n');
    assert.equal(checkedFile(key, 'password.file'), key);
    assert.equal(checkedFile(join(dir, 'missing'), 'password.file'), join(dir, 'missing'));
    assert.throws(() => checkedFile(dir, 'password.file'), refusedAs(/^password\.file: .* is not a regular file$/));
    assert.throws(() => checkedFile('/dev/null', 'password.file'), refusedAs(/is not a regular file$/));
    assert.throws(
      () => checkedFile('/proc/self/environ', 'password.file'),
      refusedAs(/^password\.file: \/proc\/self\/environ is under \/proc, /),
    );
  });
});
