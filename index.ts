// The public API of podroute, with types.
export * from './ip/index.js';
export * from './bgp/index.js';
export * from './lib/resources/index.js';
export * from './lib/datastore/index.js';
export * from './felix/index.js';
// Names both felix and the resources give a type: felix's ServiceProtocol (lower case, as the
// kernel's tables write it) is the root's; the pool's EncapMode is also IPPoolEncapMode, beside
// felix's FelixEncapMode.
export type { ServiceProtocol } from './felix/index.js';
export type { EncapMode as IPPoolEncapMode } from './lib/resources/index.js';
export * from './reflector/index.js';
export * from './lib/agent/index.js';
export * from './lib/cni/index.js';
export * from './lib/ipam/index.js';
export { runDatastoreCommand, kindFromArg, DATASTORE_COMMANDS, type CommandIo } from './lib/cli/datastore.js';
