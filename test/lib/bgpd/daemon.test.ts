// A bgpd or reflector whose configuration the speaker would refuse exits non-zero, naming the
// field, before it listens: a supervisor must not see a live process with half its peers.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listening, podroute } from '../../support/daemon.js';
import { freePort } from '../../../bgp/session/free-port.js';

describe('bgpd: a configuration it cannot run is refused before it listens', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-startup-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function refused(command: string, body: string, message: RegExp, flags: string[] = []): Promise<void> {
    const port = await freePort();
    const file = join(dir, `${command}-${port}.yaml`);
    writeFileSync(file, `asn: 65001\nrouterId: 10.0.0.1\nlisten: { host: 127.0.0.1, port: ${port} }\n${body}`);
    const started = Date.now();
    const exit = await podroute([command, '--config', file, ...flags]);
    assert.equal(exit.code, 1, exit.stderr);
    assert.match(exit.stderr, message);
    assert.doesNotMatch(exit.stderr, /"event":"started"/);
    assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
    assert.equal(await listening(port), false);
  }

  it('two peers at one address', async () => {
    await refused(
      'bgpd',
      'peers:\n  - { address: 10.0.0.2, asn: 65002 }\n  - { address: 10.0.0.2, asn: 65003 }\n',
      /peers\[1\]\.address: 10\.0\.0\.2 is configured twice \(peers\[0\]\)/,
    );
  });

  it('a client and a non-client at one address (reflector)', async () => {
    await refused(
      'reflector',
      'clients:\n  - { address: 10.0.0.2 }\nnonClients:\n  - { address: 10.0.0.2, asn: 65002 }\n',
      /nonClients\[0\]\.address: 10\.0\.0\.2 is configured twice \(clients\[0\]\)/,
    );
  });

  it('every mistake of the file in one refusal (bgpd and reflector)', async () => {
    await refused(
      'bgpd',
      'colour: red\nnetworks: [10.0.0.0/33]\npeers:\n  - { address: 10.0.0.2, asn: 0 }\n',
      /3 mistakes:\n {2}colour: unknown field\n {2}networks\[0\]\.prefix: .*\n {2}peers\[0\]\.asn: 0 /,
    );
    await refused(
      'reflector',
      'clusterID: 10.0.0.9\nclients:\n  - { address: nowhere }\n',
      /2 mistakes:\n {2}clusterID: unknown field; did you mean clusterId\?\n {2}clients\[0\]\.address: "nowhere"/,
    );
  });

  it('every peer the speaker refuses, in one refusal', async () => {
    await refused(
      'bgpd',
      'peers:\n  - { address: 10.0.0.2, asn: 65002, holdTime: 3.5 }\n  - { address: 10.0.0.3, asn: 65003, holdTime: 4.5 }\n',
      /2 mistakes:\n {2}peers\[0\]: peer 10\.0\.0\.2 holdTime.*\n {2}peers\[1\]: peer 10\.0\.0\.3 holdTime/,
    );
  });

  it('a dynamic-neighbour range that is not a prefix', async () => {
    await refused('bgpd', 'dynamicNeighbors:\n  - { range: 10.0.0.0/33, asn: 65002 }\n', /dynamicNeighbors\[0\]\.range/);
  });

  it('an addPath value that is not receive, send or both', async () => {
    await refused('bgpd', 'peers:\n  - { address: 10.0.0.2, asn: 65002, addPath: { ipv4: sideways } }\n', /peers\[0\]\.addPath\.ipv4/);
  });

  it('a hold time the speaker refuses though it is in range (3.5 s)', async () => {
    await refused('bgpd', 'peers:\n  - { address: 10.0.0.2, asn: 65002, holdTime: 3.5 }\n', /peers\[0\]: peer 10\.0\.0\.2 holdTime/);
  });

  // Node's recursive mkdir loops for ever on a path in /proc (the kernel says ENOENT under a
  // directory that exists): such a state directory was a daemon that never exited and burnt a core.
  it('a graceful-restart state directory in /proc or /sys, at once', async () => {
    await refused(
      'bgpd',
      'gracefulRestart: { stateDir: /proc/podroute }\n',
      /gracefulRestart\.stateDir: \/proc\/podroute is under \/proc, the kernel's own file system/,
    );
    await refused(
      'reflector',
      'gracefulRestart: { stateDir: /sys/podroute }\n',
      /gracefulRestart\.stateDir: \/sys\/podroute is under \/sys/,
    );
  });

  it('a control socket in /proc, from the file or the flag, through a symbolic link too', async () => {
    await refused('bgpd', 'control: /proc/podroute.sock\n', /control: \/proc\/podroute\.sock is under \/proc/);
    await refused('reflector', 'control: { path: /sys/podroute.sock }\n', /control\.path: \/sys\/podroute\.sock is under \/sys/);
    // /dev/fd is a link to /proc/self/fd.
    await refused('bgpd', '', /--control: \/dev\/fd\/podroute\.sock \(\/proc\/.*\) is under \/proc/, [
      '--control',
      '/dev/fd/podroute.sock',
    ]);
  });

  it('a password file in /proc, or one that is not a regular file', async () => {
    await refused(
      'bgpd',
      'peers:\n  - { address: 10.0.0.2, asn: 65002, password: { file: /proc/self/environ } }\n',
      /peers\[0\]\.password\.file: \/proc\/self\/environ is under \/proc/,
    );
    await refused(
      'bgpd',
      `peers:\n  - { address: 10.0.0.2, asn: 65002, password: { file: ${dir} } }\n`,
      /peers\[0\]\.password\.file: .* is not a regular file/,
    );
  });
});
