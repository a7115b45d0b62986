// One look at the whole cluster: each node's sessions, RIB and programmed routes, the pods, the
// top-of-rack, and how far it is from what the datastore asks for. The view prints it; --json
// writes it as it is.
import { PODROUTE_PROTOCOL } from '../../felix/index.js';
import type { DemoCluster } from './cluster.js';
import { UPLINK } from './cluster.js';
import { compareDst, expectedRoutes, ipRoutes, type BlockOwner, type EndpointRoute } from './routes.js';

export interface SessionView {
  peer: string;
  /** The node (or "tor") at that address, when the demo knows it. */
  peerName: string;
  type: string;
  state: string;
  /** Seconds in the current state. */
  uptime: number;
  received: number;
  sent: number;
}

export interface RibEntry {
  prefix: string;
  nextHop: string;
  /** The peer it came from, or "local" for a route the node originates. */
  from: string;
}

export interface NodeView {
  name: string;
  address: string;
  asn: number;
  clusterId?: string;
  blocks: string[];
  sessions: SessionView[];
  /** Best paths of the node's Loc-RIB. */
  rib: RibEntry[];
  /** What the node's dataplane holds, as `ip route` prints it. */
  routes: string[];
  /** What it should hold. */
  expected: string[];
}

export interface PodView {
  name: string;
  node: string;
  ip: string;
  interfaceName: string;
}

export interface TorView {
  address: string;
  asn: number;
  sessions: SessionView[];
  routes: { prefix: string; nextHop: string; asPath: string }[];
}

export interface Progress {
  sessionsEstablished: number;
  sessionsExpected: number;
  /** Sessions a node still holds that the cluster no longer asks for. */
  sessionsExtra: number;
  routesProgrammed: number;
  routesExpected: number;
  /** Routes still in a dataplane that should be gone. */
  routesExtra: number;
  converged: boolean;
}

export interface Snapshot {
  time: number;
  nodes: NodeView[];
  pods: PodView[];
  tor?: TorView;
  progress: Progress;
}

export async function takeSnapshot(c: DemoCluster): Promise<Snapshot> {
  const now = Date.now();
  const blocks: BlockOwner[] = (await c.ds.list('IPAMBlock')).items
    .filter((b) => b.spec.affinity?.startsWith('host:'))
    .map((b) => ({ cidr: b.spec.cidr, node: b.spec.affinity!.slice('host:'.length) }));
  const endpoints: EndpointRoute[] = (await c.ds.list('WorkloadEndpoint')).items.flatMap((w) =>
    w.spec.ipNetworks.map((cidr) => ({ node: w.spec.node, cidr, interfaceName: w.spec.interfaceName })),
  );
  const addresses = new Map([...c.nodes.values()].map((n) => [n.name, n.address]));
  const names = new Map([...c.nodes.values()].map((n) => [n.address, n.name]));
  if (c.tor) names.set(c.tor.options.address, 'tor');

  const p: Progress = {
    sessionsEstablished: 0,
    sessionsExpected: 0,
    sessionsExtra: 0,
    routesProgrammed: 0,
    routesExpected: 0,
    routesExtra: 0,
    converged: false,
  };
  const nodes: NodeView[] = [];
  for (const n of c.nodes.values()) {
    const status = n.agent.status();
    const sessions = status.peers.map((s) => ({
      peer: s.address,
      peerName: names.get(s.address) ?? '',
      type: s.type,
      state: s.state,
      uptime: s.since ? Math.max(0, Math.floor((now - s.since) / 1000)) : 0,
      received: s.prefixesReceived,
      sent: s.prefixesSent,
    }));
    const want = c.expectedPeers(n.name);
    p.sessionsExpected += want.length;
    p.sessionsEstablished += want.filter((w) =>
      sessions.some((s) => s.peer === w.address && s.type === w.type && s.state === 'Established'),
    ).length;
    p.sessionsExtra += sessions.filter((s) => !want.some((w) => w.address === s.peer && w.type === s.type)).length;
    const routes = ipRoutes([...n.dataplane.routes.values()].filter((r) => r.protocol === PODROUTE_PROTOCOL));
    const expected = expectedRoutes(n.name, blocks, addresses, endpoints, UPLINK);
    p.routesExpected += expected.length;
    p.routesProgrammed += expected.filter((r) => routes.includes(r)).length;
    p.routesExtra += routes.filter((r) => !expected.includes(r)).length;
    nodes.push({
      name: n.name,
      address: n.address,
      asn: status.asn,
      clusterId: status.clusterId,
      blocks: blocks.filter((b) => b.node === n.name).map((b) => b.cidr),
      sessions,
      rib: (n.agent.speaker?.routes('ipv4-unicast') ?? []).map((r) => ({
        prefix: r.prefix,
        nextHop: r.nextHop,
        from: r.peer && r.peer.type !== 'local' ? r.peer.address : 'local',
      })),
      routes,
      expected,
    });
  }
  let tor: TorView | undefined;
  if (c.tor) {
    const t = c.tor;
    const sessions = t.peers().map((s) => ({
      peer: s.address,
      peerName: names.get(s.address) ?? '',
      type: s.type,
      state: s.state,
      uptime: s.since ? Math.max(0, Math.floor((now - s.since) / 1000)) : 0,
      received: s.prefixesReceived,
      sent: s.prefixesSent,
    }));
    const routes = t.routes().sort((a, b) => compareDst(a.prefix, b.prefix));
    // The ToR learns every block; over eBGP each node announces itself as the next hop, so the
    // best path may name a node that learned the block from its owner.
    p.routesExpected += blocks.length;
    p.routesProgrammed += blocks.filter((b) => routes.some((r) => r.prefix === b.cidr)).length;
    p.routesExtra += routes.filter((r) => !blocks.some((b) => b.cidr === r.prefix)).length;
    tor = { address: t.options.address, asn: t.options.asn, sessions, routes };
  }
  p.converged =
    p.sessionsEstablished === p.sessionsExpected && p.sessionsExtra === 0 && p.routesProgrammed === p.routesExpected && p.routesExtra === 0;
  const pods = [...c.pods.values()].map((x) => ({ name: x.name, node: x.node, ip: x.ip, interfaceName: x.interfaceName }));
  return { time: now, nodes, pods, tor, progress: p };
}
