// The public API of podroute, with types.
export {};
