// felix/services: Services' data path. A ServiceInput resolved for this node (input.ts) is
// compiled (compile.ts) to the services' part of the one table podroute owns, which the policy
// programmer applies with the policy table in one transaction per change. See README.md.
export { EMPTY_SERVICE_INPUT, type ServiceInput, type ServicePort, type ServiceEndpoint, type ServiceProtocol } from './input.js';
export { recordServiceInputChange, type ServiceInputChange, serviceInputChange } from './input-change.js';
export {
  compileServices,
  DEFAULT_ENDPOINT_MAP_OVER,
  DEFAULT_MASQUERADE_MARK,
  type ServiceCompileChange,
  type ServiceCompileOptions,
  ServiceCompiler,
  type ServicePortChange,
  type ServiceTable,
} from './compile.js';
export { ServiceCompileError } from './compile-error.js';
export { SERVICES_PART, programServices } from './program.js';
export {
  type ConntrackCleaner,
  type ConntrackFilter,
  NO_CONNTRACK_CLEANER,
  ServiceConntrack,
  staleConntrackFilters,
} from './conntrack.js';
export { NetlinkConntrackCleaner, type NetlinkConntrackOptions } from './conntrack-netlink.js';
