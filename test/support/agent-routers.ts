// One node agent behind external BGP routers on one segment, as a top-of-rack design has it: the
// pool and a BGPPeer per router in the datastore, the routers (FRR, BIRD: the caller starts them
// in the namespaces made for them), the agent, and a pod made through the CNI plugin so that the
// node holds a block and advertises it. The interop suites of the agent restarting or draining
// under real routers start from here, and read FRR's path of the block with frrPathFrom.
import assert from 'node:assert/strict';
import { Ipam } from '../../lib/ipam/index.js';
import { API_VERSION } from '../../lib/resources/index.js';
import { callCni } from './cni-call.js';
import type { Frr } from './frr.js';
import type { Netns } from './netns.js';
import { type AgentCluster, type AgentProcess, agentReady, ipPool } from './node-agents.js';

export interface ExternalRouter {
  /** The BGPPeer's name, and the router's namespace's. */
  readonly name: string;
  readonly asn: number;
  readonly ip: string;
  /** More of the BGPPeer's spec (restartMode, maxRestartTime, …). */
  readonly peer?: Record<string, unknown>;
}

export interface AgentBehindRoutersOptions<T> {
  readonly node: { readonly name: string; readonly ip: string };
  /** The node's default gateway on the segment (nobody answers there: the routes come by BGP). */
  readonly gateway: string;
  readonly pool: string;
  readonly routers: readonly ExternalRouter[];
  /** `podroute node run` flags beyond the name, address and datastore. */
  readonly agentFlags: readonly string[];
  /** Starts the routers, each in its namespace (in the order of `routers`), before the agent starts. */
  startRouters(namespaces: Netns[]): Promise<T>;
}

export interface AgentBehindRouters<T> {
  readonly nsNode: Netns;
  readonly routers: T;
  /** The agent started by the set-up; a test that kills it starts another with startAgent. */
  readonly agent: AgentProcess;
  /** The pod's block, which the node advertises. */
  readonly block: string;
  startAgent(): AgentProcess;
}

/** Opens `cluster` and builds the node, its routers and a pod; `cluster.close()` takes it all down. */
export async function agentBehindRouters<T>(cluster: AgentCluster, o: AgentBehindRoutersOptions<T>): Promise<AgentBehindRouters<T>> {
  await cluster.open();
  const { ds, sock, lab } = cluster;
  await ds.create(ipPool('pods', o.pool));
  for (const r of o.routers)
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'BGPPeer',
      metadata: { name: r.name },
      spec: { peerIP: r.ip, asNumber: r.asn, ...r.peer },
    });
  const segment = await lab.segment();
  const nsNode = await lab.namespace(o.node.name);
  const namespaces = await Promise.all(o.routers.map((r) => lab.namespace(r.name)));
  await segment.attach(nsNode, { ifname: 'eth0', v4: `${o.node.ip}/24` });
  await nsNode.ip('route', 'add', 'default', 'via', o.gateway, 'dev', 'eth0');
  for (const [i, r] of o.routers.entries()) await segment.attach(namespaces[i]!, { v4: `${r.ip}/24` });
  const routers = await o.startRouters(namespaces);

  const startAgent = (): AgentProcess => cluster.spawnAgent(nsNode, { name: o.node.name, ip: `${o.node.ip}/24`, flags: [...o.agentFlags] });
  const agent = startAgent();
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
      nodename: o.node.name,
      datastore: { type: 'redis', url: sock },
    }),
  );
  assert.equal(r.code, 0, `CNI ADD: ${r.stdout}`);
  const block = (await new Ipam(ds).blocksForNode(o.node.name))[0]!.cidr;
  return { nsNode, routers, agent, block, startAgent };
}

/** FRR's path of a prefix, as `show bgp ipv4 unicast <prefix> json` gives it: the fields the agent suites read. */
export interface FrrPath {
  version?: number;
  stale?: boolean;
  locPrf?: number;
  community?: { string?: string };
  peer?: { peerId?: string };
}

/** FRR's path of `prefix` learned from the router-ID `from` (the node); undefined when FRR has none from it. */
export async function frrPathFrom(frr: Frr, prefix: string, from: string): Promise<FrrPath | undefined> {
  const r = await frr.json<{ paths?: FrrPath[] }>(`show bgp ipv4 unicast ${prefix} json`);
  return r.paths?.find((p) => p.peer?.peerId === from);
}
