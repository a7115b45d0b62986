// Routes and their attributes as plain JSON, and back: what a program prints, logs or sends
// over an API. Communities (standard, extended, large) are in their text forms, octets in hex.
// Made on demand, by JSON.stringify or a call: the RIB keeps its compact forms.
import type { AddressFamily, AsPathSegment, PathAttributes } from '../codec/index.js';
import {
  formatCommunity,
  formatExtendedCommunity,
  formatLargeCommunity,
  parseCommunity,
  parseExtendedCommunity,
  parseLargeCommunity,
} from './communities.js';
import type { RibPeer } from './peer.js';
import type { RibRoute } from './types.js';

/**
 * Path attributes as JSON writes them: the RIB's attributes with communities as text and unknown
 * attributes in hex; a message's own fields (MP_REACH, MP_UNREACH, the wire layout) left out.
 */
export type PathAttributesJson = Omit<
  PathAttributes,
  'communities' | 'extendedCommunities' | 'largeCommunities' | 'unknown' | 'mpReach' | 'mpUnreach' | 'wire'
> & {
  /** "65000:100" */
  communities?: string[];
  /** "rt:65000:100", "soo:192.0.2.1:7", or "0x" and the eight octets in hex. */
  extendedCommunities?: string[];
  /** "65000:1:2" */
  largeCommunities?: string[];
  /** Attributes the codec does not know, as received: the value in hex. */
  unknown?: { type: number; flags: number; value: string }[];
};

/** A peer as JSON: who it is, not its session's machinery. */
export interface RibPeerJson {
  address: string;
  asn: number;
  routerId: string;
  type: 'ebgp' | 'ibgp' | 'local';
}

/** A route as JSON; `peer` is absent for a route we originate. */
export interface RibRouteJson {
  family: AddressFamily;
  prefix: string;
  pathId: number;
  nextHop: string;
  linkLocalNextHop?: string;
  attributes: PathAttributesJson;
  peer?: RibPeerJson;
  stale: boolean;
}

// The fields copied as they are; the rest are written by attributesToJSON. MP_REACH/MP_UNREACH
// and the wire layout are a message's, not a route's: a RIB's attributes never hold them.
const PLAIN = [
  'origin',
  'asPath',
  'nextHop',
  'med',
  'localPref',
  'atomicAggregate',
  'aggregator',
  'originatorId',
  'clusterList',
  'as4Path',
  'as4Aggregator',
] as const;

/** The attributes in plain JSON, communities as text. */
export function attributesToJSON(a: Readonly<PathAttributes>): PathAttributesJson {
  const out: PathAttributesJson = {};
  const o = out as Record<string, unknown>;
  for (const k of PLAIN) if (a[k] !== undefined) o[k] = a[k];
  if (a.communities) out.communities = a.communities.map(formatCommunity);
  if (a.extendedCommunities) out.extendedCommunities = a.extendedCommunities.map(formatExtendedCommunity);
  if (a.largeCommunities) out.largeCommunities = a.largeCommunities.map(formatLargeCommunity);
  if (a.unknown) out.unknown = a.unknown.map((u) => ({ type: u.type, flags: u.flags, value: u.value.toString('hex') }));
  return out;
}

type Readable = Omit<PathAttributes, 'communities' | 'extendedCommunities' | 'largeCommunities' | 'unknown'> & {
  communities?: (number | string)[];
  extendedCommunities?: (Uint8Array | string)[];
  largeCommunities?: (readonly number[] | string)[];
  unknown?: { type: number; flags: number; value: Uint8Array | string }[];
};

/**
 * Path attributes from their JSON form (attributesToJSON's, or one a user wrote), or from the
 * codec's: communities as text or numbers, extended ones as text or octets, large ones as text
 * or triples. A value that is neither throws a TypeError naming the field.
 */
