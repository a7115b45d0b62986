// Everything of the datastore, IPAM and resources that podroute exports from its root.
export * from '../resources/index.js';
export * from './index.js';
export * from '../ipam/index.js';
