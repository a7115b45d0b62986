// `podroute bgpd` and `podroute reflector`: run a speaker daemon of either kind, or ask a
// running one for its state. Both answer the same control API; the reflector's status adds
// its cluster, each peer's role and the loops it dropped.
import { isIP } from 'node:net';
import type { PeerStatus } from '../../bgp/index.js';
import type { ReflectorPeerStatus, ReflectorStatus } from '../../reflector/index.js';
import { callControl, type RouteView } from '../bgpd/control.js';
import { runBgpd, runReflector, type DaemonOptions } from '../bgpd/daemon.js';
import { logFormat, logLevel } from '../log/index.js';
import { UsageError, type CommandSpec, type OptionSpec, type Parsed } from './args.js';
import { columns, emit, OUTPUT, outputOf } from './output.js';

interface SpeakerStatus {
  asn: number;
  routerId: string;
  peers: PeerStatus[];
}

interface Daemon {
  run: (options: DaemonOptions) => Promise<unknown>;
  status: (control: string) => Promise<string>;
}

const bgpd: Daemon = {
  run: runBgpd,
  async status(control) {
    const s = await callControl<SpeakerStatus>(control, 'GET', '/status');
    return `BGP speaker AS ${s.asn}, router ID ${s.routerId}\n\n${formatPeers(s.peers)}`;
  },
};

