// felix/flows: flow logs from the dataplane. See README.md.
export { FlowReader, type FlowReaderOptions, type FlowReaderStats, enableConntrackAccounting } from './reader.js';
export { FlowCorrelator, type FlowObservation, type CorrelatorOptions } from './correlate.js';
export { decisionIndex, decisionPrefix, type Decision, type DecisionCode, END_OF_TIER } from './decisions.js';
export type { ConntrackEvent } from './conntrack-event.js';
export type { LoggedPacket } from './nflog.js';
export { type FlowTuple, protocolName, tupleKey } from './tuple.js';
