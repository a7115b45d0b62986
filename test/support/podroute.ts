// Our own speaker as an interop peer: `podroute bgpd` run in a namespace from a config
// rendered from the same RouterConfig the FRR, BIRD and GoBGP runners take, queried through
// its control socket.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import type { PeerStatus as SpeakerPeerStatus } from '../../bgp/index.js';
import { callControl, type RouteView } from '../../lib/bgpd/control.js';
import {
  bfdTimers,
  defaultTimers,
  familiesOf,
  normalizeNetwork,
  type Family,
  type PeerStatus,
  type RibRoute,
  type RouterConfig,
} from './bgp-config.js';
import { assertDistCurrent } from './dist.js';
import type { Netns } from './netns.js';
import type { ManagedProcess } from './process.js';
import { waitFor } from './wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FAMILY = { ipv4: 'ipv4-unicast', ipv6: 'ipv6-unicast' } as const;

/** Extra settings of our speaker that RouterConfig does not carry. */
export interface PodrouteOptions {
  name?: string;
  /** Dynamic neighbours (`bgp listen range`). */
  dynamicNeighbors?: { range: string; asn: number | number[] }[];
  /** Fields merged into every peer (e.g. { gracefulRestart: false }). */
  peerDefaults?: Record<string, unknown>;
  stalePathTime?: number;
  multipath?: number;
  /** The file's top-level `gracefulRestart` (restartTime, forwardingPreserved, selectDeferTime). */
  gracefulRestart?: Record<string, unknown>;
  /** Where the daemon keeps its run marker; start() gives it one in the lab, never the host's /run/podroute. */
  stateDir?: string;
  /** Node flags before the script: V8 flags that NODE_OPTIONS refuses (--single-threaded-gc) go here. */
  nodeArgs?: readonly string[];
  /** The file's `listen` (default 179 on every address); `{ host, port }` listens on one address, and dials from it. */
  listen?: number | { host: string; port: number };
}

export function renderPodrouteConfig(config: RouterConfig, options: PodrouteOptions = {}): string {
  const doc = {
    asn: config.asn,
    routerId: config.routerId,
    hostname: config.hostname,
    listen: options.listen ?? 179,
    stalePathTime: options.stalePathTime,
    multipath: options.multipath,
    gracefulRestart: options.stateDir || options.gracefulRestart ? { stateDir: options.stateDir, ...options.gracefulRestart } : undefined,
    peers: config.peers.map((p) => ({
      address: p.address,
      asn: p.remoteAs,
      passive: p.passive,
      holdTime: p.holdTime ?? defaultTimers.holdTime,
      keepaliveTime: p.keepaliveTime ?? defaultTimers.keepaliveTime,
      connectRetryTime: p.connectRetry ?? defaultTimers.connectRetry,
      idleHoldTime: 1,
      families: familiesOf(p).map((f) => FAMILY[f]),
      addPath: p.addPath ? Object.fromEntries(familiesOf(p).map((f) => [FAMILY[f], p.addPath])) : undefined,
      localAddress: p.localAddress,
      localAddressV6: config.nextHopV6,
      extendedMessage: p.extendedMessage,
      routeReflectorClient: p.routeReflectorClient,
      password: p.password,
      ttlSecurity: p.ttlSecurityHops,
      gracefulRestart: config.gracefulRestart ? { restartTime: config.gracefulRestart.restartTime } : undefined,
      bfd: p.bfd ? bfdTimers(p.bfd) : undefined,
      ...options.peerDefaults,
    })),
    dynamicNeighbors: options.dynamicNeighbors?.map((d) => ({
      ...d,
      holdTime: defaultTimers.holdTime,
      families: ['ipv4-unicast', 'ipv6-unicast'],
      ...options.peerDefaults,
    })),
    networks: (config.networks ?? []).map(normalizeNetwork),
  };
  return YAML.stringify(JSON.parse(JSON.stringify(doc)));
}

