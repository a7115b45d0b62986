// felix: the route programmer. See README.md.
export { Felix, type FelixOptions, type ApplyReport, type RouteFailure, type FelixEvents } from './felix.js';
export { computeDesiredState, computeDesiredRoutes, FelixInputError, type DesiredState } from './desired.js';
export {
  DEFAULT_DEVICE_NAMES,
  DEFAULT_TUNNEL_MTU,
  EMPTY_INPUT,
  type FelixInput,
  type NodeInfo,
  type LocalWorkload,
  nextHopKey,
  type RemoteRoute,
  type LearnedNextHop,
  type DirectNextHop,
  type StaticRoute,
  type RemoteVtep,
  type PoolConfig,
  type EncapMode as FelixEncapMode,
  type DeviceNames,
} from './input.js';
export {
  PODROUTE_PROTOCOL,
  MAIN_TABLE,
  describeRoute,
  sameForwarding,
  type Route,
  type NextHop,
  type RouteType,
  type RouteClass,
  type InstalledRoute,
  type Neighbor,
} from './model.js';
export {
  defaultMetric,
  type Dataplane,
  type RouteWrite,
  type NeighborWrite,
  type WriteOutcome,
  type VxlanDeviceSpec,
  type IpipDeviceSpec,
  type DeviceStatus,
  type SysctlOutcome,
} from './dataplane.js';
export { NextHopResolver, type KernelRoute, type Resolution } from './resolve.js';
export { MemoryDataplane, type MemoryDataplaneOptions } from './memory-dataplane.js';
export { LinuxDataplane, type LinuxDataplaneOptions } from './linux-dataplane.js';
export { planRoutes, planNeighbors, type RoutePlan, type RouteConflict } from './reconcile.js';
export { loadNative, nativeLoadError } from './netlink/native.js';
export { IpBatchDataplane, type IpBatchDataplaneOptions } from './ipbatch-dataplane.js';
export { createLinuxDataplane } from './create-dataplane.js';
export * from './policy/index.js';
export * from './services/index.js';
export * from './wireguard/index.js';
export * from './flows/index.js';
