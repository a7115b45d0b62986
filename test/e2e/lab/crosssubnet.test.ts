// crosssubnet.clab.yml: nodes in two subnets joined by an FRR router that speaks no BGP with
// them; the pool is VXLAN CrossSubnet.
import assert from 'node:assert/strict';
import { LabUnderTest } from './harness.js';

const NODES = ['n1', 'n2', 'n3', 'n4'];

describe('lab crosssubnet.clab.yml: VXLAN between subnets, none within', function () {
  this.timeout(120_000);
  const lab = new LabUnderTest('crosssubnet.clab.yml');

  before(async () => {
    await lab.up();
  });
  after(async () => {
    await lab.downAndCheck();
  });

  it('the four nodes mesh through the router, which has no BGP session', async () => {
    await lab.waitSessions(NODES, 3);
    assert.deepEqual(await lab.sessions('router'), []);
  });

  it('pods on every node ping each other: VXLAN across the router, plain eth1 within a subnet', async () => {
    for (const n of NODES) await lab.pod(n, `${n}-a`);
    const blocks = await lab.blocks(NODES);
    await lab.waitAllPing();
    const n1 = await lab.kernelRoutes('n1');
    assert.ok(n1.includes(`${blocks.n2![0]} via 10.40.1.12 dev eth1 proto 81`), n1.join('\n'));
    for (const far of ['n3', 'n4']) {
      assert.ok(
        n1.some((r) => r.startsWith(`${blocks[far]![0]} via `) && r.includes('dev vxlan.calico') && r.includes('onlink')),
        `${far}: ${n1.join('\n')}`,
      );
    }
    // The router knows no pod address at all, so every pod packet it forwarded was inside VXLAN.
    const router = await lab.kernelRoutes('router');
    assert.deepEqual(
      router.filter((r) => r.startsWith('10.247.')),
      [],
    );
    assert.deepEqual(await lab.frrRib('router'), []);
  });
});
