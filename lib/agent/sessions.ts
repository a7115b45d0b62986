// Keeps one speaker's sessions equal to the desired peers, as a difference: a peer that is
// gone or changed (AS, type, reflector client, restart time) is removed, a new one added, and
// every other session is left running.
import type { BgpSpeaker, NeighborConfig } from '../../bgp/index.js';
import { peerChanged, type DesiredPeer } from './peers.js';

/** What every session of the node shares. */
export interface SessionSettings {
  /** The port peers are dialled on (ours too). */
  port: number;
  /** Our address, the source of the sessions. */
  localAddress: string;
  /** Default 90 s. */
  holdTime?: number;
  /** Default 3 s. */
  connectRetryTime?: number;
  /** Graceful restart time when the peer does not set one (s). Default 120. */
  restartTime?: number;
}

export function neighborConfig(p: DesiredPeer, s: SessionSettings): NeighborConfig {
  return {
    address: p.address,
    asn: p.asn,
    port: s.port,
    localAddress: s.localAddress,
    holdTime: s.holdTime ?? 90,
    connectRetryTime: s.connectRetryTime ?? 3,
    idleHoldTime: 1,
    routeReflectorClient: p.routeReflectorClient,
    gracefulRestart: { restartTime: p.restartTime ?? s.restartTime ?? 120 },
    description: `${p.type} ${p.source}`,
  };
}

export class SessionReconciler {
  private readonly configured = new Map<string, DesiredPeer>();

  constructor(
    readonly speaker: BgpSpeaker,
    private readonly log: (event: string, fields: Record<string, unknown>) => void,
  ) {}

  /** The peers the speaker holds sessions with, by address. */
  get peers(): ReadonlyMap<string, DesiredPeer> {
    return this.configured;
  }

  reconcile(desired: readonly DesiredPeer[], settings: SessionSettings): void {
    const want = new Map(desired.map((p) => [p.address, p]));
    for (const [address, have] of this.configured) {
      const next = want.get(address);
      if (next && !peerChanged(have, next)) continue;
      this.speaker.removePeer(address);
      this.configured.delete(address);
      this.log('peer-removed', { peer: address, type: have.type });
    }
    for (const [address, p] of want) {
      if (this.configured.has(address)) continue;
      try {
        this.speaker.addPeer(neighborConfig(p, settings));
        this.configured.set(address, p);
        this.log('peer-added', { peer: address, type: p.type, asn: p.asn, source: p.source });
      } catch (e) {
        // A bad BGPPeer (say, an AS out of range) costs its own session, nothing else.
        this.log('peer-error', { peer: address, source: p.source, error: (e as Error).message });
      }
    }
  }
}
