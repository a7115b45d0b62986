export * from './types.js';
export { ValidationError, validateResource } from './validate.js';
export { parseResources, formatResources } from './yaml.js';
export { parseSelector, SelectorError, type Selector, type Labels } from './selector.js';
export { cidrName } from './names.js';
