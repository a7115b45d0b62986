// `podroute bgpd`: run the speaker daemon, or ask a running one for its state.
import { parseArgs } from 'node:util';
import { callControl, type RouteView } from '../bgpd/control.js';
import { runBgpd } from '../bgpd/daemon.js';
import type { PeerStatus } from '../../bgp/index.js';

const usage = `usage:
  podroute bgpd --config <file> [--control <socket>]   run a BGP speaker
  podroute bgpd status --control <socket>               its peers, as "show bgp summary"
  podroute bgpd routes --control <socket> [--family ipv4-unicast|ipv6-unicast]
`;

function age(ms: number): string {
  const s = Math.floor((Date.now() - ms) / 1000);
  return s < 3600 ? `${Math.floor(s / 60)}m${s % 60}s` : `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

export function formatPeers(peers: PeerStatus[]): string {
  const rows = [['PEER ADDRESS', 'AS', 'TYPE', 'STATE', 'SINCE', 'RECEIVED', 'SENT', 'INFO']];
  for (const p of peers) {
    rows.push([p.address, String(p.asn), p.type, p.state, age(p.since), String(p.prefixesReceived), String(p.prefixesSent), p.lastError]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()).join('\n') + '\n';
}

export async function bgpdCommand(args: string[]): Promise<number> {
  const sub = args[0] === 'status' || args[0] === 'routes' ? args.shift() : 'run';
  const { values } = parseArgs({ args, options: { config: { type: 'string' }, control: { type: 'string' }, family: { type: 'string' } } });
  if (sub === 'run') {
    if (!values.config) {
      process.stderr.write(usage);
      return 2;
    }
    await runBgpd({ config: values.config, control: values.control });
    return new Promise<number>(() => {}); // runs until stopped
  }
  if (!values.control) {
    process.stderr.write(usage);
    return 2;
  }
  if (sub === 'status') {
    const s = await callControl<{ asn: number; routerId: string; peers: PeerStatus[] }>(values.control, 'GET', '/status');
    process.stdout.write(`BGP speaker AS ${s.asn}, router ID ${s.routerId}\n\n${formatPeers(s.peers)}`);
    return 0;
  }
  const routes = await callControl<RouteView[]>(values.control, 'GET', `/routes?family=${values.family ?? 'ipv4-unicast'}`);
  for (const r of routes) {
    const path = (r.attributes.asPath ?? []).flatMap((s) => (s.type === 'set' ? [`{${s.asns.join(',')}}`] : s.asns.map(String))).join(' ');
    process.stdout.write(`${r.best ? '*>' : '* '} ${r.prefix.padEnd(20)} ${r.nextHop.padEnd(16)} ${r.from.padEnd(16)} ${path} ${r.attributes.origin ?? ''}\n`);
  }
  return 0;
}
