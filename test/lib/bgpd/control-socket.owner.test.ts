// Where a daemon's control socket may live: its folder is made 0755 and the daemon's own whatever
// the umask, and a folder or a socket file that another user owns is refused before the daemon
// listens, naming the path and the owner: whoever can rename the socket can put their own in
// its place and answer the daemon's clients.
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { claimSocketPath, DEFAULT_CONTROL_MODE, resolveControlSocket } from '../../../lib/bgpd/control-socket.js';
import { NOBODY, nobodyListens, nobodysFolder, reachableTempDir, underUmaskAsync } from '../../support/nobody.js';

const mode = (p: string) => (lstatSync(p).mode & 0o7777).toString(8);

describe('bgpd control socket: whose folder it is in', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = reachableTempDir('ctl-owner');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("under umask 000 a missing folder is made 0755 and the daemon's own", async () => {
    const path = join(dir, 'run', 'bgpd', 'bgpd.sock');
    await underUmaskAsync(0o000, () => resolveControlSocket({ mode: DEFAULT_CONTROL_MODE }, path));
    for (const f of [join(dir, 'run'), join(dir, 'run', 'bgpd')]) {
      assert.equal(mode(f), '755', `${f} made under umask 000`);
      assert.equal(lstatSync(f).uid, process.geteuid?.(), `${f} is not the daemon's`);
    }
  });

  it('a folder owned by nobody is refused naming its path, owner and mode', async () => {
    const theirs = nobodysFolder(join(dir, 'theirs'));
    await assert.rejects(resolveControlSocket({ mode: DEFAULT_CONTROL_MODE }, join(theirs, 'bgpd.sock')), {
      name: 'ConfigError',
      message: new RegExp(`^control: ${theirs} is owned by uid ${NOBODY} \\(nobody\\) with mode 0755`),
    });
  });

  it('a socket file nobody left at the path, live or not, is refused and left alone', async () => {
    const sticky = join(dir, 'tmp');
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    const path = join(sticky, 'bgpd.sock');
    const theirs = await nobodyListens(path, '');
    try {
      await assert.rejects(claimSocketPath(path, 'control'), {
        message: new RegExp(`^control: ${path} exists and is owned by uid ${NOBODY} \\(nobody\\)`),
      });
    } finally {
      theirs.stop();
    }
    await new Promise((r) => setTimeout(r, 300));
    // Dead now, but still not ours to replace.
    await assert.rejects(claimSocketPath(path, 'control'), { message: /is owned by uid 65534/ });
    assert.equal(lstatSync(path).uid, NOBODY, 'the socket of nobody was removed');
  });
});
