export * from './types.js';
export { ValidationError, validateResource } from './validate.js';
export { normalizeBlockSpec } from './validate-ipam-block.js';
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
export { closestName } from './suggest.js';
