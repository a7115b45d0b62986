// rr.clab.yml: two reflectors (one cluster ID) and four nodes, mesh off.
import assert from 'node:assert/strict';
import { LabUnderTest } from './harness.js';

const CLIENTS = ['n1', 'n2', 'n3', 'n4'];
const ALL = ['rr1', 'rr2', ...CLIENTS];

describe('lab rr.clab.yml: two route reflectors, four nodes, mesh off', function () {
  this.timeout(120_000);
  const lab = new LabUnderTest('rr.clab.yml');

  before(async () => {
    await lab.up();
  });
  after(async () => {
    await lab.downAndCheck();
  });

  it('each node peers with the two reflectors only; each reflector with everyone', async () => {
    await lab.waitSessions(CLIENTS, 2);
    await lab.waitSessions(['rr1', 'rr2'], 5);
    for (const n of CLIENTS) assert.deepEqual((await lab.sessions(n)).map((s) => s.peer).sort(), ['10.20.0.2', '10.20.0.3'], n);
  });

  it('pods on every node ping each other; routes keep the owning node as next hop', async () => {
    for (const n of ALL) await lab.pod(n, `${n}-a`);
    const blocks = await lab.blocks(ALL);
    await lab.waitAllPing();
    // Reflected, not re-originated: n1 sends to n4's block straight to n4, never via a reflector.
    const n1 = await lab.kernelRoutes('n1');
    assert.ok(n1.includes(`${blocks.n4![0]} via 10.20.0.14 dev eth1 proto 81`), n1.join('\n'));
    assert.ok(n1.includes(`${blocks.rr2![0]} via 10.20.0.3 dev eth1 proto 81`), n1.join('\n'));
  });
});
