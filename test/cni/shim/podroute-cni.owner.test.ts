// Whom the C shim hands a runtime's call to: a socket, or a folder, of another user is refused
// before anything is sent, with a CNI error naming the path and the owner found; so is a
// symlink, and a socket file of root's that a process of another user listens behind. Each
// "agent" here is a real listener that answers every call with an address of its choosing, as
// the unprivileged user who took over cni.sock did.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { buildShimOrSkip, SHIM } from '../../support/cni-shim.js';
import { NOBODY, nobodyListens, nobodysFolder, reachableTempDir } from '../../support/nobody.js';

const FORGED = 'PODROUTE-CNI 1 0\n{"cniVersion":"1.0.0","ips":[{"address":"6.6.6.6/32"}]}\n';

interface ShimRun {
  code: number;
  stdout: string;
  json: { code?: number; msg?: string } | undefined;
}

/**
 * The shim run as root's runtime runs it (or through `prefix`, as another user), with the socket
 * given; asynchronously, so a listener in this process can answer it.
 */
function shim(socket: string, prefix: readonly string[] = [], command = 'ADD'): Promise<ShimRun> {
  const env = { PATH: '/usr/bin:/bin', PODROUTE_CNI_SOCKET: socket, CNI_COMMAND: command, CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0' };
  const argv = [...prefix, SHIM];
  const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['pipe', 'pipe', 'inherit'] });
  // A shim that refuses the socket exits before it reads its config: the pipe may be closed.
  child.stdin.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
  });
  child.stdin.end('{"cniVersion":"1.0.0","name":"k8s-pod-network","type":"podroute-cni"}');
  let stdout = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      let json: ShimRun['json'];
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code: code ?? -1, stdout, json });
    }),
  );
}

function refusedNaming(r: ShimRun, path: string, owner: RegExp): void {
  assert.equal(r.code, 1, `the call went through: ${r.stdout}`);
  assert.doesNotMatch(r.stdout, /6\.6\.6\.6/, 'the forged answer was passed on');
  assert.equal(r.json?.code, 5, `not a CNI error: ${r.stdout}`);
  assert.ok(r.json?.msg?.includes(path), `the message does not name ${path}: ${r.json?.msg}`);
  assert.match(r.json?.msg ?? '', owner);
}

function rootListens(path: string, answer: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer((c) => c.end(answer));
    s.once('error', reject);
    s.listen(path, () => resolve(s));
  });
}

describe("CNI shim: it talks only to a socket root (or the shim's own user) owns", function () {
  this.timeout(60_000);
  let dir: string;
  before(function () {
    buildShimOrSkip(this);
    dir = reachableTempDir('shim-owner');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a socket owned by nobody, even in a sticky folder as /tmp, is refused naming path and owner', async () => {
    const sticky = join(dir, 'tmp');
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    const sock = join(sticky, 'cni.sock');
    const theirs = await nobodyListens(sock, FORGED);
    try {
      refusedNaming(await shim(sock), sock, new RegExp(`is owned by uid ${NOBODY} \\(nobody\\)`));
    } finally {
      theirs.stop();
    }
  });

  it('a folder owned by nobody is refused, whoever owns the socket in it', async () => {
    const folder = nobodysFolder(join(dir, 'theirs'));
    const sock = join(folder, 'cni.sock');
    const server = await rootListens(sock, FORGED);
    try {
      refusedNaming(await shim(sock), folder, new RegExp(`the socket's folder\\) is owned by uid ${NOBODY} \\(nobody\\)`));
    } finally {
      server.close();
    }
  });

  it('a folder anyone may write in (not sticky) is refused', async () => {
    const open = join(dir, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const sock = join(open, 'cni.sock');
    const server = await rootListens(sock, FORGED);
    try {
      refusedNaming(await shim(sock), open, /may be written by group or others; it is owned by uid 0 \(root\)/);
    } finally {
      server.close();
    }
  });

  it('a symlink to a socket is refused', async () => {
    const real = join(dir, 'real.sock');
    const server = await rootListens(real, FORGED);
    const link = join(dir, 'link.sock');
    symlinkSync(real, link);
    try {
      refusedNaming(await shim(link), link, /is a symlink owned by uid 0 \(root\)/);
    } finally {
      server.close();
    }
  });

  it("a socket file made root's after nobody bound it: the listener itself is checked", async () => {
    // Bound by nobody in a sticky folder (root's, so the folder passes), then given to root.
    const sticky = join(dir, 'tmp2');
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    const sock = join(sticky, 'chowned.sock');
    const theirs = await nobodyListens(sock, FORGED);
    try {
      chownSync(sock, 0, 0);
      refusedNaming(await shim(sock), sock, new RegExp(`is answered by a process of uid ${NOBODY} \\(nobody\\)`));
    } finally {
      theirs.stop();
    }
  });

  it("root's own socket in root's folder gets the call and its answer is passed on", async () => {
    const sock = join(dir, 'agent.sock');
    const server = await rootListens(sock, 'PODROUTE-CNI 1 0\n{"answer":"from root"}\n');
    try {
      const r = await shim(sock);
      assert.equal(r.code, 0, r.stdout);
      assert.equal(r.stdout, '{"answer":"from root"}\n');
    } finally {
      server.close();
    }
    // The user the shim runs as may own its agent's socket too (a rootless runtime and agent).
    const mine = nobodysFolder(join(dir, 'mine'));
    const theirs = await nobodyListens(join(mine, 'cni.sock'), 'PODROUTE-CNI 1 0\n{"answer":"from nobody"}\n');
    try {
      const r = await shim(
        join(mine, 'cni.sock'),
        ['setpriv', '--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups'],
        'VERSION',
      );
      assert.equal(r.stdout, '{"answer":"from nobody"}\n', `the shim run as nobody: ${r.stdout}`);
    } finally {
      theirs.stop();
    }
  });
});
