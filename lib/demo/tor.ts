// The top-of-rack router of the demo: an eBGP speaker in its own AS that every node peers with
// through a global BGPPeer, as a rack's switch would. It learns every pod block and sends
// nothing back (a real ToR would send a default route, which the nodes do not need here).
import { existsSync } from 'node:fs';
import { BgpSpeaker, type PeerStatus } from '../../bgp/index.js';

export interface TopOfRackOptions {
  address: string;
  asn: number;
  port: number;
}

export interface TorRoute {
  prefix: string;
  nextHop: string;
  asPath: string;
}

export class TopOfRack {
  readonly speaker: BgpSpeaker;

  constructor(readonly options: TopOfRackOptions) {
    this.speaker = new BgpSpeaker({
      asn: options.asn,
      routerId: options.address,
      hostname: 'tor',
      listen: { host: options.address, port: options.port },
    });
  }

  async start(): Promise<void> {
    await this.speaker.start();
  }

  /**
   * A session with one node, which the node opens (a ToR usually waits for its servers, as
   * FRR's `bgp listen range` does); what the ToR exports is nothing.
   */
  peer(address: string, asn: number): void {
    this.speaker.addPeer({
      address,
      asn,
      passive: true,
      port: this.options.port,
      localAddress: this.options.address,
      holdTime: 9,
      connectRetryTime: 1,
      exportPolicy: { terms: [], default: 'reject' },
    });
  }

  peers(): PeerStatus[] {
    return this.speaker.peerStatus();
  }

  routes(): TorRoute[] {
    return this.speaker.routes('ipv4-unicast').map((r) => ({
      prefix: r.prefix,
      nextHop: r.nextHop,
      asPath: (r.attributes.asPath ?? []).map((s) => (s.type === 'set' ? `{${s.asns.join(',')}}` : s.asns.join(' '))).join(' '),
    }));
  }

  stop(): Promise<void> {
    return this.speaker.stop('demo stopping');
  }
}

/**
 * Why FRR does not play the top-of-rack: Debian's FRR is built to put its vty socket in the
 * `frrvty` group and its daemons refuse to start for a user outside it, and as root they switch
 * to the `frr` user; the demo needs neither root nor a group. Even as root it could not: FRR's
 * bgpd takes a next hop in 127.0.0.0/8 as martian and resets the session with NOTIFICATION 3/8
 * (tried with bgpd 8.4 listening on 127.0.0.254), and the demo's nodes live on loopback.
 */
export function frrNote(): string {
  if (!existsSync('/usr/lib/frr/bgpd')) return 'FRR is not installed: a podroute speaker plays the top-of-rack';
  return 'FRR is installed, but refuses loopback next hops (127.0.0.0/8 is martian to it): a podroute speaker plays the top-of-rack';
}
