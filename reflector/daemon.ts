// `podroute reflector`: the bgpd daemon (sessions, control socket, logs) run with the
// reflector's RIB options, and the reflector's view added to GET /status.
import type { BgpSpeaker } from '../bgp/index.js';
import { runBgpd } from '../lib/bgpd/daemon.js';
import { readReflectorConfig } from './config.js';
import { reflectorStatus } from './reflector.js';

export interface ReflectorDaemonOptions {
  config: string;
  control?: string;
  log?: boolean;
}

export async function runReflector(options: ReflectorDaemonOptions): Promise<BgpSpeaker> {
  const parsed = readReflectorConfig(options.config);
  const clients = new Set(parsed.clients);
  return runBgpd({
    ...options,
    parsed,
    status: (speaker) => {
      const s = reflectorStatus(speaker, parsed.clusterId, clients);
      return { clusterId: s.clusterId, peers: s.peers, loopRejected: s.loopRejected, updateGroups: s.updateGroups };
    },
  });
}
