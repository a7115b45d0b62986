// What a ServiceInput changed from the one before it, said by whoever made it. An input is handed
// over whole (every port of every Service on the node), so without this the compiler finds the
// ports that changed by comparing all of them with the last input's, by object: one pass over the
// table's size on every change, the one step of an endpoint change that grew with the number of
// services. The agent's input builder knows which ports it replaced and says so here; the
// compiler believes it only for the input it compiled last, and checks the ports it names.
import type { ServiceInput, ServicePort } from './input.js';

/** `next` is `from` but for these ports, each in its place with its id: no port came or went, nothing else changed. */
export interface ServiceInputChange {
  readonly from: ServiceInput;
  readonly ports: readonly { readonly index: number; readonly port: ServicePort }[];
}

const changes = new WeakMap<ServiceInput, ServiceInputChange>();

/**
 * Records that `next` is `change.from` with only `change.ports` replaced in place (the same ids,
 * the same node addresses and pools). A caller that records what is not so gets a table that
 * is not its input's: record only what the code that made `next` knows.
 */
export function recordServiceInputChange(next: ServiceInput, change: ServiceInputChange): void {
  changes.set(next, change);
}

/** The change recorded for `next`, if its maker recorded one. */
export function serviceInputChange(next: ServiceInput): ServiceInputChange | undefined {
  return changes.get(next);
}
