// bgp/: the BGP-4 speaker library.
export * from './codec/index.js';
export * from './mrt/index.js';
