// The node agent (`podroute node run`). See README.md.
export { NodeAgent, type NodeAgentOptions, type NodeAgentEvents } from './agent.js';
export type { AgentStatus, AgentPeerStatus } from './status.js';
export { vtepMac } from './vtep.js';
export { VXLAN_ADDRESS_ANNOTATION, VXLAN_MAC_ANNOTATION } from '../resources/index.js';
export {
  desiredPeers,
  nodeIpv4,
  nodeAsn,
  clusterIdOf,
  meshEnabled,
  durationSeconds,
  type DesiredPeer,
  type PeerType as AgentPeerType,
  type ClusterView,
} from './peers.js';
export { advertisements, type Advertisements } from './advertise.js';
export { autodetectIpv4, autodetectIpv6, checkNodeAddress, interfaceOf, type DetectedAddress } from './autodetect.js';
export { serveAgentControl, serveHealth } from './server.js';
export { serveWeb, DEFAULT_WEB_HOST, type WebOptions } from './web/server.js';
export { flowsFromControl, type FlowProvider, type FlowQuery, type FlowRecord, type FlowEndpoint } from './web/flows.js';
export { checkRouterId, hashRouterId, routerIdFor } from './router-id.js';
export { Registry as MetricsRegistry } from './metrics.js';
