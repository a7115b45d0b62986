// GoBGP (3.10) in a namespace: gobgpd in the foreground from a TOML config rendered out of a
// RouterConfig; routes are originated and read through the `gobgp` CLI (gRPC on :50051 inside
// the namespace, so each namespace has its own).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  UnsupportedConfigError,
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
import type { ManagedProcess } from './process.js';
import { waitFor } from './wait.js';

export function renderGobgpConfig(config: RouterConfig): string {
  const q = (s: string): string => JSON.stringify(s);
  const lines: string[] = ['[global.config]', `  as = ${config.asn}`, `  router-id = ${q(config.routerId)}`];
  for (const peer of config.peers) {
    if (peer.extendedMessage) throw new UnsupportedConfigError('gobgp', 'extendedMessage', 'is not supported by GoBGP 3.10');
    if (peer.fourOctetAs === false) throw new UnsupportedConfigError('gobgp', 'fourOctetAs=false', 'is not configurable in GoBGP 3.10');
    lines.push('[[neighbors]]', '  [neighbors.config]', `    neighbor-address = ${q(peer.address)}`, `    peer-as = ${peer.remoteAs}`);
    lines.push(
      '  [neighbors.timers.config]',
      `    connect-retry = ${peer.connectRetry ?? defaultTimers.connectRetry}`,
      `    hold-time = ${peer.holdTime ?? defaultTimers.holdTime}`,
      `    keepalive-interval = ${peer.keepaliveTime ?? defaultTimers.keepaliveTime}`,
      // GoBGP otherwise idles after every reset before it connects again.
      '    idle-hold-time-after-reset = 1',
    );
    if (peer.passive || peer.localAddress) {
      lines.push('  [neighbors.transport.config]');
      if (peer.passive) lines.push('    passive-mode = true');
      if (peer.localAddress) lines.push(`    local-address = ${q(peer.localAddress)}`);
    }
    if (peer.routeReflectorClient) {
      lines.push(
        '  [neighbors.route-reflector.config]',
        '    route-reflector-client = true',
        `    route-reflector-cluster-id = ${q(config.routerId)}`,
      );
    }
    if (config.gracefulRestart) {
      lines.push('  [neighbors.graceful-restart.config]', '    enabled = true', `    restart-time = ${config.gracefulRestart.restartTime}`);
      if (config.longLivedGracefulRestart) lines.push('    long-lived-enabled = true');
    } else if (config.longLivedGracefulRestart) {
      throw new UnsupportedConfigError('gobgp', 'longLivedGracefulRestart', 'needs gracefulRestart too in GoBGP');
    }
    for (const family of familiesOf(peer)) {
      lines.push('  [[neighbors.afi-safis]]', '    [neighbors.afi-safis.config]', `      afi-safi-name = "${family}-unicast"`);
      if (config.gracefulRestart) lines.push('    [neighbors.afi-safis.mp-graceful-restart.config]', '      enabled = true');
      if (config.longLivedGracefulRestart) {
        lines.push(
          '    [neighbors.afi-safis.long-lived-graceful-restart.config]',
          '      enabled = true',
          `      restart-time = ${config.longLivedGracefulRestart.staleTime}`,
        );
      }
      if (peer.addPath) {
        lines.push('    [neighbors.afi-safis.add-paths.config]');
        if (peer.addPath !== 'send') lines.push('      receive = true');
        if (peer.addPath !== 'receive') lines.push('      send-max = 8');
      }
    }
    // GoBGP sends the extended next hop capability on its own for ipv4-unicast over an IPv6
    // session; it has no switch for it.
    if (peer.extendedNextHop && !peer.address.includes(':')) {
      throw new UnsupportedConfigError('gobgp', 'extendedNextHop', 'only exists on IPv6 sessions in GoBGP');
    }
  }
  return `${lines.join('\n')}\n`;
}

export class Gobgp {
  readonly kind = 'gobgp';
  private constructor(
    readonly ns: Netns,
    readonly config: RouterConfig,
    readonly dir: string,
    readonly process: ManagedProcess,
  ) {}

