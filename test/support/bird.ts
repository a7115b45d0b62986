// BIRD 2 in a namespace: foreground `bird -f`, a config rendered from a RouterConfig, and
// birdc's text output parsed into typed protocol and route records.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  UnsupportedConfigError,
  bfdTimers,
  defaultTimers,
  familiesOf,
  familyOfPrefix,
  normalizeNetwork,
  type Family,
  type Network,
  type PeerStatus,
  type RibRoute,
  type RouterConfig,
} from './bgp-config.js';
import type { Netns } from './netns.js';
import { run } from './netns.js';
import { parseBirdProtocols, type BirdProtocol } from '../../lib/lab/bird.js';
import type { ManagedProcess } from './process.js';
import { waitFor } from './wait.js';

export interface BirdOptions {
  /** Export BGP routes into the namespace's kernel tables. Default true. */
  kernel?: boolean;
}

/** Protocol name BIRD gives the session with the i-th peer of the config. */
export function birdProtocolName(index: number): string {
  return `peer${index}`;
}

export function renderBirdConfig(config: RouterConfig, options: BirdOptions = {}): string {
  const lines: string[] = [`router id ${config.routerId};`, 'log stderr all;'];
  if (config.hostname) lines.push(`hostname "${config.hostname}";`);
  lines.push('protocol device { }');
  if (options.kernel ?? true) {
    lines.push('protocol kernel kernel4 { ipv4 { import none; export where source = RTS_BGP; }; }');
    lines.push('protocol kernel kernel6 { ipv6 { import none; export where source = RTS_BGP; }; }');
  }
  const networks = (config.networks ?? []).map(normalizeNetwork);
  for (const family of ['ipv4', 'ipv6'] as const) {
    const mine = networks.filter((n) => familyOfPrefix(n.prefix) === family);
    if (mine.length === 0) continue;
    lines.push(`protocol static static${family === 'ipv4' ? 4 : 6} {`, `  ${family};`);
    for (const network of mine) lines.push(`  route ${network.prefix} blackhole;`);
    lines.push('}');
    // BIRD sends MED to an eBGP neighbour only when the export filter set it, so the
    // originated attributes are set there rather than on the static routes.
    lines.push(`filter pr_export${family === 'ipv4' ? 4 : 6} {`);
    for (const network of mine) {
      const sets = exportAttributes(network);
      if (sets) lines.push(`  if source = RTS_STATIC && net = ${network.prefix} then { ${sets} }`);
    }
    lines.push('  accept;', '}');
  }
  // One BFD protocol for the peers that ask for it: BIRD sets the timers per interface.
  const bfdPeers = config.peers.filter((p) => p.bfd);
  if (bfdPeers.length > 0) {
    const b = bfdTimers(bfdPeers[0]!.bfd!);
    if (bfdPeers.some((p) => JSON.stringify(bfdTimers(p.bfd!)) !== JSON.stringify(b)))
      throw new UnsupportedConfigError('bird', 'bfd', 'timers differ between peers; this renderer sets one set for every interface');
    lines.push(
      'protocol bfd {',
      `  interface "*" { min rx interval ${b.minRxInterval} ms; min tx interval ${b.minTxInterval} ms; multiplier ${b.multiplier}; };`,
      '}',
    );
  }
  config.peers.forEach((peer, index) => {
    const ibgp = peer.remoteAs === config.asn;
    const p: string[] = [
      `protocol bgp ${birdProtocolName(index)} {`,
      `  local as ${config.asn};`,
      `  neighbor ${peer.address} as ${peer.remoteAs};`,
      '  connect delay time 1;',
      `  connect retry time ${peer.connectRetry ?? defaultTimers.connectRetry};`,
      // After an error BIRD otherwise waits 60 s and more before it tries again.
      '  error wait time 1,2;',
      `  hold time ${peer.holdTime ?? defaultTimers.holdTime};`,
      `  keepalive time ${peer.keepaliveTime ?? defaultTimers.keepaliveTime};`,
    ];
    // BIRD treats iBGP as multihop and resolves next hops recursively through an IGP table
    // that would need the connected subnet; test peers share a segment, so say so.
    if (ibgp) p.push(peer.multihop ? '  multihop;' : '  direct;');
    else if (peer.multihop) p.push('  multihop;');
    if (peer.localAddress) p.push(`  source address ${peer.localAddress};`);
    if (peer.password) p.push(`  password "${peer.password}";`);
    if (peer.passive) p.push('  passive on;');
    if (peer.fourOctetAs === false) p.push('  enable as4 off;');
    if (peer.extendedMessage !== undefined) p.push(`  enable extended messages ${peer.extendedMessage ? 'on' : 'off'};`);
    if (config.hostname) p.push('  advertise hostname on;');
    if (config.gracefulRestart) p.push('  graceful restart on;', `  graceful restart time ${config.gracefulRestart.restartTime};`);
    if (config.longLivedGracefulRestart) {
      p.push('  long lived graceful restart on;', `  long lived stale time ${config.longLivedGracefulRestart.staleTime};`);
    }
    if (peer.routeReflectorClient) p.push('  rr client;');
    if (peer.bfd) p.push('  bfd on;');
    for (const family of familiesOf(peer)) {
      const exportFilter = networks.some((n) => familyOfPrefix(n.prefix) === family)
        ? `export filter pr_export${family === 'ipv4' ? 4 : 6}`
        : 'export all';
      const c: string[] = ['import all', exportFilter];
      if (peer.addPath) c.push(`add paths ${peer.addPath === 'both' ? 'on' : peer.addPath === 'send' ? 'tx' : 'rx'}`);
      if (family === 'ipv4' && peer.extendedNextHop) c.push('extended next hop on');
      if (family === 'ipv6' && !peer.address.includes(':')) {
        if (!config.nextHopV6)
          throw new UnsupportedConfigError('bird', 'nextHopV6', `is needed for ipv6 on the IPv4 session with ${peer.address}`);
        c.push(`next hop address ${config.nextHopV6}`);
      }
      p.push(`  ${family} { ${c.join('; ')}; };`);
    }
    p.push('}');
    lines.push(...p);
  });
  return `${lines.join('\n')}\n`;
}

