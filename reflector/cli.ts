// `podroute reflector`: run the reflector daemon, or ask a running one (the bgpd queries).
import { parseArgs } from 'node:util';
import { callControl } from '../lib/bgpd/control.js';
import { bgpdCommand, formatPeers } from '../lib/cli/bgpd.js';
import { runReflector } from './daemon.js';
import type { ReflectorStatus } from './reflector.js';

const usage = `usage:
  podroute reflector --config <file> [--control <socket>]   run a route reflector (RFC 4456)
  podroute reflector status --control <socket>               its peers and roles, loops dropped
  podroute reflector routes --control <socket> [--family ipv4-unicast|ipv6-unicast]
`;

export async function reflectorCommand(args: string[]): Promise<number> {
  if (args[0] === 'routes') return bgpdCommand(args);
  const sub = args[0] === 'status' ? args.shift() : 'run';
  const { values } = parseArgs({ args, options: { config: { type: 'string' }, control: { type: 'string' } } });
  if (sub === 'run') {
    if (!values.config) {
      process.stderr.write(usage);
      return 2;
    }
    await runReflector({ config: values.config, control: values.control });
    return new Promise<number>(() => {}); // runs until stopped
  }
  if (!values.control) {
    process.stderr.write(usage);
    return 2;
  }
  const s = await callControl<ReflectorStatus>(values.control, 'GET', '/status');
  const clients = s.peers.filter((p) => p.role === 'client');
  const groups = s.updateGroups.map((g) => `${g.type}${g.routeReflectorClient ? ' clients' : ''}: ${g.members} peers`).join(', ');
  process.stdout.write(
    `Route reflector AS ${s.asn}, router ID ${s.routerId}, cluster ID ${s.clusterId}\n` +
      `clients ${clients.filter((p) => p.state === 'Established').length}/${clients.length} up, ` +
      `${s.rib.prefixes['ipv4-unicast']} IPv4 and ${s.rib.prefixes['ipv6-unicast']} IPv6 prefixes, loops dropped ${s.loopRejected}\n` +
      `update groups: ${groups || 'none'}\n\n` +
      formatPeers(s.peers.map((p) => ({ ...p, lastError: [p.role, p.loopRejected ? `${p.loopRejected} loops` : '', p.lastError].filter(Boolean).join(' ') }))),
  );
  return 0;
}
