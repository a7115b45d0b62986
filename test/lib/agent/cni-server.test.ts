// The agent's CNI socket on its own (no namespaces: STATUS and VERSION touch no kernel): the
// shim's framing, the limits, the socket's mode, the environment a call may carry, and the warm
// datastore client: one Redis connection for many calls, a fresh one after the store came back.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { type AddressInfo, connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callEnvironment, cniSocketPath, DEFAULT_CNI_SOCKET, serveCni, type CniServer } from '../../../lib/agent/cni-server.js';
import { buildShimOrSkip, SHIM } from '../../support/cni-shim.js';
import { startRedis, type RedisServer } from '../../support/redis.js';

/** One call through the shim: exit code and stdout. */
function shim(socket: string, env: Record<string, string>, stdin: string): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      SHIM,
      [],
      { env: { PATH: process.env.PATH, PODROUTE_CNI_SOCKET: socket, ...env }, timeout: 30_000 },
      (e, stdout) => resolve({ code: e ? (typeof e.code === 'number' ? e.code : -1) : 0, stdout }),
    );
    child.stdin!.end(stdin);
  });
}

/** Raw bytes to the socket, as a shim of another framing would send them; the whole answer back. */
function raw(socket: string, bytes: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(socket);
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? undefined : reject(e)));
    s.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    s.end(bytes);
  });
}

describe('agent CNI socket (the C shim, real Redis)', function () {
  this.timeout(60_000);
  let dir: string;
  let redis: RedisServer;
  let server: CniServer;
  let socket: string;
  const status = () =>
    JSON.stringify({ cniVersion: '1.1.0', name: 'net', type: 'podroute-cni', datastore: { type: 'redis', url: redis.url } });
  const commandClients = () =>
    execFileSync('redis-cli', ['-p', String(redis.port), 'CLIENT', 'LIST'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes('name=podroute-command')).length;

  before(async function () {
    buildShimOrSkip(this);
    dir = mkdtempSync(join(tmpdir(), 'podroute-cnisock-'));
    socket = join(dir, 'run', 'cni.sock');
    redis = await startRedis();
    server = await serveCni(socket);
  });
  after(async () => {
    await server?.close();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('makes its socket 0660, in a folder it creates', () => {
    assert.equal(statSync(socket).mode & 0o777, 0o660);
  });

  it('a socket another server answers on, or one it cannot bind, fails with the field named', async () => {
    await assert.rejects(serveCni(socket), /cniSocket: .*: another daemon answers on it/);
    // Longer than sun_path holds: the bind fails, which must fail the start, not only be logged.
    await assert.rejects(serveCni(join(dir, 'x'.repeat(120), 'cni.sock')), /^Error: cniSocket: /);
    assert.equal(statSync(socket).isSocket(), true, 'the serving socket was kept');
  });

  it('runs many calls, side by side too, on one datastore connection', async () => {
    for (let i = 0; i < 4; i++) assert.deepEqual(await shim(socket, { CNI_COMMAND: 'STATUS' }, status()), { code: 0, stdout: '' });
    const together = await Promise.all([1, 2, 3, 4, 5, 6].map(() => shim(socket, { CNI_COMMAND: 'STATUS' }, status())));
    assert.deepEqual(
      together.map((r) => r.code),
      [0, 0, 0, 0, 0, 0],
    );
    assert.equal(commandClients(), 1);
  });

  it('an unreachable datastore is error 50 for STATUS; once it is back, the next call connects afresh', async () => {
    await redis.kill();
    const down = await shim(socket, { CNI_COMMAND: 'STATUS' }, status());
    assert.equal(down.code, 1);
    assert.equal(JSON.parse(down.stdout).code, 50, down.stdout);
    await redis.restart();
    const up = await shim(socket, { CNI_COMMAND: 'STATUS' }, status());
    assert.deepEqual(up, { code: 0, stdout: '' });
    assert.equal(commandClients(), 1);
  });

  it('refuses a request in another framing (4) or over 1 MiB (6), with a CNI error', async () => {
    const other = await raw(socket, Buffer.from('CNI 2\nCNI_COMMAND=VERSION\0\0{}'));
    assert.match(other, /^PODROUTE-CNI 1 1\n/);
    assert.equal(JSON.parse(other.split('\n')[1]!).code, 4);
    const big = await shim(socket, { CNI_COMMAND: 'ADD' }, 'x'.repeat(1024 * 1024 + 10));
    assert.equal(big.code, 1);
    assert.equal(JSON.parse(big.stdout).code, 6, big.stdout);
    // The server is still there for the next call.
    const v = await shim(socket, { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}');
    assert.equal(v.code, 0);
    assert.equal(JSON.parse(v.stdout).cniVersion, '1.0.0');
  });

  it('a call not answered in time gets error 11, try again later', async () => {
    // A "datastore" that accepts and never answers: the call waits on its connect.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    const slow = await serveCni(join(dir, 'slow.sock'), { callTimeoutMs: 300 });
    try {
      const conf = JSON.stringify({
        cniVersion: '1.1.0',
        name: 'net',
        type: 'podroute-cni',
        datastore: { type: 'redis', url: `redis://127.0.0.1:${port}` },
      });
      const t0 = Date.now();
      const r = await shim(join(dir, 'slow.sock'), { CNI_COMMAND: 'STATUS' }, conf);
      assert.equal(r.code, 1);
      assert.equal(JSON.parse(r.stdout).code, 11, r.stdout);
      assert.match(JSON.parse(r.stdout).msg, /has not finished the call in 300 ms/);
      assert.ok(Date.now() - t0 < 3000, `answered after ${Date.now() - t0} ms`);
    } finally {
      await slow.close(6000);
      silent.close();
    }
  });

  it('a call carries the CNI_* and PODROUTE_* variables and NODENAME, nothing else of the caller', () => {
    assert.deepEqual(
      callEnvironment(['CNI_COMMAND=ADD', 'PODROUTE_CNI_STATE_DIR=/x', 'NODENAME=n1', 'HOME=/root', 'PATH=/bin', 'A=b=c', 'junk']),
      {
        CNI_COMMAND: 'ADD',
        PODROUTE_CNI_STATE_DIR: '/x',
        NODENAME: 'n1',
      },
    );
  });

  it('the socket setting: a path, off, or the default as root only', () => {
    assert.equal(cniSocketPath(undefined, true), DEFAULT_CNI_SOCKET);
    assert.equal(cniSocketPath(undefined, false), undefined);
    assert.equal(cniSocketPath('off', true), undefined);
    assert.equal(cniSocketPath('/tmp/x.sock', false), '/tmp/x.sock');
    assert.throws(() => cniSocketPath('x.sock', true), /cniSocket: "x.sock" must be an absolute path or off/);
  });
});