function exportAttributes(network: Network): string {
  const sets: string[] = [];
  if (network.med !== undefined) sets.push(`bgp_med = ${network.med};`);
  if (network.localPref !== undefined) sets.push(`bgp_local_pref = ${network.localPref};`);
  for (const c of network.communities ?? []) {
    const [asn, value] = c.split(':');
    sets.push(`bgp_community.add((${asn},${value}));`);
  }
  for (const c of network.largeCommunities ?? []) {
    const [g, l1, l2] = c.split(':');
    sets.push(`bgp_large_community.add((${g},${l1},${l2}));`);
  }
  return sets.join(' ');
}

export class Bird {
  readonly kind = 'bird';
  private constructor(
    readonly ns: Netns,
    readonly config: RouterConfig,
    readonly dir: string,
    readonly process: ManagedProcess,
  ) {}

  get socket(): string {
    return join(this.dir, 'bird.ctl');
  }

  static async start(ns: Netns, config: RouterConfig, options: BirdOptions = {}): Promise<Bird> {
    const dir = join(ns.lab.dir, `${ns.shortName}-bird`);
    mkdirSync(dir, { recursive: true });
    const conf = join(dir, 'bird.conf');
    const text = renderBirdConfig(config, options);
    writeFileSync(conf, text);
    await run(['bird', '-p', '-c', conf]).catch((error: Error) => {
      throw new Error(`bird ${ns.shortName}: config rejected: ${error.message}\n${text}`);
    });
    const process = ns.spawn(['bird', '-f', '-c', conf, '-s', join(dir, 'bird.ctl'), '-P', join(dir, 'bird.pid')], { name: 'bird' });
    const bird = new Bird(ns, config, dir, process);
    await waitFor(
      async () => {
        if (!process.running) throw new Error(`bird exited: ${process.tail()}`);
        return (await bird.birdc('show status')).includes('Daemon is up');
      },
      { what: `bird ${ns.shortName} answering on ${bird.socket}`, timeoutMs: 15_000, intervalMs: 100 },
    );
    return bird;
  }

  /** One birdc command; returns its text without the "BIRD x.y ready." banner. */
  async birdc(command: string): Promise<string> {
    const out = await this.ns.run(['birdc', '-s', this.socket, command]);
    return out.replace(/^BIRD [^\n]* ready\.\n/, '');
  }

  async protocols(): Promise<BirdProtocol[]> {
    return parseBirdProtocols(await this.birdc('show protocols all'));
  }

  async peers(): Promise<PeerStatus[]> {
    return (await this.protocols())
      .filter((p) => p.proto === 'BGP')
      .map((p) => ({
        address: p.neighborAddress ?? '',
        remoteAs: p.neighborAs ?? 0,
        state: p.bgpState ?? p.state,
        established: p.bgpState === 'Established',
      }));
  }

  /** Every route of one family (all paths, not only the best), with BGP attributes. */
  async routes(family: Family = 'ipv4'): Promise<BirdRoute[]> {
    const table = family === 'ipv4' ? 'master4' : 'master6';
    const routes = parseBirdRoutes(await this.birdc(`show route all table ${table}`));
    // BIRD names the neighbour only when it differs from the gateway: fill it in from the
    // protocol, which is the i-th peer of the config.
    for (const route of routes) {
      const index = /^peer(\d+)$/.exec(route.protocol);
      if (index && route.from === undefined) route.from = this.config.peers[Number(index[1])]?.address;
    }
    return routes;
  }

