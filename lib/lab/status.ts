// `podroute lab status`: the lab's nodes, their processes, and each BGP speaker's sessions
// (FRR through vtysh, podroute agents through their control sockets).
import type { AgentStatus } from '../agent/index.js';
import { callControl } from '../bgpd/control.js';
import { podRef } from './pods.js';
import { controlSocket, nsName, vtysh } from './runner.js';
import type { LabState } from './state.js';
import { isOurs, listNetns } from './system.js';

export interface BgpSession {
  peer: string;
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
  topology: string;
  nodes: NodeStatus[];
  pods: { name: string; node: string; ip?: string }[];
}

interface FrrSummary {
  ipv4Unicast?: { peers?: Record<string, { remoteAs: number; state: string; pfxRcd?: number }> };
}

export async function frrSessions(state: LabState, node: string): Promise<BgpSession[]> {
  const s = JSON.parse(await vtysh(state, node, 'show bgp summary json')) as FrrSummary;
  return Object.entries(s.ipv4Unicast?.peers ?? {}).map(([peer, p]) => ({
    peer,
    asn: p.remoteAs,
    state: p.state,
    prefixesReceived: p.pfxRcd ?? 0,
  }));
}

export async function agentSessions(state: LabState, node: string): Promise<BgpSession[]> {
  const s = await callControl<AgentStatus>(controlSocket(state, node), 'GET', '/status');
  return s.peers.map((p) => ({ peer: p.address, asn: p.asn, state: p.state, prefixesReceived: p.prefixesReceived }));
}

export async function labStatus(state: LabState): Promise<LabStatus> {
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
        else if (procs.some((p) => p.what === 'agent' && isOurs(p))) out.sessions = await agentSessions(state, node);
      } catch (e) {
        out.error = (e as Error).message;
      }
      return out;
    }),
  );
  return { name: state.name, topology: state.topology, nodes, pods: state.pods.map((p) => ({ name: podRef(p), node: p.node, ip: p.ip })) };
}

export function formatLabStatus(s: LabStatus): string {
  const lines = [`lab ${s.name} (${s.topology})`, ''];
  const rows = [['NODE', 'NAMESPACE', 'PROCESSES', 'BGP SESSIONS']];
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
    lines.push('', 'POD  NODE  IP');
    for (const p of s.pods) lines.push(`${p.name}  ${p.node}  ${p.ip ?? '-'}`);
  }
  return lines.join('\n') + '\n';
}
