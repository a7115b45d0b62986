export * from './types.js';
export { ValidationError, validateResource } from './validate.js';
export { parseResources, formatResources } from './yaml.js';
export { parseSelector, SelectorError, type Selector, type Labels } from './selector.js';
export {
  parseIp, formatIp, parseCidr, formatCidr, cidrContains, cidrContainsIp, cidrsOverlap, cidrName, cidrSize,
  type Cidr, type IpFamily,
} from './cidr.js';
