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
import { Ipam } from '../../../lib/ipam/index.js';
import { API_VERSION } from '../../../lib/resources/index.js';
import { callCni } from '../../support/cni-call.js';
import { Frr } from '../../support/frr.js';
import type { Netns } from '../../support/netns.js';
import { AgentCluster, type AgentProcess, agentReady, ipPool } from '../../support/node-agents.js';
import { waitFor } from '../../support/wait.js';

const NODE = { name: 'n1', ip: '10.92.0.1' };
const F = { asn: 65020, ip: '10.92.0.3' };

interface FrrPath {
  stale?: boolean;
  locPrf?: number;
  community?: { string?: string };
  peer?: { peerId?: string };
}

describe('agent with an FRR top-of-rack: long-lived graceful restart and drain', function () {
  this.timeout(240_000);
  const cluster = new AgentCluster('adl');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let sock: string;
  let nsNode: Netns;
  let frr: Frr;
  let agent: AgentProcess;
  let block: string;

  const startAgent = () =>
    cluster.spawnAgent(nsNode, { name: NODE.name, ip: `${NODE.ip}/24`, flags: ['--health-port', '0', '--restart-time', '2'] });
  const frrPath = async (): Promise<FrrPath | undefined> =>
    (await frr.json<{ paths?: FrrPath[] }>(`show bgp ipv4 unicast ${block} json`)).paths?.find((p) => p.peer?.peerId === NODE.ip);
  const session = async () => (await frr.neighbor(NODE.ip)).bgpState;

  before(async () => {
    await cluster.open();
    ({ sock, ds } = cluster);
    await ds.create(ipPool('pods', '10.91.0.0/16'));
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'BGPPeer',
      metadata: { name: 'tor' },
      spec: { peerIP: F.ip, asNumber: F.asn, restartMode: 'LongLivedGracefulRestart', maxRestartTime: '5s' },
    });
    const segment = await lab.segment();
    nsNode = await lab.namespace('n1');
    const nsF = await lab.namespace('f');
    await segment.attach(nsNode, { ifname: 'eth0', v4: `${NODE.ip}/24` });
    await nsNode.ip('route', 'add', 'default', 'via', '10.92.0.254', 'dev', 'eth0');
    await segment.attach(nsF, { v4: `${F.ip}/24` });
    frr = await Frr.start(
      nsF,
      {
        routerId: F.ip,
        asn: F.asn,
        gracefulRestart: { restartTime: 120 },
        longLivedGracefulRestart: { staleTime: 3600 },
        peers: [{ address: NODE.ip, remoteAs: 64512 }],
      },
      { zebra: false },
    );
    agent = startAgent();
    await agentReady(agent);
    const pod = await lab.namespace('pod1');
    const r = await callCni(
      nsNode,
      'ADD',
      {
        CNI_CONTAINERID: `ctr-pod1-${process.pid}`,
        CNI_NETNS: `/var/run/netns/${pod.name}`,
        CNI_IFNAME: 'eth0',
        CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod1',
        CNI_PATH: '/opt/cni/bin',
      },
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'k8s-pod-network',
        type: 'podroute-cni',
        nodename: NODE.name,
        datastore: { type: 'redis', url: sock },
      }),
    );
    assert.equal(r.code, 0, `CNI ADD: ${r.stdout}`);
    block = (await new Ipam(ds).blocksForNode(NODE.name))[0]!.cidr;
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
