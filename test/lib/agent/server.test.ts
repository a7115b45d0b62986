// The agent's health port and control socket are local: `podroute node run` in a namespace of
// its own, a second namespace on a veth playing "another host". The port listens on 127.0.0.1
// unless --health-host says otherwise, the socket is 0660 whatever the umask, and a large body
// is refused on both without the agent noticing.
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { podroute } from '../../support/daemon.js';
import { Lab, type Netns } from '../../support/netns.js';
import type { ManagedProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';

const ROOT = join(fileURLToPath(import.meta.url), '../../../..');
const PODROUTE = join(ROOT, 'bin/podroute.js');
const NODE_IP = '10.93.0.1';
const OTHER_IP = '10.93.0.2';

describe('node run: health port and control socket are local', function () {
  this.timeout(90_000);
  const lab = new Lab({ tag: 'hs' });
  let host: Netns;
  let other: Netns;

  before(async function () {
    if (process.getuid?.() !== 0) this.skip(); // namespaces
    host = await lab.namespace('host');
    other = await lab.namespace('other');
    await lab.link(host, { ifname: 'eth0', v4: `${NODE_IP}/24` }, other, { ifname: 'eth0', v4: `${OTHER_IP}/24` });
  });
  after(() => lab.destroy());

  /** `podroute node run` under umask 000 (memory dataplane and datastore: only the endpoints matter). */
  async function agent(name: string, extra: string[], env = ''): Promise<{ proc: ManagedProcess; control: string }> {
    const control = join(lab.dir, `${name}.sock`);
    const argv = [
      'node',
      PODROUTE,
      'node',
      'run',
      '--name',
      name,
      '--ip',
      `${NODE_IP}/24`,
      '--uplink',
      'eth0',
      '--dataplane',
      'memory',
      '--datastore',
      'memory',
      '--policy',
      'off',
      '--default-pool',
      'none',
      '--control',
      control,
      '--cni-socket',
      'off',
      ...extra,
    ];
    const proc = host.spawn(['sh', '-c', `umask 000; ${env} exec "$@"`, 'sh', ...argv], { name, cwd: ROOT });
    await waitFor(
      () => {
        if (!proc.running) throw new Error(`agent exited: ${proc.tail()}`);
        return proc.tail();
      },
      { what: `agent ${name} started`, until: (t) => /"event":"started"/.test(t), timeoutMs: 40_000, intervalMs: 250 },
    );
    return { proc, control };
  }

  /** Listening TCP sockets in the host namespace, as `ss` prints them (address:port). */
  async function listeners(): Promise<string[]> {
    const out = await host.run(['ss', '-ltnH']);
    return out
      .split('\n')
      .filter(Boolean)
      .map((l) => l.trim().split(/\s+/)[3]!);
  }

  /** HTTP status of a request from a namespace; 000 when nothing answered. */
  async function httpCode(ns: Netns, url: string, ...args: string[]): Promise<string> {
    return (await ns.exec(['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '3', ...args, url])).stdout;
  }

  it('by default the port listens on 127.0.0.1 only, and the control socket is 0660 under umask 000', async () => {
    const { proc, control } = await agent('d', ['--health-port', '9099']);
    try {
      const ports = (await listeners()).filter((a) => a.endsWith(':9099'));
      assert.deepEqual(ports, ['127.0.0.1:9099']);
      assert.equal(await httpCode(host, 'http://127.0.0.1:9099/liveness'), '200');
      // From the other namespace the node's address is reachable, the port is not.
      assert.equal((await other.exec(['ping', '-c', '1', '-W', '2', NODE_IP])).code, 0);
      assert.equal(await httpCode(other, `http://${NODE_IP}:9099/liveness`), '000');
      assert.equal((statSync(control).mode & 0o7777).toString(8), '660');
      // A body over 1 MiB is refused at the port and at the socket; the agent answers after.
      const big = ['-X', 'POST', '-H', 'content-type: application/json', '--data-binary', `@${join(lab.dir, 'big')}`];
      await host.run(['sh', '-c', `head -c 2000000 /dev/zero | tr '\\0' x > ${join(lab.dir, 'big')}`]);
      assert.equal(await httpCode(host, 'http://127.0.0.1:9099/metrics', ...big), '413');
      assert.equal(await httpCode(host, 'http://agent/stop', '--unix-socket', control, ...big), '413');
      assert.ok(proc.running, 'the agent stopped');
      assert.equal(await httpCode(host, 'http://agent/status', '--unix-socket', control), '200');
    } finally {
      await proc.stop();
    }
  });

  it('--health-host puts it on the address given, reachable from another host', async () => {
    const { proc } = await agent('h', ['--health-port', '9099', '--health-host', NODE_IP]);
    try {
      assert.deepEqual(
        (await listeners()).filter((a) => a.endsWith(':9099')),
        [`${NODE_IP}:9099`],
      );
      assert.equal(await httpCode(other, `http://${NODE_IP}:9099/liveness`), '200');
      assert.equal(await httpCode(host, 'http://127.0.0.1:9099/liveness'), '000');
    } finally {
      await proc.stop();
    }
  });

  it('PODROUTE_HEALTH_HOST does the same; a host that is not an address is refused before anything listens', async () => {
    const { proc } = await agent('e', ['--health-port', '9099'], `PODROUTE_HEALTH_HOST=${NODE_IP}`);
    try {
      assert.deepEqual(
        (await listeners()).filter((a) => a.endsWith(':9099')),
        [`${NODE_IP}:9099`],
      );
    } finally {
      await proc.stop();
    }
    const exit = await podroute([
      'node',
      'run',
      '--name',
      'x',
      '--dataplane',
      'memory',
      '--datastore',
      'memory',
      '--health-host',
      'localhost',
    ]);
    assert.equal(exit.code, 1, exit.stderr);
    assert.match(exit.stderr, /healthHost: "localhost" is not an IP address \(0\.0\.0\.0 or :: for every interface\)/);
    assert.doesNotMatch(exit.stderr, /"event":"started"/);
  });

  it('a control path that holds another file is refused, and the file kept', async () => {
    const file = join(lab.dir, 'not-a-socket');
    writeFileSync(file, 'keep me');
    const exit = await podroute([
      'node',
      'run',
      '--name',
      'x',
      '--dataplane',
      'memory',
      '--datastore',
      'memory',
      '--health-port',
      '0',
      '--control',
      file,
    ]);
    assert.equal(exit.code, 1, exit.stderr);
    assert.match(exit.stderr, /control: .*not-a-socket exists and is not a socket/);
    assert.equal(readFileSync(file, 'utf8'), 'keep me');
  });
});
