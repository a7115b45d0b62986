// felix/flows: flow logs from the dataplane. See README.md.
export { FlowReader, type FlowReaderOptions, type FlowReaderStats, enableConntrackAccounting } from './reader.js';
export { FlowCorrelator, type FlowObservation, type CorrelatorOptions } from './correlate.js';
export {
  decisionIndex,
  decisionMarks,
  decisionPrefix,
  type Decision,
  type DecisionCode,
  END_OF_TIER,
  type MarkDecisions,
} from './decisions.js';
export { ctMarkError } from './rule-marks.js';
export type { ConntrackEvent } from './conntrack-event.js';
export type { LoggedPacket } from './nflog.js';
export { type FlowTuple, protocolName, tupleKey } from './tuple.js';
