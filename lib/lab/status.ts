// `podroute lab status`: the lab's nodes, their processes, and each BGP speaker's sessions
// (FRR through vtysh, BIRD through birdc, podroute agents through their control sockets).
import type { AgentStatus } from '../agent/index.js';
import { callControl } from '../bgpd/control.js';
import { birdSessions } from './bird.js';
import { labDatastore, type LabDatastore } from './env.js';
import { podK8sNamespace, podRef } from './pods.js';
import { containerStates } from './containers.js';
import { controlSocket, labRuntime, nsName, runsAgent, runsBird, runsFrr, vtysh } from './runner.js';
import type { LabPod, LabState } from './state.js';
import { isOurs, listNetns } from './system.js';

export interface BgpSession {
  peer: string;
  /** What the session carries: ipv4-unicast, ipv6-unicast. */
  families: string[];
  asn: number;
  state: string;
  prefixesReceived: number;
}

export interface NodeStatus {
  node: string;
  namespace: string;
  present: boolean;
  processes: { what: string; pid: number; running: boolean }[];
  sessions?: BgpSession[];
  error?: string;
}

export interface LabStatus {
  name: string;
  /** Present for a lab in containers: the NAMESPACE column then names each node's container. */
  runtime?: 'docker';
  topology: string;
  /** Where the lab's resources live; `lab env` prints the exports that point podroute at it. */
  datastore?: LabDatastore;
  nodes: NodeStatus[];
  pods: PodStatus[];
}

export interface PodStatus {
  /** namespace/name, or the name alone in the default namespace. */
  name: string;
  /** The pod's Kubernetes namespace. */
  namespace: string;
  /** The pod's network namespace on the host (`ip netns exec` it). */
  netns: string;
  node: string;
  ip?: string;
  ip6?: string;
}

const podStatus = (p: LabPod): PodStatus => ({
  name: podRef(p),
  namespace: podK8sNamespace(p),
  netns: p.namespace,
  node: p.node,
  ip: p.ip,
  ip6: p.ip6,
});

type FrrPeers = { peers?: Record<string, { remoteAs: number; state: string; pfxRcd?: number }> };
interface FrrSummary {
  ipv4Unicast?: FrrPeers;
  ipv6Unicast?: FrrPeers;
}

/** An FRR node's sessions, one per neighbour, with the families it has active (a dual-stack router lists both). */
export async function frrSessions(state: LabState, node: string): Promise<BgpSession[]> {
  const s = JSON.parse(await vtysh(state, node, 'show bgp summary json')) as FrrSummary;
  const byPeer = new Map<string, BgpSession>();
  for (const [family, summary] of [
    ['ipv4-unicast', s.ipv4Unicast],
    ['ipv6-unicast', s.ipv6Unicast],
  ] as const) {
    for (const [peer, p] of Object.entries(summary?.peers ?? {})) {
      const known = byPeer.get(peer);
      if (known) {
        known.families.push(family);
        known.prefixesReceived += p.pfxRcd ?? 0;
      } else byPeer.set(peer, { peer, families: [family], asn: p.remoteAs, state: p.state, prefixesReceived: p.pfxRcd ?? 0 });
    }
  }
  return [...byPeer.values()];
}

export async function agentSessions(state: LabState, node: string): Promise<BgpSession[]> {
  const s = await callControl<AgentStatus>(controlSocket(state, node), 'GET', '/status');
  return s.peers.map((p) => ({
    peer: p.address,
    // An agent's session carries the family of its peer's address (one family a session, as BIRD and BIRD6).
    families: [p.address.includes(':') ? 'ipv6-unicast' : 'ipv4-unicast'],
    asn: p.asn,
    state: p.state,
    prefixesReceived: p.prefixesReceived,
  }));
}

