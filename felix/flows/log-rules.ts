// The statements felix's flow log rules end in: a packet handed to nfnetlink_log with a prefix
// naming the rule that decides it, limited in the kernel. A Deny's (and a tier's closing drop's)
// comes in two: one for a packet a Service's DNAT sent (prefix code `DN`) and one for the rest,
// so that the agent can name the Service of a refused packet, which reaches policy with the
// endpoint's address and port (this kernel gives a logged packet no conntrack entry to read the
// address the client used from).

import type { FlowLogRules } from '../policy/compile-chains.js';
import { type DecisionCode, decisionPrefix } from './decisions.js';

/** The statements, each to follow the deciding rule's own match in a rule of its own before it. */
export function flowLogStatements(f: FlowLogRules, code: DecisionCode, id: string): string[] {
  const log = (c: DecisionCode) =>
    `limit rate ${f.ratePerSecond}/second burst ${f.burst} packets log prefix "${decisionPrefix(c, id)}" group ${f.group}`;
  if (code !== 'D') return [log(code)];
  return [`ct status dnat ${log('DN')}`, `ct status & dnat == 0 ${log('D')}`];
}
