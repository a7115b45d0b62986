// The node agent restarting gracefully with BIRD and FRR as its helpers (external BGPPeers, as
// a top-of-rack router would be): `podroute node run` killed with SIGKILL and started again
// finds its routes still in the kernel, so it sends R=1 and F=1, and holds its advertisements
// until both helpers' End-of-RIBs are in. Neither helper sees its pod block flap: BIRD's route
// time and FRR's prefix version stay as they were, and the route is there at every poll.
import assert from 'node:assert/strict';
import { Bird } from '../../support/bird.js';
import { Frr } from '../../support/frr.js';
import { waitRoutes } from '../../support/lab.js';
import { agentBehindRouters, frrPathFrom } from '../../support/agent-routers.js';
import { AgentCluster, type AgentProcess, agentReady } from '../../support/node-agents.js';
import { sleep, waitFor } from '../../support/wait.js';

const NODE = { name: 'n1', ip: '10.93.0.1' };
const B = { asn: 65010, ip: '10.93.0.2' };
const F = { asn: 65020, ip: '10.93.0.3' };

describe('agent graceful restart: SIGKILL and start again, BIRD and FRR as helpers', function () {
  this.timeout(180_000);
  const cluster = new AgentCluster('agr');
  let startAgent: () => AgentProcess;
  let bird: Bird;
  let frr: Frr;
  let agent: AgentProcess;
  let block: string;

  async function birdSince(): Promise<string | undefined> {
    const text = await bird.birdc('show route all');
    const m = new RegExp(`^${block.replace(/[./]/g, '\\$&')}\\s+unicast\\s+\\[(\\S+) ([^\\]\\s]+)`, 'm').exec(text);
    return m ? `${m[1]} ${m[2]}` : undefined;
  }

  const frrPath = () => frrPathFrom(frr, block, NODE.ip);

  before(async () => {
    const helper = (x: typeof B) => ({
      routerId: x.ip,
      asn: x.asn,
      gracefulRestart: { restartTime: 120 },
      peers: [{ address: NODE.ip, remoteAs: 64512 }],
    });
    const up = await agentBehindRouters(cluster, {
      node: NODE,
      gateway: '10.93.0.254',
      pool: '10.94.0.0/16',
      routers: [
        { name: 'bird', ...B },
        { name: 'frr', ...F },
      ],
      agentFlags: ['--health-port', '9099'],
      startRouters: ([nsB, nsF]) => Promise.all([Bird.start(nsB!, helper(B)), Frr.start(nsF!, helper(F), { zebra: false })]),
    });
    ({ agent, block, startAgent } = up);
    [bird, frr] = up.routers;
  });

  after(() => cluster.close());

  it('the block reaches both helpers; SIGKILL and a new start: R=1, F=1, and the block never flaps at either', async () => {
    await waitRoutes(bird, 'ipv4', [block]);
    await waitFor(frrPath, { what: `FRR: ${block} from the node`, until: (p) => p !== undefined && !p.stale });
    const gr0 = (await frr.neighbor(NODE.ip)).gracefulRestartInfo as { rBit?: boolean; ipv4Unicast?: { fBit?: boolean } } | undefined;
    assert.equal(gr0?.rBit, false, 'a first start is no restart');
    const birdBefore = await birdSince();
    const frrBefore = await frrPath();
    assert.ok(birdBefore, 'BIRD holds the block');

    let watching = true;
    const gaps: string[] = [];
    const watcher = (async () => {
      while (watching) {
        const [b, f] = await Promise.all([birdSince(), frrPath()]);
        if (!b) gaps.push(`BIRD ${new Date().toISOString()}`);
        if (!f) gaps.push(`FRR ${new Date().toISOString()}`);
        await sleep(200);
      }
    })();
    await agent.proc.stop(0, 'SIGKILL');
    await waitFor(frrPath, { what: 'FRR: the block stale', until: (p) => p?.stale === true, timeoutMs: 20_000 });
    await sleep(1500); // down for a while, as a real restart is
    agent = startAgent();
    const s = await agentReady(agent);
    assert.equal(s.restarting, true, 'the kernel routes left behind say the agent restarted');
    await waitFor(frrPath, { what: 'FRR: the block fresh again', until: (p) => p !== undefined && !p.stale, timeoutMs: 60_000 });
    const gr = (await frr.neighbor(NODE.ip)).gracefulRestartInfo as { rBit?: boolean; ipv4Unicast?: { fBit?: boolean } } | undefined;
    assert.equal(gr?.rBit, true, `FRR's view of the agent's capability: ${JSON.stringify(gr)}`);
    assert.equal(gr?.ipv4Unicast?.fBit, true);
    watching = false;
    await watcher;
    if (gaps.length > 0) {
      // What each side says about the session, to tell a collision from a restart gone wrong.
      const sessions = (agent.proc.tail().match(/.*"peer-(up|down)".*/g) ?? []).join('\n');
      const birdSession = await bird.birdc('show protocols all').catch((e: Error) => e.message);
      assert.fail(`the block missing at a helper at ${gaps.join(', ')}\nagent:\n${sessions}\nBIRD:\n${birdSession}`);
    }
    assert.equal((await frrPath())?.version, frrBefore?.version, 'FRR recomputed the block');
    assert.equal(await birdSince(), birdBefore, 'BIRD relearnt the block');
  });
});
