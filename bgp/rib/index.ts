// The RIBs, the decision process, policy and UPDATE packing. See README.md.
export { Rib, FAMILIES, type OriginateOptions } from './rib.js';
export { RibPeer, type RibPeerStats } from './peer.js';
export {
  RouteView,
  attributesToJSON,
  attributesFromJSON,
  peerToJSON,
  type PathAttributesJson,
  type RibPeerJson,
  type RibRouteJson,
} from './json.js';
export {
  formatCommunity,
  formatLargeCommunity,
  formatExtendedCommunity,
  parseLargeCommunity,
  parseExtendedCommunity,
} from './communities.js';
export { AdjRibOut, type AdjRibOutStats } from './adj-rib-out.js';
export { UpdateGroup, OutAttrSet } from './update-group.js';
export { Subgroup } from './subgroup.js';
export {
  AttrSet,
  AttrInterner,
  NextHop,
  NO_EXPORT,
  NO_ADVERTISE,
  NO_EXPORT_SUBCONFED,
  GRACEFUL_SHUTDOWN,
  LLGR_STALE,
  NO_LLGR,
  asPathLength,
} from './attr-set.js';
export { compareTieBreak, type DecisionOptions } from './decision.js';
export { mergeAs4Path, toTwoOctetAs } from './as4.js';
export {
  compilePolicy,
  applyActions,
  parseCommunity,
  prependAs,
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
} from './policy.js';
export type {
  PeerType,
  RibOptions,
  RibPeerConfig,
  RibRoute,
  BestPathChange,
  BestPathChangeKind,
  MultipathOptions,
  IbgpReflectionHook,
  UpdateGroupInfo,
} from './types.js';
