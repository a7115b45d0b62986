// FRR (8.4) in a namespace: zebra + bgpd (or bgpd -Z alone) in the foreground, from a config
// rendered out of a RouterConfig, queried through vtysh's JSON output.
import { chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import {
  UnsupportedConfigError,
  bfdTimers,
  defaultTimers,
  type BfdTimers,
  familiesOf,
  normalizeNetwork,
  familyOfPrefix,
  type Family,
  type PeerStatus,
  type RibRoute,
  type RouterConfig,
} from './bgp-config.js';
import type { Netns } from './netns.js';
import { run } from './netns.js';
import type { ManagedProcess } from './process.js';
import { waitFor } from './wait.js';

const FRR_BIN = '/usr/lib/frr';

export function renderFrrConfig(config: RouterConfig): string {
  const lines: string[] = [
    'frr defaults traditional',
    `hostname ${config.hostname ?? `frr-${config.routerId}`}`,
    'log stdout informational',
    '!',
  ];
  const networks = (config.networks ?? []).map(normalizeNetwork);
  networks.forEach((network, index) => {
    const sets: string[] = [];
    if (network.med !== undefined) sets.push(` set metric ${network.med}`);
    if (network.localPref !== undefined) sets.push(` set local-preference ${network.localPref}`);
    if (network.communities?.length) sets.push(` set community ${network.communities.join(' ')} additive`);
    if (network.largeCommunities?.length) sets.push(` set large-community ${network.largeCommunities.join(' ')} additive`);
    if (sets.length > 0) lines.push(`route-map PR-NET-${index} permit 10`, ...sets, '!');
  });
  lines.push(
    `router bgp ${config.asn}`,
    ` bgp router-id ${config.routerId}`,
    ' no bgp ebgp-requires-policy',
    ' no bgp network import-check',
    ' no bgp default ipv4-unicast',
  );
  if (config.gracefulRestart) {
    lines.push(' bgp graceful-restart', ` bgp graceful-restart restart-time ${config.gracefulRestart.restartTime}`);
  }
  if (config.longLivedGracefulRestart)
    lines.push(` bgp long-lived-graceful-restart stale-time ${config.longLivedGracefulRestart.staleTime}`);
  for (const peer of config.peers) {
    const n = ` neighbor ${peer.address}`;
    lines.push(`${n} remote-as ${peer.remoteAs}`);
    lines.push(`${n} timers ${peer.keepaliveTime ?? defaultTimers.keepaliveTime} ${peer.holdTime ?? defaultTimers.holdTime}`);
    lines.push(`${n} timers connect ${peer.connectRetry ?? defaultTimers.connectRetry}`);
    // UPDATEs at once, not after the default advertisement interval.
    lines.push(`${n} advertisement-interval 0`);
    if (peer.passive) lines.push(`${n} passive`);
    if (peer.localAddress) lines.push(`${n} update-source ${peer.localAddress}`);
    if (peer.password) lines.push(`${n} password ${peer.password}`);
    if (peer.multihop && peer.ttlSecurityHops === undefined) lines.push(`${n} ebgp-multihop`);
    if (peer.ttlSecurityHops !== undefined) lines.push(`${n} ttl-security hops ${peer.ttlSecurityHops}`);
    if (peer.extendedNextHop) lines.push(`${n} capability extended-nexthop`);
    if (peer.fourOctetAs === false) {
      // FRR 8.4 has no switch for the 4-octet AS capability alone: this sends an OPEN with
      // no capabilities at all, which is what a 2-octet-only speaker sends.
      if (familiesOf(peer).some((f) => f !== 'ipv4'))
        throw new UnsupportedConfigError('frr', 'fourOctetAs=false', 'leaves no multiprotocol capability, so families can only be [ipv4]');
      if (peer.addPath) throw new UnsupportedConfigError('frr', 'fourOctetAs=false', 'sends no capabilities, so addPath is impossible');
      lines.push(`${n} dont-capability-negotiate`);
    }
    if (peer.extendedMessage === false)
      throw new UnsupportedConfigError('frr', 'extendedMessage=false', 'is not configurable in FRR 8.4 (always advertised)');
    if (peer.bfd) lines.push(`${n} bfd`, `${n} bfd profile ${bfdProfileName(peer.bfd)}`);
  }
  for (const family of ['ipv4', 'ipv6'] as const) {
    const peers = config.peers.filter((peer) => familiesOf(peer).includes(family));
    const originated = networks
      .map((network, index) => ({ network, index }))
      .filter(({ network }) => familyOfPrefix(network.prefix) === family);
    if (peers.length === 0 && originated.length === 0) continue;
    lines.push(` address-family ${family} unicast`);
    for (const { network, index } of originated) {
      const hasMap =
        network.med !== undefined || network.localPref !== undefined || network.communities?.length || network.largeCommunities?.length;
      lines.push(`  network ${network.prefix}${hasMap ? ` route-map PR-NET-${index}` : ''}`);
    }
    for (const peer of peers) {
      const n = `  neighbor ${peer.address}`;
      lines.push(`${n} activate`);
      if (peer.addPath === 'send' || peer.addPath === 'both') lines.push(`${n} addpath-tx-all-paths`);
      if (peer.addPath === 'send') lines.push(`${n} disable-addpath-rx`);
      if (peer.routeReflectorClient) lines.push(`${n} route-reflector-client`);
    }
    lines.push(' exit-address-family');
  }
  lines.push('!');
  return `${lines.join('\n')}\n`;
}

/** The bfdd profile of a peer's timers (renderBfddConfig defines one per set of timers). */
function bfdProfileName(t: BfdTimers): string {
  const b = bfdTimers(t);
  return `pr-${b.minRxInterval}-${b.minTxInterval}-${b.multiplier}`;
}

/** bfdd's config: one profile per set of timers the peers use; bgpd asks bfdd for each session. */
export function renderBfddConfig(config: RouterConfig): string {
  const lines = [`hostname ${config.hostname ?? `frr-${config.routerId}`}`, 'log stdout informational', 'bfd'];
  const seen = new Set<string>();
  for (const peer of config.peers) {
    if (!peer.bfd || seen.has(bfdProfileName(peer.bfd))) continue;
    seen.add(bfdProfileName(peer.bfd));
    const b = bfdTimers(peer.bfd);
    lines.push(
      ` profile ${bfdProfileName(peer.bfd)}`,
      `  detect-multiplier ${b.multiplier}`,
      `  receive-interval ${b.minRxInterval}`,
      `  transmit-interval ${b.minTxInterval}`,
      ' !',
    );
  }
  lines.push('!');
  return `${lines.join('\n')}\n`;
}

export interface FrrOptions {
  /** Run zebra too (routes reach the namespace's kernel; IPv6 next hops from interfaces). Default true. */
  zebra?: boolean;
  /** Instance name, for several FRRs in one namespace (rarely useful). Default "frr". */
  name?: string;
}

export class Frr {
  readonly kind = 'frr';
  private constructor(
    readonly ns: Netns,
    readonly config: RouterConfig,
    readonly dir: string,
    readonly processes: ManagedProcess[],
  ) {}

  static async start(ns: Netns, config: RouterConfig, options: FrrOptions = {}): Promise<Frr> {
    const dir = join(ns.lab.dir, `${ns.shortName}-${options.name ?? 'frr'}`);
    mkdirSync(dir, { recursive: true });
    const bgpdConf = join(dir, 'bgpd.conf');
    writeFileSync(bgpdConf, renderFrrConfig(config));
    writeFileSync(join(dir, 'zebra.conf'), `hostname ${config.hostname ?? 'zebra'}\nlog stdout informational\n`);
    const frrIds = frrUser();
    for (const file of [dir, bgpdConf, join(dir, 'zebra.conf')]) chownSync(file, frrIds.uid, frrIds.gid);
    // Refuse a bad config here, with FRR's own message, rather than as a session that never comes up.
    await run([`${FRR_BIN}/bgpd`, '-C', '-f', bgpdConf, '-Z']).catch((error: Error) => {
      throw new Error(`frr ${ns.shortName}: bgpd rejected the config: ${error.message}\n${renderFrrConfig(config)}`);
    });
    const zserv = join(dir, 'zserv.api');
    const common = ['--vty_socket', dir, '-P', '0', '-u', 'frr', '-g', 'frr', '-z', zserv];
    const processes: ManagedProcess[] = [];
    const frr = new Frr(ns, config, dir, processes);
    const zebra = options.zebra ?? true;
    if (zebra) {
      processes.push(
        ns.spawn([`${FRR_BIN}/zebra`, '-f', join(dir, 'zebra.conf'), '-i', join(dir, 'zebra.pid'), ...common], { name: 'zebra' }),
      );
      await waitFor(() => existsSync(zserv) || !processes[0]!.running, {
        what: `zebra's socket ${zserv}`,
        timeoutMs: 15_000,
        intervalMs: 50,
      });
      if (!processes[0]!.running) throw new Error(`frr ${ns.shortName}: zebra exited: ${processes[0]!.tail()}`);
    }
    // bfdd, when a peer has BFD (before bgpd, which stays the last process: see `bgpd`).
    if (config.peers.some((p) => p.bfd)) {
      if (!zebra) throw new UnsupportedConfigError('frr', 'bfd', 'needs zebra (bfdd learns the interfaces from it)');
      const bfddConf = join(dir, 'bfdd.conf');
      writeFileSync(bfddConf, renderBfddConfig(config));
      chownSync(bfddConf, frrIds.uid, frrIds.gid);
      const bfdctl = join(dir, 'bfdd.sock');
      const bfdd = ns.spawn([`${FRR_BIN}/bfdd`, '-f', bfddConf, '-i', join(dir, 'bfdd.pid'), '--bfdctl', bfdctl, ...common], {
        name: 'bfdd',
      });
      processes.push(bfdd);
      await waitFor(() => existsSync(bfdctl) || !bfdd.running, { what: `bfdd's socket ${bfdctl}`, timeoutMs: 15_000, intervalMs: 50 });
      if (!bfdd.running) throw new Error(`frr ${ns.shortName}: bfdd exited: ${bfdd.tail()}`);
    }
    const bgpdArgs = [`${FRR_BIN}/bgpd`, '-f', bgpdConf, '-i', join(dir, 'bgpd.pid'), ...common];
    if (!zebra) bgpdArgs.push('-Z');
    const bgpd = ns.spawn(bgpdArgs, { name: 'bgpd' });
    processes.push(bgpd);
    await waitFor(
      async () => {
        if (!bgpd.running) throw new Error(`bgpd exited: ${bgpd.tail()}`);
        return (await frr.vtysh('show bgp summary json')).length > 0;
      },
      { what: `frr ${ns.shortName}: bgpd answering on vtysh`, timeoutMs: 15_000, intervalMs: 100 },
    );
    return frr;
  }

  get bgpd(): ManagedProcess {
    return this.processes[this.processes.length - 1]!;
  }

  /** bfdd's sessions (`show bfd peers json`): peer, status (up, down, init), diagnostic, timers. */
  bfdPeers(): Promise<{ peer: string; status: string; diagnostic?: string; 'remote-diagnostic'?: string; 'detect-multiplier'?: number }[]> {
    return this.json('show bfd peers json');
  }

  /** Runs one or more vtysh commands (each a -c) and returns the text output. */
  async vtysh(...commands: string[]): Promise<string> {
    const argv = ['vtysh', '--vty_socket', this.dir];
    for (const command of commands) argv.push('-c', command);
    return this.ns.run(argv);
  }

  /** A vtysh command whose output is JSON. */
  async json<T = unknown>(command: string): Promise<T> {
    const text = await this.vtysh(command);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new Error(`frr ${this.ns.shortName}: \`${command}\` did not print JSON: ${text.slice(0, 500)}`);
    }
  }

  /** Runs configuration commands (as typed after `configure terminal`, `router bgp N`). */
  async configureBgp(...commands: string[]): Promise<string> {
    return this.vtysh('configure terminal', `router bgp ${this.config.asn}`, ...commands);
  }

  /** Originates a prefix (`network`), in the family its address says. */
  async announce(prefix: string): Promise<void> {
    await this.configureBgp(`address-family ${familyOfPrefix(prefix)} unicast`, `network ${prefix}`);
  }

  async withdraw(prefix: string): Promise<void> {
    await this.configureBgp(`address-family ${familyOfPrefix(prefix)} unicast`, `no network ${prefix}`);
  }

  /** Administrative shutdown of one session: a Cease with an RFC 8203 communication when given. */
  async shutdownNeighbor(address: string, message?: string): Promise<void> {
    await this.configureBgp(`neighbor ${address} shutdown${message === undefined ? '' : ` message ${message}`}`);
  }

  summary(family: Family = 'ipv4'): Promise<FrrSummary> {
    return this.json<FrrSummary>(`show bgp ${family} unicast summary json`);
  }

  neighbor(address: string): Promise<FrrNeighbor> {
    return this.json<Record<string, FrrNeighbor>>(`show bgp neighbors ${address} json`).then((all) => {
      const found = all[address];
      if (!found) throw new Error(`frr ${this.ns.shortName}: no neighbor ${address} in ${Object.keys(all).join(', ')}`);
      return found;
    });
  }

  async peers(): Promise<PeerStatus[]> {
    const all = await this.json<Record<string, FrrNeighbor>>('show bgp neighbors json');
    return Object.entries(all).map(([address, n]) => ({
      address,
      remoteAs: n.remoteAs,
      state: n.bgpState,
      established: n.bgpState === 'Established',
    }));
  }

  /** The RIB of one family, with every path's attributes. */
  async routes(family: Family = 'ipv4'): Promise<RibRoute[]> {
    const table = await this.json<FrrRibDetail>(`show bgp ${family} unicast json detail`);
    return parseFrrRib(table);
  }

  async stop(): Promise<void> {
    // bgpd first, so it closes its sessions while zebra is still there to hear about it.
    for (const p of [...this.processes].reverse()) await p.stop(5000);
  }
}

