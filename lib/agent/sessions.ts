// Keeps one speaker's sessions equal to the desired peers, as a difference: a peer that is
// gone or changed (AS, type, reflector client, restart time, prefix limits) is removed, a new one added, and
// every other session is left running; one whose BGPFilters changed gets its new policies on
// the running session. A peer whose password cannot be read (or that the
// speaker refuses) is not started; `refused` says why, for the status and the log.
import type { BfdTimers, BgpSpeaker, NeighborConfig, PolicyFunction } from '../../bgp/index.js';
import type { BGPFilter, BGPFilterSpec } from '../resources/index.js';
import { FilterPolicyCache, type FilterPolicies } from './bgp-filters.js';
import { isDirectlyConnected } from './connected.js';
import { resolvePassword, secretSources, type SecretSources } from './peer-password.js';
import { peerChanged, type DesiredPeer } from './peers.js';

/** What every session of the node shares. */
export interface SessionSettings {
  /** The port peers are dialled on (ours too). */
  port: number;
  /** Our address, the source of the sessions. */
  localAddress?: string;
  /** Our IPv6 address, the source of IPv6 sessions. */
  localAddressV6?: string;
  /** Default 90 s. */
  holdTime?: number;
  /** Default 3 s. */
  connectRetryTime?: number;
  /** Graceful restart time when the peer does not set one (s). Default 120. */
  restartTime?: number;
  /** Where BGPPeer secretKeyRefs are read. Default: PODROUTE_SECRETS_DIR and the environment. */
  secrets?: SecretSources;
  /** Our AS and the export policy of sessions to peers in another AS (service routes: service-advertise.ts). */
  localAs?: number;
  ebgpExportPolicy?: PolicyFunction;
  /** The cluster's BGPFilters by name, which BGPPeers name in `filters`. */
  bgpFilters?: ReadonlyMap<string, BGPFilter>;
  /** BFD timers of BGPPeers with failureDetectionMode BFDIfDirectlyConnected. Default BFD_TIMERS. */
  bfd?: BfdTimers;
  /** Whether a peer is on one of the node's subnets. Default: the node's interfaces now. */
  directlyConnected?: (address: string) => boolean;
}

/**
 * BFD for BFDIfDirectlyConnected: Calico's BGPPeer has no BFD timers, so podroute uses 100 ms × 3,
 * the fast detection a rack design asks for (a dead ToR is noticed within 300 ms).
 */
export const BFD_TIMERS: Readonly<Required<BfdTimers>> = Object.freeze({ minTxInterval: 100, minRxInterval: 100, multiplier: 3 });

/** Whether the session is eBGP: the peer's AS is not ours on it (the BGPPeer's localASNumber, else the node's). */
function external(p: DesiredPeer, s: SessionSettings): boolean {
  const ours = p.localAs ?? s.localAs;
  return ours !== undefined && p.asn !== ours;
}

/** What the session exports when no BGPFilter decides: to an eBGP peer, the node's own service routes only. */
function exportDefault(p: DesiredPeer, s: SessionSettings): PolicyFunction | undefined {
  return external(p, s) ? s.ebgpExportPolicy : undefined;
}

/**
 * `password`: the peer's, already read (resolvePassword). `policies`: its BGPFilters' (the
 * reconciler's, made once per distinct filter set); without them, what the node sends anyway.
 */
