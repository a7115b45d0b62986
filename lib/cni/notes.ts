// What a call chose not to touch, or replaced, that whoever runs the node should hear of: a DEL
// for an old sandbox that leaves the live sandbox's veth, an ADD that replaces an older sandbox's
// wiring. The plugin run by a runtime writes them on stderr (the runtime's log); the node agent
// logs them as events.

export interface CniNote {
  /** `left`: not touched, for it is another container's; `replaced`: another container's, taken over. */
  action: 'left' | 'replaced';
  /** What, by its kind and name: "host veth cali0123456789a", "WorkloadEndpoint web/n1-k8s-front-eth0". */
  what: string;
  /** Whose it is, and what follows from it. */
  why: string;
}

export type Say = (note: CniNote) => void;

export const silent: Say = () => undefined;

export function noteText(n: CniNote): string {
  return `${n.action} ${n.what}: ${n.why}`;
}
