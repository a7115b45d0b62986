// Numbers of the BGP-4 wire format: message types, attribute codes, families, capabilities
// and NOTIFICATION codes (RFC 4271 and the RFCs that extend it).

export const HEADER_LENGTH = 19;
export const MAX_MESSAGE_LENGTH = 4096;
/** RFC 8654: the limit once both sides have sent the extended message capability. */
export const MAX_EXTENDED_MESSAGE_LENGTH = 65535;

export const MessageType = {
  OPEN: 1,
  UPDATE: 2,
  NOTIFICATION: 3,
  KEEPALIVE: 4,
  ROUTE_REFRESH: 5,
} as const;

export const AttrType = {
  ORIGIN: 1,
  AS_PATH: 2,
  NEXT_HOP: 3,
  MULTI_EXIT_DISC: 4,
  LOCAL_PREF: 5,
  ATOMIC_AGGREGATE: 6,
  AGGREGATOR: 7,
  COMMUNITIES: 8,
  ORIGINATOR_ID: 9,
  CLUSTER_LIST: 10,
  MP_REACH_NLRI: 14,
  MP_UNREACH_NLRI: 15,
  EXTENDED_COMMUNITIES: 16,
  AS4_PATH: 17,
  AS4_AGGREGATOR: 18,
  LARGE_COMMUNITY: 32,
} as const;

export const AttrFlag = {
  OPTIONAL: 0x80,
  TRANSITIVE: 0x40,
  PARTIAL: 0x20,
  EXTENDED_LENGTH: 0x10,
} as const;

export const Afi = { IPV4: 1, IPV6: 2 } as const;
export const Safi = { UNICAST: 1 } as const;

export const CapabilityCode = {
  MULTIPROTOCOL: 1,
  ROUTE_REFRESH: 2,
  EXTENDED_NEXT_HOP: 5,
  EXTENDED_MESSAGE: 6,
  GRACEFUL_RESTART: 64,
  FOUR_OCTET_AS: 65,
  ADD_PATH: 69,
  ENHANCED_ROUTE_REFRESH: 70,
  LONG_LIVED_GRACEFUL_RESTART: 71,
  FQDN: 73,
} as const;

/** RFC 6793: the 2-octet stand-in for an AS number that does not fit in 16 bits. */
export const AS_TRANS = 23456;

export const ErrorCode = {
  MESSAGE_HEADER: 1,
  OPEN_MESSAGE: 2,
  UPDATE_MESSAGE: 3,
  HOLD_TIMER_EXPIRED: 4,
  FSM: 5,
  CEASE: 6,
  ROUTE_REFRESH_MESSAGE: 7,
} as const;

export const HeaderSubcode = {
  CONNECTION_NOT_SYNCHRONIZED: 1,
  BAD_MESSAGE_LENGTH: 2,
  BAD_MESSAGE_TYPE: 3,
} as const;

export const OpenSubcode = {
  UNSPECIFIC: 0,
  UNSUPPORTED_VERSION_NUMBER: 1,
  BAD_PEER_AS: 2,
  BAD_BGP_IDENTIFIER: 3,
  UNSUPPORTED_OPTIONAL_PARAMETER: 4,
  UNACCEPTABLE_HOLD_TIME: 6,
  UNSUPPORTED_CAPABILITY: 7,
} as const;

export const UpdateSubcode = {
  MALFORMED_ATTRIBUTE_LIST: 1,
  UNRECOGNIZED_WELL_KNOWN_ATTRIBUTE: 2,
  MISSING_WELL_KNOWN_ATTRIBUTE: 3,
  ATTRIBUTE_FLAGS_ERROR: 4,
  ATTRIBUTE_LENGTH_ERROR: 5,
  INVALID_ORIGIN_ATTRIBUTE: 6,
  INVALID_NEXT_HOP_ATTRIBUTE: 8,
  OPTIONAL_ATTRIBUTE_ERROR: 9,
  INVALID_NETWORK_FIELD: 10,
  MALFORMED_AS_PATH: 11,
} as const;

export const CeaseSubcode = {
  MAX_PREFIXES_REACHED: 1,
  ADMINISTRATIVE_SHUTDOWN: 2,
  PEER_DECONFIGURED: 3,
  ADMINISTRATIVE_RESET: 4,
  CONNECTION_REJECTED: 5,
  OTHER_CONFIGURATION_CHANGE: 6,
  CONNECTION_COLLISION_RESOLUTION: 7,
  OUT_OF_RESOURCES: 8,
  HARD_RESET: 9,
  /** RFC 9384: BFD declared the path down (RFC 5882 §4.1). */
  BFD_DOWN: 10,
} as const;

/** RFC 7313 §5: the only subcode of the ROUTE-REFRESH Message Error code. */
export const ROUTE_REFRESH_INVALID_LENGTH = 1;