  static async start(ns: Netns, config: RouterConfig): Promise<Gobgp> {
    const dir = join(ns.lab.dir, `${ns.shortName}-gobgp`);
    mkdirSync(dir, { recursive: true });
    const conf = join(dir, 'gobgpd.toml');
    writeFileSync(conf, renderGobgpConfig(config));
    const process = ns.spawn(['gobgpd', '-f', conf, '-p', '--pprof-disable', '-l', 'info'], { name: 'gobgpd' });
    const gobgp = new Gobgp(ns, config, dir, process);
    await waitFor(
      async () => {
        if (!process.running) throw new Error(`gobgpd exited: ${process.tail()}`);
        return (await gobgp.cli('global')).includes(String(config.asn));
      },
      { what: `gobgpd ${ns.shortName} answering on its gRPC API`, timeoutMs: 15_000, intervalMs: 100 },
    );
    // gobgpd applies the neighbours of the file after its API is up; wait until it has them all.
    await waitFor(async () => (await gobgp.neighbors()).length === config.peers.length, {
      what: `gobgpd ${ns.shortName} to load its ${config.peers.length} neighbours`,
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    for (const network of (config.networks ?? []).map(normalizeNetwork)) await gobgp.announce(network);
    return gobgp;
  }

  /** `gobgp <args>` inside the namespace. */
  cli(...args: string[]): Promise<string> {
    return this.ns.run(['gobgp', ...args]);
  }

  async json<T = unknown>(...args: string[]): Promise<T> {
    const text = await this.cli(...args, '-j');
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new Error(`gobgp ${this.ns.shortName}: \`gobgp ${args.join(' ')} -j\` did not print JSON: ${text.slice(0, 500)}`);
    }
  }

  /** `gobgp global rib add` with the network's attributes. */
  async announce(network: Network | string, nextHop?: string): Promise<void> {
    await this.cli('global', 'rib', 'add', ...ribArgs(normalizeNetwork(network), nextHop ?? this.defaultNextHop(network)));
  }

  async withdraw(network: Network | string): Promise<void> {
    const n = normalizeNetwork(network);
    await this.cli('global', 'rib', 'del', n.prefix, '-a', familyOfPrefix(n.prefix));
  }

  private defaultNextHop(network: Network | string): string | undefined {
    return familyOfPrefix(normalizeNetwork(network).prefix) === 'ipv6' ? this.config.nextHopV6 : undefined;
  }

  /** Administrative shutdown of one session, with an RFC 8203 communication when given. */
  async disableNeighbor(address: string, reason?: string): Promise<void> {
    // GoBGP 3.10: `disable --reason` sends the Cease with empty data; the deprecated
    // `shutdown --reason` is the one that puts the communication on the wire.
    if (reason === undefined) await this.cli('neighbor', address, 'disable');
    else await this.cli('neighbor', address, 'shutdown', '--reason', reason);
  }

  /** Asks the neighbour to send its routes again (ROUTE-REFRESH). */
  async softResetIn(address: string, family: Family = 'ipv4'): Promise<void> {
    await this.cli('neighbor', address, 'softresetin', '-a', family);
  }

  neighbors(): Promise<GobgpNeighbor[]> {
    return this.json<GobgpNeighbor[] | null>('neighbor').then((list) => list ?? []);
  }

  async peers(): Promise<PeerStatus[]> {
    return (await this.neighbors()).map((n) => {
      const state = String(n.state?.session_state ?? 'unknown');
      const established = state === '6' || state.toLowerCase() === 'established';
      return {
        address: n.conf?.neighbor_address ?? '',
        remoteAs: n.conf?.peer_asn ?? 0,
        state: established ? 'Established' : state,
        established,
      };
    });
  }

  async rib(family: Family = 'ipv4'): Promise<Record<string, GobgpPath[]>> {
    return (await this.json<Record<string, GobgpPath[]> | null>('global', 'rib', '-a', family)) ?? {};
  }

  async routes(family: Family = 'ipv4'): Promise<RibRoute[]> {
    return parseGobgpRib(await this.rib(family));
  }

  async stop(): Promise<void> {
    await this.process.stop(5000);
  }
}

function ribArgs(network: Network, nextHop: string | undefined): string[] {
  const args = [network.prefix, 'origin', 'igp'];
  if (nextHop) args.push('nexthop', nextHop);
  if (network.med !== undefined) args.push('med', String(network.med));
  if (network.localPref !== undefined) args.push('local-pref', String(network.localPref));
  if (network.communities?.length) args.push('community', network.communities.join(','));
  if (network.largeCommunities?.length) args.push('large-community', network.largeCommunities.join(','));
  args.push('-a', familyOfPrefix(network.prefix));
  return args;
}

export interface GobgpNeighbor {
  conf?: { neighbor_address?: string; peer_asn?: number; local_asn?: number };
  state?: { session_state?: number | string; neighbor_address?: string; peer_asn?: number; [key: string]: unknown };
  [key: string]: unknown;
}

/** One path of `gobgp global rib -j`: the attributes come as GoBGP's own JSON of each type. */
export interface GobgpPath {
  nlri: { prefix: string; path_id?: number };
  attrs: GobgpAttribute[];
  best?: boolean;
  stale?: boolean;
  'source-id'?: string;
  'neighbor-ip'?: string;
  [key: string]: unknown;
}

export interface GobgpAttribute {
  type: number;
  [key: string]: unknown;
}

export function parseGobgpRib(rib: Record<string, GobgpPath[]>): RibRoute[] {
  const routes: RibRoute[] = [];
  for (const [prefix, paths] of Object.entries(rib)) {
    for (const path of paths) {
      const route: RibRoute = {
        prefix,
        nextHops: [],
        asPath: [],
        origin: 'incomplete',
        communities: [],
        largeCommunities: [],
        best: Boolean(path.best),
      };
      for (const attr of path.attrs) {
        switch (attr.type) {
          case 1:
            route.origin = (['igp', 'egp', 'incomplete'] as const)[attr.value as number] ?? 'incomplete';
            break;
          case 2:
            route.asPath = ((attr.as_paths as { asns: number[] }[] | undefined) ?? []).flatMap((s) => s.asns);
            break;
          case 3:
            route.nextHops.push(attr.nexthop as string);
            break;
          case 4:
            route.med = attr.metric as number;
            break;
          case 5:
            route.localPref = attr.value as number;
            break;
          case 8:
            route.communities = ((attr.communities as number[] | undefined) ?? []).map((c) => `${c >>> 16}:${c & 0xffff}`);
            break;
          case 14: {
            const nh = attr.nexthop as string | undefined;
            if (nh) route.nextHops.push(nh);
            const ll = attr.linklocal_nexthop as string | undefined;
            if (ll) route.nextHops.push(ll);
            break;
          }
          case 32:
            route.largeCommunities = ((attr.value as { ASN: number; LocalData1: number; LocalData2: number }[] | undefined) ?? []).map(
              (c) => `${c.ASN}:${c.LocalData1}:${c.LocalData2}`,
            );
            break;
        }
      }
      const from = path['neighbor-ip'];
      if (from && from !== '<nil>' && from !== '0.0.0.0' && from !== '::') route.from = from;
      if (path.nlri.path_id) route.pathId = path.nlri.path_id;
      routes.push(route);
    }
  }
  return routes;
}
