// `podroute node run` started under umask 000, then a real unprivileged user (nobody) trying to
// take the CNI runtime's calls: the agent's socket folders are 0755 and its own whatever the
// umask, so nobody can neither move the socket aside nor bind one in its place; and a folder
// nobody made first, or one anyone may write in, is refused at start naming its path, owner and mode.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../../bgp/session/free-port.js';
import { callControl } from '../../../lib/bgpd/control.js';
import { podroute } from '../../support/daemon.js';
import { NOBODY, nobodysFolder, nodeAsNobody, reachableTempDir } from '../../support/nobody.js';
import { waitFor } from '../../support/wait.js';

const BIN = fileURLToPath(new URL('../../../bin/podroute.js', import.meta.url));
/** `node run` (memory datastore and dataplane) exits 1 before it starts, saying `message`. */
async function refused(flags: string[], message: RegExp): Promise<void> {
  const base = [
    'node',
    'run',
    '--name',
    'n1',
    '--ip',
    '10.0.0.1/24',
    '--dataplane',
    'memory',
    '--datastore',
    'memory',
    '--health-port',
    '0',
  ];
  // A loaded machine takes a while to start Node: the bound is generous, the refusal comes first.
  const exit = await podroute([...base, ...flags], 45_000);
  assert.equal(exit.code, 1, exit.stderr);
  assert.match(exit.stderr, message);
  assert.doesNotMatch(exit.stderr, /"event":"started"/);
}

const mode = (p: string) => (lstatSync(p).mode & 0o7777).toString(8);

describe('node run under umask 000: its sockets and their folders, against a real other user', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    dir = reachableTempDir('node-umask');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('folders 0755 and owned by root, sockets 0660; nobody cannot move the CNI socket aside or bind another', async () => {
    const control = join(dir, 'run', 'podroute', 'node.sock');
    const cni = join(dir, 'cni', 'run', 'cni.sock');
    const flags = ['--name', 'n1', '--ip', '10.0.0.1/24', '--dataplane', 'memory', '--datastore', 'memory'];
    const ports = ['--bgp-port', String(await freePort()), '--health-port', '0'];
    const args = [BIN, 'node', 'run', ...flags, ...ports, '--control', control, '--cni-socket', cni];
    const agent = spawn('sh', ['-c', 'umask 000; exec "$@"', 'sh', process.execPath, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    agent.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    try {
      await waitFor(
        () => (agent.exitCode === null ? callControl(control, 'GET', '/status').catch(() => undefined) : Promise.reject(new Error(stderr))),
        {
          what: 'the agent answering on its control socket',
          until: (s) => s !== undefined,
          timeoutMs: 60_000,
          intervalMs: 200,
        },
      );
      // What was done to the runtime: the socket renamed, a socket of nobody's bound at its path.
      const r = nodeAsNobody(
        `const fs = require('fs'), net = require('net'); const p = process.argv[1]; const out = [];
         try { fs.renameSync(p, p + '.aside'); out.push('rename: done'); } catch (e) { out.push('rename: ' + e.code); }
         const s = net.createServer().on('error', (e) => { console.log(out.concat('bind: ' + e.code).join(', ')); process.exit(0); });
         s.listen(p, () => { console.log(out.concat('bind: done').join(', ')); process.exit(0); });`,
        cni,
      );
      // The path is taken (EADDRINUSE): nobody's bind fails whatever the order the kernel checks in.
      assert.match(r.stdout.trim(), /^rename: EACCES, bind: (EACCES|EADDRINUSE)$/, `as nobody: ${r.stdout}${r.stderr}`);
      assert.equal(lstatSync(cni).uid, 0, 'the CNI socket is no longer the one the agent made');
      assert.equal(existsSync(`${cni}.aside`), false, 'the CNI socket was moved aside');
      for (const folder of [join(dir, 'run'), join(dir, 'run', 'podroute'), join(dir, 'cni'), join(dir, 'cni', 'run')]) {
        assert.equal(mode(folder), '755', `${folder} (made under umask 000)`);
        assert.equal(lstatSync(folder).uid, 0, `${folder} is not root's`);
      }
      for (const socket of [control, cni]) assert.equal(mode(socket), '660', `${socket} (made under umask 000)`);
    } finally {
      agent.kill('SIGINT');
      await new Promise((resolve) => (agent.exitCode === null ? agent.once('exit', resolve) : resolve(undefined)));
    }
  });

  it('a socket folder nobody made first is refused at start, naming its path, owner and mode', async () => {
    const theirs = nobodysFolder(join(dir, 'theirs'));
    const message = `cniSocket: ${theirs} is owned by uid ${NOBODY} \\(nobody\\) with mode 0755`;
    await refused(['--control', join(dir, 'n1.sock'), '--cni-socket', join(theirs, 'cni.sock')], new RegExp(message));
    assert.equal(existsSync(join(theirs, 'cni.sock')), false, 'a socket was made in a folder nobody owns');
  });

  it('a control socket in a folder anyone may write in is refused at start', async () => {
    const open = join(dir, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const message = `control: ${open} is owned by uid 0 \\(root\\) with mode 0777: group or others may write in it`;
    await refused(['--cni-socket', 'off', '--control', join(open, 'node.sock')], new RegExp(message));
    assert.equal(existsSync(join(open, 'node.sock')), false, 'the control socket was made in a folder anyone may write in');
  });
});
