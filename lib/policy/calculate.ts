// The calculation graph as one pure function: the cluster's resources and a node name in,
// felix's PolicyInput for that node out. The holder does the same work one change at a time.
import type { PolicyInput } from '../../felix/policy/input.js';
import type { Resource } from '../resources/index.js';
import { PolicyCalculator } from './calculator.js';

/** Felix's policy input for `nodeName` (every node's workloads when undefined). */
export function policyInput(resources: Iterable<Resource>, nodeName?: string): PolicyInput {
  const c = new PolicyCalculator(nodeName);
  for (const r of resources) c.put(r);
  return c.input();
}
