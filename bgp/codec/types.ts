// The typed forms of BGP messages. Decoding produces them, encoding consumes them.
//
// Addresses and prefixes are strings ("10.0.0.0/24", "2001:db8::/32"): they are what a
// user reads and writes, they key Maps directly, and formatting them is cheap next to
// everything else a route costs. Prefix bits past the length are kept as sent, so that a
// message re-encodes byte for byte.

/** The address families whose NLRI the codec parses. Others are kept as raw bytes. */
export type AddressFamily = 'ipv4-unicast' | 'ipv6-unicast';

/** One NLRI entry: a prefix, and its ADD-PATH path identifier (RFC 7911) when negotiated. */
export interface Nlri {
  prefix: string;
  pathId?: number;
}

/** What the session negotiated, which changes how bytes are read and written. */
export interface CodecOptions {
  /** AS numbers in AS_PATH and AGGREGATOR are 4 octets (RFC 6793). Default: true. */
  fourOctetAs?: boolean;
  /** Families whose NLRI carry path identifiers in this direction (RFC 7911). */
  addPath?: Partial<Record<AddressFamily, boolean>>;
  /** Messages may be up to 65535 octets (RFC 8654). Default: false (4096). */
  extendedMessage?: boolean;
}

export type Origin = 'igp' | 'egp' | 'incomplete';

export type AsPathSegmentType = 'set' | 'sequence' | 'confed-sequence' | 'confed-set';

export interface AsPathSegment {
  type: AsPathSegmentType;
  asns: number[];
}

export interface Aggregator {
  asn: number;
  address: string;
}

/** RFC 8092: global administrator, local data part 1, local data part 2. */
export type LargeCommunity = [number, number, number];

/** MP_REACH_NLRI (RFC 4760). `raw` holds everything after AFI/SAFI for families not parsed. */
export interface MpReach {
  afi: number;
  safi: number;
  /** IPv4 or IPv6 global next hop. */
  nextHop?: string;
  /** RFC 2545: the link-local address that follows the global one (next hop length 32). */
  linkLocalNextHop?: string;
  nlri?: Nlri[];
  /** The octet after the next hop (once the SNPA count); zero unless a sender says otherwise. */
  reserved?: number;
  raw?: Buffer;
}

/** MP_UNREACH_NLRI (RFC 4760). An empty `withdrawn` list is an End-of-RIB marker. */
export interface MpUnreach {
  afi: number;
  safi: number;
  withdrawn?: Nlri[];
  raw?: Buffer;
}

/** An attribute the codec does not interpret, passed through as received. */
export interface RawAttribute {
  type: number;
  flags: number;
  value: Buffer;
}

/**
 * How the attributes appeared on the wire: their order and their exact flags. Real
 * senders set the extended-length flag on short attributes and list attributes out of
 * order; keeping this lets a decoded UPDATE re-encode byte for byte. Messages built by
 * hand leave it out and are encoded canonically.
 */
export interface AttributeWire {
  type: number;
  flags: number;
}

export interface PathAttributes {
  origin?: Origin;
  asPath?: AsPathSegment[];
  nextHop?: string;
  med?: number;
  localPref?: number;
  atomicAggregate?: boolean;
  aggregator?: Aggregator;
  communities?: number[];
  originatorId?: string;
  clusterList?: string[];
  mpReach?: MpReach;
  mpUnreach?: MpUnreach;
  /** Eight octets each (RFC 4360). */
  extendedCommunities?: Buffer[];
  as4Path?: AsPathSegment[];
  as4Aggregator?: Aggregator;
  largeCommunities?: LargeCommunity[];
  unknown?: RawAttribute[];
  wire?: AttributeWire[];
}

export interface UpdateMessage {
  type: 'update';
  /** The IPv4 Withdrawn Routes field. */
  withdrawn: Nlri[];
  attributes: PathAttributes;
  /** The IPv4 NLRI field. */
  nlri: Nlri[];
}

export interface FamilyEntry {
  afi: number;
  safi: number;
}

export type Capability =
  | { kind: 'multiprotocol'; afi: number; safi: number }
  | { kind: 'route-refresh' }
  | { kind: 'extended-next-hop'; entries: Array<FamilyEntry & { nextHopAfi: number }> }
  | { kind: 'extended-message' }
  | {
      kind: 'graceful-restart';
      /** The four flag bits: 0x8 Restart State (R), 0x4 Notification (N, RFC 8538). */
      restartFlags: number;
      restartTime: number;
      /** flags 0x80: Forwarding State preserved (F). */
      families: Array<FamilyEntry & { flags: number }>;
    }
  | { kind: 'four-octet-as'; asn: number }
  /** mode: 1 receive, 2 send, 3 both (RFC 7911). */
  | { kind: 'add-path'; families: Array<FamilyEntry & { mode: number }> }
  | { kind: 'enhanced-route-refresh' }
  | { kind: 'long-lived-graceful-restart'; families: Array<FamilyEntry & { flags: number; staleTime: number }> }
  | { kind: 'fqdn'; hostname: string; domain: string }
  | { kind: 'unknown'; code: number; value: Buffer };

export type CapabilityKind = Capability['kind'];

export interface OpenMessage {
  type: 'open';
  version: number;
  /** The 2-octet My Autonomous System field: AS_TRANS when the real AS needs 4 octets. */
  myAs: number;
  holdTime: number;
  bgpId: string;
  capabilities: Capability[];
  /**
   * How the capabilities were grouped into Optional Parameters on the wire, and whether
   * the RFC 9072 extended form was used. Absent: one parameter, extended only if needed.
   */
  layout?: { extended: boolean; groups: number[] };
}

export interface NotificationMessage {
  type: 'notification';
  code: number;
  subcode: number;
  data: Buffer;
  /** RFC 8203/9003 shutdown communication (Cease / Administrative Shutdown or Reset). */
  shutdownCommunication?: string;
}

export interface KeepaliveMessage {
  type: 'keepalive';
}

/** RFC 7313 subtypes of ROUTE-REFRESH. */
export const RouteRefreshSubtype = { NORMAL: 0, BORR: 1, EORR: 2 } as const;

export interface RouteRefreshMessage {
  type: 'route-refresh';
  afi: number;
  safi: number;
  /** 0 a normal request, 1 Beginning of Route Refresh, 2 End of Route Refresh. */
  subtype: number;
}

export type BgpMessage = OpenMessage | UpdateMessage | NotificationMessage | KeepaliveMessage | RouteRefreshMessage;
