// The runner's bookkeeping on a small topology of plain namespaces (no daemons): an exec line
// that fails names its key and `down` still removes what was made; a namespace the lab did not
// make is refused by `up` and left alone by `down`; links repaired by a second `up`.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { labDown, labUp, wantsBfdd } from '../../../lib/lab/runner.js';
import { readState } from '../../../lib/lab/state.js';
import { execCommand, run } from '../../../lib/lab/system.js';
import { loadTopology } from '../../../lib/lab/topology.js';

describe('lab runner: bookkeeping on plain namespaces', function () {
  this.timeout(60_000);
  const prefix = `lbr${process.pid}-`;
  const root = mkdtempSync(join(tmpdir(), 'lbrun-'));
  const foreign = `${prefix}foreign`;
  const mine = async () =>
    (await run(['ip', 'netns', 'list']))
      .split('\n')
      .map((l) => l.split(' ')[0]!)
      .filter((n) => n.startsWith(prefix))
      .sort();

  function topology(execB: string): string {
    const file = join(root, `t${Date.now()}.clab.yml`);
    writeFileSync(
      file,
      [
        'name: plain',
        'topology:',
        '  nodes:',
        '    sw:',
        '      kind: bridge',
        '    a:',
        '      kind: linux',
        '      image: alpine:3',
        '      exec: ["ip addr add 10.77.0.1/24 dev eth1"]',
        '    b:',
        '      kind: linux',
        '      image: alpine:3',
        `      exec: ["ip addr add 10.77.0.2/24 dev eth1", ${JSON.stringify(execB)}]`,
        '  links:',
        '    - endpoints: ["a:eth1", "sw:p-a"]',
        '    - endpoints: ["b:eth1", "sw:p-b"]',
        '',
      ].join('\n'),
    );
    return file;
  }

  before(async () => {
    await run(['ip', 'netns', 'add', foreign]);
  });
  after(async () => {
    await labDown('plain', { stateRoot: root });
    for (const ns of await mine()) await run(['ip', 'netns', 'del', ns]);
    rmSync(root, { recursive: true, force: true });
  });

  it('a failing exec line names its key; down removes what up had made, and only that', async () => {
    const topo = loadTopology(topology('false'));
    await assert.rejects(labUp(topo, { stateRoot: root, prefix }), /topology\.nodes\.b\.exec\[1\]: `false` exited 1/);
    assert.deepEqual(
      readState(root, 'plain')!
        .namespaces.map((n) => n.name)
        .sort(),
      [`${prefix}a`, `${prefix}b`, `${prefix}sw`],
    );
    const r = await labDown('plain', { stateRoot: root });
    assert.equal(r?.namespaces, 3);
    assert.deepEqual(await mine(), [foreign]);
  });

  it('a lab up over a namespace it did not make is refused', async () => {
    await run(['ip', 'netns', 'add', `${prefix}a`]);
    try {
      await assert.rejects(
        labUp(loadTopology(topology('true')), { stateRoot: root, prefix }),
        /namespace .*a exists but this lab did not create it/,
      );
      await labDown('plain', { stateRoot: root });
      assert.deepEqual(await mine(), [`${prefix}a`, foreign]);
    } finally {
      await run(['ip', 'netns', 'del', `${prefix}a`]);
    }
  });

  it('a second up repairs a deleted link and keeps the rest', async () => {
    const topo = loadTopology(topology('true'));
    await labUp(topo, { stateRoot: root, prefix });
    assert.equal((await execCommand(['ip', 'netns', 'exec', `${prefix}a`, 'ping', '-c', '1', '-W', '2', '10.77.0.2'])).code, 0);
    await run(['ip', '-n', `${prefix}b`, 'link', 'del', 'eth1']);
    await labUp(topo, { stateRoot: root, prefix });
    // The pair is back and bridged; exec lines are not re-run on existing nodes, so b needs its address again.
    await run(['ip', '-n', `${prefix}b`, 'addr', 'add', '10.77.0.2/24', 'dev', 'eth1']);
    // b's new eth1 has a new MAC: a's neighbour entry for 10.77.0.2 is stale.
    await run(['ip', '-n', `${prefix}a`, 'neigh', 'flush', 'dev', 'eth1']);
    assert.equal((await execCommand(['ip', 'netns', 'exec', `${prefix}a`, 'ping', '-c', '1', '-W', '2', '10.77.0.2'])).code, 0);
    await labDown('plain', { stateRoot: root });
    assert.deepEqual(await mine(), [foreign]);
  });
});

describe('lab runner: which FRR daemons a node runs', () => {
  const LABS = join(import.meta.dirname, '../../../containerlab');
  const routers = (file: string) => loadTopology(join(LABS, file)).nodes.filter((n) => n.role === 'frr');

  it('bfdd where the bound daemons file turns it on (dual-tor), not elsewhere (tor)', () => {
    assert.ok(routers('dual-tor.clab.yml').every(wantsBfdd), 'the dual-ToR routers bind a daemons file with bfdd=yes');
    assert.ok(!routers('tor.clab.yml').some(wantsBfdd), 'the tor lab’s daemons file leaves bfdd off');
  });
});