let frrIdsCache: { uid: number; gid: number } | undefined;
function frrUser(): { uid: number; gid: number } {
  if (!frrIdsCache) {
    const uid = Number(execFileSync('id', ['-u', 'frr'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'frr'], { encoding: 'utf8' }).trim());
    frrIdsCache = { uid, gid };
  }
  return frrIdsCache;
}

export interface FrrSummary {
  routerId?: string;
  as?: number;
  peers?: Record<string, { remoteAs: number; state: string; pfxRcd?: number; pfxSnt?: number; [key: string]: unknown }>;
  [key: string]: unknown;
}

export interface FrrNeighbor {
  remoteAs: number;
  localAs: number;
  bgpState: string;
  neighborCapabilities?: Record<string, unknown>;
  lastNotificationReason?: string;
  [key: string]: unknown;
}

/**
 * `show bgp <afi> unicast json detail` (FRR 8.4): routes keyed by prefix; each array opens
 * with a per-prefix header object (prefix, advertisedTo) before the paths.
 */
export interface FrrRibDetail {
  routes?: Record<string, FrrPathDetail[] | { paths: FrrPathDetail[] }>;
  [key: string]: unknown;
}

export interface FrrPathDetail {
  aspath?: { string?: string; segments?: { type: string; list: number[] }[]; length?: number };
  path?: string;
  origin?: string;
  med?: number;
  metric?: number;
  localpref?: number;
  locPrf?: number;
  community?: { string: string; list?: string[] };
  largeCommunity?: { string: string; list?: string[] };
  nexthops?: { ip: string; afi?: string; scope?: string; used?: boolean }[];
  peer?: { peerId?: string; routerId?: string; type?: string };
  bestpath?: { overall?: boolean } | boolean;
  addpathRxId?: number;
  [key: string]: unknown;
}

