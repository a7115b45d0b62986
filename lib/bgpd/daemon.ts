// `podroute bgpd`: a BGP speaker as a daemon, from a config file, with a control socket.
import { BgpSpeaker } from '../../bgp/index.js';
import { networkAttributes, readBgpdConfig, type BgpdConfig } from './config.js';
import { serveControl } from './control.js';

export interface BgpdOptions {
  config: string;
  control?: string;
  /** Log peer events as JSON lines on stderr. Default true. */
  log?: boolean;
  /** An already parsed configuration (used instead of reading `config`): the reflector daemon adds its RIB hook to it. */
  parsed?: BgpdConfig;
  /** Fields added to the answer of GET /status. */
  status?: (speaker: BgpSpeaker) => Record<string, unknown>;
}

export async function runBgpd(options: BgpdOptions): Promise<BgpSpeaker> {
  const config = options.parsed ?? readBgpdConfig(options.config);
  const speaker = new BgpSpeaker(config.speaker);
  const log = (event: string, fields: Record<string, unknown>) => {
    if (options.log !== false) process.stderr.write(JSON.stringify({ time: new Date().toISOString(), event, ...fields }) + '\n');
  };
  speaker.on('peerUp', (peer, s) => log('peer-up', { peer, routerId: s.remoteRouterId, families: s.negotiated.families, holdTime: s.holdTime }));
  speaker.on('peerDown', (peer, d) => log('peer-down', { peer, reason: d.message, gracefulRestart: d.gracefulRestart !== undefined }));
  speaker.on('updateError', (peer, e) => log('update-error', { peer, error: e.message, action: e.action }));
  for (const n of config.networks) speaker.originate(n.prefix, { attributes: networkAttributes(n) });
  const port = await speaker.start();
  for (const d of config.dynamicNeighbors) speaker.addDynamicNeighbors(d);
  for (const p of config.peers) speaker.addPeer(p);
  let stopping = false;
  const stop = (message?: string) => {
    if (stopping) return;
    stopping = true;
    log('stopping', { message });
    control?.close();
    void speaker.stop(message).then(() => process.exit(0));
  };
  const control = options.control ? serveControl(speaker, options.control, stop, options.status) : undefined;
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  log('started', { asn: config.speaker.asn, routerId: config.speaker.routerId, port, peers: config.peers.length });
  return speaker;
}
