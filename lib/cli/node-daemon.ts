// `podroute node run`: the node agent as a daemon. Wires the settings to the agent, its
// dataplanes, datastore and sockets, logs its events, and stops it on SIGTERM (a graceful
// restart: peers keep the routes) or SIGINT and the control socket (a Cease to every peer).
// Whatever fails before the agent runs closes what was opened, so nothing is left listening.
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import {
  createLinuxDataplane,
  IpBatchDataplane,
  MemoryDataplane,
  MemoryNftDataplane,
  NetlinkConntrackCleaner,
  createNftDataplane,
  MemoryWireguardDataplane,
  NetlinkWireguardDataplane,
  WgToolDataplane,
  type WireguardDataplane,
  type Dataplane,
  type NftDataplane,
} from '../../felix/index.js';
import { NodeAgent, serveAgentControl, serveHealth, serveWeb } from '../agent/index.js';
import { flowsFromControl } from '../agent/web/flows.js';
import { felixSettings } from '../agent/felix-configuration.js';
import { cniSocketPath, serveCni } from '../agent/cni-server.js';
import { createLogger, logFormat, logLevel, type Logger } from '../log/index.js';
import { openDatastore, type BackendDatastore } from '../datastore/index.js';
import { DEFAULT_CONTROL } from './flags.js';
import type { NodeRunConfig } from './node-settings.js';

/**
 * Events above info: whatever an operator running at `--log-level warning` must still see (a
 * store outage, a peer lost, a route or rule the kernel refused, a config refused). The rest
 * (sessions coming up, resources accepted, the agent's own progress) are info.
 */
const LEVELS: Record<string, 'warning' | 'error'> = {
  error: 'error',
  // The datastore: unreachable, replaced, or unable to keep what it acknowledged.
  'datastore-error': 'warning',
  'datastore-replaced': 'warning',
  'datastore-no-failover': 'warning',
  'datastore-persistence-risk': 'warning',
  'datastore-persistence-unknown': 'warning',
  // BGP: a session lost or refused, a peer over its prefix limit, the listener down, a
  // connection from an address that is no peer.
  'peer-down': 'warning',
  'peer-error': 'warning',
  'max-prefix': 'warning',
  'listen-error': 'warning',
  'connection-refused': 'warning',
  'bfd-error': 'warning',
  'graceful-restart-timeout': 'warning',
  // The dataplane: what felix could not program.
  'programming-problems': 'warning',
  'dataplane-fallback': 'warning',
  'felix-error': 'warning',
  'felix-input-error': 'warning',
  'reconcile-error': 'warning',
  'vxlan-tunnel-error': 'warning',
  'wireguard-error': 'warning',
  'conntrack-error': 'warning',
  // Policy and Services: refused, or not applied.
  'policy-disabled': 'warning',
  'policy-error': 'warning',
  'policy-refused': 'warning',
  'policy-apply-failed': 'warning',
  'services-error': 'warning',
  'services-refused': 'warning',
  'service-refused': 'warning',
  'services-apply-failed': 'warning',
  // Flow logs: not started, or without byte counts.
  'flow-logs-error': 'warning',
  'flow-logs-no-accounting': 'warning',
  'service-frontend-conflict': 'warning',
  'service-controller-error': 'warning',
  // The CNI socket.
  'cni-call-timeout': 'warning',
  'cni-request-refused': 'warning',
};

/** The level `podroute node run` logs an agent event at. */
export function eventLevel(event: string): 'info' | 'warning' | 'error' {
  return LEVELS[event] ?? 'info';
}

let logger: Logger = createLogger();

function log(event: string, fields: Record<string, unknown>): void {
  logger.log(eventLevel(event), event, fields);
}

