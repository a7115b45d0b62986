// Everything of the datastore and resources that podroute exports from its root (IPAM, which
// builds on the datastore, has its own face in lib/ipam/index.ts).
// (felix exports its own EncapMode; ours is IPPoolEncapMode here.)
export {
  API_VERSION,
  API_VERSION_OWN,
  KINDS,
  IPAM_OWNED_KINDS,
  BGP_DEFAULTS,
  DEFAULT_BLOCK_SIZE,
  resourceKey,
  type EncapMode as IPPoolEncapMode,
  type ObjectMeta,
  type Kind,
  type SpecOf,
  type ResourceOf,
  type Resource,
  type NodeSpec,
  type IPPoolSpec,
  type IPAMBlockSpec,
  type IPAMHandleSpec,
  type IPAMAttribute,
  type IPAMConfigurationSpec,
  type BGPConfigurationSpec,
  type BGPPeerSpec,
  type WorkloadEndpointSpec,
  type Community,
  type Node,
  type IPPool,
  type IPAMBlock,
  type IPAMHandle,
  type IPAMConfiguration,
  type BGPConfiguration,
  type BGPPeer,
  type WorkloadEndpoint,
} from '../resources/types.js';
export { ValidationError, validateResource } from '../resources/validate.js';
export { parseResources, formatResources } from '../resources/yaml.js';
export { parseSelector, SelectorError, type Selector, type Labels } from '../resources/selector.js';
export { cidrName } from '../resources/names.js';
export * from './index.js';
