// `podroute bgpd` and `podroute reflector`: run a speaker daemon of either kind, or ask a
// running one for its state. Both answer the same control API; the reflector's status adds
// its cluster, each peer's role and the loops it dropped.
import { parseArgs } from 'node:util';
import type { PeerStatus } from '../../bgp/index.js';
import type { ReflectorPeerStatus, ReflectorStatus } from '../../reflector/index.js';
import { callControl, type RouteView } from '../bgpd/control.js';
import { runBgpd, runReflector, type DaemonOptions } from '../bgpd/daemon.js';

interface SpeakerStatus {
  asn: number;
  routerId: string;
  peers: PeerStatus[];
}

interface Daemon {
  usage: string;
  run: (options: DaemonOptions) => Promise<unknown>;
  status: (control: string) => Promise<string>;
}

const routesUsage = (command: string) => `  podroute ${command} routes --control <socket> [--family ipv4-unicast|ipv6-unicast]\n`;

const bgpd: Daemon = {
  usage:
    'usage:\n' +
    '  podroute bgpd --config <file> [--control <socket>]   run a BGP speaker\n' +
    '  podroute bgpd status --control <socket>               its peers, as "show bgp summary"\n' +
    routesUsage('bgpd'),
  run: runBgpd,
  async status(control) {
    const s = await callControl<SpeakerStatus>(control, 'GET', '/status');
    return `BGP speaker AS ${s.asn}, router ID ${s.routerId}\n\n${formatPeers(s.peers)}`;
  },
};

const reflector: Daemon = {
  usage:
    'usage:\n' +
    '  podroute reflector --config <file> [--control <socket>]   run a route reflector (RFC 4456)\n' +
    '  podroute reflector status --control <socket>               its peers and roles, loops dropped\n' +
    routesUsage('reflector'),
  run: runReflector,
  async status(control) {
    const s = await callControl<SpeakerStatus | ReflectorStatus>(control, 'GET', '/status');
    if (!('clusterId' in s)) throw new Error(`${control}: not a route reflector (podroute bgpd status shows its peers)`);
    const clients = s.peers.filter((p) => p.role === 'client');
    const groups = s.updateGroups.map((g) => `${g.type}${g.routeReflectorClient ? ' clients' : ''}: ${g.members} peers`).join(', ');
    const info = (p: ReflectorPeerStatus) =>
      [p.role, p.loopRejected ? `${p.loopRejected} loops` : '', p.lastError].filter(Boolean).join(' ');
    return (
      `Route reflector AS ${s.asn}, router ID ${s.routerId}, cluster ID ${s.clusterId}\n` +
      `clients ${clients.filter((p) => p.state === 'Established').length}/${clients.length} up, ` +
      `${s.rib.prefixes['ipv4-unicast']} IPv4 and ${s.rib.prefixes['ipv6-unicast']} IPv6 prefixes, loops dropped ${s.loopRejected}\n` +
      `update groups: ${groups || 'none'}\n\n` +
      formatPeers(s.peers.map((p) => ({ ...p, lastError: info(p) })))
    );
  },
};

function age(ms: number): string {
  const s = Math.floor((Date.now() - ms) / 1000);
  return s < 3600 ? `${Math.floor(s / 60)}m${s % 60}s` : `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/** A peer's maxPrefixes and its hold-down, as INFO shows them. */
function maxPrefixInfo(p: PeerStatus): string {
  const m = p.maxPrefixes;
  if (!m) return '';
  const limits = m.limits.map((l) => `${l.family.replace('-unicast', '')} ${l.limit}${l.warningOnly ? ' warn' : ''}`).join(', ');
  const h = m.heldDown;
  const held = !h
    ? ''
    : h.restartAt !== undefined
      ? `, held down ${Math.max(0, Math.ceil((h.restartAt - Date.now()) / 1000))} s more`
      : ', held down until cleared';
  return `max prefixes ${limits}${held}`;
}

/** The peers as "show bgp summary" lists them; INFO is each peer's last error and its prefix limits. */
export function formatPeers(peers: PeerStatus[]): string {
  const rows = [['PEER ADDRESS', 'AS', 'TYPE', 'STATE', 'SINCE', 'RECEIVED', 'SENT', 'INFO']];
  for (const p of peers) {
    const info = [p.lastError, maxPrefixInfo(p)].filter(Boolean).join('; ');
    rows.push([p.address, String(p.asn), p.type, p.state, age(p.since), String(p.prefixesReceived), String(p.prefixesSent), info]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => c.padEnd(widths[i]))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/** One path as "show bgp" lists it: best mark, prefix, next hop, peer, AS path, origin. */
function formatRoute(r: RouteView): string {
  const path = (r.attributes.asPath ?? []).flatMap((s) => (s.type === 'set' ? [`{${s.asns.join(',')}}`] : s.asns.map(String))).join(' ');
  return `${r.best ? '*>' : '* '} ${r.prefix.padEnd(20)} ${r.nextHop.padEnd(16)} ${r.from.padEnd(16)} ${path} ${r.attributes.origin ?? ''}\n`;
}

async function daemonCommand(daemon: Daemon, args: string[]): Promise<number> {
  const sub = args[0] === 'status' || args[0] === 'routes' ? args.shift() : 'run';
  const { values } = parseArgs({ args, options: { config: { type: 'string' }, control: { type: 'string' }, family: { type: 'string' } } });
  if (sub === 'run') {
    if (!values.config) {
      process.stderr.write(daemon.usage);
      return 2;
    }
    await daemon.run({ config: values.config, control: values.control });
    return new Promise<number>(() => {}); // runs until stopped
  }
  if (!values.control) {
    process.stderr.write(daemon.usage);
    return 2;
  }
  if (sub === 'status') {
    process.stdout.write(await daemon.status(values.control));
    return 0;
  }
  const routes = await callControl<RouteView[]>(values.control, 'GET', `/routes?family=${values.family ?? 'ipv4-unicast'}`);
  for (const r of routes) process.stdout.write(formatRoute(r));
  return 0;
}

export function bgpdCommand(args: string[]): Promise<number> {
  return daemonCommand(bgpd, args);
}

export function reflectorCommand(args: string[]): Promise<number> {
  return daemonCommand(reflector, args);
}
