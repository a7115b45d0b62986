// `podroute bgpd` and `podroute reflector`: a BGP speaker as a daemon, from a config file, with
// a control socket. The reflector is the same daemon run with the reflector's RIB options
// (from its file) and its view added to GET /status.
import { BgpSpeaker } from '../../bgp/index.js';
import { reflectorStatus } from '../../reflector/index.js';
import { readBgpdConfig, type BgpdConfig } from './config.js';
import { serveControl } from './control.js';
import { DEFAULT_CONTROL_MODE, resolveControlSocket, type ControlSocket } from './control-socket.js';
import { Mistakes } from './fields.js';
import { openRunMarker } from './graceful-restart.js';
import { networkAttributes } from './network.js';
import { checkedPath } from './paths.js';
import { readReflectorConfig } from './reflector-config.js';
import { serveMetrics, speakerMetrics } from './metrics.js';
import { createLogger, type LogFormat, type LogLevel } from '../log/index.js';

export interface DaemonOptions {
  config: string;
  control?: string;
  /** Log peer events on stderr. Default true. */
  log?: boolean;
  /** Default info: sessions up and down, errors; debug adds End-of-RIB. */
  logLevel?: LogLevel;
  /** Default json, one object a line. */
  logFormat?: LogFormat;
  /** Serve Prometheus /metrics on this port (0: any free one); none when undefined. */
  metricsPort?: number;
  /** Default 127.0.0.1. */
  metricsHost?: string;
}

/** Each event's level: what a person on call wants to see at info, and what only debugging needs. */
const LEVELS: Record<string, 'debug' | 'info' | 'warning' | 'error'> = {
  'peer-up': 'info',
  'peer-down': 'warning',
  'update-error': 'warning',
  'max-prefix': 'warning',
  'connection-refused': 'warning',
  'bfd-error': 'warning',
  'end-of-rib': 'debug',
  'graceful-restart': 'warning',
  started: 'info',
  stopping: 'info',
  metrics: 'info',
};

export async function runBgpd(options: DaemonOptions): Promise<BgpSpeaker> {
  return runSpeaker(readBgpdConfig(options.config), options);
}

export async function runReflector(options: DaemonOptions): Promise<BgpSpeaker> {
  const config = readReflectorConfig(options.config);
  const clients = new Set(config.clients);
  return runSpeaker(config, options, (speaker) => {
    const s = reflectorStatus(speaker, config.clusterId, clients);
    return { clusterId: s.clusterId, peers: s.peers, loopRejected: s.loopRejected, updateGroups: s.updateGroups };
  });
}

/**
 * The speaker's own checks of every peer and range, on a speaker that never listens and whose
 * peers are passive, so that anything it would refuse is refused before the daemon binds its
 * port, with the field's path in the file.
 */
async function dryRun(config: BgpdConfig): Promise<void> {
  // BFD on this loop: a thread of its own would only be started to be stopped.
  const dry = new BgpSpeaker({ ...config.speaker, listen: false, bfd: { thread: 'main' } });
  const m = new Mistakes();
  try {
    for (const [i, d] of config.dynamicNeighbors.entries()) refuseAt(m, config.dynamicPaths[i], () => dry.addDynamicNeighbors(d));
    for (const [i, p] of config.peers.entries()) refuseAt(m, config.peerPaths[i], () => dry.addPeer({ ...p, passive: true }));
  } finally {
    await dry.stop();
  }
  m.throwIfAny();
}

function refuseAt(m: Mistakes, path: string | undefined, check: () => void): void {
  try {
    check();
  } catch (e) {
    m.note(`${path ?? 'peer'}: ${(e as Error).message}`);
  }
}

