// bgp/: the BGP-4 speaker library, layer by layer: codec → FSM → session → RIB → speaker.
export * from './codec/index.js';
export * from './mrt/index.js';
export * from './fsm/index.js';
export {
  Rib,
  FAMILIES,
  RibPeer,
  AdjRibOut,
  UpdateGroup,
  NO_EXPORT,
  NO_ADVERTISE,
  NO_EXPORT_SUBCONFED,
  asPathLength,
  compareTieBreak,
  mergeAs4Path,
  toTwoOctetAs,
  compilePolicy,
  applyActions,
  parseCommunity,
  prependAs,
  type OriginateOptions,
  type RibPeerStats,
  type AdjRibOutStats,
  type DecisionOptions,
  type Policy,
  type PolicyFunction,
  type PolicyDefinition,
  type PolicyTerm,
  type PolicyMatch,
  type PolicyActions,
  type PolicyVerdict,
  type PolicyRoute,
  type PrefixListEntry,
  type CompiledPolicy,
  type PeerType,
  type RibOptions,
  type RibPeerConfig,
  type RibRoute,
  type BestPathChange,
  type BestPathChangeKind,
  type MultipathOptions,
  type IbgpReflectionHook,
  type UpdateGroupInfo,
} from './rib/index.js';
export { Peer, type PeerEvents, type SessionInfo, type SessionDown } from './session/peer.js';
export { BgpConnection, type UpdateSource } from './session/connection.js';
export type { PeerConfig, LocalConfig, AddPathMode } from './session/config.js';
export {
  TCP_MD5_MAX_KEY_OCTETS,
  TcpMd5UnavailableError,
  loadTcpMd5,
  tcpMd5LoadError,
  setTcpMd5AddonPath,
  type TcpMd5Native,
} from './session/tcp-md5.js';
export {
  maxPrefixData,
  type MaxPrefixLimit,
  type MaxPrefixes,
  type MaxPrefixEvent,
  type MaxPrefixStatus,
  type MaxRoutes,
} from './session/max-prefix.js';
export {
  BgpSpeaker,
  type SpeakerOptions,
  type SpeakerEvents,
  type NeighborConfig,
  type DynamicNeighbors,
  type PeerStatus,
} from './speaker.js';
