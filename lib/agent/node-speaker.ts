// The node's BGP speaker and its life: made from the Node and BGPConfiguration, kept while
// they ask for the same AS, port, cluster ID and router ID, replaced when one of them changes
// (every session restarts then, as with BIRD). Events of every speaker it made reach one
// listener, so a replaced speaker's last withdrawals and End-of-RIBs are not lost.
import { EventEmitter } from 'eventemitter3';
import { BgpSpeaker, type BestPathChange } from '../../bgp/index.js';
import { cidrAddress } from '../../ip/index.js';
import { routeReflectorRibOptions } from '../../reflector/index.js';
import { BGP_DEFAULTS, type BGPConfiguration, type Node } from '../resources/index.js';
import { clusterIdOf, nodeAsn } from './peers.js';

/**
 * ECMP as Calico's BIRD does it (`merge paths on` in its kernel protocol, BIRD's default limit of
 * 16): paths equal up to the router-ID tie-break (RFC 4271 §9.1.2.2 a–d: LOCAL_PREF, AS_PATH
 * length, ORIGIN, MED, eBGP over iBGP) form one set, whichever neighbouring AS each came through
 * (two ToRs of two planes, say), and felix gets up to this many next hops per prefix as one
 * multipath route. No ADD-PATH is needed: each path comes from another peer.
 */
const MAX_PATHS = 16;

export interface SpeakerSettings {
  asn: number;
  /** Where we listen and where peers are dialled. */
  port: number;
  clusterId: string | undefined;
  routerId: string;
  /** The node's IPv4 address (no prefix length), the source of IPv4 sessions; absent on an IPv6-only node. */
  address?: string;
  /** The node's IPv6 address (no prefix length): listened on too, the source of IPv6 sessions. */
  addressV6?: string;
}

/** The speaker `self` asks for: its AS, the cluster's port unless `bgpPort`, its cluster ID, its address. */
export function speakerSettings(
  self: Node,
  config: BGPConfiguration | undefined,
  address: string,
  bgpPort?: number,
  addressV6?: string,
  routerId?: string,
): SpeakerSettings {
  const v4 = address ? cidrAddress(address) : undefined;
  return {
    asn: nodeAsn(self, config),
    port: bgpPort ?? config?.spec.listenPort ?? BGP_DEFAULTS.listenPort,
    clusterId: clusterIdOf(self),
    routerId: routerId ?? v4 ?? '',
    ...(v4 ? { address: v4 } : {}),
    ...(addressV6 ? { addressV6: cidrAddress(addressV6, 'addressV6') } : {}),
  };
}

export interface NodeSpeakerOptions {
  hostname: string;
  /** Default: the router ID and the IPv6 address. */
  listenAddress?: string;
  /** We restarted with forwarding kept: OPENs carry the R bit. */
  restarting: boolean;
  /** Graceful restart time we advertise (s). Default 120. */
  restartTime?: number;
  /** After a restart, longest wait (s) for the peers' End-of-RIBs before we advertise (RFC 4724 §4.1). */
  selectDeferTime?: number;
  log: (event: string, fields: Record<string, unknown>) => void;
}

export interface NodeSpeakerEvents {
  bestPaths: [BestPathChange[]];
  endOfRib: [string];
  /** The listener could not be opened. */
  error: [Error];
}

export class NodeSpeaker extends EventEmitter<NodeSpeakerEvents> {
  private current: BgpSpeaker | undefined;
  private key = '';

  constructor(private readonly options: NodeSpeakerOptions) {
    super();
  }

  get speaker(): BgpSpeaker | undefined {
    return this.current;
  }

  /** The speaker for `s`: the current one when it matches, else a new one (the old one stops). */
  ensure(s: SpeakerSettings): BgpSpeaker {
    const key = `${s.asn}|${s.port}|${s.clusterId ?? ''}|${s.routerId}${s.address && s.address !== s.routerId ? `|${s.address}` : ''}${s.addressV6 ? `|${s.addressV6}` : ''}`;
    // A drained speaker has closed its sessions for good: an undrained node gets a new one.
    if (this.current && key === this.key && !this.current.isDraining) return this.current;
    if (this.current) {
      this.options.log('speaker-rebuild', { from: this.key, to: key });
      void this.current.stop('configuration changed');
    }
    this.key = key;
    const speaker = new BgpSpeaker({
      asn: s.asn,
      routerId: s.routerId,
      hostname: this.options.hostname,
      listen: {
        host: this.options.listenAddress ?? s.address ?? s.addressV6 ?? s.routerId,
        alsoHosts: this.options.listenAddress === undefined && s.address && s.addressV6 ? [s.addressV6] : [],
        port: s.port,
      },
      rib: { multipath: { maxPaths: MAX_PATHS, relax: true }, ...(s.clusterId ? routeReflectorRibOptions(s.clusterId) : {}) },
      restarting: this.options.restarting,
      forwardingPreserved: true,
      restartTime: this.options.restartTime ?? 120,
      selectDeferTime: this.options.selectDeferTime,
    });
    this.current = speaker;
    speaker.on('bestPaths', (changes) => this.emit('bestPaths', changes));
    speaker.on('peerUp', (address) => this.options.log('peer-up', { peer: address }));
    speaker.on('peerDown', (address, d) =>
      this.options.log('peer-down', { peer: address, reason: d.message, gracefulRestart: d.gracefulRestart !== undefined }),
    );
    speaker.on('maxPrefix', (address, e) => this.options.log('max-prefix', { peer: address, ...e }));
    speaker.on('connectionRefused', (from, reason) => this.options.log('connection-refused', { from, reason }));
    speaker.on('bfdError', (e) => this.options.log('bfd-error', { error: e.message }));
    speaker.on('endOfRib', (address) => this.emit('endOfRib', address));
    speaker.start().catch((e: Error) => {
      this.options.log('listen-error', { error: e.message, port: s.port });
      this.emit('error', new Error(`BGP listen on ${s.address ?? s.addressV6 ?? s.routerId}:${s.port}: ${e.message}`));
    });
    return speaker;
  }

  async stop(message: string, options: { graceful?: boolean } = {}): Promise<void> {
    await this.current?.stop(message, options);
  }
}