/** Runs the agent with checked settings (nodeRunSettings) until a signal or the control socket stops it. */
export async function nodeRun(c: NodeRunConfig): Promise<number> {
  logger = createLogger({
    level: c.logSeverityScreen === undefined ? 'info' : logLevel(c.logSeverityScreen, 'logSeverityScreen'),
    format: c.logFormat === undefined ? 'json' : logFormat(c.logFormat, 'logFormat'),
  });
  const cniPath = cniSocketPath(c.cniSocket, process.getuid?.() === 0);
  const ds = await openDatastore(c.datastore ?? { type: 'memory' });
  try {
    return await runAgent(c, ds, cniPath);
  } catch (e) {
    // Whatever failed before the agent ran, its datastore connection, sockets or port would
    // keep a process up that a supervisor takes for a running agent.
    process.stderr.write(`podroute: ${(e as Error).message}\n`);
    await Promise.race([ds.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
    process.exit(1);
  }
}

async function runAgent(c: NodeRunConfig, ds: BackendDatastore, cniPath: string | undefined): Promise<number> {
  const nodeName = c.nodeName ?? hostname().toLowerCase();
  // FelixConfiguration (default, then node.<name>) under the flags and the environment, as Felix.
  const fromStore = felixSettings((await ds.list('FelixConfiguration')).items, nodeName);
  let dataplane: Dataplane;
  let wireguardDataplane: WireguardDataplane;
  if (c.dataplane === 'memory') {
    dataplane = new MemoryDataplane({ links: [c.uplink ?? 'eth0'] });
    wireguardDataplane = new MemoryWireguardDataplane();
  } else {
    // rtnetlink through the addon, or the ip -batch fallback when it did not build; WireGuard
    // the same way: netlink through the addon, or the ip and wg tools.
    dataplane = createLinuxDataplane();
    if (dataplane instanceof IpBatchDataplane) {
      log('dataplane-fallback', { dataplane: dataplane.description });
      wireguardDataplane = new WgToolDataplane();
    } else wireguardDataplane = new NetlinkWireguardDataplane();
  }
  let policyDataplane: NftDataplane | undefined;
  if (c.policy !== 'off') {
    if (c.dataplane === 'memory') policyDataplane = new MemoryNftDataplane();
    // nf_tables over netlink through the addon (rules still through nft), or nft -f for all of it.
    else if (spawnSync('nft', ['--version'], { stdio: 'ignore' }).status === 0) policyDataplane = createNftDataplane();
    // Said loudly: without nft every pod reaches every pod whatever the policies say.
    else
      log('policy-disabled', {
        reason: 'the nft command was not found (Debian package nftables); network policy and natOutgoing are NOT enforced',
      });
  }
  const agent = new NodeAgent({
    nodeName,
    datastore: ds,
    dataplane,
    policyDataplane,
    serviceController: c.serviceController !== 'off',
    // The kernel's dataplane deletes stale UDP service entries over ctnetlink.
    serviceConntrack:
      policyDataplane && !(policyDataplane instanceof MemoryNftDataplane)
        ? new NetlinkConntrackCleaner({ onError: (error) => log('conntrack-error', { error }) })
        : undefined,
    ipv4Address: c.ipv4Address,
    ipAutodetectionMethod: c.ipAutodetectionMethod,
    ipv6Address: c.ipv6Address === 'none' ? undefined : c.ipv6Address,
    ip6AutodetectionMethod: c.ip6AutodetectionMethod,
    routerId: c.routerId,
    uplink: c.uplink,
    asNumber: c.asNumber,
    labels: c.labels,
    routeReflectorClusterId: c.routeReflectorClusterId,
    bgpPort: c.bgpPort,
    holdTime: c.holdTime,
    connectRetryTime: c.connectRetryTime,
    restartTime: c.restartTime,
    gracefulRestartWaitMs: c.gracefulRestartWaitMs,
    defaultIpv4Pool: c.defaultIpv4Pool,
    wireguard: fromStore.wireguard,
    // Flow logs read the kernel's conntrack and log groups: not in memory.
    flowLogs: c.dataplane === 'memory' || !policyDataplane ? undefined : fromStore.flowLogs,
    felix: {
      ...fromStore.felix,
      // Always given, so a device, rule or routes left from a run with WireGuard on are removed.
      wireguardDataplane,
      resyncIntervalMs: c.resyncInterval !== undefined ? c.resyncInterval * 1000 : (fromStore.felix.resyncIntervalMs ?? 90_000),
    },
    log,
  });
  agent.on('error', (e) => log('error', { error: e.message }));
  agent.on('programmed', (r) => {
    if (r.failures.length || r.conflicts.length || r.problems.length)
      log('programming-problems', { failures: r.failures, conflicts: r.conflicts.map((x) => x.dst), problems: r.problems });
  });
  let stopping = false;
  // SIGTERM is what a container engine, a supervisor or a rolling update sends before starting
  // the agent again: stop as for a graceful restart (peers keep this node's routes, the kernel
  // keeps its own). SIGINT and the control socket's /stop are a person ending it: every peer gets a Cease.
  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    const graceful = why === 'SIGTERM';
    log('stopping', { why, graceful });
    control.close();
    health?.close();
    web?.close();
    void Promise.all([agent.stop(why, { graceful }), cni?.close()]).finally(() => ds.close().finally(() => process.exit(0)));
  };
  // The CNI socket first: a path it cannot take or bind fails the start before anything listens.
  const cni = cniPath === undefined ? undefined : await serveCni(cniPath, { log });
  // A socket or port that fails closes what is already open, so no socket file is left behind.
  const control = await serveAgentControl(agent, c.control ?? DEFAULT_CONTROL, () => stop('control')).catch(async (e) => {
    await cni?.close(0);
    throw e;
  });
  const healthPort = c.healthPort ?? fromStore.healthPort ?? 9099;
  const health =
    healthPort === 0
      ? undefined
      : await serveHealth(agent, healthPort, c.healthHost ?? fromStore.healthHost).catch(async (e) => {
          await new Promise((resolve) => control.close(resolve));
          await cni?.close(0);
          throw e;
        });
  // The web page, off unless a port is given; flow records reach it through its `flows` seam.
  const web = !c.webPort
    ? undefined
    : await serveWeb(agent, {
        port: c.webPort,
        host: c.webHost,
        flows: agent.flows ? flowsFromControl(c.control ?? DEFAULT_CONTROL) : undefined,
      }).catch(async (e: Error) => {
        await new Promise((resolve) => control.close(resolve));
        if (health) await new Promise((resolve) => health.close(resolve));
        await cni?.close(0);
        throw new Error(`webPort: ${e.message}`);
      });
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    await agent.start();
  } catch (e) {
    // Nothing may stay up for a supervisor to mistake for a running agent.
    stopping = true;
    process.stderr.write(`podroute: ${(e as Error).message}\n`);
    control.close();
    health?.close();
    web?.close();
    await cni?.close(0);
    const bounded = (p: Promise<unknown>) =>
      Promise.race([p.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
    await bounded(agent.stop('start failed'));
    await bounded(ds.close());
    process.exit(1);
  }
  log('started', {
    node: agent.nodeName,
    address: agent.address,
    uplink: agent.uplink,
    restarting: agent.restarting,
    control: c.control ?? DEFAULT_CONTROL,
    cniSocket: cniPath ?? 'off',
    ...(web ? { web: `http://${c.webHost?.includes(':') ? `[${c.webHost}]` : (c.webHost ?? '127.0.0.1')}:${c.webPort}/` } : {}),
  });
  return new Promise<number>(() => undefined);
}
