// mesh.clab.yml through the CLI as a user runs it: up (twice: the second changes nothing),
// status, pods through the CNI plugin, every pod pings every other pod, down leaves nothing.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readState } from '../../../lib/lab/state.js';
import { execCommand } from '../../../lib/lab/system.js';
import { LabUnderTest, LABS, ROOT } from './harness.js';

describe('lab mesh.clab.yml: three nodes, node-to-node mesh, no encapsulation (CLI)', function () {
  this.timeout(120_000);
  const lab = new LabUnderTest('mesh.clab.yml');
  const file = join(LABS, 'mesh.clab.yml');
  // The state directory goes in the environment: lab exec hands every word after <node> to the command.
  const cli = (...args: string[]) =>
    execCommand([process.execPath, join(ROOT, 'bin/podroute.js'), 'lab', ...args], {
      timeoutMs: 90_000,
      env: { ...process.env, PODROUTE_LAB_STATE_DIR: lab.stateRoot },
    });

  after(async () => {
    await lab.downAndCheck();
  });

  it('podroute lab up builds it; a second up changes nothing', async () => {
    const first = await cli('up', file, '--prefix', lab.prefix);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /lab mesh is up .*: 5 namespaces, 4 processes/);
    lab.state = readState(lab.stateRoot, 'mesh')!;
    const pids = lab.state.processes.map((p) => p.pid);
    const again = await cli('up', file);
    assert.equal(again.code, 0, again.stderr);
    assert.doesNotMatch(again.stdout, /namespace |exec /);
    lab.state = readState(lab.stateRoot, 'mesh')!;
    assert.deepEqual(
      lab.state.processes.map((p) => p.pid),
      pids,
    );
    await lab.waitSessions(['n1', 'n2', 'n3'], 2);
  });

  it('podroute lab status shows nodes, processes and sessions', async () => {
    const r = await cli('status', 'mesh');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`n1 +${lab.prefix}n1 +agent:\\d+ +10\\.10\\.0\\.1[23] up`));
    assert.match(r.stdout, /redis +\S+ +redis:\d+/);
  });

  it('pods on every node reach each other straight over eth1', async () => {
    for (const n of ['n1', 'n2', 'n3']) {
      const r = await cli('pod', 'add', n, `${n}-a`);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, new RegExp(`pod ${n}-a on ${n}: 10\\.244\\.`));
    }
    lab.state = readState(lab.stateRoot, 'mesh')!;
    const blocks = await lab.blocks(['n1', 'n2', 'n3']);
    await lab.waitAllPing();
    const n1 = await lab.kernelRoutes('n1');
    assert.ok(n1.includes(`${blocks.n2![0]} via 10.10.0.12 dev eth1 proto 81`), n1.join('\n'));
    assert.ok(n1.includes(`${blocks.n3![0]} via 10.10.0.13 dev eth1 proto 81`), n1.join('\n'));
    const r = await cli('exec', 'mesh', 'n1', 'podroute', 'node', 'status');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /10\.10\.0\.12 +\| node-to-node mesh \| up/);
  });

  it('podroute lab down removes every namespace and process it made', async () => {
    const r = await cli('down', 'mesh');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /lab mesh is down: 4 processes stopped, 8 namespaces deleted/);
    await lab.downAndCheck();
  });
});
