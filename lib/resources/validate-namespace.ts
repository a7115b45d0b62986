// Namespace: a name and labels (checked with the metadata); its spec holds nothing podroute keeps.
import type { Checker, Obj } from './checker.js';

export function checkNamespace(c: Checker, s: Obj): Obj {
  c.only(s, [], 'spec', { finalizers: 'is not supported by podroute: nothing finalizes a namespace here' });
  return {};
}
