// Private folders and files: the modes asked for whatever the umask, and a folder another user
// could tamper with refused, checked with a real unprivileged user (nobody) doing the tampering.
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { privateFolder, UnsafePathError, writePrivateFile } from '../../../lib/files/index.js';
import { NOBODY, nobodysFolder, nodeAsNobody, reachableTempDir, underUmask } from '../../support/nobody.js';

const mode = (p: string) => lstatSync(p).mode & 0o7777;

describe('private folders and files (lib/files)', () => {
  let dir: string;
  beforeEach(() => {
    dir = reachableTempDir('files');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a folder under /proc or /sys, as written or through a link, is refused at once, where recursive mkdir loops', () => {
    const started = Date.now();
    for (const path of ['/proc/podroute', '/sys/podroute/x', '/dev/fd/podroute/x'])
      assert.throws(
        () => privateFolder(path, 'stateDir'),
        (e: Error) => e instanceof UnsafePathError && /^stateDir: .* is under \/(proc|sys)/.test(e.message),
        path,
      );
    assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);
  });

  it("under umask 000 every folder made is 0755 and the daemon's own, and a file is 0600", () => {
    const folder = join(dir, 'a', 'b', 'c');
    const file = join(folder, 'state.json');
    underUmask(0o000, () => writePrivateFile(file, '{"x":1}\n', 'stateDir'));
    for (const p of [join(dir, 'a'), join(dir, 'a', 'b'), folder]) {
      assert.equal(mode(p).toString(8), '755', `${p} is ${mode(p).toString(8)}`);
      assert.equal(lstatSync(p).uid, process.geteuid?.(), `${p} is not the daemon's user's`);
    }
    assert.equal(mode(file).toString(8), '600', `${file} is ${mode(file).toString(8)}`);
    assert.equal(readFileSync(file, 'utf8'), '{"x":1}\n');
    // Under a tight umask the modes are the ones asked for too, not tighter.
    const other = join(dir, 'tight', 'f');
    underUmask(0o077, () => writePrivateFile(other, 'x', 'stateDir'));
    assert.equal(mode(join(dir, 'tight')).toString(8), '755', 'a folder made under umask 077');
  });

  it('as nobody, a file written in a made folder cannot be moved aside, replaced or read', () => {
    const file = join(dir, 'run', 'identity.json');
    underUmask(0o000, () => writePrivateFile(file, 'secret\n', 'identity'));
    const r = nodeAsNobody(
      `const fs = require('fs'); const f = process.argv[1]; const out = [];
       for (const [what, fn] of [['rename', () => fs.renameSync(f, f + '.old')], ['write', () => fs.writeFileSync(f + '.new', 'x')], ['read', () => fs.readFileSync(f)]])
         try { fn(); out.push(what + ': done'); } catch (e) { out.push(what + ': ' + e.code); }
       console.log(out.join(', '));`,
      file,
    );
    assert.equal(r.stdout.trim(), 'rename: EACCES, write: EACCES, read: EACCES', `nobody: ${r.stdout}${r.stderr}`);
    assert.equal(readFileSync(file, 'utf8'), 'secret\n', 'the file is changed');
  });

  it('a file is replaced whole, never written through a link planted at its path, and leaves no temp file', () => {
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'untouched');
    mkdirSync(join(dir, 'state'));
    const file = join(dir, 'state', 'marker');
    symlinkSync(victim, file);
    writePrivateFile(file, 'new', 'stateDir');
    assert.equal(readFileSync(victim, 'utf8'), 'untouched', 'the write went through the link');
    assert.ok(lstatSync(file).isFile(), 'the link is still there');
    assert.deepEqual(readdirSync(join(dir, 'state')), ['marker']);
  });

  it('a folder that exists and is owned by nobody, or writable by group or others, is refused naming path, owner and mode', () => {
    const theirs = nobodysFolder(join(dir, 'theirs'));
    assert.throws(() => privateFolder(theirs, 'cniSocket'), {
      name: 'UnsafePathError',
      message: `cniSocket: ${theirs} is owned by uid ${NOBODY} (nobody) with mode 0755: that user could replace what is in it; make it root's (or this daemon's user's)`,
    });
    const open = join(dir, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    assert.throws(
      () => privateFolder(join(open, 'sub'), 'control'),
      (e: Error) => {
        assert.ok(e instanceof UnsafePathError, `${e.name}: ${e.message}`);
        assert.match(
          e.message,
          new RegExp(`^control: ${open} is owned by uid 0 \\(root\\) with mode 0777: group or others may write in it`),
        );
        return true;
      },
    );
    assert.throws(() => statSync(join(open, 'sub')), /ENOENT/, 'a folder was made inside a refused one');
    // Sticky, as /tmp: others may add files but not move ours; accepted.
    chmodSync(open, 0o1777);
    privateFolder(join(open, 'sub'), 'control');
    assert.equal(mode(join(open, 'sub')).toString(8), '755', 'the folder made in a sticky one');
  });

  it('a folder higher up that nobody owns is refused: nobody could rename the whole branch', () => {
    const theirs = nobodysFolder(join(dir, 'home'));
    mkdirSync(join(theirs, 'run'));
    assert.throws(() => privateFolder(join(theirs, 'run'), 'stateDir'), {
      message: new RegExp(`^stateDir: ${theirs} is owned by uid ${NOBODY} \\(nobody\\)`),
    });
  });

  it('through a symlink: the link must be trusted, and so must every folder of the real path', () => {
    const theirs = nobodysFolder(join(dir, 'theirs'));
    const link = join(dir, 'run');
    symlinkSync(theirs, link);
    assert.throws(() => privateFolder(join(link, 'podroute'), 'control'), {
      message: new RegExp(`^control: ${theirs} is owned by uid ${NOBODY} \\(nobody\\)`),
    });
    // A root link to a root folder, as /var/run -> /run, is fine.
    const real = join(dir, 'real');
    mkdirSync(real, { mode: 0o755 });
    const good = join(dir, 'varrun');
    symlinkSync(real, good);
    privateFolder(join(good, 'podroute'), 'control');
    assert.ok(statSync(join(real, 'podroute')).isDirectory(), 'the folder is not made through the link');
  });

  it('a folder that cannot be made is a plain failure, not a refusal', () => {
    writeFileSync(join(dir, 'file'), '');
    assert.throws(
      () => privateFolder(join(dir, 'file', 'sub'), 'stateDir'),
      (e: Error) => !(e instanceof UnsafePathError) && /^stateDir: .*\/file is not a folder$/.test(e.message),
    );
  });
});
