// The resources' face: Calico- and Kubernetes-shaped resources, their validation, YAML and
// selectors. Code outside lib/resources imports from here.
export * from './types.js';
export type { BGPPeerMaxPrefix, BGPPeerMaxPrefixes } from './max-prefixes.js';
export * from './annotations.js';
export { ValidationError, validateResource } from './validate.js';
export { normalizeBlockSpec } from './validate-ipam-block.js';
// The field checks validation is made of, for other inputs that name their fields the same way
// (the CNI network configuration).
export { Checker } from './checker.js';
export { portNameProblem } from './validate-kubernetes.js';
export { parseResources, formatResources, toManifest } from './yaml.js';
export {
  parseSelector,
  parseSelectorAst,
  compileSelector,
  formatSelector,
  canonicalSelector,
  selectorUsesGlobal,
  SelectorError,
  type Selector,
  type SelectorNode,
  type SelectorOptions,
  type ValueOperator,
  type Labels,
} from './selector.js';
export { labelSelectorToNode, labelSelectorToCalico, matchLabelSelector } from './label-selector.js';
export { cidrName } from './names.js';
export { parsePeerIP, type PeerAddress } from './peer-ip.js';
export { durationSeconds } from './duration.js';
export { closestName } from './suggest.js';
export { REDACTED, redactSecrets } from './secrets.js';
