// The node agent restarting gracefully with BIRD and FRR as its helpers (external BGPPeers, as
// a top-of-rack router would be): `podroute node run` killed with SIGKILL and started again
// finds its routes still in the kernel, so it sends R=1 and F=1, and holds its advertisements
// until both helpers' End-of-RIBs are in. Neither helper sees its pod block flap: BIRD's route
// time and FRR's prefix version stay as they were, and the route is there at every poll.
import assert from 'node:assert/strict';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { callCni } from '../../support/cni-call.js';
import { Bird } from '../../support/bird.js';
import { Frr } from '../../support/frr.js';
import { waitRoutes } from '../../support/lab.js';
import type { Netns } from '../../support/netns.js';
import { AgentCluster, type AgentProcess, agentReady, ipPool } from '../../support/node-agents.js';
import { sleep, waitFor } from '../../support/wait.js';
import { API_VERSION } from '../../../lib/resources/index.js';

const NODE = { name: 'n1', ip: '10.93.0.1' };
const B = { asn: 65010, ip: '10.93.0.2' };
const F = { asn: 65020, ip: '10.93.0.3' };

interface FrrPath {
  version?: number;
  stale?: boolean;
  peer?: { peerId?: string };
}

describe('agent graceful restart: SIGKILL and start again, BIRD and FRR as helpers', function () {
  this.timeout(180_000);
  const cluster = new AgentCluster('agr');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let sock: string;
  let nsNode: Netns;
  let bird: Bird;
  let frr: Frr;
  let agent: AgentProcess;
  let block: string;

  function startAgent(): AgentProcess {
    return cluster.spawnAgent(nsNode, { name: NODE.name, ip: `${NODE.ip}/24`, flags: ['--health-port', '9099'] });
  }

  async function birdSince(): Promise<string | undefined> {
    const text = await bird.birdc('show route all');
    const m = new RegExp(`^${block.replace(/[./]/g, '\\$&')}\\s+unicast\\s+\\[(\\S+) ([^\\]\\s]+)`, 'm').exec(text);
    return m ? `${m[1]} ${m[2]}` : undefined;
  }

  async function frrPath(): Promise<FrrPath | undefined> {
    const r = await frr.json<{ paths?: FrrPath[] }>(`show bgp ipv4 unicast ${block} json`);
    return r.paths?.find((p) => p.peer?.peerId === NODE.ip);
  }

  before(async () => {
    await cluster.open();
    ({ sock, ds } = cluster);
    await ds.create(ipPool('pods', '10.94.0.0/16'));
    for (const [name, x] of [
      ['bird', B],
      ['frr', F],
    ] as const) {
      await ds.create({ apiVersion: API_VERSION, kind: 'BGPPeer', metadata: { name }, spec: { peerIP: x.ip, asNumber: x.asn } });
    }
    const segment = await lab.segment();
    nsNode = await lab.namespace('n1');
    const [nsB, nsF] = await Promise.all([lab.namespace('b'), lab.namespace('f')]);
    await segment.attach(nsNode, { ifname: 'eth0', v4: `${NODE.ip}/24` });
    await nsNode.ip('route', 'add', 'default', 'via', '10.93.0.254', 'dev', 'eth0');
    await segment.attach(nsB, { v4: `${B.ip}/24` });
    await segment.attach(nsF, { v4: `${F.ip}/24` });
    const helper = (x: typeof B) => ({
      routerId: x.ip,
      asn: x.asn,
      gracefulRestart: { restartTime: 120 },
      peers: [{ address: NODE.ip, remoteAs: 64512 }],
    });
    [bird, frr] = await Promise.all([Bird.start(nsB, helper(B)), Frr.start(nsF, helper(F), { zebra: false })]);
    agent = startAgent();
    await agentReady(agent);
    // A pod, so that the node holds a block and advertises it.
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
