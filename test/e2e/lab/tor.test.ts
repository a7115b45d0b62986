// tor.clab.yml: nodes peer with their rack's FRR router through its listen range; pod traffic
// crosses racks unencapsulated because FRR learned the blocks. An FRR router restarted: pod
// traffic resumes within its hold time. A node shut down: its block leaves the FRR RIBs.
import assert from 'node:assert/strict';
import { labUp } from '../../../lib/lab/runner.js';
import { stopProcess } from '../../../lib/lab/system.js';
import { waitFor } from '../../support/wait.js';
import { LabUnderTest } from './harness.js';

const NODES = ['n1', 'n2', 'n3', 'n4'];
const HOLD_TIME_MS = 9_000;

describe('lab tor.clab.yml: two racks behind FRR top-of-rack routers', function () {
  this.timeout(150_000);
  const lab = new LabUnderTest('tor.clab.yml');
  let blocks: Record<string, string[]>;

  before(async () => {
    await lab.up();
  });
  after(async () => {
    await lab.downAndCheck();
  });

  it('nodes peer with their rack router through its listen range, the routers with each other', async () => {
    await lab.waitSessions(NODES, 1);
    await lab.waitSessions(['tor1', 'tor2'], 3);
    assert.deepEqual((await lab.sessions('tor1')).map((s) => s.peer).sort(), ['10.30.0.2', '10.30.1.11', '10.30.1.12']);
    assert.deepEqual(
      (await lab.sessions('n3')).map((s) => `${s.peer} AS${s.asn}`),
      ['10.30.2.1 AS65002'],
    );
  });

  it('pods on every node ping each other; both FRR RIBs hold exactly the four blocks', async () => {
    for (const n of NODES) await lab.pod(n, `${n}-a`);
    blocks = await lab.blocks(NODES);
    for (const n of NODES) assert.equal(blocks[n]!.length, 1, `${n}: ${blocks[n]}`);
    const expected = NODES.map((n) => blocks[n]![0]!).sort();
    for (const tor of ['tor1', 'tor2']) {
      await waitFor(() => lab.frrRib(tor), {
        what: `${tor} RIB = the four blocks`,
        until: (r) => JSON.stringify(r) === JSON.stringify(expected),
        timeoutMs: 20_000,
      });
    }
    await lab.waitAllPing();
    // Across racks through the router, no tunnel: n1 reaches n3's block via tor1 on eth1.
    const n1 = await lab.kernelRoutes('n1');
    assert.ok(n1.includes(`${blocks.n3![0]} via 10.30.1.1 dev eth1 proto 81`), n1.join('\n'));
    assert.ok(!n1.some((r) => /vxlan|tunl/.test(r)), n1.join('\n'));
  });

  it('tor1 restarted: pod traffic across the racks resumes within its hold time', async () => {
    const from = lab.state.pods.find((p) => p.node === 'n1')!;
    const to = lab.state.pods.find((p) => p.node === 'n3')!;
    for (const p of lab.state.processes.filter((x) => x.node === 'tor1')) await stopProcess(p);
    // While tor1 is down nothing crosses from rack 1 (its zebra took its routes with it).
    const ping = async () => (await lab.podExec(from, ['ping', '-c', '1', '-W', '1', to.ip!])).code;
    assert.notEqual(await ping(), 0, 'traffic crossed while tor1 was down');
    const t0 = Date.now();
    await labUp(lab.topo, { stateRoot: lab.stateRoot, prefix: lab.prefix });
    await waitFor(ping, {
      what: `${from.name} -> ${to.name} after tor1 restarted`,
      until: (code) => code === 0,
      timeoutMs: HOLD_TIME_MS + 10_000,
      intervalMs: 200,
    });
    const resumed = Date.now() - t0;
    assert.ok(resumed <= HOLD_TIME_MS, `traffic resumed ${resumed} ms after tor1 was started again, hold time is ${HOLD_TIME_MS} ms`);
    await lab.waitAllPing();
  });

  it('n4 shut down: its block leaves both FRR RIBs, the other pods still reach each other', async () => {
    const agent = lab.state.processes.find((p) => p.node === 'n4' && p.what === 'agent')!;
    // Shut down for good, as a person would (SIGINT): the agent sends its peers a Cease. SIGTERM
    // would be a restart, and FRR would rightly keep n4's block for the restart time.
    await stopProcess(agent, 5_000, 'SIGINT');
    const gone = blocks.n4![0]!;
    for (const tor of ['tor1', 'tor2']) {
      await waitFor(() => lab.frrRib(tor), {
        what: `${gone} gone from ${tor}`,
        until: (r) => !r.includes(gone) && r.length === 3,
        timeoutMs: HOLD_TIME_MS + 10_000,
      });
    }
    lab.state.pods = lab.state.pods.filter((p) => p.node !== 'n4');
    await lab.waitAllPing();
  });
});