export function neighborConfig(p: DesiredPeer, s: SessionSettings, password?: string, policies?: FilterPolicies): NeighborConfig {
  const v6 = p.address.includes(':');
  const exportPolicy = policies ? policies.exportPolicy : exportDefault(p, s);
  const local = v6 ? s.localAddressV6 : s.localAddress;
  return {
    address: p.address,
    asn: p.asn,
    port: p.port ?? s.port,
    // One session per family, as Calico's mesh (BIRD and BIRD6): an IPv6 session carries IPv6 routes only.
    families: [v6 ? 'ipv6-unicast' : 'ipv4-unicast'],
    // None: the kernel's pick, not the listen address the speaker would otherwise dial from.
    ...(p.sourceAddress === 'None' ? { kernelSourceAddress: true } : local === undefined ? {} : { localAddress: local }),
    holdTime: s.holdTime ?? 90,
    connectRetryTime: s.connectRetryTime ?? 3,
    idleHoldTime: 1,
    routeReflectorClient: p.routeReflectorClient,
    gracefulRestart: { restartTime: p.restartTime ?? s.restartTime ?? 120 },
    ...(p.longLivedStaleTime !== undefined ? { longLivedGracefulRestart: { staleTime: p.longLivedStaleTime } } : {}),
    description: `${p.type} ${p.source}`,
    ...(p.maxPrefixes ? { maxPrefixes: p.maxPrefixes } : {}),
    ...(p.ttlSecurity ? { ttlSecurity: p.ttlSecurity } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(p.localAs !== undefined ? { localAs: p.localAs } : {}),
    ...(exportPolicy ? { exportPolicy } : {}),
    ...(policies?.importPolicy ? { importPolicy: policies.importPolicy } : {}),
    ...(p.bfdIfDirectlyConnected && (s.directlyConnected ?? isDirectlyConnected)(p.address) ? { bfd: { ...(s.bfd ?? BFD_TIMERS) } } : {}),
  };
}

export class SessionReconciler {
  private readonly configured = new Map<string, DesiredPeer>();
  /** The password each configured session was started with, to notice a rotated secret. */
  private readonly passwords = new Map<string, string | undefined>();
  private readonly notStarted = new Map<string, { peer: DesiredPeer; error: string }>();
  /** The policies each configured session has now, to notice a BGPFilter edit. */
  private readonly policies = new Map<string, FilterPolicies>();
  private readonly filterPolicies = new FilterPolicyCache();
  /** "peer filter" pairs whose filter was missing at the last reconcile, so each is logged once. */
  private missing = new Set<string>();

  constructor(
    readonly speaker: BgpSpeaker,
    private readonly log: (event: string, fields: Record<string, unknown>) => void,
  ) {}

  /** The peers the speaker holds sessions with, by address. */
  get peers(): ReadonlyMap<string, DesiredPeer> {
    return this.configured;
  }

  /** Desired peers that have no session, and why (a secret not found, a config the speaker refused). */
  get refused(): ReadonlyMap<string, { peer: DesiredPeer; error: string }> {
    return this.notStarted;
  }

  reconcile(desired: readonly DesiredPeer[], settings: SessionSettings): void {
    const want = new Map(desired.map((p) => [p.address, p]));
    const secrets = settings.secrets ?? secretSources();
    const passwords = new Map<string, { password?: string; error?: string }>();
    for (const p of want.values()) {
      try {
        passwords.set(p.address, { password: p.password === undefined ? undefined : resolvePassword(p.password, secrets) });
      } catch (e) {
        passwords.set(p.address, { error: (e as Error).message });
      }
    }
    this.notStarted.clear();
    const missing = new Set<string>();
    const policies = new Map([...want.values()].map((p) => [p.address, this.policiesOf(p, settings, missing)]));
    this.missing = missing;
    this.filterPolicies.sweep();
    for (const [address, have] of this.configured) {
      const next = want.get(address);
      const pw = passwords.get(address);
      // A secret that cannot be read now leaves a running session on the password it started with.
      const rotated = pw !== undefined && pw.error === undefined && pw.password !== this.passwords.get(address);
      if (next && !peerChanged(have, next) && !rotated) {
        this.configured.set(address, next);
        this.applyPolicies(address, policies.get(address)!);
        continue;
      }
      this.speaker.removePeer(address);
      this.configured.delete(address);
      this.passwords.delete(address);
      this.policies.delete(address);
      this.log('peer-removed', { peer: address, type: have.type });
    }
    for (const [address, p] of want) {
      if (this.configured.has(address)) continue;
      const pw = passwords.get(address)!;
      if (p.refused !== undefined) {
        this.notStarted.set(address, { peer: p, error: p.refused });
        this.log('peer-error', { peer: address, source: p.source, error: p.refused });
        continue;
      }
      if (pw.error !== undefined) {
        this.notStarted.set(address, { peer: p, error: pw.error });
        this.log('peer-error', { peer: address, source: p.source, error: pw.error });
        continue;
      }
      try {
        this.speaker.addPeer(neighborConfig(p, settings, pw.password, policies.get(address)));
        this.configured.set(address, p);
        this.passwords.set(address, pw.password);
        this.policies.set(address, policies.get(address)!);
        this.log('peer-added', { peer: address, type: p.type, asn: p.asn, source: p.source });
      } catch (e) {
        // A bad BGPPeer (say, an AS out of range) costs its own session, nothing else.
        this.notStarted.set(address, { peer: p, error: (e as Error).message });
        this.log('peer-error', { peer: address, source: p.source, error: (e as Error).message });
      }
    }
  }

  /** The policies `p`'s BGPFilters make; a filter that does not exist applies nothing (as in Calico), and is logged once. */
  private policiesOf(p: DesiredPeer, settings: SessionSettings, missing: Set<string>): FilterPolicies {
    const specs: BGPFilterSpec[] = [];
    for (const name of p.filters ?? []) {
      const f = settings.bgpFilters?.get(name);
      if (f) {
        specs.push(f.spec);
        continue;
      }
      const key = `${p.address} ${name}`;
      missing.add(key);
      if (!this.missing.has(key))
        this.log('bgp-filter-missing', {
          peer: p.address,
          source: p.source,
          filter: name,
          note: 'no BGPFilter of that name: it applies nothing until one is made',
        });
    }
    return this.filterPolicies.policies(specs, exportDefault(p, settings));
  }

  /** Gives a running session the policies its filters make now, when they changed. */
  private applyPolicies(address: string, next: FilterPolicies): void {
    const have = this.policies.get(address);
    if (have && have.importPolicy === next.importPolicy && have.exportPolicy === next.exportPolicy) return;
    try {
      this.speaker.setPolicies(address, { importPolicy: next.importPolicy, exportPolicy: next.exportPolicy });
      this.policies.set(address, next);
      this.log('peer-filters-changed', { peer: address, filters: this.configured.get(address)?.filters ?? [] });
    } catch (e) {
      this.log('peer-error', { peer: address, error: (e as Error).message });
    }
  }
}
