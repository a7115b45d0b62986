// ExaBGP (4.2) in a namespace, as a route injector: static routes from a RouterConfig, each
// peer its own `neighbor` block. It never listens; it connects out to every neighbour.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UnsupportedConfigError, familiesOf, familyOfPrefix, normalizeNetwork, type Network, type RouterConfig } from './bgp-config.js';
import type { Netns } from './netns.js';
import type { ManagedProcess } from './process.js';
import { waitFor } from './wait.js';

export function renderExabgpConfig(config: RouterConfig): string {
  const lines: string[] = [];
  const networks = (config.networks ?? []).map(normalizeNetwork);
  for (const peer of config.peers) {
    if (peer.passive)
      throw new UnsupportedConfigError('exabgp', 'passive', 'is not supported by this harness (ExaBGP would need to bind port 179)');
    const local = peer.localAddress ?? config.routerId;
    const families = familiesOf(peer);
    lines.push(
      `neighbor ${peer.address} {`,
      `  router-id ${config.routerId};`,
      `  local-address ${local};`,
      `  local-as ${config.asn};`,
      `  peer-as ${peer.remoteAs};`,
      `  hold-time ${peer.holdTime ?? 9};`,
      '  family {',
      ...families.map((f) => `    ${f} unicast;`),
      '  }',
      '  capability {',
      '    route-refresh;',
    );
    if (peer.fourOctetAs === false) lines.push('    asn4 disable;');
    if (config.gracefulRestart) lines.push(`    graceful-restart ${config.gracefulRestart.restartTime};`);
    if (peer.addPath) lines.push(`    add-path ${peer.addPath === 'both' ? 'send/receive' : peer.addPath};`);
    if (peer.extendedMessage) lines.push('    extended-message;');
    lines.push('  }');
    const mine = networks.filter((n) => families.includes(familyOfPrefix(n.prefix)));
    if (mine.length > 0) {
      lines.push('  static {');
      for (const network of mine)
        lines.push(`    ${staticRoute(network, familyOfPrefix(network.prefix) === 'ipv6' ? config.nextHopV6 : undefined)}`);
      lines.push('  }');
    }
    lines.push('}');
  }
  return `${lines.join('\n')}\n`;
}

function staticRoute(network: Network, nextHop: string | undefined): string {
  const parts = [`route ${network.prefix}`, `next-hop ${nextHop ?? 'self'}`, 'origin igp'];
  if (network.med !== undefined) parts.push(`med ${network.med}`);
  if (network.localPref !== undefined) parts.push(`local-preference ${network.localPref}`);
  if (network.communities?.length) parts.push(`community [ ${network.communities.join(' ')} ]`);
  if (network.largeCommunities?.length) parts.push(`large-community [ ${network.largeCommunities.join(' ')} ]`);
  if (network.originatorId) parts.push(`originator-id ${network.originatorId}`);
  if (network.clusterList?.length) parts.push(`cluster-list [ ${network.clusterList.join(' ')} ]`);
  for (const a of network.rawAttributes ?? [])
    parts.push(`attribute [ 0x${a.type.toString(16)} 0x${a.flags.toString(16)} 0x${a.value.toString('hex')} ]`);
  return `${parts.join(' ')};`;
}

export class Exabgp {
  readonly kind = 'exabgp';
  private constructor(
    readonly ns: Netns,
    readonly config: RouterConfig,
    readonly dir: string,
    readonly process: ManagedProcess,
  ) {}

  /** Starts ExaBGP; resolves once the process has read its config (not when sessions are up). */
  static async start(ns: Netns, config: RouterConfig, env: Record<string, string> = {}): Promise<Exabgp> {
    const dir = join(ns.lab.dir, `${ns.shortName}-exabgp`);
    mkdirSync(dir, { recursive: true });
    const conf = join(dir, 'exabgp.conf');
    writeFileSync(conf, renderExabgpConfig(config));
    const process = ns.spawn(['exabgp', conf], {
      name: 'exabgp',
      cwd: dir,
      env: {
        ...globalThis.process.env,
        'exabgp.api.ack': 'false',
        'exabgp.log.level': 'INFO',
        'exabgp.log.destination': 'stdout',
        'exabgp.daemon.drop': 'false',
        'exabgp.daemon.user': 'root',
        'exabgp.tcp.bind': '',
        'exabgp.cache.attributes': 'false',
        ...env,
      },
    });
    const exabgp = new Exabgp(ns, config, dir, process);
    // A config error makes ExaBGP exit at once; give it a moment to do so, so that the error
    // surfaces here rather than as a session that never comes up.
    await waitFor(() => !process.running || /loaded new configuration|connected to/i.test(process.tail()), {
      what: `exabgp ${ns.shortName} to load its config`,
      timeoutMs: 15_000,
      intervalMs: 100,
    });
    if (!process.running) throw new Error(`exabgp ${ns.shortName} exited: ${process.tail()}`);
    return exabgp;
  }

  async stop(): Promise<void> {
    await this.process.stop(5000);
  }
}
