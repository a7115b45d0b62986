// `podroute reflector` run in a namespace for the interop tests: config rendered from a small
// description, queried through the same control socket as bgpd.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { callControl, type RouteView } from '../../../lib/bgpd/control.js';
import type { ReflectorStatus } from '../../../reflector/index.js';
import { defaultTimers, type PeerStatus, type RibRoute, type RouterConfig } from '../../support/bgp-config.js';
import type { Netns } from '../../support/netns.js';
import type { ManagedProcess } from '../../support/process.js';
import { toRibRoute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

export interface ReflectorSpec {
  routerId: string;
  asn: number;
  clusterId: string;
  /** Clients configured one by one. */
  clients?: string[];
  /** Clients accepted from a range (they connect to us). */
  clientRanges?: string[];
  nonClients?: { address: string; asn: number }[];
}

const timers = {
  holdTime: defaultTimers.holdTime,
  keepaliveTime: defaultTimers.keepaliveTime,
  connectRetryTime: defaultTimers.connectRetry,
  idleHoldTime: 1,
};

export function renderReflectorConfig(spec: ReflectorSpec): string {
  return YAML.stringify({
    asn: spec.asn,
    routerId: spec.routerId,
    clusterId: spec.clusterId,
    listen: 179,
    clients: (spec.clients ?? []).map((address) => ({ address, ...timers })),
    clientRanges: (spec.clientRanges ?? []).map((range) => ({ range, holdTime: timers.holdTime })),
    nonClients: (spec.nonClients ?? []).map((p) => ({ ...p, ...timers })),
  });
}

export class ReflectorDaemon {
  readonly kind = 'podroute-reflector';
  readonly config: RouterConfig;
  private constructor(
    readonly ns: Netns,
    readonly spec: ReflectorSpec,
    readonly control: string,
    readonly process: ManagedProcess,
  ) {
    const peers = [
      ...(spec.clients ?? []).map((address) => ({ address, remoteAs: spec.asn })),
      ...(spec.nonClients ?? []).map((p) => ({ address: p.address, remoteAs: p.asn })),
    ];
    this.config = { routerId: spec.routerId, asn: spec.asn, peers };
  }

  static async start(ns: Netns, spec: ReflectorSpec, name = 'reflector'): Promise<ReflectorDaemon> {
    const file = join(ns.lab.dir, `${ns.shortName}-${name}.yaml`);
    const control = join(ns.lab.dir, `${ns.shortName}-${name}.sock`);
    writeFileSync(file, renderReflectorConfig(spec));
    const proc = ns.spawn(['node', join(ROOT, 'bin/podroute.js'), 'reflector', '--config', file, '--control', control], {
      name,
      cwd: ROOT,
    });
    const rr = new ReflectorDaemon(ns, spec, control, proc);
    await waitFor(
      async () => {
        if (!proc.running) throw new Error(`podroute reflector exited: ${proc.tail()}`);
        return rr.status().then(
          () => true,
          () => false,
        );
      },
      { what: `podroute reflector ${ns.shortName}: control socket answering`, timeoutMs: 20_000, intervalMs: 100 },
    );
    return rr;
  }

  status(): Promise<ReflectorStatus> {
    return callControl(this.control, 'GET', '/status');
  }

  async peers(): Promise<PeerStatus[]> {
    return (await this.status()).peers.map((p) => ({
      address: p.address,
      remoteAs: p.asn,
      state: p.state,
      established: p.state === 'Established',
    }));
  }

  paths(): Promise<RouteView[]> {
    return callControl<RouteView[]>(this.control, 'GET', '/routes?family=ipv4-unicast');
  }

  async routes(): Promise<RibRoute[]> {
    return (await this.paths()).map(toRibRoute);
  }

  async stop(message = 'test over'): Promise<void> {
    if (!this.process.running) return;
    await callControl(this.control, 'POST', '/stop', { message }).catch(() => undefined);
    await Promise.race([this.process.exited, new Promise((r) => setTimeout(r, 5000))]);
    if (this.process.running) await this.process.stop();
  }
}
