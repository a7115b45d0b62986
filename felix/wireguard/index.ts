// WireGuard encryption of pod traffic between nodes, as Calico does it. See README.md.
export {
  resolveWireguardSettings,
  WIREGUARD_DEFAULTS,
  type WireguardInput,
  type WireguardLocal,
  type WireguardPeer,
  type WireguardSettings,
  type ResolvedWireguardSettings,
} from './input.js';
export {
  computeWireguardState,
  type WireguardState,
  type WireguardFamilyState,
  type WireguardFamily,
  type WireguardDeviceSpec,
  type WireguardPeerSpec,
  type WireguardRoute,
  type WireguardRule,
} from './desired.js';
export { planPeers, planTableRoutes, planRules, type PeerPlan, type RulePlan } from './plan.js';
export type { WireguardDataplane, InstalledPeer, WireguardRouteWrite } from './dataplane.js';
export { WgToolDataplane, type WgToolDataplaneOptions } from './wg-tool.js';
export { NetlinkWireguardDataplane, type NetlinkWireguardDataplaneOptions } from './netlink-dataplane.js';
export { MemoryWireguardDataplane, type MemoryWireguardDevice } from './memory.js';
export { WireguardProgrammer, type WireguardReport, type WireguardFailure } from './programmer.js';
export { generateWireguardKeyPair, wireguardPublicKey, isWireguardKey, type WireguardKeyPair } from './keys.js';