/** docker runtime: one row per node container, its PID as the host sees it. */
async function containerNodes(state: LabState): Promise<NodeStatus[]> {
  const live = await containerStates(state);
  const nodes = [
    ...(state.bridges ?? []).map((b): NodeStatus => ({ node: b.node, namespace: `bridge ${b.name}`, present: true, processes: [] })),
    ...(state.containers ?? []).map((c): NodeStatus => {
      const l = live.get(c.node);
      return {
        node: c.node,
        namespace: c.name,
        present: l?.present ?? false,
        processes: [{ what: 'container', pid: l?.pid ?? 0, running: l?.running ?? false }],
      };
    }),
  ];
  await Promise.all(
    nodes.map(async (out) => {
      if (!live.get(out.node)?.running) return;
      try {
        if (runsFrr(state, out.node)) out.sessions = await frrSessions(state, out.node);
        else if (runsBird(state, out.node)) out.sessions = await birdSessions(state, out.node);
        else if (runsAgent(state, out.node)) out.sessions = await agentSessions(state, out.node);
      } catch (e) {
        out.error = (e as Error).message;
      }
    }),
  );
  return nodes;
}

export async function labStatus(state: LabState): Promise<LabStatus> {
  if (labRuntime(state) === 'docker')
    return {
      name: state.name,
      runtime: 'docker',
      topology: state.topology,
      datastore: labDatastore(state),
      nodes: await containerNodes(state),
      pods: state.pods.map(podStatus),
    };
  const existing = await listNetns();
  const nodes = await Promise.all(
    state.namespaces.map(async ({ node }): Promise<NodeStatus> => {
      const procs = state.processes.filter((p) => p.node === node);
      const out: NodeStatus = {
        node,
        namespace: nsName(state, node),
        present: existing.has(nsName(state, node)),
        processes: procs.map((p) => ({ what: p.what, pid: p.pid, running: isOurs(p) })),
      };
      try {
        if (procs.some((p) => p.what === 'bgpd' && isOurs(p))) out.sessions = await frrSessions(state, node);
        else if (procs.some((p) => p.what === 'bird' && isOurs(p))) out.sessions = await birdSessions(state, node);
        else if (procs.some((p) => p.what === 'agent' && isOurs(p))) out.sessions = await agentSessions(state, node);
      } catch (e) {
        out.error = (e as Error).message;
      }
      return out;
    }),
  );
  return {
    name: state.name,
    topology: state.topology,
    datastore: labDatastore(state),
    nodes,
    pods: state.pods.map(podStatus),
  };
}

export function formatLabStatus(s: LabStatus): string {
  const lines = [`lab ${s.name} (${s.topology})`];
  if (s.datastore)
    lines.push(
      `datastore: ${s.datastore.type} ${s.datastore.address} (for podroute on this host: --lab ${s.name}, or eval "$(podroute lab env ${s.name})")`,
    );
  lines.push('');
  const rows = [['NODE', s.runtime === 'docker' ? 'CONTAINER' : 'NAMESPACE', s.runtime === 'docker' ? 'PID' : 'PROCESSES', 'BGP SESSIONS']];
  for (const n of s.nodes) {
    const procs = n.processes.map((p) => `${p.what}:${p.pid}${p.running ? '' : '(dead)'}`).join(' ') || '-';
    const sessions = n.error
      ? `error: ${n.error}`
      : n.sessions === undefined
        ? '-'
        : n.sessions.map((x) => `${x.peer} ${x.state === 'Established' ? `up ${x.prefixesReceived} pfx` : x.state}`).join(', ') || 'none';
    rows.push([n.node, n.present ? n.namespace : `${n.namespace} (missing)`, procs, sessions]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) lines.push(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
  if (s.pods.length) {
    const dual = s.pods.some((p) => p.ip6 !== undefined);
    lines.push('', dual ? 'POD  NODE  IP  IPV6  NETNS' : 'POD  NODE  IP  NETNS');
    for (const p of s.pods) lines.push(`${p.name}  ${p.node}  ${p.ip ?? '-'}${dual ? `  ${p.ip6 ?? '-'}` : ''}  ${p.netns}`);
  }
  return lines.join('\n') + '\n';
}
