// The public API of podroute, with types.
export * from './ip/index.js';
export * from './bgp/index.js';
export * from './lib/datastore/public.js';
export * from './felix/index.js';
export * from './reflector/index.js';
export * from './lib/agent/index.js';
export * from './lib/cni/index.js';
export * from './lib/ipam/index.js';
export { runDatastoreCommand, kindFromArg, DATASTORE_COMMANDS, type CommandIo } from './lib/cli/datastore.js';