/** `status` adds fields to the answer of GET /status. */
async function runSpeaker(
  config: BgpdConfig,
  options: DaemonOptions,
  status?: (speaker: BgpSpeaker) => Record<string, unknown>,
): Promise<BgpSpeaker> {
  // The file's paths were checked as it was read; the flag's is checked here, before anything listens.
  if (options.control !== undefined) checkedPath(options.control, '--control', 'a socket path');
  await dryRun(config);
  // The flag names the socket; the file may name it too, and says its mode and group.
  const controlPath = options.control ?? config.control?.path;
  let socket: ControlSocket | undefined;
  if (controlPath !== undefined)
    socket = await resolveControlSocket({ mode: DEFAULT_CONTROL_MODE, ...config.control, path: controlPath }, controlPath);
  // Before anything listens: an unwritable stateDir is refused, and the last run's end is known.
  const logger = createLogger({
    level: options.log === false ? 'none' : (options.logLevel ?? config.log?.level),
    format: options.logFormat ?? config.log?.format,
  });
  const log = (event: string, fields: Record<string, unknown>) => logger.log(LEVELS[event] ?? 'info', event, fields);
  const marker = openRunMarker(config.gracefulRestart?.stateDir, `bgp-${config.speaker.routerId}`, (warning) =>
    log('graceful-restart', { warning }),
  );
  const speaker = new BgpSpeaker({ ...config.speaker, restarting: marker.restarted });
  speaker.on('peerUp', (peer, s) =>
    log('peer-up', { peer, routerId: s.remoteRouterId, families: s.negotiated.families, holdTime: s.holdTime }),
  );
  speaker.on('peerDown', (peer, d) => log('peer-down', { peer, reason: d.message, gracefulRestart: d.gracefulRestart !== undefined }));
  speaker.on('updateError', (peer, e) => log('update-error', { peer, error: e.message, action: e.action }));
  speaker.on('maxPrefix', (peer, e) => log('max-prefix', { peer, ...e }));
  speaker.on('endOfRib', (peer, family) => log('end-of-rib', { peer, family }));
  speaker.on('connectionRefused', (from, reason) => log('connection-refused', { from, reason }));
  speaker.on('bfdError', (e) => log('bfd-error', { error: e.message }));
  for (const n of config.networks) speaker.originate(n.prefix, { attributes: networkAttributes(n) });
  let stopping = false;
  const stop = (message?: string) => {
    if (stopping) return;
    stopping = true;
    log('stopping', { message });
    control?.close();
    metrics?.close();
    void speaker.stop(message).then(() => {
      // Our peers got a Cease: the next start is not a graceful restart.
      marker.clear();
      process.exit(0);
    });
  };
  // The socket first: a path it cannot be created at is refused before the BGP port is bound.
  const control = socket && (await serveControl(speaker, socket, stop, status));
  let metrics: Awaited<ReturnType<typeof serveMetrics>> | undefined;
  const metricsHost = options.metricsHost ?? config.metrics?.host ?? '127.0.0.1';
  try {
    const port = options.metricsPort ?? config.metrics?.port;
    if (port !== undefined) metrics = await serveMetrics(speakerMetrics(speaker), port, metricsHost);
  } catch (e) {
    control?.close();
    marker.clear();
    throw e;
  }
  let port: Awaited<ReturnType<BgpSpeaker['start']>>;
  try {
    port = await speaker.start();
    for (const d of config.dynamicNeighbors) speaker.addDynamicNeighbors(d);
    for (const p of config.peers) speaker.addPeer(p);
  } catch (e) {
    // The dry run should have caught it; a daemon that cannot configure must not stay up.
    control?.close();
    metrics?.close();
    marker.clear();
    await speaker.stop('configuration refused');
    throw e;
  }
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  log('started', {
    asn: config.speaker.asn,
    routerId: config.speaker.routerId,
    port,
    peers: config.peers.length,
    restarting: marker.restarted,
    previousRun: marker.previous,
    metrics: metrics && `http://${metricsHost}:${(metrics.address() as { port: number }).port}/metrics`,
  });
  return speaker;
}