const reflector: Daemon = {
  run: runReflector,
  async status(control) {
    const s = await callControl<SpeakerStatus | ReflectorStatus>(control, 'GET', '/status');
    if (!('clusterId' in s)) throw new Error(`${control}: not a route reflector (podroute bgpd status shows its peers)`);
    const clients = s.peers.filter((p) => p.role === 'client');
    // Peers that advertised LLGR are a group of their own: only they may be sent LLGR_STALE routes.
    const groups = s.updateGroups
      .map((g) => `${g.type}${g.routeReflectorClient ? ' clients' : ''}${g.longLivedGracefulRestart ? ' (LLGR)' : ''}: ${g.members} peers`)
      .join(', ');
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

/** A peer's BFD session in a few words: "BFD Up 100ms×3", or Down with its diagnostic. */
export function bfdInfo(p: PeerStatus): string {
  const b = p.bfd;
  if (!b) return '';
  const timers = `${b.transmitInterval}ms×${b.multiplier}`;
  return b.state === 'Up' ? `BFD Up ${timers}` : `BFD ${b.state} (${b.diagnostic}) ${timers}`;
}

/** The peers as "show bgp summary" lists them; INFO is each peer's last error and its prefix limits. */
export function formatPeers(peers: PeerStatus[]): string {
  const rows = [['PEER ADDRESS', 'AS', 'TYPE', 'STATE', 'SINCE', 'RECEIVED', 'SENT', 'INFO']];
  for (const p of peers) {
    const info = [p.lastError, maxPrefixInfo(p), bfdInfo(p)].filter(Boolean).join('; ');
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

const LOG_OPTIONS = {
  'log-level': { type: 'string', choices: ['debug', 'info', 'warning', 'error', 'none'], help: 'least severe line logged (default info)' },
  'log-format': { type: 'string', choices: ['json', 'text'], help: 'json lines (default) or text for people' },
} as const satisfies Record<string, OptionSpec>;

const CONTROL: OptionSpec = { type: 'string', value: '<socket>', help: "the daemon's control socket (or PODROUTE_BGPD_CONTROL)" };
const FAMILY: OptionSpec = { type: 'string', value: 'ipv4-unicast|ipv6-unicast', help: 'address family (default ipv4-unicast)' };

function controlOf(p: Parsed): string {
  const c = (p.values.control as string | undefined) ?? process.env.PODROUTE_BGPD_CONTROL;
  if (!c) throw new UsageError('--control <socket> is required (or PODROUTE_BGPD_CONTROL)');
  return c;
}

const out = (s: string) => process.stdout.write(s);

function asPath(r: { attributes: RouteView['attributes'] }): string {
  return (r.attributes.asPath ?? []).flatMap((s) => (s.type === 'set' ? [`{${s.asns.join(',')}}`] : s.asns.map(String))).join(' ');
}

/** Routes as "show bgp" lists them; wide adds MED, LOCAL_PREF and communities. */
function routeTable(routes: readonly (Partial<RouteView> & Pick<RouteView, 'prefix' | 'nextHop' | 'attributes'>)[], wide: boolean): string {
  const head = ['', 'PREFIX', 'NEXT HOP', 'FROM', 'AS PATH', 'ORIGIN'];
  if (wide) head.push('PATH ID', 'MED', 'LOCAL PREF', 'COMMUNITIES');
  const rows = routes.map((r) => {
    const row = [r.best === undefined ? '' : r.best ? '*>' : '*', r.prefix, r.nextHop, r.from ?? '', asPath(r), r.attributes.origin ?? ''];
    if (wide)
      row.push(
        String(r.pathId ?? ''),
        r.attributes.med === undefined ? '' : String(r.attributes.med),
        r.attributes.localPref === undefined ? '' : String(r.attributes.localPref),
        (r.attributes.communities ?? []).join(' '),
      );
    return row;
  });
  return columns([head, ...rows]);
}

/** A peer as `gobgp neighbor ADDR` shows it: one field a line. */
function peerDetail(p: PeerStatus): string {
  const rows: [string, string][] = [
    ['BGP neighbor', p.address],
    ['remote AS', String(p.asn)],
    ['type', p.type],
    ['state', `${p.state}, for ${age(p.since)}`],
    ['remote router ID', p.routerId ?? ''],
    ['families', p.families.join(', ')],
    ['prefixes accepted', String(p.prefixesReceived)],
    ['prefixes advertised', String(p.prefixesSent)],
    ['messages in/out', `${p.messagesIn}/${p.messagesOut}`],
    ['description', p.description ?? ''],
    ['last error', p.lastError],
    ['limits', maxPrefixInfo(p)],
    ['BFD', bfdInfo(p)],
  ];
  return rows
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `  ${`${k}:`.padEnd(21)} ${v}\n`)
    .join('');
}

/** `bgpd|reflector neighbor [ADDR [adj-in|adj-out|reset|softreset [in|out]]]`, GoBGP's words. */
async function neighborCommand(p: Parsed): Promise<number> {
  const control = controlOf(p);
  const [address, verb, direction] = p.positionals;
  const o = outputOf(p.values.output);
  const family = (p.values.family as string | undefined) ?? 'ipv4-unicast';
  if (address === undefined) {
    const peers = await callControl<PeerStatus[]>(control, 'GET', '/neighbors');
    out(o === 'json' || o === 'yaml' ? emit(peers, o) : o === 'wide' ? widePeers(peers) : formatPeers(peers));
    return 0;
  }
  const q = `address=${encodeURIComponent(address)}&family=${encodeURIComponent(family)}`;
  switch (verb) {
    case undefined: {
      const peer = await callControl<PeerStatus>(control, 'GET', `/neighbor?${q}`);
      out(o === 'json' || o === 'yaml' ? emit(peer, o) : peerDetail(peer));
      return 0;
    }
    case 'adj-in':
    case 'adj-out': {
      const routes = await callControl<RouteView[]>(control, 'GET', `/neighbor/${verb}?${q}`);
      out(o === 'json' || o === 'yaml' ? emit(routes, o) : routeTable(routes, o === 'wide'));
      return 0;
    }
    case 'reset':
      await callControl(control, 'POST', '/neighbor/reset', { address });
      out(`reset ${address}\n`);
      return 0;
    case 'softreset':
    case 'softresetin':
    case 'softresetout': {
      const d = verb === 'softresetin' ? 'in' : verb === 'softresetout' ? 'out' : (direction ?? 'both');
      if (d !== 'in' && d !== 'out' && d !== 'both') throw new UsageError(`softreset: ${JSON.stringify(d)} must be in or out`);
      await callControl(control, 'POST', '/neighbor/softreset', { address, direction: d, family });
      out(`soft reset ${d} ${address} ${family}\n`);
      return 0;
    }
    default:
      throw new UsageError(`neighbor ${address}: unknown ${JSON.stringify(verb)} (adj-in, adj-out, reset, softreset [in|out])`);
  }
}

/** formatPeers with the columns a wide terminal has room for. */
function widePeers(peers: PeerStatus[]): string {
  const rows = [
    [
      'PEER ADDRESS',
      'AS',
      'TYPE',
      'STATE',
      'SINCE',
      'ROUTER ID',
      'FAMILIES',
      'RECEIVED',
      'SENT',
      'MSGS IN',
      'MSGS OUT',
      'DESCRIPTION',
      'INFO',
    ],
  ];
  for (const p of peers)
    rows.push([
      p.address,
      String(p.asn),
      p.type,
      p.state,
      age(p.since),
      p.routerId ?? '',
      p.families.join(','),
      String(p.prefixesReceived),
      String(p.prefixesSent),
      String(p.messagesIn),
      String(p.messagesOut),
      p.description ?? '',
      [p.lastError, maxPrefixInfo(p), bfdInfo(p)].filter(Boolean).join('; '),
    ]);
  return columns(rows);
}

/** The commands of `podroute bgpd` or `podroute reflector`. */
export function daemonSpec(name: 'bgpd' | 'reflector'): CommandSpec {
  const daemon = name === 'bgpd' ? bgpd : reflector;
  const what = name === 'bgpd' ? 'a BGP speaker' : 'a route reflector (RFC 4456)';
  const read = { control: CONTROL, output: OUTPUT };
  return {
    name,
    summary: `run ${what} from a config file, or ask a running one through its control socket`,
    options: {
      config: { type: 'string', value: '<file>', help: 'the YAML config file (required to run)' },
      control: { type: 'string', value: '<socket>', help: 'serve the control API on this Unix socket' },
      ...LOG_OPTIONS,
      'metrics-port': { type: 'string', value: '<port>', help: 'serve Prometheus /metrics on this port (0: any free port)' },
      'metrics-host': { type: 'string', value: '<address>', help: 'address /metrics listens on (default 127.0.0.1)' },
    },
    async run(p) {
      const v = p.values;
      if (!v.config) throw new UsageError(`${name}: --config <file> is required`);
      let metricsPort: number | undefined;
      if (v['metrics-port'] !== undefined) {
        metricsPort = Number(v['metrics-port']);
        if (!Number.isInteger(metricsPort) || metricsPort < 0 || metricsPort > 65535)
          throw new UsageError(`--metrics-port: ${JSON.stringify(v['metrics-port'])} is not a port number (0-65535)`);
      }
      const host = v['metrics-host'] as string | undefined;
      if (host !== undefined && isIP(host) === 0) throw new UsageError(`--metrics-host: ${JSON.stringify(host)} is not an IP address`);
      await daemon.run({
        config: v.config as string,
        control: v.control as string | undefined,
        logLevel: v['log-level'] === undefined ? undefined : logLevel(v['log-level'], '--log-level'),
        logFormat: v['log-format'] === undefined ? undefined : logFormat(v['log-format'], '--log-format'),
        metricsPort,
        metricsHost: host,
      });
      return new Promise<number>(() => {}); // runs until stopped
    },
    subcommands: [
      {
        name: 'status',
        summary: name === 'bgpd' ? 'its peers, as "show bgp summary"' : 'its peers and their roles, loops dropped',
        options: read,
        async run(p) {
          const control = controlOf(p);
          const o = outputOf(p.values.output);
          if (o === 'json' || o === 'yaml') out(emit(await callControl(control, 'GET', '/status'), o));
          else if (o === 'wide') {
            const s = await callControl<SpeakerStatus>(control, 'GET', '/status');
            out(`AS ${s.asn}, router ID ${s.routerId}\n\n${widePeers(s.peers)}`);
          } else out(await daemon.status(control));
          return 0;
        },
      },
      {
        name: 'routes',
        summary: 'every path of the Loc-RIB, best first (gobgp global rib)',
        options: { ...read, family: FAMILY },
        async run(p) {
          const routes = await callControl<RouteView[]>(
            controlOf(p),
            'GET',
            `/routes?family=${encodeURIComponent((p.values.family as string | undefined) ?? 'ipv4-unicast')}`,
          );
          const o = outputOf(p.values.output);
          out(o === 'json' || o === 'yaml' ? emit(routes, o) : routeTable(routes, o === 'wide'));
          return 0;
        },
      },
      {
        name: 'rib',
        summary: 'originate or withdraw a route (gobgp global rib add|del)',
        subcommands: [
          {
            name: 'add',
            summary: 'originate a prefix',
            args: '<prefix>',
            maxPositionals: 1,
            options: {
              control: CONTROL,
              'next-hop': {
                type: 'string',
                value: '<address>',
                help: "next hop, to every peer, external ones too (default: the session's own address)",
              },
              med: { type: 'string', value: '<n>', help: 'MULTI_EXIT_DISC' },
              'local-pref': { type: 'string', value: '<n>', help: 'LOCAL_PREF (to iBGP peers)' },
              community: { type: 'string', value: '<asn:value,...>', help: 'communities, comma separated (or no-export, ...)' },
              'large-community': { type: 'string', value: '<a:b:c,...>', help: 'large communities, comma separated' },
            },
            async run(p) {
              const [prefix] = p.positionals;
              if (!prefix) throw new UsageError('rib add: <prefix> is required');
              const v = p.values;
              const body: Record<string, unknown> = { prefix };
              if (v['next-hop'] !== undefined) body.nextHop = v['next-hop'];
              const whole = (flag: string) => {
                const n = Number(v[flag]);
                if (v[flag] === '' || !Number.isInteger(n))
                  throw new UsageError(`--${flag}: ${JSON.stringify(v[flag])} is not a whole number`);
                return n;
              };
              if (v.med !== undefined) body.med = whole('med');
              if (v['local-pref'] !== undefined) body.localPref = whole('local-pref');
              if (v.community !== undefined) body.communities = String(v.community).split(',');
              if (v['large-community'] !== undefined) body.largeCommunities = String(v['large-community']).split(',');
              await callControl(controlOf(p), 'POST', '/rib/add', body);
              out(`added ${prefix}${body.nextHop === undefined ? '' : ` next hop ${String(body.nextHop)}`}\n`);
              return 0;
            },
          },
          {
            name: 'del',
            summary: 'withdraw a prefix it originated',
            args: '<prefix>',
            maxPositionals: 1,
            options: { control: CONTROL },
            async run(p) {
              const [prefix] = p.positionals;
              if (!prefix) throw new UsageError('rib del: <prefix> is required');
              await callControl(controlOf(p), 'POST', '/rib/del', { prefix });
              out(`deleted ${prefix}\n`);
              return 0;
            },
          },
        ],
      },
      {
        name: 'neighbor',
        summary: 'list peers; one peer, its adj-in or adj-out, reset, softreset [in|out] (gobgp neighbor)',
        args: '[<address> [adj-in|adj-out|reset|softreset [in|out]]]',
        maxPositionals: 3,
        options: { ...read, family: FAMILY },
        run: neighborCommand,
      },
    ],
  };
}
