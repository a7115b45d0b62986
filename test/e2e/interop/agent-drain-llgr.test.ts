// The node agent with an FRR top-of-rack, as Calico users write the BGPPeer:
// `restartMode: LongLivedGracefulRestart` with a `maxRestartTime`, and a drain.
//
// SIGKILL of the agent: FRR keeps the node's pod block past the node's restart time (2 s),
// marked LLGR_STALE, and drops it when maxRestartTime (5 s) more has passed. Started again, the
// block is fresh at FRR. Then `podroute node drain n1`: the block comes again with
// GRACEFUL_SHUTDOWN and LOCAL_PREF 0 at FRR while the session is still up, then the session
// closes; `undrain` brings session and block back, unmarked.
import assert from 'node:assert/strict';
import { dispatch } from '../../../lib/cli/args.js';
import { nodeDrainCommands } from '../../../lib/cli/datastore.js';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Frr } from '../../support/frr.js';
import { agentBehindRouters, frrPathFrom } from '../../support/agent-routers.js';
import { AgentCluster, type AgentProcess, agentReady } from '../../support/node-agents.js';
import { waitFor } from '../../support/wait.js';

const NODE = { name: 'n1', ip: '10.92.0.1' };
const F = { asn: 65020, ip: '10.92.0.3' };

describe('agent with an FRR top-of-rack: long-lived graceful restart and drain', function () {
  this.timeout(240_000);
  const cluster = new AgentCluster('adl');
  let ds: BackendDatastore;
  let startAgent: () => AgentProcess;
  let frr: Frr;
  let agent: AgentProcess;
  let block: string;

  const frrPath = () => frrPathFrom(frr, block, NODE.ip);
  const session = async () => (await frr.neighbor(NODE.ip)).bgpState;

  before(async () => {
    const up = await agentBehindRouters(cluster, {
      node: NODE,
      gateway: '10.92.0.254',
      pool: '10.91.0.0/16',
      routers: [{ name: 'tor', ...F, peer: { restartMode: 'LongLivedGracefulRestart', maxRestartTime: '5s' } }],
      agentFlags: ['--health-port', '0', '--restart-time', '2'],
      startRouters: ([nsF]) =>
        Frr.start(
          nsF!,
          {
            routerId: F.ip,
            asn: F.asn,
            gracefulRestart: { restartTime: 120 },
            longLivedGracefulRestart: { staleTime: 3600 },
            peers: [{ address: NODE.ip, remoteAs: 64512 }],
          },
          { zebra: false },
        ),
    });
    ({ agent, block, startAgent, routers: frr } = up);
    ds = cluster.ds;
  });

  after(() => cluster.close());

  it('SIGKILL: FRR keeps the block as LLGR_STALE past the restart time, and drops it after maxRestartTime', async () => {
    await waitFor(frrPath, { what: `FRR: ${block} from the node`, until: (p) => p !== undefined && !p.stale, timeoutMs: 30_000 });
    const caps = (await frr.neighbor(NODE.ip)).neighborCapabilities as Record<string, unknown> | undefined;
    assert.equal(caps?.longLivedGracefulRestart, 'advertisedAndReceived', JSON.stringify(caps));
    await agent.proc.stop(0, 'SIGKILL');
    const killed = performance.now();
    await waitFor(frrPath, {
      what: 'FRR marking the block LLGR_STALE',
      until: (p) => p?.community?.string?.includes('llgr-stale') === true,
      timeoutMs: 20_000,
      intervalMs: 200,
    });
    await waitFor(frrPath, { what: 'FRR dropping the block', until: (p) => p === undefined, timeoutMs: 20_000, intervalMs: 250 });
    const gone = (performance.now() - killed) / 1000;
    assert.ok(gone >= 6, `dropped after ${gone.toFixed(1)} s, before restart time + maxRestartTime (7 s)`);
    agent = startAgent();
    await agentReady(agent);
    await waitFor(frrPath, { what: 'the block back at FRR', until: (p) => p !== undefined && !p.stale, timeoutMs: 60_000 });
  });

  it('node drain: GRACEFUL_SHUTDOWN and LOCAL_PREF 0 at FRR while the session is up, then a Cease; undrain brings it back', async () => {
    const io = { stdout: () => undefined, stderr: () => undefined };
    const node = { name: 'node', summary: '', subcommands: nodeDrainCommands(io, ds) };
    assert.equal(await dispatch(node, ['drain', NODE.name], io), 0);
    const marked = await waitFor(frrPath, {
      what: 'the block marked GRACEFUL_SHUTDOWN at FRR',
      until: (p) => p?.community?.string?.includes('graceful-shutdown') === true,
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    assert.equal(marked?.locPrf, 0);
    assert.equal(await session(), 'Established', 'the session closed before the block was marked');
    await waitFor(session, { what: 'the drained session to close', until: (s) => s !== 'Established', timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 3000));
    assert.notEqual(await session(), 'Established', 'the drained node opened its session again');
    assert.equal(await dispatch(node, ['undrain', NODE.name], io), 0);
    await waitFor(frrPath, {
      what: 'the block back, unmarked',
      until: (p) => p !== undefined && !p.stale && !(p.community?.string ?? '').includes('graceful-shutdown'),
      timeoutMs: 60_000,
    });
  });
});