export function parseFrrRib(table: FrrRibDetail): RibRoute[] {
  const routes: RibRoute[] = [];
  for (const [prefix, entry] of Object.entries(table.routes ?? {})) {
    const paths = Array.isArray(entry) ? entry : entry.paths;
    for (const path of paths) {
      if (!path.nexthops) continue;
      const asPath = path.aspath?.segments
        ? path.aspath.segments.flatMap((s) => s.list)
        : (path.aspath?.string ?? path.path ?? '')
            .split(/[\s{},()]+/)
            .filter((t) => /^\d+$/.test(t))
            .map(Number);
      const origin = (path.origin ?? 'incomplete').toLowerCase();
      const best = typeof path.bestpath === 'boolean' ? path.bestpath : Boolean(path.bestpath?.overall);
      const route: RibRoute = {
        prefix,
        nextHops: (path.nexthops ?? []).map((nh) => nh.ip),
        asPath,
        origin: origin === 'igp' || origin === 'egp' ? origin : 'incomplete',
        communities: path.community?.string ? path.community.string.split(' ') : [],
        largeCommunities: path.largeCommunity?.string ? path.largeCommunity.string.split(' ') : [],
        best,
      };
      const med = path.med ?? path.metric;
      if (med !== undefined) route.med = med;
      const localPref = path.localpref ?? path.locPrf;
      if (localPref !== undefined) route.localPref = localPref;
      if (path.peer?.peerId && path.peer.peerId !== '(unspec)') route.from = path.peer.peerId;
      if (path.addpathRxId !== undefined) route.pathId = path.addpathRxId;
      routes.push(route);
    }
  }
  return routes;
}

