// `node run` with a configuration the agent cannot start from exits non-zero, naming the field,
// without ever serving its health port or leaving its control socket behind.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeRunRefused, podroute } from '../../support/daemon.js';

describe('node run: a configuration it cannot start from is refused before it listens', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-node-startup-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const refused = (flags: string[], message: RegExp) => nodeRunRefused(dir, flags, message);

  it('ipv4Address without a prefix length', async () => {
    await refused(['--ip', '10.0.0.1'], /ipv4Address: "10\.0\.0\.1" is not an address with a prefix length/);
  });

  it('ipv4Address that is IPv6', async () => {
    await refused(['--ip', 'fd00::1/64'], /ipv4Address: "fd00::1\/64" is not an IPv4 address/);
  });

  it('an agent whose start() fails (no interface to autodetect from) closes what it opened', async () => {
    await refused(['--ip-autodetection-method', 'interface=podroute-none0'], /podroute-none0/);
  });

  it('a CNI or control socket another process answers on is left to it', async () => {
    // Two agents on one node would take each other's CNI calls; a socket a killed agent left
    // behind answers nobody and is replaced (the other suites start agents over such leftovers).
    const path = join(dir, 'taken.sock');
    const other = createServer().listen(path);
    await once(other, 'listening');
    try {
      await refused(['--ip', '10.0.0.1/24', '--cni-socket', path], /cniSocket: .*taken\.sock: another daemon answers on it/);
      const exit = await podroute(['node', 'run', '--name', 'n1', '--dataplane', 'memory', '--datastore', 'memory', '--control', path]);
      assert.equal(exit.code, 1, exit.stderr);
      assert.match(exit.stderr, /control: .*taken\.sock: another daemon answers on it/);
      assert.equal(existsSync(path), true, "the other process's socket was removed");
      // Refused after the CNI socket was made: that one is closed again, not left behind.
      const cni = join(dir, 'cni-before-control.sock');
      const second = await podroute([
        'node',
        'run',
        '--name',
        'n1',
        '--dataplane',
        'memory',
        '--datastore',
        'memory',
        '--control',
        path,
        '--cni-socket',
        cni,
      ]);
      assert.equal(second.code, 1, second.stderr);
      assert.equal(existsSync(cni), false, 'the CNI socket was left behind');
    } finally {
      other.close();
    }
  });

  it('a web port another process holds: refused naming webPort, the health port and control socket closed again', async () => {
    const other = createServer().listen(0, '127.0.0.1');
    await once(other, 'listening');
    try {
      const { port } = other.address() as { port: number };
      await refused(['--ip', '10.0.0.1/24', '--web-port', String(port)], new RegExp(`webPort: listen EADDRINUSE.*127\\.0\\.0\\.1:${port}`));
    } finally {
      other.close();
    }
  });

  it('an AS number out of range', async () => {
    await refused(['--ip', '10.0.0.1/24', '--as', '4294967296'], /asNumber: 4294967296/);
  });
});