export function toRibRoute(r: RouteView): RibRoute {
  const a = r.attributes;
  return {
    prefix: r.prefix,
    nextHops: r.linkLocalNextHop ? [r.nextHop, r.linkLocalNextHop] : [r.nextHop],
    asPath: (a.asPath ?? []).flatMap((s) => s.asns),
    origin: a.origin ?? 'incomplete',
    med: a.med,
    localPref: a.localPref,
    communities: a.communities ?? [],
    largeCommunities: a.largeCommunities ?? [],
    best: r.best,
    from: r.from === 'local' ? undefined : r.from,
    pathId: r.pathId || undefined,
  };
}

export class Podroute {
  readonly kind = 'podroute';
  private constructor(
    readonly ns: Netns,
    readonly config: RouterConfig,
    readonly control: string,
    readonly process: ManagedProcess,
  ) {}

  static async start(ns: Netns, config: RouterConfig, options: PodrouteOptions = {}): Promise<Podroute> {
    const name = options.name ?? 'podroute';
    const file = join(ns.lab.dir, `${ns.shortName}-${name}.yaml`);
    const control = join(ns.lab.dir, `${ns.shortName}-${name}.sock`);
    const stateDir = options.stateDir ?? join(ns.lab.dir, `${ns.shortName}-${name}-state`);
    writeFileSync(file, renderPodrouteConfig(config, { ...options, stateDir }));
    assertDistCurrent();
    const proc = ns.spawn(
      ['node', ...(options.nodeArgs ?? []), join(ROOT, 'bin/podroute.js'), 'bgpd', '--config', file, '--control', control],
      { name, cwd: ROOT },
    );
    const speaker = new Podroute(ns, config, control, proc);
    await waitFor(
      async () => {
        if (!proc.running) throw new Error(`podroute bgpd exited: ${proc.tail()}`);
        return speaker.status().then(
          () => true,
          () => false,
        );
      },
      { what: `podroute ${ns.shortName}: control socket answering`, timeoutMs: 20_000, intervalMs: 100 },
    );
    return speaker;
  }

  status(): Promise<{ asn: number; routerId: string; peers: SpeakerPeerStatus[] }> {
    return callControl(this.control, 'GET', '/status');
  }

  async peers(): Promise<PeerStatus[]> {
    const s = await this.status();
    return s.peers.map((p) => ({ address: p.address, remoteAs: p.asn, state: p.state, established: p.state === 'Established' }));
  }

  async paths(family: Family = 'ipv4'): Promise<RouteView[]> {
    return callControl<RouteView[]>(this.control, 'GET', `/routes?family=${FAMILY[family]}`);
  }

  async routes(family: Family = 'ipv4'): Promise<RibRoute[]> {
    return (await this.paths(family)).map(toRibRoute);
  }

  originate(prefix: string, network: Record<string, unknown> = {}): Promise<unknown> {
    return callControl(this.control, 'POST', '/originate', { prefix, ...network });
  }

  /** Many prefixes in one call, sharing attributes. */
  /** In calls of 20,000 prefixes: the control socket takes bodies of at most 1 MiB. */
  async originateMany(prefixes: string[], network: Record<string, unknown> = {}): Promise<void> {
    for (let i = 0; i < prefixes.length; i += 20_000)
      await callControl(this.control, 'POST', '/originate', { prefixes: prefixes.slice(i, i + 20_000), ...network });
  }

  withdraw(prefix: string): Promise<unknown> {
    return callControl(this.control, 'POST', '/withdraw', { prefix });
  }

  refresh(address: string, family: Family = 'ipv4'): Promise<unknown> {
    return callControl(this.control, 'POST', '/refresh', { address, family: FAMILY[family] });
  }

  /** RFC 8326 graceful shutdown (POST /drain): answers at once; the daemon exits once its sessions closed. */
  drain(body: { message?: string; settleMs?: number; timeoutMs?: number } = {}): Promise<unknown> {
    return callControl(this.control, 'POST', '/drain', body);
  }

  /** A clean stop: every peer gets a Cease with this communication. */
  async stop(message = 'test over'): Promise<void> {
    if (!this.process.running) return;
    await callControl(this.control, 'POST', '/stop', { message }).catch(() => undefined);
    await Promise.race([this.process.exited, new Promise((r) => setTimeout(r, 5000))]);
    if (this.process.running) await this.process.stop();
  }

  kill(): Promise<void> {
    return this.process.stop();
  }
}
