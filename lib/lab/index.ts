// The lab runner: containerlab topologies built with network namespaces.
export {
  loadTopology,
  parseTopology,
  TopologyError,
  type Topology,
  type TopologyNode,
  type TopologyLink,
  type NodeRole,
} from './topology.js';
export { labUp, labDown, type LabOptions } from './runner.js';
export {
  podAdd,
  podDel,
  podLabel,
  namespaceApply,
  findPod,
  podRef,
  podNamespace,
  parseLabels,
  parseLabelChanges,
  parsePortList,
  DEFAULT_NAMESPACE,
  type PodOptions,
} from './pods.js';
export { labStatus, formatLabStatus, type LabStatus, type NodeStatus, type PodStatus, type BgpSession } from './status.js';
export { labDatastore, formatLabEnv, labsUp, labAgentsHint, type LabDatastore } from './env.js';
export { readState, listLabs, stateRoot, DEFAULT_STATE_ROOT, type LabState, type LabPod, type LabProcess } from './state.js';
export {
  labUpCommand,
  labDownCommand,
  labStatusCommand,
  labExecCommand,
  labPodAddCommand,
  labPodDelCommand,
  labPodLabelCommand,
  labNamespaceCommand,
  labListCommand,
  labEnvCommand,
  type LabWhere,
  type LabPick,
} from './cli.js';