/**
 * FRR's bfdd alone (with the zebra it needs) in `ns`, its files in `dir`, from the `peer` blocks
 * given (each ` peer A local-address B` with its timer lines, ending ` !`): a BFD peer without
 * bgpd, as the BFD interop suites and the benchmark run it. Returns bfdd; both are stopped with
 * the namespace's lab.
 */
export async function startBfdd(ns: Netns, dir: string, peers: readonly string[]): Promise<ManagedProcess> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'bfdd.conf'), `log stdout warnings\nbfd\n${peers.join('\n')}\n!\n`);
  writeFileSync(join(dir, 'zebra.conf'), 'log stdout warnings\n');
  const ids = frrUser();
  for (const f of [dir, join(dir, 'bfdd.conf'), join(dir, 'zebra.conf')]) chownSync(f, ids.uid, ids.gid);
  const zserv = join(dir, 'zserv.api');
  const common = ['--vty_socket', dir, '-P', '0', '-u', 'frr', '-g', 'frr', '-z', zserv];
  ns.spawn([`${FRR_BIN}/zebra`, '-f', join(dir, 'zebra.conf'), '-i', join(dir, 'zebra.pid'), ...common], { name: 'zebra' });
  await waitFor(() => existsSync(zserv), { what: 'zebra', timeoutMs: 20_000, intervalMs: 100 });
  return ns.spawn(
    [`${FRR_BIN}/bfdd`, '-f', join(dir, 'bfdd.conf'), '-i', join(dir, 'bfdd.pid'), '--bfdctl', join(dir, 'bfdd.sock'), ...common],
    {
      name: 'bfdd',
    },
  );
}
