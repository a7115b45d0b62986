// The graceful-restart marker under any umask: its folder is made 0755 and the marker 0600, so
// no other user can forge a crash (peers told to keep stale routes) or hide one; a state folder
// another user owns is refused, naming it.
import assert from 'node:assert/strict';
import { lstatSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { openRunMarker } from '../../../lib/bgpd/graceful-restart.js';
import { NOBODY, nobodysFolder, nodeAsNobody, reachableTempDir, underUmask } from '../../support/nobody.js';

const mode = (p: string) => (lstatSync(p).mode & 0o7777).toString(8);

describe('bgpd graceful restart: the run marker', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = reachableTempDir('gr');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('under umask 000 the state folder is 0755 and the marker 0600; nobody can neither replace nor remove it', () => {
    const stateDir = join(dir, 'run', 'podroute');
    const marker = underUmask(0o000, () => openRunMarker(stateDir, 'bgp-10.0.0.1', () => assert.fail('warned')));
    assert.equal(marker.restarted, false, 'a first start is not a restart');
    assert.equal(marker.file, join(stateDir, 'bgp-10.0.0.1.running'));
    assert.equal(mode(join(dir, 'run')), '755', 'the folder above the state folder');
    assert.equal(mode(stateDir), '755', 'the state folder');
    assert.equal(mode(marker.file!), '600', 'the marker');
    assert.equal(JSON.parse(readFileSync(marker.file!, 'utf8')).pid, process.pid);
    const r = nodeAsNobody(
      `const fs = require('fs'); const f = process.argv[1]; const out = [];
       for (const [what, fn] of [['remove', () => fs.unlinkSync(f)], ['forge', () => fs.writeFileSync(f + '.x', '{}')]])
         try { fn(); out.push(what + ': done'); } catch (e) { out.push(what + ': ' + e.code); }
       console.log(out.join(', '));`,
      marker.file!,
    );
    assert.equal(r.stdout.trim(), 'remove: EACCES, forge: EACCES', `as nobody: ${r.stdout}${r.stderr}`);
    // The next start finds it: the last run did not stop cleanly.
    assert.equal(openRunMarker(stateDir, 'bgp-10.0.0.1', () => undefined).restarted, true, 'the marker was not found again');
  });

  it('a state folder owned by nobody is refused naming its path, owner and mode', () => {
    const theirs = nobodysFolder(join(dir, 'state'));
    assert.throws(() => openRunMarker(theirs, 'bgp-10.0.0.1', () => undefined), {
      name: 'ConfigError',
      message: new RegExp(`^gracefulRestart\\.stateDir: ${theirs} is owned by uid ${NOBODY} \\(nobody\\) with mode 0755`),
    });
  });
});
