// A peer as the RIB knows it: identity, the numbers the decision process compares, and
// counters. It outlives a session so that graceful restart can keep its routes as stale.
import { parseIpv4Number, parseRouterId } from '../../ip/index.js';
import type { AddressFamily, CodecOptions } from '../codec/index.js';
import { compilePolicy, type CompiledPolicy } from './policy.js';
import type { AdjRibOut } from './adj-rib-out.js';
import type { PeerType, RibPeerConfig } from './types.js';
import { peerToJSON, type RibPeerJson } from './json.js';

export interface RibPeerStats {
  /** Routes held in the Adj-RIB-In, per family. */
  routes: Record<AddressFamily, number>;
  /** Prefixes dropped because our AS was in the AS_PATH (or our router ID / cluster ID in ORIGINATOR_ID / CLUSTER_LIST). */
  loopRejected: number;
  /** Prefixes the import policy rejected. */
  policyRejected: number;
  /** Prefixes withdrawn because their UPDATE was malformed (RFC 7606 treat-as-withdraw). */
  treatAsWithdraw: number;
  /** Prefixes received in announcements. */
  announced: number;
  /** Prefixes received in withdrawals. */
  withdrawn: number;
}

let nextIndex = 1;

export class RibPeer {
  readonly index = nextIndex++;
  readonly type: PeerType;
  readonly address: string;
  readonly asn: number;
  routerId: string;
  /** The router ID as an unsigned number: step f of the decision process. */
  routerIdNumber: number;
  /** Fixed-width text of the address, so that `<` orders addresses numerically (step g). */
  readonly addressRank: string;
  config: RibPeerConfig;
  /** Our AS on this session when it is not the RIB's: a path that holds it is a loop too, as BIRD's per-session `local as`. */
  readonly ownAs: number | undefined;
  importPolicy: CompiledPolicy | undefined;
  exportPolicy: CompiledPolicy | undefined;
  /** The outbound side while the session is up. */
  out: AdjRibOut | undefined;
  up = false;
  readonly stats: RibPeerStats = {
    routes: { 'ipv4-unicast': 0, 'ipv6-unicast': 0 },
    loopRejected: 0,
    policyRejected: 0,
    treatAsWithdraw: 0,
    announced: 0,
    withdrawn: 0,
  };

  constructor(config: RibPeerConfig, localAs: number, type?: PeerType) {
    if (!Number.isInteger(config.asn) || config.asn < 0 || config.asn > 0xffffffff) {
      throw new TypeError(`peer asn: ${config.asn} is not an AS number`);
    }
    this.config = config;
    this.address = config.address;
    this.asn = config.asn;
    this.type = type ?? (config.asn === (config.localAs ?? localAs) ? 'ibgp' : 'ebgp');
    this.ownAs = config.localAs !== undefined && config.localAs !== localAs ? config.localAs : undefined;
    this.routerId = config.routerId;
    this.routerIdNumber = parseRouterId(config.routerId, 'peer routerId');
    this.addressRank = addressRank(config.address);
    this.importPolicy = config.importPolicy === undefined ? undefined : compilePolicy(config.importPolicy);
    this.exportPolicy = config.exportPolicy === undefined ? undefined : compilePolicy(config.exportPolicy);
  }

  /** A new session of the same peer may bring a new router ID, addresses, options, policies. */
  reconfigure(config: RibPeerConfig): void {
    if (config.address !== this.address || config.asn !== this.asn || config.localAs !== this.config.localAs) {
      throw new TypeError(`peer ${this.address}: address, asn and localAs cannot change (remove the peer and add it again)`);
    }
    this.config = config;
    this.routerId = config.routerId;
    this.routerIdNumber = parseRouterId(config.routerId, 'peer routerId');
    this.importPolicy = config.importPolicy === undefined ? undefined : compilePolicy(config.importPolicy);
    this.exportPolicy = config.exportPolicy === undefined ? undefined : compilePolicy(config.exportPolicy);
  }

  get families(): AddressFamily[] {
    return this.config.families ?? ['ipv4-unicast'];
  }

  get sendOptions(): CodecOptions {
    return this.config.sendOptions ?? {};
  }

  get fourOctetAs(): boolean {
    return this.config.fourOctetAs !== false;
  }

  /** Who the peer is, for JSON.stringify: not its Adj-RIB-Out, policies and counters. */
  toJSON(): RibPeerJson {
    return peerToJSON(this);
  }

  /** Its address, as the speaker's events and status name it. */
  toString(): string {
    return this.address;
  }
}

function addressRank(address: string): string {
  if (!address.includes(':')) {
    try {
      return '4' + parseIpv4Number(address).toString(16).padStart(8, '0');
    } catch {
      throw new TypeError(`peer address: "${address}" is not an IP address`);
    }
  }
  const b = Buffer.alloc(16);
  try {
    // Reuse the codec's parser through a host prefix.
    const words = expandIpv6(address);
    for (let i = 0; i < 8; i++) b.writeUInt16BE(words[i], 2 * i);
  } catch {
    throw new TypeError(`peer address: "${address}" is not an IP address`);
  }
  return '6' + b.toString('hex');
}

function expandIpv6(s: string): number[] {
  const pct = s.indexOf('%');
  if (pct >= 0) s = s.slice(0, pct);
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  const all = [...h, ...new Array<string>(fill).fill('0'), ...t];
  if (all.length !== 8 || all.some((x) => !/^[0-9a-fA-F]{1,4}$/.test(x))) throw new TypeError('bad');
  return all.map((x) => parseInt(x, 16));
}
