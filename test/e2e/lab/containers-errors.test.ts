// `podroute lab up --runtime docker` refuses what it cannot build, naming the flag or the socket,
// with a non-zero exit and nothing made: no state, no namespace, no host interface. (An image the
// engine lacks: containers.test.ts, which has an engine.)
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execCommand, run } from '../../../lib/lab/system.js';
import { LABS, ROOT } from './harness.js';

const hostLinks = async () => (await run(['ip', '-o', 'link', 'show'])).split('\n').filter(Boolean).length;

describe('lab up --runtime docker: bad input and a missing engine', function () {
  this.timeout(60_000);
  const stateRoot = mkdtempSync(join(tmpdir(), 'lcerr-'));
  const prefix = `le${process.pid}-`;
  const cli = (...args: string[]) =>
    execCommand([process.execPath, join(ROOT, 'bin/podroute.js'), 'lab', ...args, '--state-dir', stateRoot], { timeoutMs: 45_000 });

  after(() => rmSync(stateRoot, { recursive: true, force: true }));

  async function refused(args: string[], message: RegExp): Promise<void> {
    const links = await hostLinks();
    const r = await cli(...args);
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(r.stderr, message);
    assert.equal(existsSync(join(stateRoot, 'mesh')), false, 'a state folder was written');
    assert.deepEqual(
      (await run(['ip', 'netns', 'list'])).split('\n').filter((l) => l.startsWith(prefix)),
      [],
    );
    assert.equal(await hostLinks(), links, 'host interfaces changed');
  }

  it('an unknown runtime, --docker-host without docker, etcd in containers', async () => {
    const file = join(LABS, 'mesh.clab.yml');
    await refused(['up', file, '--runtime', 'podman'], /lab up: --runtime "podman" must be one of netns, docker/);
    await refused(['up', file, '--docker-host', 'unix:///nowhere.sock'], /--docker-host: only with --runtime docker/);
    await refused(
      ['up', file, '--runtime', 'docker', '--datastore', 'etcd'],
      /--datastore etcd: the docker runtime runs the datastore node as a Redis container/,
    );
  });

  it('no engine answering on the socket: says which socket, makes nothing', async () => {
    const sock = join(stateRoot, 'no-engine.sock');
    await refused(
      ['up', join(LABS, 'mesh.clab.yml'), '--runtime', 'docker', '--docker-host', `unix://${sock}`, '--prefix', prefix],
      new RegExp(`no container engine answers on unix://${sock}`),
    );
  });
});
