// `node run` with a configuration the agent cannot start from exits non-zero, naming the field,
// without ever serving its health port or leaving its control socket behind.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The same helpers as test/bgpd/startup.test.ts (test files export nothing; mocha would run them twice).
interface Exit {
  code: number | null;
  stderr: string;
}

/** Runs `podroute ...args` to its end; kills it and fails if it is still up after `ms`. */
function podroute(args: string[], ms = 10_000): Promise<Exit> {
  const child = spawn(process.execPath, ['bin/podroute.js', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`still running after ${ms} ms; stderr: ${stderr}`));
    }, ms);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

/** A TCP port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether something accepts connections on 127.0.0.1:port (answered within a second). */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (up: boolean) => {
      socket.destroy();
      resolve(up);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

describe('node run: a configuration it cannot start from is refused before it listens', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-node-startup-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function refused(flags: string[], message: RegExp): Promise<void> {
    const port = await freePort();
    const control = join(dir, `node-${port}.sock`);
    const args = ['node', 'run', '--name', 'n1', '--dataplane', 'memory', '--datastore', 'memory'];
    const exit = await podroute([...args, '--control', control, '--health-port', String(port), ...flags]);
    assert.equal(exit.code, 1, exit.stderr);
    assert.match(exit.stderr, message);
    assert.doesNotMatch(exit.stderr, /"event":"started"/);
    assert.equal(await listening(port), false);
    assert.equal(existsSync(control), false, 'the control socket was left behind');
  }

  it('ipv4Address without a prefix length', async () => {
    await refused(['--ip', '10.0.0.1'], /ipv4Address: "10\.0\.0\.1" is not an address with a prefix length/);
  });

  it('ipv4Address that is IPv6', async () => {
    await refused(['--ip', 'fd00::1/64'], /ipv4Address: "fd00::1\/64" is not an IPv4 address/);
  });

  it('an agent whose start() fails (no interface to autodetect from) closes what it opened', async () => {
    await refused(['--ip-autodetection-method', 'interface=podroute-none0'], /podroute-none0/);
  });

  it('an AS number out of range', async () => {
    await refused(['--ip', '10.0.0.1/24', '--as', '4294967296'], /asNumber: 4294967296/);
  });
});
