// A whole cluster in one process: node agents on 127.0.0.x (one BGP port, each listening on its
// own loopback address, which needs no root), one memory datastore, an in-memory dataplane per
// node, and pods made through the CNI plugin's own steps.
import { MemoryDataplane } from '../../felix/index.js';
import { NodeAgent } from '../agent/index.js';
import { memoryDatastore, type BackendDatastore } from '../datastore/index.js';
import { CONTAINER_ID_ANNOTATION, API_VERSION, BGP_DEFAULTS, type WorkloadEndpoint } from '../resources/index.js';
import { Ipam } from '../ipam/index.js';
import { parseEnv, parseNetConf } from '../cni/config.js';
import { workloadFor, workloadLabels } from '../cni/plugin.js';
import { TopOfRack } from './tor.js';

/** The uplink every simulated node routes through. */
export const UPLINK = 'eth0';
const NAMESPACE = 'default';

export interface DemoNode {
  name: string;
  /** Without prefix length: 127.0.0.<index>. */
  address: string;
  agent: NodeAgent;
  dataplane: MemoryDataplane;
}

export interface DemoPod {
  name: string;
  node: string;
  /** Without prefix length. */
  ip: string;
  interfaceName: string;
  containerId: string;
  /** namespace/name of its WorkloadEndpoint. */
  endpoint: string;
}

export interface DemoEvent {
  time: number;
  event: string;
  fields: Record<string, unknown>;
}

export interface DemoClusterOptions {
  port: number;
  pool: string;
  /** Kept for the view: the latest agent events. */
  onEvent?: (e: DemoEvent) => void;
}

export class DemoCluster {
  readonly ds: BackendDatastore = memoryDatastore();
  readonly nodes = new Map<string, DemoNode>();
  readonly pods = new Map<string, DemoPod>();
  readonly ipam: Ipam;
  tor: TopOfRack | undefined;
  /** The nodes acting as route reflectors, and whether the full mesh is on: what the sessions should be. */
  readonly reflectors = new Set<string>();
  mesh = true;
  private nextIndex = 1;
  private containerSeq = 0;

  constructor(readonly options: DemoClusterOptions) {
    this.ipam = new Ipam(this.ds);
  }