  /** `show bfd sessions`: each session's neighbour address and state (Up, Down, Init, AdminDown). */
  async bfdSessions(): Promise<{ address: string; state: string }[]> {
    const text = await this.birdc('show bfd sessions');
    return [...text.matchAll(/^([0-9a-fA-F.:]+)\s+\S+\s+(Up|Down|Init|AdminDown)\b/gm)].map((m) => ({ address: m[1]!, state: m[2]! }));
  }

  /** `disable <protocol> ["message"]`: BIRD sends a Cease with the RFC 8203 communication. */
  async disable(protocol: string, message?: string): Promise<void> {
    await this.birdc(`disable ${protocol}${message === undefined ? '' : ` ${JSON.stringify(message)}`}`);
  }

  async enable(protocol: string): Promise<void> {
    await this.birdc(`enable ${protocol}`);
  }

  /** The BGP protocol name for the session with `address`. */
  protocolFor(address: string): string {
    const index = this.config.peers.findIndex((p) => p.address === address);
    if (index < 0) throw new Error(`bird ${this.ns.shortName}: no peer ${address}`);
    return birdProtocolName(index);
  }

  async stop(): Promise<void> {
    await this.process.stop(5000);
  }
}

// The protocol parser is the lab's own (`podroute lab status` reads BIRD nodes with it).
export { parseBirdProtocols, type BirdProtocol } from '../../lib/lab/bird.js';

export interface BirdRoute extends RibRoute {
  /** The BIRD protocol that holds the route (peer0…, static4, …). */
  protocol: string;
  /** `unicast`, `blackhole`, `unreachable`… */
  kind: string;
  preference: number;
  /** BIRD shows the preference of a stale route (graceful restart, long-lived or not) as `(100s)`. */
  stale: boolean;
  /** Every `BGP.*` attribute line, keyed without the prefix. */
  attributes: Record<string, string>;
}

/**
 * Parses `show route all` of BIRD 2: a route line (prefix, or blank for another path of the
 * same prefix), then tab-indented `via`, `Type:` and `BGP.*` lines.
 */
export function parseBirdRoutes(text: string): BirdRoute[] {
  const routes: BirdRoute[] = [];
  let prefix = '';
  let current: BirdRoute | undefined;
  for (const raw of text.split('\n')) {
    if (raw.trim() === '' || raw.startsWith('Table ')) continue;
    const route = /^(\S+)?\s+(unicast|blackhole|unreachable|prohibited)\s+\[(\S+)\s[^\]]*\]\s+(\*)?\s*\((\d+)(s?)\)/.exec(raw);
    if (route) {
      if (route[1]) prefix = route[1];
      current = {
        prefix,
        nextHops: [],
        asPath: [],
        origin: 'incomplete',
        communities: [],
        largeCommunities: [],
        best: route[4] === '*',
        protocol: route[3]!,
        kind: route[2]!,
        preference: Number(route[5]),
        stale: route[6] === 's',
        attributes: {},
      };
      const from = /\sfrom\s(\S+)\]/.exec(raw);
      if (from) current.from = from[1]!;
      routes.push(current);
      continue;
    }
    if (!current) continue;
    const line = raw.trim();
    const via = /^via\s+(\S+)/.exec(line);
    if (via) {
      current.nextHops.push(via[1]!);
      continue;
    }
    const attribute = /^BGP\.(\w+):\s*(.*)$/.exec(line);
    if (!attribute) continue;
    const [, name, value] = attribute as unknown as [string, string, string];
    current.attributes[name] = value;
    switch (name) {
      case 'origin':
        current.origin = value === 'IGP' ? 'igp' : value === 'EGP' ? 'egp' : 'incomplete';
        break;
      case 'as_path':
        current.asPath = value
          .split(/[\s{}]+/)
          .filter(Boolean)
          .map(Number);
        break;
      case 'med':
        current.med = Number(value);
        break;
      case 'local_pref':
        current.localPref = Number(value);
        break;
      case 'community':
        current.communities = [...value.matchAll(/\((\d+),(\d+)\)/g)].map((m) => `${m[1]}:${m[2]}`);
        break;
      case 'large_community':
        current.largeCommunities = [...value.matchAll(/\((\d+),\s*(\d+),\s*(\d+)\)/g)].map((m) => `${m[1]}:${m[2]}:${m[3]}`);
        break;
      case 'next_hop':
        // The BGP next hop as received (global, then link-local); `via` is the resolved one.
        if (current.nextHops.length === 0) current.nextHops.push(...value.split(/\s+/).filter(Boolean));
        break;
    }
  }
  return routes;
}
