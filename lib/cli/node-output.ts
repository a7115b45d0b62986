// What `podroute node status` and `podroute bgp summary|routes` print for a person: tables in
// calicoctl's and `show bgp`'s shapes, from what the running agent answered.
import type { AgentStatus } from '../agent/index.js';

const TYPE_TEXT: Record<string, string> = {
  mesh: 'node-to-node mesh',
  rr: 'route reflector',
  'rr-client': 'rr client',
  global: 'global',
  node: 'node specific',
};

/** A boxed table, as calicoctl draws one. */
function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = '+' + widths.map((w) => '-'.repeat(w + 2)).join('+') + '+';
  const row = (cells: string[]) => '|' + cells.map((c, i) => ` ${c.padEnd(widths[i]!)} `).join('|') + '|';
  return [line, row(headers), line, ...rows.map(row), line].join('\n') + '\n';
}

/** When a state began: the time today, else the date. */
function since(ms: number): string {
  if (!ms) return '-';
  const d = new Date(ms);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toTimeString().slice(0, 8) : d.toISOString().slice(0, 10);
}

/** `calicoctl node status`, from a running agent's status; wide adds each peer's AS, source and prefixes. */
export function formatNodeStatus(s: AgentStatus, wide = false): string {
  const headers = ['PEER ADDRESS', 'PEER TYPE', 'STATE', 'SINCE', 'INFO', ...(wide ? ['AS', 'SOURCE', 'RECEIVED', 'SENT'] : [])];
  const row = (p: AgentStatus['peers'][number]) => [
    p.address,
    TYPE_TEXT[p.type] ?? p.type,
    p.state === 'Established' ? 'up' : 'start',
    since(p.since),
    p.info,
    ...(wide ? [String(p.asn), String(p.source ?? ''), String(p.prefixesReceived), String(p.prefixesSent)] : []),
  ];
  let out = `podroute process is running.\n\nIPv4 BGP status\n`;
  const v4 = s.peers.filter((p) => !p.address.includes(':'));
  out += v4.length === 0 ? 'No IPv4 peers found.\n' : table(headers, v4.map(row));
  const v6 = s.peers.filter((p) => p.address.includes(':'));
  out += `\nIPv6 BGP status\n`;
  out += v6.length === 0 ? 'No IPv6 peers found.\n' : table(headers, v6.map(row));
  // A route the agent could not program is a failure the operator must see, with why.
  const failing = s.routes?.notProgrammed ?? [];
  if (failing.length > 0)
    out += `\nRoutes not programmed (${s.routes.failures})\n${table(
      ['DESTINATION', 'REASON'],
      failing.map((r) => [r.dst, r.reason]),
    )}`;
  // A Service the agent refuses to program is a failure the operator must see.
  const refused = s.services?.refused ?? [];
  if (refused.length > 0)
    out += `\nServices refused (not programmed)\n${table(
      ['SERVICE', 'FIELD', 'REASON'],
      refused.map((r) => [r.service, r.field, r.reason]),
    )}`;
  return out;
}

/** `show bgp summary`: the speaker, then one row a session. */
export function formatBgpSummary(s: AgentStatus): string {
  const head = `BGP router identifier ${s.routerId}, local AS number ${s.asn}${s.clusterId ? `, cluster ID ${s.clusterId}` : ''}\n`;
  return (
    head +
    table(
      ['NEIGHBOR', 'AS', 'TYPE', 'STATE', 'UP/DOWN', 'PFX RCD', 'PFX SNT'],
      s.peers.map((p) => [
        p.address,
        String(p.asn),
        TYPE_TEXT[p.type] ?? p.type,
        p.state,
        since(p.since),
        String(p.prefixesReceived),
        String(p.prefixesSent),
      ]),
    )
  );
}

export interface LearnedRoute {
  prefix: string;
  nextHop: string;
  from: string;
  stale: boolean;
}

/** The routes learned over BGP, then those programmed in the kernel. */
export function formatBgpRoutes(routes: readonly LearnedRoute[], programmed: readonly string[]): string {
  return (
    table(
      ['PREFIX', 'NEXT HOP', 'FROM', 'STALE'],
      routes.map((r) => [r.prefix, r.nextHop, r.from, r.stale ? 'yes' : '']),
    ) + `\nProgrammed (ip route):\n${programmed.map((r) => `  ${r}`).join('\n')}\n`
  );
}