  /** The pool, as calico/node's default one but without NAT (nothing leaves this cluster). */
  async init(): Promise<void> {
    await this.ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'default-ipv4-ippool' },
      spec: { cidr: this.options.pool, blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never', natOutgoing: false },
    });
  }

  private event(event: string, fields: Record<string, unknown>): void {
    this.options.onEvent?.({ time: Date.now(), event, fields });
  }

  async addNode(): Promise<DemoNode> {
    const index = this.nextIndex++;
    if (index > 250) throw new Error('nodes: at most 250 (127.0.0.1 to 127.0.0.250)');
    const name = `node-${index}`;
    const address = `127.0.0.${index}`;
    const dataplane = new MemoryDataplane({ links: [UPLINK] });
    const agent = new NodeAgent({
      nodeName: name,
      datastore: this.ds,
      dataplane,
      ipv4Address: `${address}/8`,
      uplink: UPLINK,
      bgpPort: this.options.port,
      holdTime: 9,
      connectRetryTime: 1,
      felix: { resyncIntervalMs: 0, sysctls: false },
      defaultIpv4Pool: false,
      log: (event, fields) => this.event(event, fields),
    });
    agent.on('error', (e) => this.event('agent-error', { node: name, error: e.message }));
    const node = { name, address, agent, dataplane };
    this.nodes.set(name, node);
    await agent.start();
    if (this.tor) this.tor.peer(address, BGP_DEFAULTS.asNumber);
    return node;
  }

  /**
   * CNI ADD as `podroute-cni` runs it, minus the veth: the same network configuration and
   * environment parsing, the same names, IPAM handle and attributes, the same WorkloadEndpoint.
   * The in-memory dataplane gets the host end of the veth as a link.
   */
  async addPod(nodeName: string, pod: string): Promise<DemoPod> {
    const node = this.nodes.get(nodeName);
    if (!node) throw new Error(`no node ${nodeName}`);
    const containerId = `demo${(++this.containerSeq).toString().padStart(8, '0')}`;
    const conf = parseNetConf(
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'k8s-pod-network',
        type: 'podroute-cni',
        nodename: nodeName,
        args: { cni: { labels: [{ key: 'app', value: pod.replace(/-\d+$/, '') }] } },
      }),
    );
    const env = parseEnv({
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: containerId,
      CNI_NETNS: `/var/run/netns/${containerId}`,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: `K8S_POD_NAMESPACE=${NAMESPACE};K8S_POD_NAME=${pod}`,
    });
    const w = workloadFor(env, nodeName);
    const assigned = await this.ipam.autoAssign({
      handle: env.containerId,
      node: nodeName,
      pools: conf.ipam?.pools,
      attrs: { namespace: w.namespace, pod: w.pod, containerID: env.containerId },
    });
    node.dataplane.addLink(w.hostIf);
    const wep: WorkloadEndpoint = {
      apiVersion: API_VERSION,
      kind: 'WorkloadEndpoint',
      metadata: {
        name: w.name,
        namespace: w.namespace,
        labels: workloadLabels(conf, w.namespace, 'k8s'),
        annotations: { [CONTAINER_ID_ANNOTATION]: env.containerId },
      },
      spec: {
        orchestrator: 'k8s',
        workload: env.containerId,
        node: nodeName,
        pod: w.pod,
        endpoint: env.ifname,
        interfaceName: w.hostIf,
        ipNetworks: [assigned.cidr],
      },
    };
    await this.ds.apply(wep);
    const p: DemoPod = {
      name: pod,
      node: nodeName,
      ip: assigned.ip,
      interfaceName: w.hostIf,
      containerId,
      endpoint: `${w.namespace}/${w.name}`,
    };
    this.pods.set(pod, p);
    this.event('pod-added', { node: nodeName, pod, ip: assigned.ip, interface: w.hostIf });
    return p;
  }

  /** CNI DEL: the endpoint, the host veth, the address, in the plugin's order. */
  async deletePod(pod: string): Promise<void> {
    const p = this.pods.get(pod);
    if (!p) throw new Error(`no pod ${pod}`);
    await this.ds.delete('WorkloadEndpoint', p.endpoint);
    this.nodes.get(p.node)?.dataplane.links.delete(p.interfaceName);
    await this.ipam.releaseByHandle(p.containerId);
    this.pods.delete(pod);
    this.event('pod-deleted', { node: p.node, pod, ip: p.ip });
  }

  /** Gives a node Calico's routeReflectorClusterID: it reflects for every node without one. */
  async makeReflector(nodeName: string, clusterId: string): Promise<void> {
    const n = await this.ds.get('Node', nodeName);
    if (!n) throw new Error(`no Node ${nodeName}`);
    await this.ds.apply({
      ...n,
      metadata: { ...n.metadata, resourceVersion: undefined },
      spec: { ...n.spec, bgp: { ...n.spec.bgp, routeReflectorClusterID: clusterId } },
    });
    this.reflectors.add(nodeName);
  }

  async setMesh(enabled: boolean): Promise<void> {
    const existing = await this.ds.get('BGPConfiguration', 'default');
    await this.ds.apply({
      apiVersion: API_VERSION,
      kind: 'BGPConfiguration',
      metadata: { name: 'default' },
      spec: { ...existing?.spec, nodeToNodeMeshEnabled: enabled },
    });
    this.mesh = enabled;
  }

  /** Starts the top-of-rack and a global BGPPeer towards it: every node peers with it. */
  async addTopOfRack(address: string, asn: number): Promise<TopOfRack> {
    const tor = new TopOfRack({ address, asn, port: this.options.port });
    await tor.start();
    this.tor = tor;
    for (const n of this.nodes.values()) tor.peer(n.address, BGP_DEFAULTS.asNumber);
    await this.ds.apply({
      apiVersion: API_VERSION,
      kind: 'BGPPeer',
      metadata: { name: 'top-of-rack' },
      spec: { peerIP: address, asNumber: asn },
    });
    return tor;
  }

  /** The sessions a node should have (peer address and type), from what the demo asked of the cluster. */
  expectedPeers(nodeName: string): { address: string; type: string }[] {
    const out: { address: string; type: string }[] = [];
    const reflector = this.reflectors.has(nodeName);
    for (const other of this.nodes.values()) {
      if (other.name === nodeName) continue;
      const otherReflects = this.reflectors.has(other.name);
      if (reflector) out.push({ address: other.address, type: otherReflects ? 'rr' : 'rr-client' });
      else if (otherReflects) out.push({ address: other.address, type: 'rr' });
      else if (this.mesh) out.push({ address: other.address, type: 'mesh' });
    }
    if (this.tor) out.push({ address: this.tor.options.address, type: 'global' });
    return out;
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.nodes.values()].map((n) => n.agent.stop('demo stopping')));
    await this.tor?.stop();
    await this.ds.close();
  }
}