export function attributesFromJSON(j: PathAttributesJson | Readonly<PathAttributes> | Readable): PathAttributes {
  const a = j as Readable;
  const out: PathAttributes = {};
  const o = out as Record<string, unknown>;
  for (const k of PLAIN) if (a[k] !== undefined) o[k] = a[k];
  const list = <T>(v: T[] | undefined, field: string): T[] | undefined => {
    if (v !== undefined && !Array.isArray(v)) throw new TypeError(`${field}: a list, not ${JSON.stringify(v)}`);
    return v;
  };
  const communities = list(a.communities, 'communities');
  if (communities) out.communities = communities.map((c, i) => parseCommunity(c, `communities[${i}]`));
  const extended = list(a.extendedCommunities, 'extendedCommunities');
  if (extended)
    out.extendedCommunities = extended.map((c, i) =>
      typeof c === 'string' ? parseExtendedCommunity(c, `extendedCommunities[${i}]`) : octets(c, 8, `extendedCommunities[${i}]`),
    );
  const large = list(a.largeCommunities, 'largeCommunities');
  if (large) out.largeCommunities = large.map((c, i) => parseLargeCommunity(c, `largeCommunities[${i}]`));
  const unknown = list(a.unknown, 'unknown');
  if (unknown)
    out.unknown = unknown.map((u, i) => ({
      type: u.type,
      flags: u.flags,
      value: typeof u.value === 'string' ? hex(u.value, `unknown[${i}].value`) : octets(u.value, -1, `unknown[${i}].value`),
    }));
  return out;
}

function octets(v: Uint8Array, length: number, field: string): Buffer {
  if (!(v instanceof Uint8Array) || (length >= 0 && v.length !== length))
    throw new TypeError(`${field}: ${length >= 0 ? `${length} octets` : 'octets'} or their text, not ${JSON.stringify(v)}`);
  return Buffer.from(v);
}

function hex(s: string, field: string): Buffer {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(s)) throw new TypeError(`${field}: ${JSON.stringify(s)} is not hex octets`);
  return Buffer.from(s, 'hex');
}

/** A peer's JSON. */
export function peerToJSON(p: RibPeer): RibPeerJson {
  return { address: p.address, asn: p.asn, routerId: p.routerId, type: p.type };
}

/**
 * A route as the RIB hands it out: RibRoute's fields, and JSON.stringify and `${route}` print
 * it (the peer by its address and AS, communities as text) instead of failing on the peer's
 * session machinery.
 */
export class RouteView implements RibRoute {
  declare linkLocalNextHop?: string;

  constructor(
    public family: AddressFamily,
    public prefix: string,
    public pathId: number,
    public nextHop: string,
    public attributes: Readonly<PathAttributes>,
    public peer: RibPeer | undefined,
    public stale: boolean,
  ) {}

  toJSON(): RibRouteJson {
    const j: RibRouteJson = { family: this.family, prefix: this.prefix, pathId: this.pathId, nextHop: this.nextHop } as RibRouteJson;
    if (this.linkLocalNextHop !== undefined) j.linkLocalNextHop = this.linkLocalNextHop;
    j.attributes = attributesToJSON(this.attributes);
    if (this.peer !== undefined) j.peer = peerToJSON(this.peer);
    j.stale = this.stale;
    return j;
  }

  /** One line as `show bgp` would: "10.1.0.0/16 via 192.0.2.1 from 192.0.2.1 AS 65002, as-path 65002, communities 65002:7". */
  toString(): string {
    const a = this.attributes;
    const parts = [`${this.prefix}${this.pathId ? ` path-id ${this.pathId}` : ''} via ${this.nextHop}`];
    if (this.linkLocalNextHop !== undefined) parts[0] += ` (${this.linkLocalNextHop})`;
    parts[0] += this.peer ? ` from ${this.peer.address} AS ${this.peer.asn}` : ' (local)';
    parts.push(`as-path ${(a.asPath ?? []).map(segmentText).join(' ') || '(empty)'}`);
    if (a.origin !== undefined) parts.push(`origin ${a.origin}`);
    if (a.med !== undefined) parts.push(`med ${a.med}`);
    if (a.localPref !== undefined) parts.push(`local-pref ${a.localPref}`);
    if (a.communities?.length) parts.push(`communities ${a.communities.map(formatCommunity).join(' ')}`);
    if (a.extendedCommunities?.length) parts.push(`extended-communities ${a.extendedCommunities.map(formatExtendedCommunity).join(' ')}`);
    if (a.largeCommunities?.length) parts.push(`large-communities ${a.largeCommunities.map(formatLargeCommunity).join(' ')}`);
    if (this.stale) parts.push('stale');
    return parts.join(', ');
  }
}

function segmentText(s: AsPathSegment): string {
  const asns = s.asns.join(' ');
  if (s.type === 'sequence') return asns;
  if (s.type === 'set') return `{${asns}}`;
  return s.type === 'confed-sequence' ? `(${asns})` : `[${asns}]`;
}
